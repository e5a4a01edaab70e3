//! `cargo bench -p tool-mediator-tests --bench load`: many clients at once through one gateway.
//! Fifty MCP sessions over Streamable HTTP, opened together, each making its calls one after
//! another, all fifty at once, through `tool-mediator gateway --listen` and through FastMCP's
//! proxy of the same servers file (`create_proxy(config)`, served over HTTP), one after the
//! other in one run (FastMCP's proxy twice: at its defaults, and with one client connected once
//! and shared by every request), then tool-mediator again (the machine may have changed meanwhile; both of
//! its runs are shown). For each: calls a second, the median and 99th percentile latency, the
//! front's peak resident memory (VmHWM) and how many processes it had running under it while
//! the fifty sessions were open.
//!
//! FastMCP's proxy, at its defaults, connects to the servers anew for each request: for these
//! stdio servers, a process (the Python SDK) started for every call. It is given fewer calls a
//! session, or the run would take most of an hour; its rate is still calls a second.
//!
//! The servers are three `tests/peers/named.py` (the MCP Python SDK over stdio); each call is an
//! `echo` of one of them, round robin, and its answer must carry the call's own text. The load
//! is bounded: it stops by itself after every session has made its calls.

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_mediator_tests::{HttpSession, binary, fastmcp_venv, peers, root};

const SERVERS: usize = 3;
const SESSIONS: usize = 50;
const CALLS: usize = 20;
/// FastMCP's proxy connects to the servers again for every call (a process each, for a stdio
/// server): fewer calls, or the run would take most of an hour.
const THEIR_CALLS: usize = 2;
const WARM_UP: usize = 1;

fn main() {
    let peers = peers();
    let venv = fastmcp_venv();
    let dir = tempfile::tempdir().unwrap();
    let named = root().join("tests/peers/named.py");
    let servers: serde_json::Map<String, Value> = (0..SERVERS)
        .map(|n| (format!("s{n}"), json!({"command": peers.bin("python"), "args": [named, format!("s{n}")]})))
        .collect();
    let config = dir.path().join("servers.json");
    std::fs::write(&config, json!({"mcpServers": servers}).to_string()).unwrap();
    let port = || TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut rows = Vec::new();
    let fronts = [
        ("tool-mediator gateway", Proxy::Ours),
        ("FastMCP's proxy, at its defaults", Proxy::FastMcp),
        ("FastMCP's proxy, one shared client", Proxy::FastMcpShared),
        ("tool-mediator gateway, again", Proxy::Ours),
    ];
    for (name, proxy) in fronts {
        let port = port();
        let front = match proxy {
            Proxy::Ours => Front::start(
                peers
                    .command(binary())
                    .args(["gateway", "--no-disclosure", "--listen", &format!("127.0.0.1:{port}"), "--servers"])
                    .arg(&config),
                port,
            ),
            Proxy::FastMcp => Front::start(&mut fastmcp_http_proxy(&venv, &config, port, false), port),
            Proxy::FastMcpShared => Front::start(&mut fastmcp_http_proxy(&venv, &config, port, true), port),
        };
        let url = format!("http://127.0.0.1:{port}/mcp");
        let calls = if matches!(proxy, Proxy::FastMcp) { THEIR_CALLS } else { CALLS };
        let measured = runtime.block_on(load(&url, &front, calls));
        rows.push((name, measured));
        drop(front);
    }
    println!(
        "{SESSIONS} sessions at once over Streamable HTTP, {CALLS} calls each through tool-mediator \
         ({THEIR_CALLS} through FastMCP's proxy), {SERVERS} stdio servers"
    );
    println!("| front | calls/s | p50 ms | p99 ms | peak RSS MiB | processes under it |");
    println!("|---|---|---|---|---|---|");
    for (name, measured) in &rows {
        println!(
            "| {name} | {:.0} | {:.2} | {:.2} | {:.1} | {} |",
            measured.per_second,
            measured.p50,
            measured.p99,
            measured.peak_kib as f64 / 1024.0,
            measured.processes
        );
    }
    let ours = &rows[0].1;
    for (name, theirs) in &rows[1..3] {
        println!(
            "tool-mediator against {name}: {:.1}x the calls a second, {:.1}x lower p99, {:.1}x less memory",
            ours.per_second / theirs.per_second,
            theirs.p99 / ours.p99,
            theirs.peak_kib as f64 / ours.peak_kib.max(1) as f64
        );
    }
}

enum Proxy {
    Ours,
    /// `create_proxy(config)`: a new connection to the servers for every request.
    FastMcp,
    /// `create_proxy(client)` with a client connected once: every request over its one session.
    FastMcpShared,
}

struct Measured {
    per_second: f64,
    p50: f64,
    p99: f64,
    peak_kib: u64,
    processes: usize,
}

/// Opens the sessions, makes every call, and reads the front's memory and processes while the
/// sessions are open.
async fn load(url: &str, front: &Front, calls: usize) -> Measured {
    let mut sessions = futures_util::future::join_all((0..SESSIONS).map(|_| Session::open(url))).await;
    let tools = sessions[0].echo_tools().await;
    assert_eq!(tools.len(), SERVERS, "an echo of each server: {tools:?}");
    // Every session warms its way first: not measured.
    let warmed = sessions.into_iter().enumerate().map(|(index, mut session)| {
        let tools = tools.clone();
        async move {
            for call in 0..WARM_UP {
                session.echo(&tools[(index + call) % tools.len()], index, call).await;
            }
            session
        }
    });
    let sessions = futures_util::future::join_all(warmed).await;
    let began = Instant::now();
    let calls = sessions.into_iter().enumerate().map(|(index, mut session)| {
        let tools = tools.clone();
        async move {
            let mut took = Vec::with_capacity(calls);
            for call in 0..calls {
                took.push(session.echo(&tools[(index + call) % tools.len()], index, WARM_UP + call).await);
            }
            (session, took)
        }
    });
    let done = futures_util::future::join_all(calls).await;
    let seconds = began.elapsed().as_secs_f64();
    let processes = descendants(front.0.id());
    let peak_kib = peak_kib(front.0.id());
    let mut times: Vec<f64> = done.iter().flat_map(|(_, took)| took.iter().copied()).collect();
    let per_second = times.len() as f64 / seconds;
    for (session, _) in done {
        session.close().await;
    }
    Measured { per_second, p50: percentile(&mut times, 0.5), p99: percentile(&mut times, 0.99), peak_kib, processes }
}

/// FastMCP's proxy of the servers file, served over Streamable HTTP on `port`: given the file
/// (its default, a connection for each request), or with `shared`, a client connected once.
fn fastmcp_http_proxy(venv: &Path, config: &Path, port: u16, shared: bool) -> Command {
    let script = if shared {
        "import asyncio, json, sys\n\
         from fastmcp import Client\n\
         from fastmcp.server import create_proxy\n\
         async def main():\n\
         \x20   async with Client(json.load(open(sys.argv[1]))) as client:\n\
         \x20       await create_proxy(client).run_async(transport='http', host='127.0.0.1', \
         port=int(sys.argv[2]), show_banner=False)\n\
         asyncio.run(main())\n"
    } else {
        "import json, sys\n\
         from fastmcp.server import create_proxy\n\
         create_proxy(json.load(open(sys.argv[1]))).run(transport='http', host='127.0.0.1', \
         port=int(sys.argv[2]), show_banner=False)\n"
    };
    let mut command = Command::new(venv.join("bin/python"));
    command.arg("-c").arg(script).arg(config).arg(port.to_string()).env("FASTMCP_LOG_LEVEL", "ERROR");
    command
}

/// A front, started and waited for until its port takes connections.
struct Front(Child);

impl Front {
    fn start(command: &mut Command, port: u16) -> Front {
        let child = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let began = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(began.elapsed() < Duration::from_secs(120), "not listening: {command:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Front(child)
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child, SIGTERM so it ends what it started.
        unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
        for _ in 0..100 {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How many processes run under `pid` (its children, theirs, and so on).
fn descendants(pid: u32) -> usize {
    let mut parents: HashMap<u32, u32> = HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // The parent is the second field after the command, which is in parentheses.
        let Some(after) = stat.rsplit_once(')').map(|(_, after)| after) else { continue };
        if let Some(parent) = after.split_whitespace().nth(1).and_then(|parent| parent.parse().ok()) {
            parents.insert(child, parent);
        }
    }
    parents
        .keys()
        .filter(|&&process| {
            let mut at = process;
            while let Some(&parent) = parents.get(&at) {
                if parent == pid {
                    return true;
                }
                if parent <= 1 {
                    return false;
                }
                at = parent;
            }
            false
        })
        .count()
}

/// The process's peak resident memory (VmHWM), in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap_or_default();
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).unwrap_or(0)
}

/// A session of the load, numbering its requests.
struct Session {
    http: HttpSession,
    next: u64,
}

impl Session {
    async fn open(url: &str) -> Session {
        Session { http: HttpSession::open(url).await, next: 1 }
    }

    /// The tools whose name ends in `echo`, as this front names them.
    async fn echo_tools(&mut self) -> Vec<String> {
        self.next += 1;
        let list = json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/list"});
        let answer = answer_in(&self.http.post(&list).await);
        let mut names: Vec<String> = answer["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: {answer}", self.http.url))
            .iter()
            .filter_map(|tool| tool["name"].as_str().filter(|name| name.ends_with("echo")).map(str::to_owned))
            .collect();
        names.sort();
        names
    }

    /// One `echo` call; its milliseconds.
    async fn echo(&mut self, tool: &str, session: usize, call: usize) -> f64 {
        self.next += 1;
        let text = format!("session {session} call {call}");
        let message = json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call",
            "params": {"name": tool, "arguments": {"text": text}}});
        let start = Instant::now();
        let answer = self.http.post(&message).await;
        let took = start.elapsed().as_secs_f64() * 1000.0;
        assert!(answer.contains(&text), "{}: {answer}", self.http.url);
        took
    }

    async fn close(self) {
        self.http.close().await;
    }
}

/// The JSON-RPC answer in a body: the body itself, or the last `data:` of an SSE stream.
fn answer_in(text: &str) -> Value {
    let last = text.lines().filter_map(|line| line.strip_prefix("data:")).next_back();
    serde_json::from_str(last.unwrap_or(text).trim()).unwrap_or(Value::Null)
}

fn percentile(times: &mut [f64], at: f64) -> f64 {
    times.sort_by(f64::total_cmp);
    times[((times.len() - 1) as f64 * at).round() as usize]
}
