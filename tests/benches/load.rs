//! `cargo bench -p tool-mediator-tests --bench load`: many clients at once in front of the same
//! three servers. Fifty, then two hundred MCP sessions over Streamable HTTP, opened together,
//! each making its calls one after another, all at once, through `tool-mediator gateway
//! --listen` (the servers shared by every session, its default), through FastMCP's proxy of the
//! same servers with one client connected once and shared by every request
//! (`create_proxy(client)`, served over HTTP), and through HAProxy routing a path to each server
//! (`/s0/mcp`, ...): a plain reverse proxy cannot mediate, list or prefix, so a client of it
//! holds a session with each server, but it is the floor of one more hop. One after the other
//! in one run, the gateway first and again last (the machine may change meanwhile; both of its
//! runs are shown). For each: calls a second, the median and 99th percentile latency, the
//! front's peak resident memory (VmHWM), its open files and the processes under it while the
//! sessions are open.
//!
//! The servers are three server-everything in their `streamableHttp` mode (the TypeScript SDK),
//! started once for every front; each call is an `echo` of one of them, round robin, and its
//! answer must carry the call's own text. FastMCP's proxy at its defaults (a connection to the
//! servers for every request) is left out: it is the shared client that a team would run. The
//! load is bounded: it stops by itself after every session has made its calls (a hundred each,
//! `LOAD_CALLS=N` for another number). `LOAD_SESSIONS=50`
//! runs one count only; HAProxy (Debian's, `/usr/sbin/haproxy`) is left out when not installed.
//! `LOAD_SCOPE=session` gives every session the servers' own sessions instead of shared ones.
//! `SOAK_SECONDS=600` runs the soak instead: the gateway alone before the same servers, fifty
//! sessions (`SOAK_SESSIONS=N` for another number) calling for that long (`tests/peers/soak.py`), its memory, open files and processes
//! read every minute.

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_mediator_tests::{HAPROXY, HttpSession, answer_in, binary, fastmcp_venv, haproxy_config, peers};

const SERVERS: usize = 3;
const SESSIONS: [usize; 2] = [50, 200];
/// Calls each session makes, measured (`LOAD_CALLS=N` for another number): a hundred give fifty
/// sessions 5,000 calls, whose 99th percentile is the 50th slowest, not one burst's.
fn calls() -> usize {
    std::env::var("LOAD_CALLS").map_or(100, |calls| calls.parse().expect("LOAD_CALLS is a number"))
}
const WARM_UP: usize = 1;

fn port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn main() {
    let peers = peers();
    let venv = fastmcp_venv();
    let dir = tempfile::tempdir().unwrap();
    let ports: Vec<u16> = (0..SERVERS).map(|_| port()).collect();
    let _servers: Vec<Front> = ports
        .iter()
        .map(|&at| {
            let everything = peers.bin("mcp-server-everything");
            Front::start(peers.command(everything).arg("streamableHttp").env("PORT", at.to_string()), at)
        })
        .collect();
    let servers: serde_json::Map<String, Value> = ports
        .iter()
        .enumerate()
        .map(|(n, at)| {
            let mut server = json!({"url": format!("http://127.0.0.1:{at}/mcp")});
            if let Ok(scope) = std::env::var("LOAD_SCOPE") {
                server["scope"] = json!(scope);
            }
            (format!("s{n}"), server)
        })
        .collect();
    let config = dir.path().join("servers.json");
    std::fs::write(&config, json!({"mcpServers": servers}).to_string()).unwrap();
    if let Ok(seconds) = std::env::var("SOAK_SECONDS") {
        return soak(&peers, &config, &seconds);
    }
    let counts: Vec<usize> = match std::env::var("LOAD_SESSIONS") {
        Ok(count) => vec![count.parse().expect("LOAD_SESSIONS is a number")],
        Err(_) => SESSIONS.to_vec(),
    };

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut fronts = vec![
        ("tool-mediator gateway", Kind::Ours),
        ("FastMCP's proxy, one shared client", Kind::FastMcpShared),
        ("HAProxy, a path to each server", Kind::HaProxy),
        ("tool-mediator gateway, again", Kind::Ours),
    ];
    if !Path::new(HAPROXY).exists() {
        eprintln!("HAProxy is left out: no {HAPROXY} (TOOL_MEDIATOR_REDIS=1 tests/peers/install installs it)");
        fronts.retain(|(_, proxy)| !matches!(proxy, Kind::HaProxy));
    }
    // The servers' JavaScript is compiled as it runs: one unmeasured run warms them, or the
    // first front measured pays for it (the gateway's first run made half the calls a second
    // of its second, the same front, when it did).
    {
        let at = port();
        let front = gateway(&peers, &config, at);
        runtime.block_on(load(&format!("http://127.0.0.1:{at}"), false, &front, SESSIONS[0]));
    }
    for sessions in counts {
        let mut rows = Vec::new();
        for (name, proxy) in &fronts {
            let at = port();
            let front = match proxy {
                Kind::Ours => gateway(&peers, &config, at),
                Kind::FastMcpShared => Front::start(&mut fastmcp_http_proxy(&venv, &config, at), at),
                Kind::HaProxy => {
                    let file = dir.path().join(format!("haproxy-{at}.cfg"));
                    std::fs::write(&file, haproxy_config(at, &ports)).unwrap();
                    Front::start(Command::new(HAPROXY).args(["-db", "-f"]).arg(&file), at)
                }
            };
            let base = format!("http://127.0.0.1:{at}");
            let measured = runtime.block_on(load(&base, matches!(proxy, Kind::HaProxy), &front, sessions));
            rows.push((*name, measured));
            drop(front);
        }
        println!(
            "\n{sessions} sessions at once over Streamable HTTP, {} calls each, {SERVERS} HTTP servers\n",
            calls()
        );
        println!("| front | calls/s | failed | p50 ms | p99 ms | peak RSS MiB | open files | processes under it |");
        println!("|---|---|---|---|---|---|---|---|");
        for (name, measured) in &rows {
            println!(
                "| {name} | {:.0} | {} | {:.2} | {:.2} | {:.1} | {} | {} |",
                measured.per_second,
                measured.failed,
                measured.p50,
                measured.p99,
                measured.peak_kib as f64 / 1024.0,
                measured.open_files,
                measured.processes
            );
        }
        for (name, measured) in &rows {
            if let Some(why) = &measured.first_failure {
                println!("{name}: {} calls failed, the first: {why}", measured.failed);
            }
        }
        let ours = &rows[0].1;
        for (name, theirs) in &rows[1..rows.len() - 1] {
            println!(
                "tool-mediator against {name}: {:.1}x the calls a second, p99 {:.2}x theirs, {:.2}x their memory",
                ours.per_second / theirs.per_second,
                ours.p99 / theirs.p99,
                ours.peak_kib as f64 / theirs.peak_kib.max(1) as f64
            );
        }
    }
}

/// Which front stands before the servers.
/// `tool-mediator gateway --listen` on `at` before the servers of `config`.
fn gateway(peers: &tool_mediator_tests::Peers, config: &Path, at: u16) -> Front {
    let listen = format!("127.0.0.1:{at}");
    Front::start(
        peers.command(binary()).args(["gateway", "--no-disclosure", "--listen", &listen, "--servers"]).arg(config),
        at,
    )
}

/// The soak: the gateway before the same servers, fifty sessions (`SOAK_SESSIONS`) calling for `seconds`
/// (`tests/peers/soak.py`), its memory, open files and processes read every minute.
fn soak(peers: &tool_mediator_tests::Peers, config: &Path, seconds: &str) {
    let at = port();
    let front = gateway(peers, config, at);
    let tools = (0..SERVERS).map(|n| format!("s{n}_echo")).collect::<Vec<_>>().join(",");
    let sessions = std::env::var("SOAK_SESSIONS").unwrap_or_else(|_| "50".to_owned());
    let output = peers
        .command(peers.bin("python"))
        .arg(tool_mediator_tests::root().join("tests/peers/soak.py"))
        .args([&format!("http://127.0.0.1:{at}/mcp"), &front.0.id().to_string(), &sessions, seconds, &tools, "message"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    println!("{}", String::from_utf8_lossy(&output.stdout));
}

enum Kind {
    Ours,
    /// `create_proxy(client)` with a client connected once: every request over its one session.
    FastMcpShared,
    /// A plain reverse proxy: a path to each server, its sessions passed through.
    HaProxy,
}

struct Measured {
    /// Calls answered a second.
    per_second: f64,
    /// Calls that failed (a connection reset, a wrong answer), and the first one's reason.
    failed: usize,
    first_failure: Option<String>,
    p50: f64,
    p99: f64,
    peak_kib: u64,
    open_files: usize,
    processes: usize,
}

/// Opens the sessions, makes every call, and reads the front's memory, open files and
/// processes while the sessions are open.
async fn load(base: &str, plain: bool, front: &Front, sessions: usize) -> Measured {
    let opened = futures_util::future::join_all((0..sessions).map(|_| Session::open(base, plain))).await;
    // Every session warms its way first: not measured.
    let warmed = opened.into_iter().enumerate().map(|(index, mut session)| async move {
        for call in 0..WARM_UP {
            let _ = session.echo(index + call, index, call).await;
        }
        session
    });
    let opened = futures_util::future::join_all(warmed).await;
    let began = Instant::now();
    let count = calls();
    let calls = opened.into_iter().enumerate().map(|(index, mut session)| async move {
        let mut took = Vec::with_capacity(count);
        let mut failures = Vec::new();
        for call in 0..count {
            match session.echo(index + call, index, WARM_UP + call).await {
                Ok(milliseconds) => took.push(milliseconds),
                Err(why) => failures.push(why),
            }
        }
        (session, took, failures)
    });
    let done = futures_util::future::join_all(calls).await;
    let seconds = began.elapsed().as_secs_f64();
    let processes = descendants(front.0.id());
    let peak_kib = peak_kib(front.0.id());
    let open_files = std::fs::read_dir(format!("/proc/{}/fd", front.0.id())).map_or(0, Iterator::count);
    let mut times: Vec<f64> = done.iter().flat_map(|(_, took, _)| took.iter().copied()).collect();
    let failures: Vec<String> = done.iter().flat_map(|(_, _, failures)| failures.iter().cloned()).collect();
    let per_second = times.len() as f64 / seconds;
    for (session, _, _) in done {
        session.close().await;
    }
    Measured {
        per_second,
        failed: failures.len(),
        first_failure: failures.into_iter().next(),
        p50: percentile(&mut times, 0.5),
        p99: percentile(&mut times, 0.99),
        peak_kib,
        open_files,
        processes,
    }
}

/// FastMCP's proxy of the servers file with a client connected once and shared by every
/// request, served over Streamable HTTP on `port`.
fn fastmcp_http_proxy(venv: &Path, config: &Path, port: u16) -> Command {
    let script = "import asyncio, json, sys\n\
         from fastmcp import Client\n\
         from fastmcp.server import create_proxy\n\
         async def main():\n\
         \x20   async with Client(json.load(open(sys.argv[1]))) as client:\n\
         \x20       await create_proxy(client).run_async(transport='http', host='127.0.0.1', \
         port=int(sys.argv[2]), show_banner=False)\n\
         asyncio.run(main())\n";
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

/// A client of the load: one MCP session with a mediating front, whose `echo` tools it lists;
/// or, through a plain proxy, one with each server, by its path.
enum Session {
    Mediated { http: HttpSession, tools: Vec<String>, next: u64 },
    Plain { servers: Vec<HttpSession>, next: u64 },
}

impl Session {
    async fn open(base: &str, plain: bool) -> Session {
        if plain {
            let urls: Vec<String> = (0..SERVERS).map(|n| format!("{base}/s{n}/mcp")).collect();
            let servers = futures_util::future::join_all(urls.iter().map(|url| HttpSession::open(url))).await;
            return Session::Plain { servers, next: 1 };
        }
        let mut http = HttpSession::open(&format!("{base}/mcp")).await;
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let answer = answer_in(&http.post(&list).await);
        let mut tools: Vec<String> = answer["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: {answer}", http.url))
            .iter()
            .filter_map(|tool| tool["name"].as_str().filter(|name| name.ends_with("echo")).map(str::to_owned))
            .collect();
        tools.sort();
        assert_eq!(tools.len(), SERVERS, "an echo of each server: {tools:?}");
        Session::Mediated { http, tools, next: 2 }
    }

    /// One `echo` call of server `server` (modulo their number); its milliseconds, or why it
    /// failed.
    async fn echo(&mut self, server: usize, session: usize, call: usize) -> Result<f64, String> {
        let text = format!("session {session} call {call}");
        let (http, tool, id) = match self {
            Session::Mediated { http, tools, next } => {
                *next += 1;
                (http, tools[server % SERVERS].clone(), *next)
            }
            Session::Plain { servers, next } => {
                *next += 1;
                (&mut servers[server % SERVERS], "echo".to_owned(), *next)
            }
        };
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": {"message": text}}});
        let start = Instant::now();
        let answer = http.try_post(&message).await?;
        let took = start.elapsed().as_secs_f64() * 1000.0;
        match answer.contains(&text) {
            true => Ok(took),
            false => Err(format!("not the call's answer: {}", answer.chars().take(300).collect::<String>())),
        }
    }

    async fn close(self) {
        match self {
            Session::Mediated { http, .. } => http.close().await,
            Session::Plain { servers, .. } => {
                futures_util::future::join_all(servers.into_iter().map(HttpSession::close)).await;
            }
        }
    }
}

/// The `at` percentile of `times`; NaN when no call was answered.
fn percentile(times: &mut [f64], at: f64) -> f64 {
    times.sort_by(f64::total_cmp);
    match times.len() {
        0 => f64::NAN,
        count => times[((count - 1) as f64 * at).round() as usize],
    }
}
