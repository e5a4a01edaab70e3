//! Who may connect to the HTTP front, and what each client sees.
//!
//! Besides the shared token the front checks itself, the front can be an OAuth 2.1 protected
//! resource, as the MCP authorization specification asks of a server: it publishes its
//! protected resource metadata (RFC 9728) naming the one authorization server it trusts, answers
//! a request without a valid token 401 with a challenge that points there, and takes a bearer
//! JWT only when it is signed by one of that issuer's keys ([`keys`]) with an asymmetric
//! algorithm, names that issuer and this resource as its audience (RFC 8707), and is within its
//! time ([`token`]). A token made for another resource is never taken, and never passed on: the
//! servers behind the front see none of it.
//!
//! What a client sees is a [`view`](crate::servers::View) of the servers file, chosen by a claim
//! of its token, the URL path (`/mcp/<view>`) or a header ([`choice`]). Only the claim is access
//! control: a path or a header is the client's own say, a convenience for sorting clients that
//! are all trusted alike.

mod choice;
mod keys;
mod token;

use std::time::Duration;

use reqwest::Url;
use serde_json::{Value, json};

pub use choice::{Choice, Views, seen_through};
use keys::IssuerKeys;

/// The front as a protected resource: what the operator says.
#[derive(Debug, Clone)]
pub struct OAuthOptions {
    /// The authorization server whose tokens are taken (`--oauth-issuer`), as it names itself.
    pub issuer: String,
    /// This resource's identifier (`--oauth-audience`): the URL clients reach `/mcp` at, which a
    /// token's `aud` must name.
    pub audience: String,
    /// A string claim of the token naming the client's view (`--view-claim`).
    pub view_claim: Option<String>,
    /// How far the issuer's clock may be from this one's, for `exp` and `nbf`.
    pub clock_skew: Duration,
}

impl OAuthOptions {
    /// The options with the default clock skew (30 s); the issuer and the audience are checked
    /// to be URLs the front can use.
    pub fn new(issuer: &str, audience: &str) -> Result<OAuthOptions, AccessError> {
        let parsed = Url::parse(issuer).map_err(|error| AccessError(format!("--oauth-issuer `{issuer}`: {error}")))?;
        if !crate::upstream::auth::is_secure(&parsed) || parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(AccessError(format!(
                "--oauth-issuer `{issuer}`: an issuer is an HTTPS URL (HTTP only on this machine) without a query \
                 or fragment"
            )));
        }
        let resource =
            Url::parse(audience).map_err(|error| AccessError(format!("--oauth-audience `{audience}`: {error}")))?;
        if !matches!(resource.scheme(), "http" | "https") || resource.fragment().is_some() {
            return Err(AccessError(format!(
                "--oauth-audience `{audience}`: the resource is the http(s) URL clients reach /mcp at, without a \
                 fragment"
            )));
        }
        Ok(OAuthOptions {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            view_claim: None,
            clock_skew: Duration::from_secs(30),
        })
    }
}

/// Why the front cannot be set up as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AccessError(String);

/// The front as an OAuth protected resource: its metadata, its challenge, and the tokens it takes.
pub struct ProtectedResource {
    options: OAuthOptions,
    /// Where the metadata is published, as the challenge names it.
    metadata_url: String,
    keys: IssuerKeys,
}

/// Who a request with a valid token is, as far as the front cares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// The token's `sub`: a session opened under one subject is not another's.
    pub subject: Option<String>,
    /// The view the token's claim names, when the front reads one.
    pub view: Option<String>,
}

/// Why a request is not let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No bearer token: the client is told where to get one (401).
    NoToken,
    /// A token that is not taken here (401, `invalid_token`); why, for the log and the client.
    InvalidToken(&'static str),
    /// The issuer's keys cannot be had now (503): no token can be checked.
    Unavailable(String),
}

impl ProtectedResource {
    pub fn new(options: OAuthOptions) -> Result<ProtectedResource, AccessError> {
        let metadata_url = metadata_url(&options.audience);
        let issuer = Url::parse(&options.issuer).map_err(|error| AccessError(error.to_string()))?;
        let keys = IssuerKeys::new(issuer).map_err(|error| AccessError(format!("an HTTP client: {error}")))?;
        Ok(ProtectedResource { options, metadata_url, keys })
    }

    /// What the operator said: the issuer, the audience, the view claim, the clock skew.
    pub fn options(&self) -> &OAuthOptions {
        &self.options
    }

    /// The protected resource metadata (RFC 9728 §2) served at the well-known path.
    pub fn metadata(&self) -> Value {
        json!({
            "resource": self.options.audience,
            "authorization_servers": [self.options.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "tool-mediator gateway",
        })
    }

    /// The `WWW-Authenticate` of a 401 (RFC 6750 §3, RFC 9728 §5.1): where the metadata is, and
    /// for a token that was given, why it is not taken.
    pub fn challenge(&self, refusal: &Refusal) -> String {
        let metadata = format!("resource_metadata=\"{}\"", self.metadata_url);
        match refusal {
            Refusal::InvalidToken(why) => {
                format!("Bearer error=\"invalid_token\", error_description=\"{why}\", {metadata}")
            }
            Refusal::NoToken | Refusal::Unavailable(_) => format!("Bearer {metadata}"),
        }
    }

    /// Checks the `Authorization` header of a request: the caller its valid token says, or why
    /// it is refused.
    pub async fn admit(&self, authorization: Option<&str>) -> Result<Caller, Refusal> {
        let Some(given) = authorization else { return Err(Refusal::NoToken) };
        let Some(token) = bearer_token(given) else {
            return Err(Refusal::InvalidToken("the Authorization header is not a bearer token"));
        };
        let claims = token::verify(&self.options, &self.keys, token).await?;
        let string = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        Ok(Caller { subject: string("sub"), view: self.options.view_claim.as_deref().and_then(string) })
    }
}

/// Where the metadata of `resource` is published (RFC 9728 §3.1): the well-known prefix with the
/// resource's path after it, on the resource's origin.
fn metadata_url(resource: &str) -> String {
    match Url::parse(resource) {
        Ok(url) => {
            let path = url.path().trim_end_matches('/');
            format!("{}/.well-known/oauth-protected-resource{path}", tool_mediator::http::origin_of(&url))
        }
        Err(_) => "/.well-known/oauth-protected-resource".to_owned(),
    }
}

/// The token of an `Authorization: Bearer <token>` value; the scheme's case does not matter
/// (RFC 9110, 11.1), nor how many spaces follow it.
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim_start_matches(' ');
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

// An authorization server of the tests' own, which the front's tests use too.
#[cfg(test)]
pub(crate) mod tests;
