//! Who may connect to the gateway, and what each client sees: `gateway --listen` as an OAuth
//! protected resource of a real authorization server on 127.0.0.1 (oidc-provider, which
//! `tests/peers/install` installs), its tokens' `view` claim choosing among the servers file's
//! views. Clients are the MCP Python SDK (signing in by the client credentials grant, from the
//! gateway's 401 to its resource metadata to the issuer's token endpoint) and plain HTTP
//! requests with tokens the issuer made, or that an attacker made of them.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use tool_mediator_tests::{AuthorizationServer, Listening, Peers, peers, root, run, stderr, stdout};

/// The clients of the authorization server: alice and bob see a view each, short's tokens live
/// a second, nobody's name no view.
fn clients() -> Value {
    json!([
        {"client_id": "alice", "client_secret": "alice-secret", "view": "team-a"},
        {"client_id": "bob", "client_secret": "bob-secret", "view": "team-b"},
        {"client_id": "short", "client_secret": "short-secret", "view": "team-a", "ttl": 1},
        {"client_id": "nobody", "client_secret": "nobody-secret"},
    ])
}

/// Two named servers (`tests/peers/named.py`): alpha with `alpha_deploy` and `alpha_status`,
/// beta with `beta_query`, both with `whoami`, `echo` and `sleep`. The view `team-a` shows alpha
/// without `sleep`; `team-b` shows beta's `beta_query` and `whoami` alone.
fn servers_file(peers: &Peers, dir: &Path) -> String {
    let named = |name: &str, tools: &[&str]| {
        let mut args = vec![root().join("tests/peers/named.py").display().to_string(), name.to_owned()];
        for tool in tools {
            args.extend(["--tool".to_owned(), (*tool).to_owned()]);
        }
        json!({"command": peers.bin("python").display().to_string(), "args": args})
    };
    let file = json!({
        "mcpServers": {
            "alpha": named("alpha", &["alpha_deploy", "alpha_status"]),
            "beta": named("beta", &["beta_query"]),
        },
        "views": {
            "team-a": {"servers": {"alpha": {"exclude": ["sleep"]}}},
            "team-b": {"servers": {"beta": {"include": ["beta_query", "whoami"]}}},
        },
    });
    let path = dir.join("servers.json");
    std::fs::write(&path, serde_json::to_string_pretty(&file).unwrap()).unwrap();
    path.display().to_string()
}

/// The gateway over HTTP, a protected resource of `issuer` whose tokens' `view` claim chooses.
fn gateway(peers: &Peers, servers: &str, issuer: &str) -> Listening {
    let arguments = [
        "--config",
        servers,
        "--no-disclosure",
        "--oauth-issuer",
        issuer,
        "--view-claim",
        "view",
        "--oauth-clock-skew",
        "0s",
    ];
    Listening::start(peers, "gateway", &arguments)
}

/// The `gateway-tour` scenario of the Python SDK against `url`, signed in as `client`.
fn tour_as(peers: &Peers, issuer: &AuthorizationServer, client: &str, url: &str, calls: Value) -> Value {
    let output = peers
        .command(peers.bin("python"))
        .arg(root().join("tests/peers/client.py"))
        .args(["gateway-tour", &calls.to_string(), "[]", "null", "--", url])
        .env("MCP_CLIENT_ID", client)
        .env("MCP_CLIENT_SECRET", format!("{client}-secret"))
        .env("MCP_ISSUER", &issuer.issuer)
        .output()
        .expect("python starts");
    assert!(output.status.success(), "the tour as {client} failed:\n{}", stderr(&output));
    let last = stdout(&output).lines().last().unwrap_or_default().to_owned();
    serde_json::from_str(&last).unwrap_or_else(|error| panic!("the tour printed {last:?}: {error}"))
}

fn sorted(list: &Value) -> Vec<String> {
    let mut names: Vec<String> =
        list.as_array().unwrap().iter().map(|name| name.as_str().unwrap().to_owned()).collect();
    names.sort();
    names
}

#[test]
fn two_clients_signed_in_at_a_real_authorization_server_see_two_tool_sets_and_call_only_their_own() {
    let peers = peers();
    let issuer = peers.authorization_server(&clients());
    let dir = tempfile::tempdir().unwrap();
    let gateway = gateway(&peers, &servers_file(&peers, dir.path()), &issuer.issuer);
    let url = gateway.url();

    let calls = json!([["alpha_deploy", {}], ["whoami", {}], ["beta_query", {}], ["sleep", {"seconds": 0}]]);
    let alice = tour_as(&peers, &issuer, "alice", &url, calls);
    assert_eq!(sorted(&alice["tools"]), ["alpha_deploy", "alpha_status", "echo", "whoami"], "{alice}");
    let answers = alice["calls"].as_array().unwrap();
    assert_eq!(answers[0], "alpha called alpha_deploy", "{alice}");
    assert_eq!(answers[1], "alpha", "whoami is alpha's, unprefixed: {alice}");
    // Bob's tool, and the one alice's view leaves out, are unknown to her as any made-up name.
    assert!(answers[2].as_str().unwrap().contains("Unknown tool: beta_query"), "{alice}");
    assert!(answers[3].as_str().unwrap().contains("Unknown tool: sleep"), "{alice}");
    assert_eq!(alice["resources"], json!(["named://alpha/info"]), "beta's resource is not hers: {alice}");

    let calls = json!([["beta_query", {}], ["whoami", {}], ["alpha_deploy", {}], ["echo", {"text": "x"}]]);
    let bob = tour_as(&peers, &issuer, "bob", &url, calls);
    assert_eq!(sorted(&bob["tools"]), ["beta_query", "whoami"], "{bob}");
    let answers = bob["calls"].as_array().unwrap();
    assert_eq!(answers[0], "beta called beta_query", "{bob}");
    assert_eq!(answers[1], "beta", "{bob}");
    assert!(answers[2].as_str().unwrap().contains("Unknown tool: alpha_deploy"), "{bob}");
    assert!(answers[3].as_str().unwrap().contains("Unknown tool: echo"), "{bob}");
    assert_eq!(bob["resources"], json!(["named://beta/info"]), "{bob}");
}

/// One HTTP request to the gateway: its status, `WWW-Authenticate` and body.
async fn ask(url: &str, token: Option<&str>, body: &str) -> (u16, String, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned());
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let challenge = response.headers().get("www-authenticate").map(|value| value.to_str().unwrap().to_owned());
    (status, challenge.unwrap_or_default(), response.text().await.unwrap())
}

/// A token from the authorization server for `resource`, by `client`'s client credentials.
async fn token(issuer: &AuthorizationServer, client: &str, resource: &str) -> String {
    let answer: Value = reqwest::Client::new()
        .post(format!("{}/token", issuer.issuer))
        .basic_auth(client, Some(format!("{client}-secret")))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("grant_type=client_credentials&resource={}", percent(resource)))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["access_token"].as_str().unwrap_or_else(|| panic!("no token: {answer}")).to_owned()
}

/// `text` percent-encoded for a form.
fn percent(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (byte as char).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// A JWT's part (header or claims) as JSON, and back.
fn part(token: &str, index: usize) -> Value {
    let encoded = token.split('.').nth(index).unwrap();
    serde_json::from_slice(&base64url_decode(encoded)).unwrap()
}

fn base64url_decode(text: &str) -> Vec<u8> {
    URL_SAFE_NO_PAD.decode(text).expect("base64url")
}

fn base64url_encode(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

#[tokio::test(flavor = "multi_thread")]
async fn expired_foreign_tampered_and_unsigned_tokens_of_a_real_issuer_are_refused() {
    let peers = peers();
    let issuer = peers.authorization_server(&clients());
    let dir = tempfile::tempdir().unwrap();
    let gateway = gateway(&peers, &servers_file(&peers, dir.path()), &issuer.issuer);
    let url = gateway.url();

    // No token: 401 and where to read how to get one, which names the issuer.
    let (status, challenge, _) = ask(&url, None, INITIALIZE).await;
    assert_eq!(status, 401);
    let metadata_url = format!("http://{}/.well-known/oauth-protected-resource/mcp", gateway.address);
    assert_eq!(challenge, format!(r#"Bearer resource_metadata="{metadata_url}""#));
    let metadata: Value = reqwest::get(&metadata_url).await.unwrap().json().await.unwrap();
    assert_eq!(metadata["resource"], json!(url), "{metadata}");
    assert_eq!(metadata["authorization_servers"], json!([issuer.issuer]), "{metadata}");

    // The issuer's token for this gateway is taken.
    let alice = token(&issuer, "alice", &url).await;
    assert_eq!(part(&alice, 1)["aud"], json!(url), "the issuer made it for this resource");
    let (status, _, body) = ask(&url, Some(&alice), INITIALIZE).await;
    assert_eq!(status, 200, "{body}");

    // A token the same issuer made for another resource is not.
    let foreign = token(&issuer, "alice", "https://other.example/mcp").await;
    let (status, challenge, _) = ask(&url, Some(&foreign), INITIALIZE).await;
    assert_eq!(status, 401);
    assert!(challenge.contains(r#"error="invalid_token""#) && challenge.contains("another resource"), "{challenge}");

    // An expired one is not (short's tokens live a second; no clock skew is allowed here).
    let short = token(&issuer, "short", &url).await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let (status, challenge, _) = ask(&url, Some(&short), INITIALIZE).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("the token has expired"), "{challenge}");

    // Tampered: alice's token made bob's view, its signature kept; or its signature changed.
    let [head, claims, signature]: [&str; 3] = alice.split('.').collect::<Vec<_>>().try_into().unwrap();
    let mut forged = part(&alice, 1);
    forged["view"] = json!("team-b");
    let tampered = format!("{head}.{}.{signature}", base64url_encode(forged.to_string().as_bytes()));
    let (status, challenge, _) = ask(&url, Some(&tampered), INITIALIZE).await;
    assert_eq!(status, 401, "{challenge}");
    let mut resigned = base64url_decode(signature);
    resigned[0] ^= 1;
    let resigned = format!("{head}.{claims}.{}", base64url_encode(&resigned));
    assert_eq!(ask(&url, Some(&resigned), INITIALIZE).await.0, 401);

    // Unsigned: `alg: none`, the claims alice's.
    let none = format!("{}.{claims}.", base64url_encode(br#"{"alg":"none","typ":"at+jwt"}"#));
    let (status, challenge, _) = ask(&url, Some(&none), INITIALIZE).await;
    assert_eq!(status, 401);
    assert!(challenge.contains(r#"error="invalid_token""#), "{challenge}");

    // A valid token's view is the only one it gets: another path is refused, and a token that
    // names no view gets none.
    let (status, _, _) = ask(&format!("{url}/team-b"), Some(&alice), INITIALIZE).await;
    assert_eq!(status, 403, "alice's token at bob's view");
    let (status, _, body) = ask(&format!("{url}/team-a"), Some(&alice), INITIALIZE).await;
    assert_eq!(status, 200, "{body}");
    let nobody = token(&issuer, "nobody", &url).await;
    assert_eq!(ask(&url, Some(&nobody), INITIALIZE).await.0, 403, "a token naming no view");
}

#[test]
fn sign_in_and_view_flags_that_cannot_work_are_refused_before_serving() {
    let dir = tempfile::tempdir().unwrap();
    let servers = dir.path().join("servers.json");
    std::fs::write(&servers, r#"{"mcpServers": {"a": {"command": "true"}}}"#).unwrap();
    let servers = servers.display().to_string();
    let gateway = |extra: &[&str]| {
        let mut arguments = vec!["gateway", "--config", &servers];
        arguments.extend(extra);
        let output = run(&arguments, None);
        assert!(!output.status.success(), "{extra:?} was taken");
        stderr(&output)
    };
    let said = gateway(&["--listen", "0.0.0.0:0", "--oauth-issuer", "https://auth.example.com"]);
    assert!(said.contains("--oauth-audience"), "no URL a client uses to name the audience: {said}");
    let said = gateway(&["--listen", "127.0.0.1:0", "--oauth-issuer", "http://auth.example.com"]);
    assert!(said.contains("an issuer is an HTTPS URL"), "{said}");
    let said = gateway(&["--listen", "127.0.0.1:0", "--token-env", "T", "--oauth-issuer", "https://auth.example.com"]);
    assert!(said.contains("cannot be used with"), "a shared token or a sign-in, not both: {said}");
    let said = gateway(&["--listen", "127.0.0.1:0", "--view-claim", "view"]);
    assert!(said.contains("--oauth-issuer"), "a claim needs tokens: {said}");
    let said = gateway(&["--listen", "127.0.0.1:0", "--view-header", "X-MCP-View"]);
    assert!(said.contains("there are none"), "views to choose among: {said}");
}
