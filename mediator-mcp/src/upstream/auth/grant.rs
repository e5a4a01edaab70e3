//! The OAuth grants, through the `oauth2` crate: the authorization code with PKCE (S256), the
//! refresh token (rotated as the server rotates it) and client credentials, each carrying the
//! resource indicator (RFC 8707) so that a token is made for this server alone.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oauth2::basic::{BasicClient, BasicErrorResponse, BasicTokenResponse};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointNotSet, EndpointSet,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RefreshToken, RequestTokenError, Scope, TokenResponse, TokenUrl,
};
use reqwest::Url;

use super::registration::{Client, TokenAuth};
use super::{AuthError, Web};

type TokenClient = BasicClient<EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// The tokens a grant gave.
#[derive(Clone)]
pub struct Tokens {
    pub access: String,
    pub refresh: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch, if the server said.
    pub expires_at: Option<u64>,
    /// The scopes granted: as the server says, else as asked (RFC 6749 §5.1).
    pub scope: Option<String>,
}

/// An authorization request ready for the browser, and what its answer is checked against.
pub struct Authorization {
    pub url: Url,
    pub state: CsrfToken,
    verifier: PkceCodeVerifier,
    redirect: RedirectUrl,
    resource: String,
    scope: Option<String>,
}

/// The authorization URL for `client`, with a new PKCE challenge and state.
pub fn authorization(
    client: &Client,
    authorization_endpoint: &Url,
    redirect_uri: &str,
    resource: &str,
    scope: Option<&str>,
) -> Result<Authorization, AuthError> {
    let redirect = RedirectUrl::new(redirect_uri.to_owned())
        .map_err(|error| AuthError::Config(format!("the redirect URI {redirect_uri}: {error}")))?;
    let oauth = BasicClient::new(ClientId::new(client.id.clone()))
        .set_auth_uri(AuthUrl::from_url(authorization_endpoint.clone()))
        .set_redirect_uri(redirect.clone());
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request =
        oauth.authorize_url(CsrfToken::new_random).set_pkce_challenge(challenge).add_extra_param("resource", resource);
    for scope in scopes(scope) {
        request = request.add_scope(scope);
    }
    let (url, state) = request.url();
    Ok(Authorization { url, state, verifier, redirect, resource: resource.to_owned(), scope: scope.map(str::to_owned) })
}

/// Trades the code the browser brought back for tokens, with the authorization's verifier,
/// redirect URI and resource.
pub async fn exchange_code(
    web: &Web,
    client: &Client,
    token_endpoint: &Url,
    authorization: Authorization,
    code: String,
) -> Result<Tokens, AuthError> {
    let oauth = token_client(client, token_endpoint).set_redirect_uri(authorization.redirect);
    let answer = oauth
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(authorization.verifier)
        .add_extra_param("resource", authorization.resource)
        .request_async(&web.oauth())
        .await;
    tokens(answer, None, authorization.scope.as_deref())
}

/// New tokens for a refresh token; the server may rotate it, else it is kept.
pub async fn refresh(
    web: &Web,
    client: &Client,
    token_endpoint: &Url,
    refresh_token: &str,
    resource: &str,
    asked: Option<&str>,
) -> Result<Tokens, AuthError> {
    let kept = RefreshToken::new(refresh_token.to_owned());
    let answer = token_client(client, token_endpoint)
        .exchange_refresh_token(&kept)
        .add_extra_param("resource", resource)
        .request_async(&web.oauth())
        .await;
    tokens(answer, Some(refresh_token), asked)
}

/// Tokens for the client itself (a machine with no user).
pub async fn client_credentials(
    web: &Web,
    client: &Client,
    token_endpoint: &Url,
    resource: &str,
    scope: Option<&str>,
) -> Result<Tokens, AuthError> {
    let oauth = token_client(client, token_endpoint);
    let mut request = oauth.exchange_client_credentials().add_extra_param("resource", resource);
    for scope in scopes(scope) {
        request = request.add_scope(scope);
    }
    let answer = request.request_async(&web.oauth()).await;
    tokens(answer, None, scope)
}

fn token_client(client: &Client, token_endpoint: &Url) -> TokenClient {
    let mut oauth =
        BasicClient::new(ClientId::new(client.id.clone())).set_token_uri(TokenUrl::from_url(token_endpoint.clone()));
    if let Some(secret) = &client.secret
        && client.token_auth != TokenAuth::None
    {
        oauth = oauth.set_client_secret(ClientSecret::new(secret.clone()));
    }
    oauth.set_auth_type(match client.token_auth {
        TokenAuth::ClientSecretBasic => AuthType::BasicAuth,
        TokenAuth::ClientSecretPost | TokenAuth::None => AuthType::RequestBody,
    })
}

fn scopes(scope: Option<&str>) -> impl Iterator<Item = Scope> + '_ {
    scope.into_iter().flat_map(str::split_whitespace).map(|scope| Scope::new(scope.to_owned()))
}

type Answer = Result<BasicTokenResponse, RequestTokenError<super::WebError, BasicErrorResponse>>;

fn tokens(answer: Answer, refresh_token: Option<&str>, asked: Option<&str>) -> Result<Tokens, AuthError> {
    let answer = answer.map_err(|error| {
        AuthError::Token(match error {
            RequestTokenError::ServerResponse(refused) => match refused.error_description() {
                Some(description) => format!("{}: {description}", refused.error()),
                None => refused.error().to_string(),
            },
            RequestTokenError::Request(error) => error.to_string(),
            RequestTokenError::Parse(error, _) => format!("its answer is not a token response: {error}"),
            RequestTokenError::Other(error) => error,
        })
    })?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    Ok(Tokens {
        access: answer.access_token().secret().clone(),
        refresh: answer
            .refresh_token()
            .map(|token| token.secret().clone())
            .or_else(|| refresh_token.map(str::to_owned)),
        // An expiry past what a clock can count (`expires_in` of 2^64-1) is no expiry said.
        expires_at: answer.expires_in().and_then(|within| now.checked_add(within)).map(|at| at.as_secs()),
        scope: answer
            .scopes()
            .map(|granted| granted.iter().map(|scope| scope.as_str()).collect::<Vec<_>>().join(" "))
            .or_else(|| asked.map(str::to_owned)),
    })
}

/// The `oauth2` crate's requests, sent by the sign-in's own HTTP client.
pub struct OAuthHttp(pub(super) reqwest::Client);

impl<'c> oauth2::AsyncHttpClient<'c> for OAuthHttp {
    type Error = super::WebError;
    type Future = Pin<Box<dyn Future<Output = Result<oauth2::HttpResponse, super::WebError>> + Send + 'c>>;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(async move {
            let request = reqwest::Request::try_from(request).map_err(super::WebError::from)?;
            let response = self.0.execute(request).await.map_err(super::WebError::from)?;
            let mut answer = oauth2::http::Response::builder().status(response.status().as_u16());
            for (name, value) in response.headers() {
                answer = answer.header(name.as_str(), value.as_bytes());
            }
            let body = tool_mediator::http::read_limited(response, super::ANSWER_LIMIT)
                .await
                .map_err(|error| super::WebError::Body(error.to_string()))?;
            answer.body(body).map_err(|error| super::WebError::Body(error.to_string()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(json: &str) -> Answer {
        Ok(serde_json::from_str::<BasicTokenResponse>(json).unwrap())
    }

    #[test]
    fn an_expiry_that_does_not_fit_is_taken_as_unknown() {
        // The code grant, the refresh and client credentials all read their answer here.
        let absurd = answer(r#"{"access_token": "a", "token_type": "Bearer", "expires_in": 18446744073709551615}"#);
        let read = tokens(absurd, Some("kept-refresh"), None).unwrap();
        assert_eq!(read.expires_at, None);
        assert_eq!(read.refresh.as_deref(), Some("kept-refresh"));
        let usual = answer(r#"{"access_token": "a", "token_type": "Bearer", "expires_in": 60}"#);
        let at = tokens(usual, None, None).unwrap().expires_at.unwrap();
        assert!(at > super::super::now() && at <= super::super::now() + 60, "{at}");
    }
}
