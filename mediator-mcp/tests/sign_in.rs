//! Signing in against an authorization server and a protected MCP server on 127.0.0.1: the
//! whole flow (discovery, registration, PKCE, the loopback redirect), refreshing with a rotated
//! refresh token, signing in again once the refresh token is revoked, following metadata that
//! changed, refusing to make a token for a resource that is not the server, and a gateway that
//! goes on serving while the user takes their time to sign in.

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
use tool_mediator_mcp::upstream::auth::{AuthError, Challenge, CredentialStore, SignIn, SignInOptions};

#[derive(Default)]
struct World {
    base: String,
    /// Where the resource metadata says to sign in: "" (the root) or "/as2".
    issuer_path: String,
    /// A `resource` the metadata names instead of the server's own URL.
    resource_override: Option<String>,
    /// The resource metadata leaves out `resource`, the authorization server's `issuer`.
    without_resource: bool,
    without_issuer: bool,
    challenges: HashMap<String, String>,
    access: HashSet<String>,
    refresh: HashSet<String>,
    issued: u32,
    authorizations: Vec<String>,
    token_resources: Vec<String>,
    /// `initialize` requests the protected server accepted.
    initializes: u32,
    /// Refresh tokens already used once: one used again revokes every token (reuse detection,
    /// as OAuth 2.1 §4.3.1 asks of a server that rotates them).
    spent: HashSet<String>,
    revocations: u32,
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
        .route("/open", post(open))
        .with_state(world.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (world, format!("{base}/mcp"))
}

async fn resource_metadata(State(world): State<Shared>) -> Json<Value> {
    let world = world.lock().unwrap();
    let resource = world.resource_override.clone().unwrap_or_else(|| format!("{}/mcp", world.base));
    let mut metadata =
        json!({"resource": resource, "authorization_servers": [format!("{}{}", world.base, world.issuer_path)]});
    if world.without_resource {
        metadata.as_object_mut().unwrap().remove("resource");
    }
    Json(metadata)
}

async fn server_metadata(State(world): State<Shared>, headers: HeaderMap, uri: axum::http::Uri) -> Json<Value> {
    let _ = headers;
    let world = world.lock().unwrap();
    let issuer = format!("{}{}", world.base, uri.path().trim_start_matches("/.well-known/oauth-authorization-server"));
    let mut metadata = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    });
    if world.without_issuer {
        metadata.as_object_mut().unwrap().remove("issuer");
    }
    Json(metadata)
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
            // Rotated: a refresh token is good once, and one used again revokes the family.
            let used = form["refresh_token"].clone();
            if !world.refresh.remove(&used) {
                if world.spent.contains(&used) {
                    world.access.clear();
                    world.refresh.clear();
                    world.revocations += 1;
                }
                return refused("invalid_grant");
            }
            world.spent.insert(used);
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

/// The protected MCP server: it answers a request with a token it issued, and refuses any other
/// with a challenge that says where to sign in.
async fn mcp(State(world): State<Shared>, headers: HeaderMap, Json(message): Json<Value>) -> Response {
    let mut world = world.lock().unwrap();
    let token = headers.get(header::AUTHORIZATION).and_then(|value| value.to_str().ok()).unwrap_or("");
    if world.access.contains(token.trim_start_matches("Bearer ")) {
        world.initializes += u32::from(message["method"] == "initialize");
        return serve("locked", &message);
    }
    let challenge = format!("Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"", world.base);
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, challenge)]).into_response()
}

/// An MCP server that asks nobody to sign in.
async fn open(Json(message): Json<Value>) -> Response {
    serve("open", &message)
}

/// What an MCP server named `name`, with one tool, answers `message`.
fn serve(name: &str, message: &Value) -> Response {
    let Some(id) = message.get("id") else { return StatusCode::ACCEPTED.into_response() };
    let result = match message["method"].as_str() {
        Some("initialize") => json!({
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": name, "version": "1"}
        }),
        Some("tools/list") => json!({"tools": [{
            "name": format!("{name}_status"), "description": format!("The status of the {name} service."),
            "inputSchema": {"type": "object"}
        }]}),
        Some("tools/call") => json!({"content": [{"type": "text", "text": format!("{name} is fine")}]}),
        _ => json!({}),
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// What a test's subscriber wrote.
#[derive(Clone, Default)]
struct Heard(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Heard {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Heard {
    type Writer = Heard;
    fn make_writer(&'a self) -> Heard {
        self.clone()
    }
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

    // The host hears the prompt as an event, with the address to open; nothing is printed.
    let heard = Heard::default();
    let subscriber = tracing_subscriber::fmt().with_writer(heard.clone()).with_ansi(false).finish();
    let guard = tracing::subscriber::set_default(subscriber);
    let signed = sign_in.login().await.unwrap();
    drop(guard);
    let heard = String::from_utf8(heard.0.lock().unwrap().clone()).unwrap();
    let prompt =
        heard.lines().find(|line| line.contains(tool_mediator_mcp::upstream::auth::SIGN_IN_PROMPT)).expect(&heard);
    assert!(prompt.contains("asks you to sign in (your browser was opened, or open the url)"), "{prompt}");
    assert!(prompt.contains("url=http://127.0.0.1:"), "{prompt}");
    assert!(prompt.contains("browser_opened=true"), "{prompt}");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_signed_in_to_one_server_do_not_revoke_each_others_sign_in() {
    let (world, server) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = CredentialStore::at(dir.path().join("credentials.json"));
    sign_in(&server, &store).login().await.unwrap();
    // Two runs started after the sign-in, each holding the same tokens (about to expire), as two
    // processes reading the credentials file at their start would.
    let (first, second) = (sign_in(&server, &store), sign_in(&server, &store));

    // Both refresh at once: one does, the other waits for it and uses what it got.
    let (a, b) = tokio::join!(first.authorization(), second.authorization());
    // One after the other: the second still holds the refresh token the first has spent.
    let c = first.authorization().await;
    let d = second.authorization().await;

    let world = world.lock().unwrap();
    assert_eq!(world.revocations, 0, "a spent refresh token was used again");
    for used in [a, b, c, d] {
        let used = used.expect("signed in");
        assert!(world.access.contains(used.trim_start_matches("Bearer ")), "{used} is still good");
    }
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
async fn metadata_without_its_resource_or_its_issuer_is_refused() {
    for missing in ["resource", "issuer"] {
        let (world, server) = start().await;
        {
            let mut world = world.lock().unwrap();
            world.without_resource = missing == "resource";
            world.without_issuer = missing == "issuer";
        }
        let dir = tempfile::tempdir().unwrap();
        let store = CredentialStore::at(dir.path().join("credentials.json"));
        let error = sign_in(&server, &store).login().await.expect_err(missing).to_string();
        assert!(error.contains(&format!("names no {missing}")), "{missing}: {error}");
        let world = world.lock().unwrap();
        assert!(world.authorizations.is_empty() && world.token_resources.is_empty(), "{missing}");
    }
}

#[tokio::test]
async fn a_plain_http_server_elsewhere_is_never_given_a_token() {
    let error = SignIn::new("http://mcp.example.com/mcp".parse().unwrap(), SignInOptions::default(), None).unwrap_err();
    assert!(error.to_string().contains("not HTTPS"), "{error}");
}

/// A client of the gateway over in-process pipes: what it writes, and each line it reads.
struct Client {
    input: tokio::io::DuplexStream,
    output: tokio::io::Lines<tokio::io::BufReader<tokio::io::DuplexStream>>,
}

impl Client {
    async fn send(&mut self, message: Value) {
        use tokio::io::AsyncWriteExt as _;
        self.input.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }

    /// The next message the gateway sends for which `wanted` holds (others are passed over).
    async fn next(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        let waiting = async {
            loop {
                let line = self.output.next_line().await.unwrap().expect("the gateway ended");
                let message: Value = serde_json::from_str(&line).unwrap();
                if wanted(&message) {
                    return message;
                }
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), waiting).await.expect("in time")
    }

    async fn ask(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        self.next(|message| message["id"] == id).await
    }

    async fn tool_names(&mut self, id: u64) -> Vec<String> {
        let listed = self.ask(id, "tools/list", json!({})).await;
        let tools = listed["result"]["tools"].as_array().cloned().unwrap_or_default();
        tools.iter().filter_map(|tool| tool["name"].as_str().map(str::to_owned)).collect()
    }
}

#[tokio::test]
async fn a_gateway_serves_on_while_the_user_signs_in_and_lists_the_tools_once_they_have() {
    use tool_mediator_mcp::upstream::remote::Remote;
    use tool_mediator_mcp::{LinkSettings, ProxyOptions, ServerSpec, Upstream};

    let (world, server) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = CredentialStore::at(dir.path().join("credentials.json"));
    // A user who signs in well after the gateway's request timeout (1 s here).
    let slow_user = |url: &str| {
        let url = url.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_secs(6)).await;
            let _ = reqwest::get(url).await;
        });
        true
    };
    let sign_in = Arc::new(
        SignIn::new(server.parse().unwrap(), SignInOptions::default(), Some(store.clone()))
            .unwrap()
            .with_browser(slow_user),
    );
    let spec = |name: &str, url: String, sign_in: Option<Arc<SignIn>>| {
        let remote = Remote { url: url.parse().unwrap(), headers: Vec::new(), sign_in: sign_in.clone() };
        ServerSpec {
            settings: LinkSettings { name: name.to_owned(), sign_in, ..LinkSettings::default() },
            start: Arc::new(move || Some(Upstream::from(remote.clone()))),
            scope: tool_mediator_mcp::servers::Scope::Shared,
            entry: None,
        }
    };
    let servers = vec![
        spec("open", server.replace("/mcp", "/open"), None),
        spec("locked", server.clone(), Some(sign_in.clone())),
    ];
    let mut options = ProxyOptions::new(
        Arc::new(tool_mediator::Mediator::builder().build()),
        tool_mediator::session::SessionPolicy::default(),
    );
    options.request_timeout = std::time::Duration::from_secs(1);
    options.restart = Some(std::time::Duration::from_millis(100));
    let (input, gateway_in) = tokio::io::duplex(1 << 16);
    let (gateway_out, output) = tokio::io::duplex(1 << 16);
    let gateway = tokio::spawn(tool_mediator_mcp::serve(
        options,
        servers,
        tool_mediator_mcp::Client { input: gateway_in, output: gateway_out, gone: std::future::pending::<()>() },
    ));
    let mut client = Client { input, output: tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(output)) };

    // The handshake is answered without the server that waits for the user, whose tools are not
    // listed yet; the other's are, and work.
    let params =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    let answer = client.ask(1, "initialize", params).await;
    assert!(answer["result"]["protocolVersion"].is_string(), "{answer}");
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    assert!(sign_in.asking_the_user(), "the user is being asked to sign in");
    let names = client.tool_names(2).await;
    assert!(names.iter().any(|name| name.contains("open_status")), "{names:?}");
    assert!(!names.iter().any(|name| name.contains("locked_status")), "{names:?}");
    let open = names.iter().find(|name| name.contains("open_status")).unwrap().clone();
    let called = client.ask(3, "tools/call", json!({"name": open, "arguments": {}})).await;
    assert_eq!(called["result"]["content"][0]["text"], "open is fine", "{called}");

    // A call of a tool the client expects from it says what to do.
    let called = client.ask(4, "tools/call", json!({"name": "locked_status", "arguments": {}})).await;
    let message = called["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("asks you to sign in") && message.contains("auth login"), "{called}");
    assert!(!message.contains("state="), "the authorization address stays out of the model's context: {message}");

    // Once the user has signed in, its tools come, with a list_changed, and work.
    client.next(|message| message["method"] == "notifications/tools/list_changed").await;
    let names = client.tool_names(5).await;
    let locked = names.iter().find(|name| name.contains("locked_status")).expect("listed once signed in").clone();
    let called = client.ask(6, "tools/call", json!({"name": locked, "arguments": {}})).await;
    assert_eq!(called["result"]["content"][0]["text"], "locked is fine", "{called}");

    // One sign-in, one connection: the wait was not taken for a server that hangs.
    let world = world.lock().unwrap();
    assert_eq!((world.authorizations.len(), world.initializes), (1, 1));
    drop(client);
    gateway.abort();
}

#[tokio::test]
async fn a_call_refused_once_signed_in_is_answered_at_once_with_how_to_sign_in() {
    use tool_mediator_mcp::upstream::remote::Remote;
    use tool_mediator_mcp::{LinkSettings, ProxyOptions, ServerSpec, Upstream};

    let (world, server) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = CredentialStore::at(dir.path().join("credentials.json"));
    sign_in(&server, &store).login().await.unwrap();
    // The gateway's sign-in, whose user is away: the browser opens, nobody signs in.
    let away = |_: &str| true;
    let sign_in = Arc::new(
        SignIn::new(server.parse().unwrap(), SignInOptions::default(), Some(store.clone())).unwrap().with_browser(away),
    );
    let remote = Remote { url: server.parse().unwrap(), headers: Vec::new(), sign_in: Some(sign_in.clone()) };
    let spec = ServerSpec {
        settings: LinkSettings { name: "locked".into(), sign_in: Some(sign_in.clone()), ..LinkSettings::default() },
        start: Arc::new(move || Some(Upstream::from(remote.clone()))),
        scope: tool_mediator_mcp::servers::Scope::Shared,
        entry: None,
    };
    let options = ProxyOptions::new(
        Arc::new(tool_mediator::Mediator::builder().build()),
        tool_mediator::session::SessionPolicy::default(),
    );
    let (input, gateway_in) = tokio::io::duplex(1 << 16);
    let (gateway_out, output) = tokio::io::duplex(1 << 16);
    let gateway = tokio::spawn(tool_mediator_mcp::serve(
        options,
        vec![spec],
        tool_mediator_mcp::Client { input: gateway_in, output: gateway_out, gone: std::future::pending::<()>() },
    ));
    let mut client = Client { input, output: tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(output)) };
    let params =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    let answer = client.ask(1, "initialize", params).await;
    assert!(answer["result"]["protocolVersion"].is_string(), "{answer}");
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let names = client.tool_names(2).await;
    let locked = names.iter().find(|name| name.contains("locked_status")).expect("signed in").clone();

    // The authorization server revokes everything: the next call meets a 401, its refresh is
    // refused, and the user is asked to sign in again. The call waits for them a few seconds at
    // most (an authorization server that approves at once would be done by then), not five
    // minutes.
    {
        let mut world = world.lock().unwrap();
        world.access.clear();
        world.refresh.clear();
    }
    let asked = std::time::Instant::now();
    let called = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        client.ask(3, "tools/call", json!({"name": locked, "arguments": {}})),
    )
    .await
    .expect("answered within seconds, not after the browser's five minutes");
    assert!(asked.elapsed() < std::time::Duration::from_secs(60));
    let said = called.to_string();
    assert!(said.contains("asks you to sign in") && said.contains("tool-mediator auth login"), "{called}");
    assert!(sign_in.asking_the_user(), "the sign-in goes on meanwhile");
    drop(client);
    gateway.abort();
}
