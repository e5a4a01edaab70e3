//! Signing in against an authorization server and a protected MCP server on 127.0.0.1: the
//! whole flow (discovery, registration, PKCE, the loopback redirect), refreshing with a rotated
//! refresh token, signing in again once the refresh token is revoked, following metadata that
//! changed, and refusing to make a token for a resource that is not the server.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use serde_json::{Value, json};
use sha2::Digest as _;
use tool_mediator_mcp::auth::{AuthError, Challenge, CredentialStore, SignIn, SignInOptions};

#[derive(Default)]
struct World {
    base: String,
    /// Where the resource metadata says to sign in: "" (the root) or "/as2".
    issuer_path: String,
    /// A `resource` the metadata names instead of the server's own URL.
    resource_override: Option<String>,
    challenges: HashMap<String, String>,
    access: HashSet<String>,
    refresh: HashSet<String>,
    issued: u32,
    authorizations: Vec<String>,
    token_resources: Vec<String>,
}

type Shared = Arc<Mutex<World>>;

async fn start() -> (Shared, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let world = Arc::new(Mutex::new(World { base: base.clone(), ..World::default() }));
    let app = Router::new()
        .route("/.well-known/oauth-protected-resource/mcp", get(resource_metadata))
        .route("/.well-known/oauth-authorization-server", get(server_metadata))
        .route("/.well-known/oauth-authorization-server/as2", get(server_metadata))
        .route("/register", post(register))
        .route("/as2/register", post(register))
        .route("/authorize", get(authorize))
        .route("/as2/authorize", get(authorize))
        .route("/token", post(token))
        .route("/as2/token", post(token))
        .route("/mcp", post(mcp))
        .with_state(world.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (world, format!("{base}/mcp"))
}

async fn resource_metadata(State(world): State<Shared>) -> Json<Value> {
    let world = world.lock().unwrap();
    let resource = world.resource_override.clone().unwrap_or_else(|| format!("{}/mcp", world.base));
    Json(json!({"resource": resource, "authorization_servers": [format!("{}{}", world.base, world.issuer_path)]}))
}

async fn server_metadata(State(world): State<Shared>, headers: HeaderMap, uri: axum::http::Uri) -> Json<Value> {
    let _ = headers;
    let world = world.lock().unwrap();
    let issuer = format!("{}{}", world.base, uri.path().trim_start_matches("/.well-known/oauth-authorization-server"));
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    }))
}

async fn register(Json(request): Json<Value>) -> (StatusCode, Json<Value>) {
    (StatusCode::CREATED, Json(json!({"client_id": "client-1", "redirect_uris": request["redirect_uris"]})))
}

async fn authorize(
    State(world): State<Shared>,
    uri: axum::http::Uri,
    Query(query): Query<HashMap<String, String>>,
) -> Redirect {
    let mut world = world.lock().unwrap();
    world.issued += 1;
    let code = format!("code-{}", world.issued);
    world.challenges.insert(code.clone(), query["code_challenge"].clone());
    world.authorizations.push(uri.path().to_owned());
    Redirect::to(&format!("{}?code={code}&state={}", query["redirect_uri"], query["state"]))
}

async fn token(State(world): State<Shared>, Form(form): Form<HashMap<String, String>>) -> Response {
    let mut world = world.lock().unwrap();
    world.token_resources.push(form.get("resource").cloned().unwrap_or_default());
    let refused = |error: &str| (StatusCode::BAD_REQUEST, Json(json!({"error": error}))).into_response();
    match form["grant_type"].as_str() {
        "authorization_code" => {
            let Some(challenge) = world.challenges.remove(&form["code"]) else { return refused("invalid_grant") };
            let digest = sha2::Sha256::digest(form["code_verifier"].as_bytes());
            if base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest) != challenge {
                return refused("invalid_grant");
            }
        }
        "refresh_token" => {
            // Rotated: a refresh token is good once.
            if !world.refresh.remove(&form["refresh_token"]) {
                return refused("invalid_grant");
            }
        }
        _ => return refused("unsupported_grant_type"),
    }
    world.issued += 1;
    let (access, refresh) = (format!("access-{}", world.issued), format!("refresh-{}", world.issued));
    world.access.insert(access.clone());
    world.refresh.insert(refresh.clone());
    // A token about to expire, so the next use refreshes it.
    Json(json!({"access_token": access, "token_type": "Bearer", "expires_in": 5, "refresh_token": refresh}))
        .into_response()
}

async fn mcp(State(world): State<Shared>, headers: HeaderMap) -> Response {
    let world = world.lock().unwrap();
    let token = headers.get(header::AUTHORIZATION).and_then(|value| value.to_str().ok()).unwrap_or("");
    if world.access.contains(token.trim_start_matches("Bearer ")) {
        return Json(json!({"jsonrpc": "2.0", "id": 0, "result": {}})).into_response();
    }
    let challenge = format!("Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"", world.base);
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, challenge)]).into_response()
}

/// A browser that follows the authorization URL and its redirects, as a user's would.
fn browser(url: &str) -> bool {
    let url = url.to_owned();
    tokio::spawn(async move {
        let _ = reqwest::get(url).await;
    });
    true
}

fn sign_in(server: &str, store: &CredentialStore) -> SignIn {
    SignIn::new(server.parse().unwrap(), SignInOptions::default(), Some(store.clone())).unwrap().with_browser(browser)
}

#[tokio::test]
async fn signs_in_refreshes_a_rotated_token_and_signs_in_again_once_the_refresh_is_revoked() {
    let (world, server) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = CredentialStore::at(dir.path().join("credentials.json"));
    let sign_in = sign_in(&server, &store);

    let signed = sign_in.login().await.unwrap();
    assert_eq!(signed.access_token, "access-2");
    assert_eq!(world.lock().unwrap().token_resources, [server.as_str()], "the resource indicator names the server");

    // About to expire: refreshed before use, and the rotated refresh token is the one kept.
    assert_eq!(sign_in.authorization().await.as_deref(), Some("Bearer access-3"));
    let kept = store.get(&SignIn::key(&server.parse().unwrap())).unwrap().unwrap();
    assert_eq!((kept.access_token.as_str(), kept.refresh_token.as_deref()), ("access-3", Some("refresh-3")));

    // The server revokes everything: the next refusal tries the refresh token, which is refused,
    // and signs in again in the browser.
    {
        let mut world = world.lock().unwrap();
        world.access.clear();
        world.refresh.clear();
    }
    let header = format!(
        "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
        server.trim_end_matches("/mcp")
    );
    let challenge = Challenge::of([header.as_str()]).unwrap();
    assert!(sign_in.refused(false, &challenge, Some("Bearer access-3")).await.unwrap());
    assert_eq!(world.lock().unwrap().authorizations.len(), 2);
    let kept = store.get(&SignIn::key(&server.parse().unwrap())).unwrap().unwrap();
    assert!(world.lock().unwrap().access.contains(&kept.access_token), "{kept:?}");
}

#[tokio::test]
async fn metadata_that_changed_is_followed_on_the_next_sign_in() {
    let (world, server) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = CredentialStore::at(dir.path().join("credentials.json"));
    let sign_in = sign_in(&server, &store);
    sign_in.login().await.unwrap();
    let used = sign_in.authorization().await;
    {
        let mut world = world.lock().unwrap();
        world.issuer_path = "/as2".into();
        world.access.clear();
        world.refresh.clear();
    }
    assert!(sign_in.refused(false, &Challenge::default(), used.as_deref()).await.unwrap());
    let world = world.lock().unwrap();
    assert_eq!(world.authorizations, ["/authorize", "/as2/authorize"]);
    let kept = store.get(&SignIn::key(&server.parse().unwrap())).unwrap().unwrap();
    assert!(kept.issuer.ends_with("/as2"), "{kept:?}");
}

#[tokio::test]
async fn no_token_is_made_for_a_resource_that_is_not_the_server() {
    let (world, server) = start().await;
    world.lock().unwrap().resource_override = Some("https://other.example/mcp".into());
    let dir = tempfile::tempdir().unwrap();
    let store = CredentialStore::at(dir.path().join("credentials.json"));
    let error = sign_in(&server, &store).login().await.unwrap_err();
    assert!(matches!(error, AuthError::ResourceMismatch { .. }), "{error}");
    let world = world.lock().unwrap();
    assert!(world.authorizations.is_empty() && world.token_resources.is_empty());
    assert!(store.all().unwrap().is_empty());
}

#[tokio::test]
async fn a_plain_http_server_elsewhere_is_never_given_a_token() {
    let error = SignIn::new("http://mcp.example.com/mcp".parse().unwrap(), SignInOptions::default(), None).unwrap_err();
    assert!(error.to_string().contains("not HTTPS"), "{error}");
}
