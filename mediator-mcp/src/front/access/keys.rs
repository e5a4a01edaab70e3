//! The issuer's signing keys: where they are found (its metadata's `jwks_uri`, RFC 8414, or
//! OpenID Connect discovery), fetched as every answer from outside is (a time and a size limit,
//! no redirect followed, HTTPS unless on this machine), and kept. A token signed with a key not
//! held makes them fetched again (an issuer rotates its keys), at most once every
//! [`REFETCH`], so tokens with made-up key ids cannot make the front hammer the issuer.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, KeyAlgorithm, PublicKeyUse};
use reqwest::Url;
use serde::Deserialize;

use tool_mediator_core::sync::lock;

/// The keys are fetched again for a key id not held at most this often.
pub(super) const REFETCH: Duration = Duration::from_secs(30);
/// After a fetch that failed, the next may come this soon: an issuer that was down for a moment
/// should not shut every client out for long.
const RETRY: Duration = Duration::from_secs(5);
/// An issuer's metadata or key set is read up to this size.
const ANSWER_LIMIT: u64 = 256 * 1024;

/// Why no key can check a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum KeyError {
    /// The issuer has no key for it (none with its id, none for its algorithm).
    Unknown,
    /// The keys cannot be had now.
    Unavailable(String),
}

/// The issuer's keys, fetched when first needed and again when a token names one not held.
pub(super) struct IssuerKeys {
    issuer: Url,
    http: reqwest::Client,
    /// [`REFETCH`], but for tests.
    refetch: Duration,
    held: Mutex<Held>,
    /// One fetch at a time; those who wait for it read what it brought.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Held {
    keys: Vec<Jwk>,
    /// The issuer as its metadata names itself.
    issued_as: Option<String>,
    /// When the last fetch was tried, and whether it brought the keys.
    tried: Option<(Instant, bool)>,
}

/// A JWK set (RFC 7517 §5), each key read on its own.
#[derive(Deserialize)]
struct KeySet {
    keys: Vec<serde_json::Value>,
}

/// The parts of an authorization server's metadata the front uses.
#[derive(Deserialize)]
struct Metadata {
    issuer: Option<String>,
    jwks_uri: Option<String>,
}

impl IssuerKeys {
    pub(super) fn new(issuer: Url) -> Result<IssuerKeys, reqwest::Error> {
        IssuerKeys::refetched_every(issuer, REFETCH)
    }

    /// Keys fetched again for an unknown key id at most every `refetch`.
    pub(super) fn refetched_every(issuer: Url, refetch: Duration) -> Result<IssuerKeys, reqwest::Error> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .build()?;
        let (held, fetching) = (Mutex::new(Held::default()), tokio::sync::Mutex::new(()));
        Ok(IssuerKeys { issuer, http, refetch, held, fetching })
    }

    /// The keys that may have signed a token of `algorithm` naming `kid` (any of the issuer's
    /// fit for the algorithm when it names none), fetched when none held fits.
    pub(super) async fn candidates(&self, kid: Option<&str>, algorithm: Algorithm) -> Result<Vec<Jwk>, KeyError> {
        let found = lock(&self.held).fitting(kid, algorithm);
        if !found.is_empty() {
            return Ok(found);
        }
        let _fetching = self.fetching.lock().await;
        // Another request may have fetched them while this one waited.
        let tried = {
            let held = lock(&self.held);
            let found = held.fitting(kid, algorithm);
            if !found.is_empty() {
                return Ok(found);
            }
            held.tried
        };
        match tried {
            Some((at, true)) if at.elapsed() < self.refetch => return Err(KeyError::Unknown),
            Some((at, false)) if at.elapsed() < RETRY => {
                return Err(KeyError::Unavailable("the issuer's keys could not be fetched a moment ago".into()));
            }
            _ => {}
        }
        let fetched = self.fetch().await;
        let mut held = lock(&self.held);
        match fetched {
            Ok((keys, issued_as)) => {
                tracing::info!(
                    "{} of the issuer {} fetched",
                    tool_mediator::counted(keys.len(), "key", "keys"),
                    self.issuer
                );
                held.keys = keys;
                held.issued_as = issued_as;
                held.tried = Some((Instant::now(), true));
            }
            Err(error) => {
                held.tried = Some((Instant::now(), false));
                tracing::warn!("cannot fetch the keys of the issuer {}: {error}", self.issuer);
                return Err(KeyError::Unavailable(error));
            }
        }
        let found = held.fitting(kid, algorithm);
        if found.is_empty() { Err(KeyError::Unknown) } else { Ok(found) }
    }

    /// The issuer as its metadata names itself, once fetched.
    pub(super) fn issued_as(&self) -> Option<String> {
        lock(&self.held).issued_as.clone()
    }

    /// The issuer's key set, found through its metadata; and the issuer its metadata names.
    async fn fetch(&self) -> Result<(Vec<Jwk>, Option<String>), String> {
        let mut metadata = None;
        for url in crate::upstream::auth::server_metadata_urls(&self.issuer) {
            if let Some(found) = self.get_json::<Metadata>(&url).await? {
                metadata = Some(found);
                break;
            }
        }
        let metadata = metadata.ok_or("no authorization server metadata at the issuer's well-known paths")?;
        // Metadata under another issuer's name would have the front take that issuer's tokens.
        if let Some(named) = &metadata.issuer
            && named.trim_end_matches('/') != self.issuer.as_str().trim_end_matches('/')
        {
            return Err(format!("its metadata names another issuer, `{named}`"));
        }
        let jwks_uri = metadata.jwks_uri.ok_or("its metadata names no jwks_uri")?;
        let jwks_url = Url::parse(&jwks_uri).map_err(|error| format!("its jwks_uri `{jwks_uri}`: {error}"))?;
        if !crate::upstream::auth::is_secure(&jwks_url) {
            return Err(format!("its jwks_uri {} is not HTTPS", tool_mediator::http::shown(&jwks_url)));
        }
        let set = self
            .get_json::<KeySet>(&jwks_url)
            .await?
            .ok_or_else(|| format!("no key set at {}", tool_mediator::http::shown(&jwks_url)))?;
        // A key of a kind not known here is passed over, not a reason to take none.
        let keys = set.keys.into_iter().filter_map(|key| serde_json::from_value::<Jwk>(key).ok()).collect();
        Ok((keys, metadata.issuer))
    }

    /// A JSON document at `url`; `None` when there is none there (4xx, or a redirect).
    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &Url) -> Result<Option<T>, String> {
        let shown = tool_mediator::http::shown(url);
        let response = self
            .http
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| format!("{shown}: {}", error.without_url()))?;
        let status = response.status();
        if status.is_client_error() || status.is_redirection() {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(format!("{shown}: HTTP {status}"));
        }
        let body = tool_mediator::http::read_limited(response, ANSWER_LIMIT)
            .await
            .map_err(|error| format!("{shown}: {error}"))?;
        serde_json::from_slice(&body).map(Some).map_err(|error| format!("{shown}: not the JSON expected: {error}"))
    }
}

impl Held {
    fn fitting(&self, kid: Option<&str>, algorithm: Algorithm) -> Vec<Jwk> {
        self.keys.iter().filter(|key| fits(key, kid, algorithm)).cloned().collect()
    }
}

/// Whether `key` may have signed a token of `algorithm` naming `kid`: its id (when the token
/// names one), its type, and what the key says of itself (`alg`, `use`) all agree.
fn fits(key: &Jwk, kid: Option<&str>, algorithm: Algorithm) -> bool {
    if kid.is_some() && key.common.key_id.as_deref() != kid {
        return false;
    }
    if key.common.public_key_use.as_ref().is_some_and(|usage| *usage != PublicKeyUse::Signature) {
        return false;
    }
    if let Some(stated) = key.common.key_algorithm
        && key_algorithm(stated) != Some(algorithm)
    {
        return false;
    }
    match (&key.algorithm, algorithm) {
        (AlgorithmParameters::RSA(_), Algorithm::RS256 | Algorithm::PS256) => true,
        (AlgorithmParameters::EllipticCurve(curve), Algorithm::ES256) => {
            curve.curve == jsonwebtoken::jwk::EllipticCurve::P256
        }
        (AlgorithmParameters::OctetKeyPair(pair), Algorithm::EdDSA) => {
            pair.curve == jsonwebtoken::jwk::EllipticCurve::Ed25519
        }
        _ => false,
    }
}

/// The signing algorithm a JWK's `alg` names, among those the front takes.
fn key_algorithm(stated: KeyAlgorithm) -> Option<Algorithm> {
    match stated {
        KeyAlgorithm::RS256 => Some(Algorithm::RS256),
        KeyAlgorithm::PS256 => Some(Algorithm::PS256),
        KeyAlgorithm::ES256 => Some(Algorithm::ES256),
        KeyAlgorithm::EdDSA => Some(Algorithm::EdDSA),
        _ => None,
    }
}
