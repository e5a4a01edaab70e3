//! Signing in to remote MCP servers that ask for it, as the MCP authorization specification
//! describes (OAuth 2.1): a server refuses a request (401, or 403 asking for more scope), and
//! its [`Challenge`] starts [`discovery`] of where to sign in; the mediator is known to the
//! authorization server by a configured client id, a client ID metadata document, or a
//! registration made on the spot ([`registration`]); the user signs in in their browser and the
//! code comes back to a loopback listener ([`callback`]), or a machine uses its client
//! credentials ([`grant`]); the tokens are kept ([`store`]) and refreshed before they expire,
//! and sent to that server alone.
//!
//! Everything a server or an authorization server says is hostile input: endpoints must be
//! HTTPS (or on this machine), no redirect is followed, every answer is held to a size and a
//! time, the resource metadata must name the server it came from and the authorization
//! server's metadata its own issuer, the state of a redirect must be the one sent, and PKCE
//! (S256) is always used. No token or secret reaches a log, an error or `auth status`.

mod callback;
mod challenge;
mod discovery;
mod grant;
mod platform;
mod registration;
mod store;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::Url;
use serde::Deserialize;

pub use challenge::Challenge;
pub use discovery::canonical;
// Where an issuer publishes its metadata: the gateway finds the keys of the tokens it takes there too.
pub(crate) use discovery::server_metadata_urls;
pub use registration::TokenAuth;
pub use store::{CredentialStore, Credentials, KeptIn, STORE_ENV, StoreError, StoreLock};
use tool_mediator_core::sync::lock;

/// An answer from a server taking part in sign-in is read up to this size.
pub(crate) const ANSWER_LIMIT: u64 = 256 * 1024;
/// The `tracing` target of the event that asks the user to sign in: a warning naming the
/// server, with the fields `url` (the address to open) and `browser_opened`. The library prints nothing
/// itself; its host shows the event to the user however it reaches them (the command line's
/// subscriber shows it on stderr whatever `TOOL_MEDIATOR_LOG` says).
pub const SIGN_IN_PROMPT: &str = "tool_mediator_mcp::sign_in";

/// How long the user has to sign in in the browser.
pub const SIGN_IN_WAIT: Duration = Duration::from_secs(300);
/// Sign-ins in a row, without a request accepted between them, after which the server's
/// refusals are taken as final (a server that never accepts must not loop the user).
const SIGN_INS_IN_A_ROW: u32 = 3;
/// A token this close to its expiry is refreshed before it is used, in seconds.
const EXPIRY_MARGIN: u64 = 60;
/// How long a refresh waits for another process's, holding the credentials file, to end.
const STORE_LOCK_WAIT: Duration = Duration::from_secs(60);

/// How to get tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A user signs in in the browser.
    #[default]
    AuthorizationCode,
    /// A machine with a client id and secret of its own, and no user.
    ClientCredentials,
}

/// What the user says about signing in to one server (`--oauth-*` flags, or a servers file's
/// `"oauth"` object). None of it is needed for a server that registers clients on the spot.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignInOptions {
    /// A client id the authorization server issued ahead of time.
    pub client_id: Option<String>,
    /// The environment variable holding that client's secret (the secret is never written in
    /// a file of the mediator's).
    pub client_secret_env: Option<String>,
    /// An HTTPS URL of a client ID metadata document, used as the client id where the
    /// authorization server takes one.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for besides those the server asks for, space-separated.
    pub scope: Option<String>,
    #[serde(default)]
    pub grant: Grant,
}

impl SignInOptions {
    fn client_secret(&self) -> Result<Option<String>, AuthError> {
        self.client_secret_env.as_deref().map(secret_from).transpose()
    }
}

/// The client secret in the environment variable `name`.
fn secret_from(name: &str) -> Result<String, AuthError> {
    match std::env::var(name) {
        Ok(secret) if !secret.is_empty() => Ok(secret),
        _ => Err(AuthError::Config(format!("the environment variable {name} (the client secret) is not set"))),
    }
}

/// Why sign-in did not work.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("cannot find where to sign in: the {what} at {at}: {reason}")]
    Discovery { what: String, at: String, reason: String },
    #[error(
        "the server's resource metadata names {named}, not this server ({server}): a token made for it is not sent here"
    )]
    ResourceMismatch { named: String, server: String },
    #[error("the authorization server's metadata names {issued} as its issuer, not {expected}")]
    IssuerMismatch { expected: String, issued: String },
    #[error("{0}")]
    Insecure(String),
    #[error("the authorization server does not offer PKCE with S256, which sign-in requires")]
    NoPkce,
    #[error("{0}")]
    Config(String),
    #[error("the token endpoint refused: {0}")]
    Token(String),
    #[error("sign-in was refused: {0}")]
    Refused(String),
    #[error("nobody signed in within {}s", .0.as_secs())]
    TimedOut(Duration),
    #[error("the server still refuses with the scopes granted ({0}); signing in again would not help")]
    ScopeNotGranted(String),
    #[error("the server refused {SIGN_INS_IN_A_ROW} sign-ins in a row; not signing in again until it accepts one")]
    TooMany,
    #[error("the server did not ask for sign-in (HTTP {0})")]
    NotAsked(u16),
    #[error("the server refused (HTTP {0}) without a Bearer challenge: it does not sign users in with OAuth")]
    NotOAuth(u16),
    #[error("{0}")]
    Web(#[from] WebError),
    #[error("cannot listen for the sign-in's redirect on 127.0.0.1: {0}")]
    Listen(#[from] std::io::Error),
    #[error("signed in, but the sign-in cannot be kept: {0}")]
    NotKept(StoreError),
}

/// An HTTP exchange of sign-in that failed.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("{0}")]
    Http(String),
    #[error("{0}")]
    Body(String),
}

impl From<reqwest::Error> for WebError {
    fn from(error: reqwest::Error) -> Self {
        // URLs are named by the caller, without their query.
        WebError::Http(tool_mediator_core::error::with_causes(&error.without_url()))
    }
}

/// Sign-in's HTTP client: no redirect followed (an endpoint must be where its metadata says),
/// a time and a size limit on every answer.
pub(crate) struct Web {
    client: reqwest::Client,
}

impl Web {
    fn new() -> Result<Web, WebError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .build()?;
        Ok(Web { client })
    }

    /// An endpoint a server named: absolute, and HTTPS unless it is on this machine.
    fn parse(&self, text: &str, what: &str) -> Result<Url, AuthError> {
        let url = Url::parse(text).map_err(|error| AuthError::Config(format!("{what} `{text}`: {error}")))?;
        secure(&url, what)?;
        Ok(url)
    }

    /// A JSON document, or `None` when the server has none there (a 4xx, or a redirect).
    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &Url) -> Result<Option<T>, AuthError> {
        secure(url, "a metadata URL")?;
        let shown = tool_mediator::http::shown(url);
        let response = self
            .client
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| WebError::Http(format!("{shown}: {}", WebError::from(error))))?;
        let status = response.status();
        if status.is_client_error() || status.is_redirection() {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(AuthError::Discovery { what: "metadata".into(), at: shown, reason: format!("HTTP {status}") });
        }
        let body = tool_mediator::http::read_limited(response, ANSWER_LIMIT)
            .await
            .map_err(|error| WebError::Body(format!("{shown}: {error}")))?;
        serde_json::from_slice(&body).map(Some).map_err(|error| AuthError::Discovery {
            what: "metadata".into(),
            at: shown,
            reason: format!("not the JSON expected: {error}"),
        })
    }

    /// POSTs `body` and reads the JSON answer (a client registration).
    async fn post_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &Url,
        body: &serde_json::Value,
    ) -> Result<T, AuthError> {
        let shown = tool_mediator::http::shown(url);
        let response = self
            .client
            .post(url.clone())
            .json(body)
            .send()
            .await
            .map_err(|error| WebError::Http(format!("{shown}: {}", WebError::from(error))))?;
        let status = response.status();
        let answer = tool_mediator::http::read_limited(response, ANSWER_LIMIT)
            .await
            .map_err(|error| WebError::Body(format!("{shown}: {error}")))?;
        if !status.is_success() {
            let said = String::from_utf8_lossy(&answer[..answer.len().min(512)]).into_owned();
            return Err(AuthError::Refused(format!("{shown} answered HTTP {status}: {}", said.trim())));
        }
        serde_json::from_slice(&answer).map_err(|error| {
            AuthError::Refused(format!("{shown} answered with something other than the JSON expected: {error}"))
        })
    }

    fn oauth(&self) -> grant::OAuthHttp {
        grant::OAuthHttp(self.client.clone())
    }
}

/// Whether `url` may carry sign-in traffic: HTTPS, or HTTP to this machine. The gateway fetches
/// the keys it checks tokens with under the same rule.
pub(crate) fn is_secure(url: &Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let local = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match url.scheme() {
        "https" => true,
        "http" => local,
        _ => false,
    }
}

/// [`is_secure`], or why not.
fn secure(url: &Url, what: &str) -> Result<(), AuthError> {
    match is_secure(url) {
        true => Ok(()),
        false => Err(AuthError::Insecure(format!(
            "{what} {} is not HTTPS: sign-in goes over HTTPS only (or HTTP to this machine)",
            tool_mediator::http::shown(url)
        ))),
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs()
}

/// Signing in to one remote server, and the tokens for it: shared by every connection to that
/// server in this process, and kept in the [`CredentialStore`] for the next.
pub struct SignIn {
    server: Url,
    /// The server's entry in the store.
    key: String,
    shown: String,
    options: SignInOptions,
    web: Web,
    store: Option<CredentialStore>,
    held: Mutex<Option<Credentials>>,
    /// The access token of the sign-in whose refresh the server refused: the store may still
    /// hold it, and it is not taken from there again.
    spent: Mutex<Option<String>>,
    /// One sign-in or refresh at a time; the others wait and use what it got.
    flow: tokio::sync::Mutex<()>,
    in_a_row: AtomicU32,
    /// Whether the user is being asked to sign in in the browser now.
    asking: AtomicBool,
    /// Opens an authorization URL for the user; whether it could.
    browser: Box<dyn Fn(&str) -> bool + Send + Sync>,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn").field("server", &self.shown).finish_non_exhaustive()
    }
}

impl SignIn {
    /// Sign-in for the MCP server at `server`, its tokens kept in `store` (in memory only
    /// without one).
    pub fn new(server: Url, options: SignInOptions, store: Option<CredentialStore>) -> Result<SignIn, AuthError> {
        secure(&server, "the MCP server")?;
        let key = Self::key(&server);
        let held = match &store {
            Some(store) => store.get(&key).unwrap_or_else(|error| {
                tracing::warn!("the kept sign-ins cannot be read: {error}");
                None
            }),
            None => None,
        };
        Ok(SignIn {
            shown: tool_mediator::http::shown(&server),
            server,
            key,
            options,
            web: Web::new()?,
            store,
            held: Mutex::new(held),
            spent: Mutex::new(None),
            flow: tokio::sync::Mutex::new(()),
            in_a_row: AtomicU32::new(0),
            asking: AtomicBool::new(false),
            browser: Box::new(callback::open),
        })
    }

    /// Opens authorization URLs with `browser` instead of the system's (`$BROWSER`, else the
    /// platform's opener): for a host with a browser of its own, and for tests.
    #[must_use]
    pub fn with_browser(mut self, browser: impl Fn(&str) -> bool + Send + Sync + 'static) -> SignIn {
        self.browser = Box::new(browser);
        self
    }

    /// The store's key for a server: its URL without user, password, query or fragment.
    pub fn key(server: &Url) -> String {
        let mut url = server.clone();
        url.set_query(None);
        url.set_fragment(None);
        let _ = url.set_username("");
        let _ = url.set_password(None);
        url.to_string()
    }

    /// The `Authorization` header for the next request, if signed in: the token held,
    /// refreshed first when it is about to expire.
    pub async fn authorization(&self) -> Option<String> {
        // Every request asks: the held token is copied only when it must be refreshed.
        let expiring = {
            let held = lock(&self.held);
            let held = held.as_ref()?;
            if !(expiring(held) && held.refresh_token.is_some()) {
                return Some(format!("Bearer {}", held.access_token));
            }
            held.access_token.clone()
        };
        let _flow = self.flow.lock().await;
        let current = lock(&self.held).clone()?;
        // Unless another request refreshed it while this one waited.
        if current.access_token == expiring
            && let Err(error) = self.refresh(current).await
        {
            tracing::warn!("could not refresh the sign-in to {}: {error}", self.shown);
        }
        lock(&self.held).as_ref().map(|held| format!("Bearer {}", held.access_token))
    }

    /// Whether the user is being asked to sign in in the browser now: a request waiting on it
    /// may wait up to [`SIGN_IN_WAIT`], and the client can be told what to do meanwhile.
    pub fn asking_the_user(&self) -> bool {
        self.asking.load(Ordering::Relaxed)
    }

    /// What to tell a client whose request needs this sign-in while the user is asked: where to
    /// sign in. The authorization address itself is not in it (its state and PKCE challenge are
    /// for the browser alone; a model's context is no place for them): it is on stderr.
    pub fn what_to_do(&self) -> String {
        format!(
            "The MCP server at {} asks you to sign in. Sign in in the browser window tool-mediator \
             opened (its address is also in tool-mediator's log), or run `tool-mediator auth login {}` \
             in a terminal; then try again.",
            self.shown, self.key
        )
    }

    /// Whether a sign-in, refresh or step-up is under way (the user asked, or the tokens being
    /// fetched and kept): a request waiting on it is not waiting on a server that hangs.
    pub fn under_way(&self) -> bool {
        self.asking_the_user() || self.flow.try_lock().is_err()
    }

    /// The server accepted a request: refusals from now on start a new count.
    pub fn accepted(&self) {
        self.in_a_row.store(0, Ordering::Relaxed);
    }

    /// The server refused a request sent with `used` (its `Authorization` value, if any), with
    /// 401 or (`forbidden`) 403 and `challenge`: signs in, refreshes or steps up where that can
    /// help. Whether to send the request again; `false` for a refusal sign-in has no part in.
    pub async fn refused(&self, forbidden: bool, challenge: &Challenge, used: Option<&str>) -> Result<bool, AuthError> {
        if forbidden && !challenge.wants_more_scope() {
            return Ok(false);
        }
        let _flow = self.flow.lock().await;
        let current = || lock(&self.held).as_ref().map(|held| format!("Bearer {}", held.access_token));
        // Another request signed in while this one waited, or `auth login` did meanwhile.
        if current().is_some() && current().as_deref() != used {
            return Ok(true);
        }
        if let Some(kept) = self.kept()
            && Some(format!("Bearer {}", kept.access_token)).as_deref() != used
            && lock(&self.spent).as_ref() != Some(&kept.access_token)
        {
            *lock(&self.held) = Some(kept);
            return Ok(true);
        }
        let held = lock(&self.held).clone();
        let mut scope = challenge.scope.clone();
        if forbidden {
            // A step-up: what was granted and what is asked for now.
            let granted = held.as_ref().and_then(|held| held.scope.clone()).unwrap_or_default();
            let wanted = union(&granted, challenge.scope.as_deref().unwrap_or(""));
            if wanted.split_whitespace().all(|scope| granted.split_whitespace().any(|had| had == scope)) {
                return Err(AuthError::ScopeNotGranted(granted));
            }
            scope = Some(wanted);
        } else if let Some(held) = held.filter(|held| held.refresh_token.is_some()) {
            // An expired or revoked token: a refresh may do, before asking the user.
            match self.refresh(held).await {
                Ok(()) => return Ok(true),
                Err(error) => {
                    tracing::info!("refreshing the sign-in to {} failed ({error}); signing in again", self.shown)
                }
            }
        }
        if self.in_a_row.fetch_add(1, Ordering::Relaxed) >= SIGN_INS_IN_A_ROW {
            return Err(AuthError::TooMany);
        }
        let credentials = self.sign_in(challenge, scope).await?;
        if let Err(error) = self.keep(credentials) {
            tracing::warn!("the sign-in to {} is kept for this run only: {error}", self.shown);
        }
        Ok(true)
    }

    /// Signs in ahead of time (`auth login`): asks the server as a client would, and signs in
    /// as its refusal says.
    pub async fn login(&self) -> Result<Credentials, AuthError> {
        let initialize = serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "tool-mediator", "version": env!("CARGO_PKG_VERSION")}}
        });
        let response = self
            .web
            .client
            .post(self.server.clone())
            .header(reqwest::header::ACCEPT, "application/json, text/event-stream")
            .json(&initialize)
            .send()
            .await
            .map_err(WebError::from)?;
        let status = response.status();
        if status != reqwest::StatusCode::UNAUTHORIZED && status != reqwest::StatusCode::FORBIDDEN {
            // A session it opened is ended at once.
            if let Some(session) = response.headers().get("mcp-session-id").cloned() {
                let _ = self.web.client.delete(self.server.clone()).header("mcp-session-id", session).send().await;
            }
            return Err(AuthError::NotAsked(status.as_u16()));
        }
        let challenge = Challenge::of(
            response
                .headers()
                .get_all(reqwest::header::WWW_AUTHENTICATE)
                .iter()
                .filter_map(|value| value.to_str().ok()),
        )
        .ok_or(AuthError::NotOAuth(status.as_u16()))?;
        let _flow = self.flow.lock().await;
        let credentials = self.sign_in(&challenge, challenge.scope.clone()).await?;
        // Signing in ahead of time is for the runs to come: one that cannot be kept failed.
        self.keep(credentials.clone()).map_err(AuthError::NotKept)?;
        Ok(credentials)
    }

    /// The whole sign-in: discovery, the client, the grant.
    async fn sign_in(&self, challenge: &Challenge, scope: Option<String>) -> Result<Credentials, AuthError> {
        let found = discovery::discover(&self.web, &self.server, challenge.resource_metadata.as_deref()).await?;
        let mut scope = scope.or_else(|| found.scopes_supported.as_ref().map(|scopes| scopes.join(" ")));
        if let Some(extra) = &self.options.scope {
            scope = Some(union(scope.as_deref().unwrap_or(""), extra));
        }
        let scope = scope.filter(|scope| !scope.trim().is_empty());
        let token_endpoint = self.web.parse(&found.server.token_endpoint, "the token endpoint")?;
        let (client, tokens) = match self.options.grant {
            Grant::ClientCredentials => {
                let client = registration::machine(&found.server, &self.options)?;
                let tokens =
                    grant::client_credentials(&self.web, &client, &token_endpoint, &found.resource, scope.as_deref())
                        .await?;
                (client, tokens)
            }
            Grant::AuthorizationCode => self.in_browser(&found, &token_endpoint, scope.as_deref()).await?,
        };
        Ok(Credentials {
            issuer: found.issuer,
            token_endpoint: token_endpoint.to_string(),
            resource: found.resource,
            client,
            access_token: tokens.access,
            refresh_token: tokens.refresh,
            expires_at: tokens.expires_at,
            scope: tokens.scope,
        })
    }

    /// The authorization code grant: the user signs in in the browser.
    async fn in_browser(
        &self,
        found: &discovery::Discovered,
        token_endpoint: &Url,
        scope: Option<&str>,
    ) -> Result<(registration::Client, grant::Tokens), AuthError> {
        let offers_s256 = found
            .server
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|methods| methods.iter().any(|method| method == "S256"));
        if !offers_s256 {
            return Err(AuthError::NoPkce);
        }
        let endpoint = found.server.authorization_endpoint.as_deref().ok_or_else(|| {
            AuthError::Config("the authorization server's metadata names no authorization endpoint".into())
        })?;
        let authorization_endpoint = self.web.parse(endpoint, "the authorization endpoint")?;
        // A client registered here before, with this issuer, is used again on its port.
        let kept = lock(&self.held)
            .clone()
            .or_else(|| self.kept())
            .filter(|held| held.issuer == found.issuer && held.client.registered)
            .map(|held| held.client);
        let port = kept
            .as_ref()
            .and_then(|client| client.redirect_uri.as_deref())
            .and_then(|uri| Url::parse(uri).ok())
            .and_then(|uri| uri.port());
        let callback = callback::Callback::bind(port).await?;
        let redirect_uri = callback.redirect_uri();
        let client = registration::client(&self.web, &found.server, &self.options, &redirect_uri, kept).await?;
        let authorization =
            grant::authorization(&client, &authorization_endpoint, &redirect_uri, &found.resource, scope)?;
        self.asking.store(true, Ordering::Relaxed);
        // However the wait ends (signed in, refused, timed out, or dropped with its request).
        let _asked = Asked(&self.asking);
        let opened = (self.browser)(authorization.url.as_str());
        // Always told, to the host: the browser may not be where the user is.
        tracing::warn!(
            target: SIGN_IN_PROMPT,
            url = %authorization.url,
            browser_opened = opened,
            "{} asks you to sign in{}",
            self.shown,
            if opened { " (your browser was opened, or open the url)" } else { ": open the url in a browser" },
        );
        let code = callback.code(authorization.state.secret(), SIGN_IN_WAIT).await?;
        let tokens = grant::exchange_code(&self.web, &client, token_endpoint, authorization, code).await?;
        Ok((client, tokens))
    }

    /// Refreshes `held`'s tokens, keeping the new ones (and the new refresh token, when the
    /// server rotates it). Under the credentials file's lock, read again first: another process
    /// that refreshed meanwhile has spent `held`'s refresh token, and a server that detects
    /// reuse would revoke both processes' sign-ins if it were sent again.
    async fn refresh(&self, held: Credentials) -> Result<(), AuthError> {
        let locked = self.lock_store().await;
        let kept = locked.as_ref().and_then(|locked| match locked.get(&self.key) {
            Ok(kept) => kept,
            Err(error) => {
                tracing::warn!("the kept sign-ins cannot be read: {error}");
                None
            }
        });
        let held = match kept {
            Some(kept) if kept.refresh_token != held.refresh_token || kept.access_token != held.access_token => {
                if kept.access_token != held.access_token && !expiring(&kept) {
                    *lock(&self.held) = Some(kept);
                    return Ok(());
                }
                // Refreshed elsewhere, and about to expire again: refreshed with its newer token.
                kept
            }
            _ => held,
        };
        let refresh_token = held.refresh_token.as_deref().ok_or_else(|| AuthError::Token("no refresh token".into()))?;
        let token_endpoint = self.web.parse(&held.token_endpoint, "the token endpoint")?;
        let client = held.client.with_secret(&self.options)?;
        let tokens =
            grant::refresh(&self.web, &client, &token_endpoint, refresh_token, &held.resource, held.scope.as_deref())
                .await;
        let tokens = match tokens {
            Ok(tokens) => tokens,
            Err(error) => {
                // A refused refresh token is spent: forgotten, so the next refusal signs in
                // (and not taken again from the store, which still holds it).
                *lock(&self.held) = None;
                *lock(&self.spent) = Some(held.access_token);
                return Err(error);
            }
        };
        let credentials = Credentials {
            access_token: tokens.access,
            refresh_token: tokens.refresh,
            expires_at: tokens.expires_at,
            scope: tokens.scope,
            ..held
        };
        if let Some(locked) = &locked
            && let Err(error) = locked.put(&self.key, credentials.clone())
        {
            tracing::warn!("the sign-in to {} is kept for this run only: {error}", self.shown);
        }
        *lock(&self.held) = Some(credentials);
        Ok(())
    }

    /// The credentials file's lock, waited for on a thread of its own; `None` without a store,
    /// or when it cannot be had (said: the refresh goes on without it).
    async fn lock_store(&self) -> Option<StoreLock> {
        let store = self.store.clone()?;
        let waited = tokio::time::timeout(STORE_LOCK_WAIT, tokio::task::spawn_blocking(move || store.lock())).await;
        let why = match waited {
            Ok(Ok(Ok(locked))) => return Some(locked),
            Ok(Ok(Err(error))) => error.to_string(),
            Ok(Err(error)) => error.to_string(),
            Err(_) => format!("another process held it for {}s", STORE_LOCK_WAIT.as_secs()),
        };
        tracing::warn!("refreshing the sign-in to {} without the credentials file's lock: {why}", self.shown);
        None
    }

    /// What the store holds for this server (another process may have signed in).
    fn kept(&self) -> Option<Credentials> {
        self.store.as_ref()?.get(&self.key).ok().flatten()
    }

    /// Holds `credentials` for this run, and keeps them in the store; whether the store took
    /// them.
    fn keep(&self, credentials: Credentials) -> Result<(), StoreError> {
        let kept = match &self.store {
            Some(store) => store.put(&self.key, credentials.clone()),
            None => Ok(()),
        };
        *lock(&self.held) = Some(credentials);
        kept
    }
}

/// Whether `credentials`' access token expires within [`EXPIRY_MARGIN`].
fn expiring(credentials: &Credentials) -> bool {
    credentials.expires_at.is_some_and(|at| at <= now() + EXPIRY_MARGIN)
}

/// Clears [`SignIn::asking_the_user`] when the browser sign-in it was set for ends.
struct Asked<'a>(&'a AtomicBool);

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

/// The scopes of `a` and then those of `b` not in `a`, space-separated.
fn union(a: &str, b: &str) -> String {
    let mut scopes: Vec<&str> = a.split_whitespace().collect();
    for scope in b.split_whitespace() {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    scopes.join(" ")
}
