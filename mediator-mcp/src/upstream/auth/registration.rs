//! Who the mediator is to an authorization server: a client id given ahead of time, a client ID
//! metadata document's URL where the server takes one, or one registered on the spot (RFC 7591).

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::discovery::ServerMetadata;
use super::{AuthError, SignInOptions, Web};

/// How the client proves itself at the token endpoint (RFC 7591 §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenAuth {
    /// A public client: its id in the body, no secret.
    None,
    ClientSecretBasic,
    ClientSecretPost,
}

/// The client as one authorization server knows it.
#[derive(Clone, Serialize, Deserialize)]
pub struct Client {
    pub id: String,
    pub secret: Option<String>,
    /// The environment variable the secret is read from, when the user gave it so
    /// (`client_secret_env`): the secret is then never kept, only read again when needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_env: Option<String>,
    pub token_auth: TokenAuth,
    /// The redirect URI it was registered with (a loopback one), when registered here.
    pub redirect_uri: Option<String>,
    /// Registered on the spot (and so worth keeping for the next sign-in).
    pub registered: bool,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret never reaches a log.
        f.debug_struct("Client").field("id", &self.id).field("token_auth", &self.token_auth).finish_non_exhaustive()
    }
}

impl Client {
    /// The client with its secret, read again from the environment when it lives there (a
    /// kept sign-in holds none of it): the variable kept with it, else the one `options` names
    /// for this client id (a sign-in kept before the variable's name was).
    pub(super) fn with_secret(&self, options: &SignInOptions) -> Result<Client, AuthError> {
        if self.secret.is_some() || self.registered {
            return Ok(self.clone());
        }
        let configured = options.client_secret_env.as_deref().filter(|_| options.client_id.as_ref() == Some(&self.id));
        match self.secret_env.as_deref().or(configured) {
            Some(name) => Ok(Client { secret: Some(super::secret_from(name)?), ..self.clone() }),
            None => Ok(self.clone()),
        }
    }
}

/// The client to sign in as: the one configured, else the metadata document's URL where the
/// server supports it, else `kept` (registered before, for this redirect URI), else a new
/// registration.
pub async fn client(
    web: &Web,
    server: &ServerMetadata,
    options: &SignInOptions,
    redirect_uri: &str,
    kept: Option<Client>,
) -> Result<Client, AuthError> {
    if let Some(id) = &options.client_id {
        let secret = options.client_secret()?;
        let token_auth = match &secret {
            None => TokenAuth::None,
            Some(_) => preferred_secret_auth(server),
        };
        return Ok(Client {
            id: id.clone(),
            secret_env: secret.as_ref().and(options.client_secret_env.clone()),
            secret,
            token_auth,
            redirect_uri: None,
            registered: false,
        });
    }
    if let Some(url) = &options.client_metadata_url
        && server.client_id_metadata_document_supported
    {
        return Ok(Client {
            id: url.clone(),
            secret: None,
            secret_env: None,
            token_auth: TokenAuth::None,
            redirect_uri: None,
            registered: false,
        });
    }
    if let Some(kept) = kept.filter(|kept| kept.redirect_uri.as_deref() == Some(redirect_uri)) {
        return Ok(kept);
    }
    register(web, server, redirect_uri).await
}

/// A client for the client credentials grant: only a configured id and secret will do.
pub fn machine(server: &ServerMetadata, options: &SignInOptions) -> Result<Client, AuthError> {
    let (Some(id), Some(secret)) = (&options.client_id, options.client_secret()?) else {
        return Err(AuthError::Config(
            "the client_credentials grant needs a client id and its secret (client_id and client_secret_env)".into(),
        ));
    };
    Ok(Client {
        id: id.clone(),
        secret: Some(secret),
        secret_env: options.client_secret_env.clone(),
        token_auth: preferred_secret_auth(server),
        redirect_uri: None,
        registered: false,
    })
}

/// With a secret: Basic where the server takes it (RFC 8414's default when it does not say),
/// else in the body.
fn preferred_secret_auth(server: &ServerMetadata) -> TokenAuth {
    match &server.token_endpoint_auth_methods_supported {
        Some(methods) if !methods.iter().any(|method| method == "client_secret_basic") => {
            if methods.iter().any(|method| method == "client_secret_post") {
                TokenAuth::ClientSecretPost
            } else {
                TokenAuth::ClientSecretBasic
            }
        }
        _ => TokenAuth::ClientSecretBasic,
    }
}

/// Dynamic client registration (RFC 7591) as a native public client with a loopback redirect.
async fn register(web: &Web, server: &ServerMetadata, redirect_uri: &str) -> Result<Client, AuthError> {
    let Some(endpoint) = &server.registration_endpoint else {
        return Err(AuthError::Config(
            "the authorization server offers no client registration: give the client id it issued you \
             (--oauth-client-id, or \"oauth\": {\"client_id\": ...} in a servers file)"
                .into(),
        ));
    };
    let endpoint = web.parse(endpoint, "the registration endpoint")?;
    let auth_method = match &server.token_endpoint_auth_methods_supported {
        Some(methods) if !methods.iter().any(|method| method == "none") => {
            methods.first().cloned().unwrap_or_else(|| "client_secret_basic".into())
        }
        _ => "none".into(),
    };
    let request = json!({
        "client_name": "tool-mediator",
        "client_uri": env!("CARGO_PKG_REPOSITORY"),
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": auth_method,
        "application_type": "native",
    });
    #[derive(Deserialize)]
    struct Registered {
        client_id: String,
        client_secret: Option<String>,
        token_endpoint_auth_method: Option<String>,
    }
    let registered: Registered = web.post_json(&endpoint, &request).await?;
    let token_auth = match (registered.token_endpoint_auth_method.as_deref(), &registered.client_secret) {
        (Some("client_secret_post"), Some(_)) => TokenAuth::ClientSecretPost,
        (Some("client_secret_basic"), Some(_)) => TokenAuth::ClientSecretBasic,
        (Some("none"), _) | (_, None) => TokenAuth::None,
        (_, Some(_)) => preferred_secret_auth(server),
    };
    Ok(Client {
        id: registered.client_id,
        secret: registered.client_secret,
        secret_env: None,
        token_auth,
        redirect_uri: Some(redirect_uri.to_owned()),
        registered: true,
    })
}
