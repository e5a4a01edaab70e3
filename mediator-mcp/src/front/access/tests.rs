//! The front as a protected resource against an authorization server of the tests' own on
//! 127.0.0.1: its metadata and key set served by axum, its tokens signed with keys made fresh
//! for each test (aws-lc-rs, as jsonwebtoken's backend). The end-to-end tests
//! (`tests/gateway_access.rs`) take tokens from a real one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use super::keys::IssuerKeys;
use super::*;
use crate::proxy::ServerSpec;
use crate::router::LinkSettings;
use crate::servers::{Scope, View, ViewedServer};

/// A key the test issuer signs with, and the public JWK it publishes for it.
pub(crate) struct SigningKey {
    kid: String,
    algorithm: Algorithm,
    private: EncodingKey,
    public: Value,
}

impl SigningKey {
    pub(crate) fn es256(kid: &str) -> SigningKey {
        use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
        SigningKey::of(kid, Algorithm::ES256, EncodingKey::from_ec_der(pair.to_pkcs8v1().unwrap().as_ref()))
    }

    pub(crate) fn ed25519(kid: &str) -> SigningKey {
        let pair = aws_lc_rs::signature::Ed25519KeyPair::generate().unwrap();
        SigningKey::of(kid, Algorithm::EdDSA, EncodingKey::from_ed_der(pair.to_pkcs8v1().unwrap().as_ref()))
    }

    fn of(kid: &str, algorithm: Algorithm, private: EncodingKey) -> SigningKey {
        let mut public = Jwk::from_encoding_key(&private, algorithm).unwrap();
        public.common.key_id = Some(kid.to_owned());
        let public = serde_json::to_value(public).unwrap();
        SigningKey { kid: kid.to_owned(), algorithm, private, public }
    }

    /// `claims`, signed.
    pub(crate) fn sign(&self, claims: &Value) -> String {
        self.sign_with(claims, |_| {})
    }

    /// `claims`, signed under the usual header as `change` changes it.
    fn sign_with(&self, claims: &Value, change: impl FnOnce(&mut Header)) -> String {
        let mut header =
            Header { kid: Some(self.kid.clone()), typ: Some("at+jwt".into()), ..Header::new(self.algorithm) };
        change(&mut header);
        jsonwebtoken::encode(&header, claims, &self.private).unwrap()
    }
}

/// An authorization server's metadata and key set on 127.0.0.1; counts the key set's fetches.
pub(crate) struct TestIssuer {
    pub(crate) issuer: String,
    published: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl TestIssuer {
    /// Publishing `keys`, its metadata at `metadata_path` (an RFC 8414 or OpenID well-known
    /// path), naming itself `names_itself` when given.
    pub(crate) async fn start(keys: &[&SigningKey]) -> TestIssuer {
        TestIssuer::serving("/.well-known/oauth-authorization-server", keys, None).await
    }

    async fn serving(metadata_path: &str, keys: &[&SigningKey], names_itself: Option<&str>) -> TestIssuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let published = Arc::new(Mutex::new(keys.iter().map(|key| key.public.clone()).collect::<Vec<_>>()));
        let fetches = Arc::new(AtomicUsize::new(0));
        let metadata = json!({
            "issuer": names_itself.unwrap_or(&issuer),
            "jwks_uri": format!("{issuer}/jwks"),
            "token_endpoint": format!("{issuer}/token"),
        });
        let (served, counted) = (published.clone(), fetches.clone());
        let app = axum::Router::new()
            .route(metadata_path, axum::routing::get(move || async move { axum::Json(metadata) }))
            .route(
                "/jwks",
                axum::routing::get(move || {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let keys = served.lock().unwrap().clone();
                    async move { axum::Json(json!({"keys": keys})) }
                }),
            );
        let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        TestIssuer { issuer, published, fetches, task }
    }

    /// Publishes `keys` instead: the issuer rotated its keys.
    pub(crate) fn publish(&self, keys: &[&SigningKey]) {
        *self.published.lock().unwrap() = keys.iter().map(|key| key.public.clone()).collect();
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    /// The claims of a token of this issuer for `audience`, valid for `lifetime` seconds from
    /// now (negative: expired that long ago).
    pub(crate) fn claims(&self, audience: &str, lifetime: i64) -> Value {
        let now = jsonwebtoken::get_current_timestamp() as i64;
        json!({"iss": self.issuer, "aud": audience, "sub": "ada", "iat": now, "exp": now + lifetime})
    }
}

impl Drop for TestIssuer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const AUDIENCE: &str = "http://127.0.0.1:9/mcp";

fn resource(issuer: &TestIssuer) -> ProtectedResource {
    let options = OAuthOptions {
        view_claim: Some("view".into()),
        clock_skew: Duration::from_secs(5),
        ..OAuthOptions::new(&issuer.issuer, AUDIENCE).unwrap()
    };
    ProtectedResource::new(options).unwrap()
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

#[tokio::test]
async fn a_token_the_issuer_signed_for_this_resource_is_taken() {
    let (es, ed) = (SigningKey::es256("es"), SigningKey::ed25519("ed"));
    let issuer = TestIssuer::start(&[&es, &ed]).await;
    let resource = resource(&issuer);
    let mut claims = issuer.claims(AUDIENCE, 300);
    claims["view"] = json!("team-a");
    let caller = resource.admit(Some(&bearer(&es.sign(&claims)))).await.unwrap();
    assert_eq!(caller, Caller { subject: Some("ada".into()), view: Some("team-a".into()) });
    // An audience among several, and the other key.
    claims["aud"] = json!(["https://other.example/api", AUDIENCE]);
    assert!(resource.admit(Some(&bearer(&ed.sign(&claims)))).await.is_ok());
    // The scheme's case does not matter.
    assert!(resource.admit(Some(&format!("bearer {}", es.sign(&claims)))).await.is_ok());
    assert_eq!(issuer.fetches(), 1, "the keys are fetched once and kept");
}

#[tokio::test]
async fn expired_foreign_tampered_and_unsigned_tokens_are_refused() {
    let key = SigningKey::es256("es");
    let issuer = TestIssuer::start(&[&key]).await;
    let resource = resource(&issuer);
    let refused = |why: &'static str| Err(Refusal::InvalidToken(why));
    let good = issuer.claims(AUDIENCE, 300);
    let with = |name: &str, value: Value| {
        let mut claims = good.clone();
        claims[name] = value;
        key.sign(&claims)
    };

    // Expired longer ago than the clock skew allows; not valid yet.
    let expired = key.sign(&issuer.claims(AUDIENCE, -60));
    assert_eq!(resource.admit(Some(&bearer(&expired))).await, refused("the token has expired"));
    let now = jsonwebtoken::get_current_timestamp();
    let early = with("nbf", json!(now + 600));
    assert_eq!(resource.admit(Some(&bearer(&early))).await, refused("the token is not valid yet"));
    // Within the skew, an expiry just past is still taken.
    let just = key.sign(&issuer.claims(AUDIENCE, -2));
    assert!(resource.admit(Some(&bearer(&just))).await.is_ok());

    // Made for another resource, by another issuer, or missing what it must say.
    let foreign = with("aud", json!("http://127.0.0.1:9/other"));
    assert_eq!(resource.admit(Some(&bearer(&foreign))).await, refused("the token is for another resource"));
    let elsewhere = with("iss", json!("https://evil.example"));
    assert_eq!(resource.admit(Some(&bearer(&elsewhere))).await, refused("the token is from another issuer"));
    let mut bare = good.clone();
    bare.as_object_mut().unwrap().remove("aud");
    let unaimed = key.sign(&bare);
    assert_eq!(
        resource.admit(Some(&bearer(&unaimed))).await,
        refused("the token lacks a claim it must have (exp, iss, aud)")
    );

    // Tampered: the claims changed under the signature, or the signature itself.
    let token = key.sign(&good);
    let [head, _, signature]: [&str; 3] = token.split('.').collect::<Vec<_>>().try_into().unwrap();
    let mut claims = good.clone();
    claims["sub"] = json!("root");
    let forged_claims = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string());
    let tampered = format!("{head}.{forged_claims}.{signature}");
    let not_signed = refused("the token is not signed by a key of the issuer");
    assert_eq!(resource.admit(Some(&bearer(&tampered))).await, not_signed);
    let mut flipped = signature.as_bytes().to_vec();
    flipped[10] = if flipped[10] == b'A' { b'B' } else { b'A' };
    let flipped = format!("{head}.{}.{}", token.split('.').nth(1).unwrap(), String::from_utf8(flipped).unwrap());
    assert_eq!(resource.admit(Some(&bearer(&flipped))).await, not_signed);

    // `alg: none`, and HS256 keyed with the public key (the classic confusion): never taken.
    let encode = |value: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string());
    let payload = encode(good.clone());
    let none = format!("{}.{payload}.", encode(json!({"alg": "none", "typ": "JWT"})));
    assert_eq!(resource.admit(Some(&bearer(&none))).await, refused("the token is not a JWT"));
    let secret = EncodingKey::from_secret(key.public.to_string().as_bytes());
    let hmac =
        jsonwebtoken::encode(&Header { kid: Some("es".into()), ..Header::new(Algorithm::HS256) }, &good, &secret);
    assert_eq!(
        resource.admit(Some(&bearer(&hmac.unwrap()))).await,
        refused("the token is not signed with an algorithm taken here")
    );

    // Signed by a key the issuer does not publish.
    let stranger = SigningKey::es256("es").sign(&good);
    assert_eq!(resource.admit(Some(&bearer(&stranger))).await, not_signed);

    // No token, or not a bearer one.
    assert_eq!(resource.admit(None).await, Err(Refusal::NoToken));
    assert_eq!(
        resource.admit(Some("Basic YWxpY2U6c2VjcmV0")).await,
        refused("the Authorization header is not a bearer token")
    );
    assert_eq!(resource.admit(Some(&bearer("not-a-jwt"))).await, refused("the token is not a JWT"));
}

#[tokio::test]
async fn a_token_of_another_type_with_critical_extensions_or_without_a_subject_is_refused() {
    let key = SigningKey::es256("es");
    let issuer = TestIssuer::start(&[&key]).await;
    let resource = resource(&issuer);
    let good = issuer.claims(AUDIENCE, 300);
    let refused = |why: &'static str| Err(Refusal::InvalidToken(why));

    // RFC 9068 §4: an access token says so in its type; an ID token ("JWT") or one that says
    // nothing is not one.
    let typed = |typ: Option<&str>| key.sign_with(&good, |header| header.typ = typ.map(str::to_owned));
    assert!(resource.admit(Some(&bearer(&typed(Some("application/at+jwt"))))).await.is_ok());
    assert!(resource.admit(Some(&bearer(&typed(Some("AT+JWT"))))).await.is_ok(), "a media type's case");
    for other in [Some("JWT"), Some("id_token+jwt"), None] {
        assert_eq!(
            resource.admit(Some(&bearer(&typed(other)))).await,
            refused("the token is not an access token (its typ is not at+jwt)"),
            "{other:?}"
        );
    }

    // RFC 7515 §4.1.11: an extension marked critical that is not understood here (none is).
    let critical = key.sign_with(&good, |header| header.crit = Some(vec!["exp".into()]));
    assert_eq!(
        resource.admit(Some(&bearer(&critical))).await,
        refused("the token has critical header parameters this resource does not understand")
    );

    // RFC 9068 §2.2: `sub` is required; two tokens without one would share a session.
    let mut anonymous = good.clone();
    anonymous.as_object_mut().unwrap().remove("sub");
    assert_eq!(
        resource.admit(Some(&bearer(&key.sign(&anonymous)))).await,
        refused("the token lacks a claim it must have (sub)")
    );
    anonymous["sub"] = json!("");
    assert_eq!(
        resource.admit(Some(&bearer(&key.sign(&anonymous)))).await,
        refused("the token lacks a claim it must have (sub)")
    );
}

#[tokio::test]
async fn an_unknown_key_id_fetches_the_keys_again_at_most_every_while() {
    let (old, new) = (SigningKey::es256("old"), SigningKey::es256("new"));
    let issuer = TestIssuer::start(&[&old]).await;
    let resource = resource(&issuer);
    let claims = issuer.claims(AUDIENCE, 300);
    assert!(resource.admit(Some(&bearer(&old.sign(&claims)))).await.is_ok());
    // The issuer rotates; within the refetch interval, tokens with made-up or new ids cost
    // nothing but their refusal.
    issuer.publish(&[&old, &new]);
    for _ in 0..5 {
        assert!(resource.admit(Some(&bearer(&new.sign(&claims)))).await.is_err());
    }
    assert_eq!(issuer.fetches(), 1, "no fetch within the interval");

    // Past it, the new key is fetched and taken.
    let url = Url::parse(&issuer.issuer).unwrap();
    let keys = IssuerKeys::refetched_every(url, Duration::from_millis(200)).unwrap();
    let options = OAuthOptions::new(&issuer.issuer, AUDIENCE).unwrap();
    issuer.publish(&[&old]);
    assert!(token::verify(&options, &keys, &old.sign(&claims)).await.is_ok());
    issuer.publish(&[&old, &new]);
    assert!(token::verify(&options, &keys, &new.sign(&claims)).await.is_err(), "too soon");
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(token::verify(&options, &keys, &new.sign(&claims)).await.is_ok(), "fetched again");
    assert_eq!(issuer.fetches(), 3);
}

#[tokio::test]
async fn keys_are_found_through_openid_discovery_and_only_under_the_issuers_own_name() {
    let key = SigningKey::es256("es");
    let openid = TestIssuer::serving("/.well-known/openid-configuration", &[&key], None).await;
    let claims = openid.claims(AUDIENCE, 300);
    assert!(resource(&openid).admit(Some(&bearer(&key.sign(&claims)))).await.is_ok());

    // Metadata that names another issuer would have the front take that issuer's tokens.
    let impostor =
        TestIssuer::serving("/.well-known/oauth-authorization-server", &[&key], Some("https://evil.example")).await;
    let claims = impostor.claims(AUDIENCE, 300);
    let refused = resource(&impostor).admit(Some(&bearer(&key.sign(&claims)))).await;
    assert!(matches!(&refused, Err(Refusal::Unavailable(why)) if why.contains("another issuer")), "{refused:?}");
}

#[tokio::test]
async fn an_issuer_out_of_reach_makes_tokens_uncheckable_not_invalid() {
    let key = SigningKey::es256("es");
    let issuer = TestIssuer::start(&[&key]).await;
    let claims = issuer.claims(AUDIENCE, 300);
    let resource = resource(&issuer);
    drop(issuer);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let refused = resource.admit(Some(&bearer(&key.sign(&claims)))).await;
    assert!(matches!(refused, Err(Refusal::Unavailable(_))), "{refused:?}");
}

#[test]
fn the_metadata_and_the_challenge_point_at_each_other() {
    let options = OAuthOptions::new("https://auth.example.com", "https://mcp.example.com/team/mcp").unwrap();
    let resource = ProtectedResource::new(options).unwrap();
    assert_eq!(
        resource.metadata(),
        json!({
            "resource": "https://mcp.example.com/team/mcp",
            "authorization_servers": ["https://auth.example.com"],
            "bearer_methods_supported": ["header"],
            "resource_name": "tool-mediator gateway",
        })
    );
    let metadata = r#"resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/team/mcp""#;
    assert_eq!(resource.challenge(&Refusal::NoToken), format!("Bearer {metadata}"));
    assert_eq!(
        resource.challenge(&Refusal::InvalidToken("the token has expired")),
        format!(r#"Bearer error="invalid_token", error_description="the token has expired", {metadata}"#)
    );
    assert!(OAuthOptions::new("http://auth.example.com", AUDIENCE).is_err(), "an issuer elsewhere over HTTP");
    assert!(OAuthOptions::new("https://auth.example.com", "mcp-gateway").is_err(), "an audience that is no URL");
}

fn spec(name: &str, include: Option<&[&str]>, exclude: &[&str]) -> ServerSpec {
    let settings = LinkSettings {
        name: name.into(),
        include: include.map(|names| names.iter().map(|name| name.to_string()).collect()),
        exclude: exclude.iter().map(|name| name.to_string()).collect(),
        ..LinkSettings::default()
    };
    ServerSpec { settings, start: Arc::new(|| None), scope: Scope::Shared, entry: None }
}

/// A server a view shows: its name, what the view includes of it, what it excludes.
type Narrowed<'a> = (&'a str, Option<&'a [&'a str]>, &'a [&'a str]);

fn view(name: &str, servers: &[Narrowed<'_>]) -> View {
    let servers = servers
        .iter()
        .map(|(name, include, exclude)| ViewedServer {
            name: name.to_string(),
            include: include.map(|names| names.iter().map(|name| name.to_string()).collect()),
            exclude: exclude.iter().map(|name| name.to_string()).collect(),
        })
        .collect();
    View { name: name.into(), servers }
}

#[test]
fn a_view_shows_its_servers_narrowed_on_top_of_their_own_settings() {
    let servers =
        [spec("git", Some(&["log", "diff", "push"]), &["push"]), spec("time", None, &[]), spec("files", None, &["rm"])];
    let narrowed =
        view("readers", &[("files", Some(&["read"]), &[]), ("git", Some(&["log", "push", "blame"]), &["diff"])]);
    let seen = seen_through(&narrowed, &servers);
    let names: Vec<&str> = seen.iter().map(|server| server.settings.name.as_str()).collect();
    assert_eq!(names, ["git", "files"], "the file's order; time is not in the view");
    assert_eq!(seen[0].settings.include.as_deref(), Some(&["log".to_owned(), "push".to_owned()][..]));
    assert_eq!(seen[0].settings.exclude, ["push", "diff"], "both excludes");
    assert_eq!(seen[1].settings.include.as_deref(), Some(&["read".to_owned()][..]));
    assert_eq!(seen[1].settings.exclude, ["rm"]);
}

#[test]
fn a_claim_is_the_only_say_and_a_path_or_header_only_a_convenience() {
    let servers = [spec("a", None, &[]), spec("b", None, &[])];
    let views = [view("one", &[("a", None, &[])]), view("two", &[("b", None, &[])])];
    let open = Views::new(&views, &servers, Some("X-MCP-View"), false);
    assert_eq!(open.header(), Some("x-mcp-view"));
    assert_eq!(open.choose(None, None, None), Choice::Everything);
    assert_eq!(open.choose(None, Some("one"), None), Choice::View("one".into()));
    assert_eq!(open.choose(None, None, Some("two")), Choice::View("two".into()));
    assert_eq!(open.choose(None, Some("one"), Some("one")), Choice::View("one".into()));
    assert!(matches!(open.choose(None, Some("one"), Some("two")), Choice::Forbidden(_)));
    assert_eq!(open.choose(None, Some("three"), None), Choice::Unknown);
    assert_eq!(open.choose(Some("two"), Some("one"), None), Choice::View("one".into()), "no claim is read");
    assert_eq!(open.servers("one").map(<[ServerSpec]>::len), Some(1));

    let claimed = Views::new(&views, &servers, Some("x-mcp-view"), true);
    assert_eq!(claimed.choose(Some("two"), None, None), Choice::View("two".into()));
    assert_eq!(claimed.choose(Some("two"), Some("two"), Some("two")), Choice::View("two".into()));
    assert_eq!(claimed.choose(Some("two"), Some("one"), None), Choice::Forbidden("the token's view is another"));
    assert_eq!(claimed.choose(Some("two"), None, Some("one")), Choice::Forbidden("the token's view is another"));
    assert_eq!(claimed.choose(None, Some("one"), None), Choice::Forbidden("the token names no view"));
    assert_eq!(claimed.choose(Some("three"), None, None), Choice::Forbidden("the token's view is not served here"));

    // Without a header configured, a header is not read.
    let pathed = Views::new(&views, &servers, None, false);
    assert_eq!(pathed.choose(None, None, Some("two")), Choice::Everything);
}
