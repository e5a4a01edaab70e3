//! `cargo bench -p tool-mediator-tests --bench http`: the added latency of a `tools/call` over
//! Streamable HTTP through tool-mediator's fronts, against the same call to the server's
//! endpoint directly, through HAProxy (a plain HTTP reverse proxy: the floor of one more hop,
//! though it cannot mediate) and through FastMCP's proxy (`fastmcp run URL --transport http`),
//! side by side in one run. The server is server-everything in its `streamableHttp` mode;
//! FastMCP comes from PyPI into `.tools/bench-venv` on the first run; HAProxy is Debian's
//! (`/usr/sbin/haproxy`, left out when it is not installed).
//!
//! tool-mediator's fronts: `proxy --listen ... --url ...`; `gateway --listen` with the server
//! as its one entry, shared by every session (the default scope) and a session's own
//! (`"scope": "session"`); with a second server beside it; and with server-everything over stdio
//! as its one entry, shared and a session's own (these two are read against each other: the
//! server is another process then).
//!
//! Each front is called by a client of 2025-06-18 and one of 2025-11-25: from 2025-11-25 on, a
//! server that can resume its streams (server-everything can) opens each answer's stream with
//! a priming event, and answers later.
//!
//! One client (reqwest, keep-alive) per path, each with its own MCP session; the calls
//! alternate between the paths, one each a round, each round starting at the next path, so all
//! of them see the same machine and none always follows the same one.

use std::io::{BufRead as _, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use tool_mediator_tests::{HAPROXY, HttpSession, binary, fastmcp_venv, haproxy_config, peers};

const ROUNDS: usize = 1_000;
const WARM_UP: usize = 100;
/// The revisions the clients speak: the one before priming events, and the one with them.
const CLIENT_REVISIONS: [&str; 2] = ["2025-06-18", "2025-11-25"];

fn port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn main() {
    let peers = peers();
    let fastmcp = fastmcp_venv().join("bin/fastmcp");
    let dir = tempfile::tempdir().unwrap();
    let server_port = port();
    let _server = Running::start(
        peers.command(peers.bin("mcp-server-everything")).arg("streamableHttp").env("PORT", server_port.to_string()),
        "listening on port",
    );
    let upstream = format!("http://127.0.0.1:{server_port}/mcp");
    let everything = peers.bin("mcp-server-everything").display().to_string();
    let time = peers.bin("mcp-server-time").display().to_string();
    // Each front: its name, and where a client finds it; the processes live until the end.
    let mut fronts: Vec<(String, String)> = vec![("server-everything directly".into(), upstream.clone())];
    let mut running = Vec::new();
    if Path::new(HAPROXY).exists() {
        let at = port();
        let config = dir.path().join("haproxy.cfg");
        std::fs::write(&config, haproxy_config(at, &[server_port])).unwrap();
        // HAProxy says nothing once it listens: it is ready when its port answers.
        running.push(Running::listening(Command::new(HAPROXY).args(["-db", "-f"]).arg(&config), at));
        fronts.push(("through HAProxy (a plain reverse proxy)".into(), format!("http://127.0.0.1:{at}/s0/mcp")));
    } else {
        eprintln!("HAProxy is left out: no {HAPROXY} (TOOL_MEDIATOR_REDIS=1 tests/peers/install installs it)");
    }
    let mut front = |name: &str, path: &str, command: &mut Command, ready: &'static str, port: u16| {
        running.push(Running::start(command, ready));
        fronts.push((name.to_owned(), format!("http://127.0.0.1:{port}{path}")));
    };
    let at = port();
    let listen = format!("127.0.0.1:{at}");
    front(
        "through tool-mediator proxy",
        "/mcp",
        peers.command(binary()).args(["proxy", "--no-disclosure", "--listen", &listen, "--url", &upstream]),
        "serving MCP at",
        at,
    );
    let gateways = [
        ("through tool-mediator gateway, shared (the default)", json!({"everything": {"url": upstream}})),
        (
            "through tool-mediator gateway, a session's own",
            json!({"everything": {"url": upstream, "scope": "session"}}),
        ),
        (
            "through tool-mediator gateway, shared, a stdio server beside it",
            json!({"everything": {"url": upstream}, "time": {"command": time}}),
        ),
        (
            "through tool-mediator gateway, over stdio, shared",
            json!({"everything": {"command": everything, "args": ["stdio"]}}),
        ),
        (
            "through tool-mediator gateway, over stdio, a session's own",
            json!({"everything": {"command": everything, "args": ["stdio"], "scope": "session"}}),
        ),
    ];
    for (n, (name, servers)) in gateways.into_iter().enumerate() {
        let file = dir.path().join(format!("servers-{n}.json"));
        std::fs::write(&file, json!({"mcpServers": servers}).to_string()).unwrap();
        let at = port();
        let listen = format!("127.0.0.1:{at}");
        front(
            name,
            "/mcp",
            peers.command(binary()).args(["gateway", "--no-disclosure", "--listen", &listen, "--servers"]).arg(&file),
            "serving MCP at",
            at,
        );
    }
    let at = port();
    front(
        "through FastMCP's proxy",
        "/mcp",
        Command::new(&fastmcp).args([
            "run",
            &upstream,
            "--transport",
            "http",
            "--port",
            &at.to_string(),
            "--no-banner",
        ]),
        "Uvicorn running",
        at,
    );

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        // Every front twice: a client of each revision (a server answers them differently).
        let mut paths = Vec::new();
        for revision in CLIENT_REVISIONS {
            for (name, url) in &fronts {
                paths.push((revision, name.as_str(), HttpSession::open_at(url, revision).await));
            }
        }
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
        // Each round starts at another path: the call right after a direct one was measured
        // 0.13 ms slower, whichever path it was, so no path may always stand there.
        let count = paths.len();
        for round in 0..WARM_UP + ROUNDS {
            for step in 0..count {
                let index = (round + step) % count;
                let took = call_echo(&mut paths[index].2, round).await;
                if round >= WARM_UP {
                    times[index].push(took);
                }
            }
        }
        let medians: Vec<f64> = times.iter_mut().map(|times| percentile(times, 0.5)).collect();
        println!("tools/call `echo`, {ROUNDS} calls a path, alternating (milliseconds)");
        for revision in CLIENT_REVISIONS {
            let of = |index: usize| paths[index].0 == revision;
            let direct = (0..count).find(|&index| of(index)).unwrap();
            println!("\nThe client speaks {revision}:\n");
            println!("| path | median | p90 | added at the median |");
            println!("|---|---|---|---|");
            for index in (0..count).filter(|&index| of(index)) {
                let added = medians[index] - medians[direct];
                println!(
                    "| {} | {:.3} | {:.3} | {} |",
                    paths[index].1,
                    medians[index],
                    percentile(&mut times[index], 0.9),
                    if index == direct { "".to_owned() } else { format!("{added:.3}") }
                );
            }
            let added = |prefix: &str| {
                (0..count)
                    .find(|&index| of(index) && paths[index].1.starts_with(prefix))
                    .map(|index| medians[index] - medians[direct])
            };
            let pair = |shared: &str, own: &str| Some((added(shared)?, added(own)?));
            if let Some((shared, own)) =
                pair("through tool-mediator gateway, shared (", "through tool-mediator gateway, a session's own")
            {
                println!("\na shared url server costs {:+.3} ms a call against a session's own", shared - own);
            }
            if let Some((shared, own)) = pair(
                "through tool-mediator gateway, over stdio, shared",
                "through tool-mediator gateway, over stdio, a session's own",
            ) {
                println!("a shared stdio server costs {:+.3} ms a call against a session's own", shared - own);
            }
            if let Some((gateway, haproxy)) = pair("through tool-mediator gateway, shared (", "through HAProxy") {
                println!("the gateway (a shared url server) adds {:+.3} ms over HAProxy's hop", gateway - haproxy);
            }
            if let Some((theirs, ours)) = pair("through FastMCP", "through tool-mediator gateway, shared (") {
                if ours > 0.01 {
                    println!("FastMCP's proxy adds {:.1}x what the gateway (a shared url server) adds", theirs / ours);
                } else {
                    println!("FastMCP's proxy adds {theirs:.3} ms; the gateway (a shared url server) {ours:+.3} ms");
                }
            }
        }
    });
    drop(running);
}

/// A server process, started and waited for until it says `ready` on stderr or stdout.
struct Running(Child);

impl Running {
    fn start(command: &mut Command, ready: &'static str) -> Running {
        let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        for output in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let sender = sender.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(output).lines().map_while(Result::ok) {
                    if line.contains(ready) {
                        let _ = sender.send(());
                    }
                }
            });
        }
        receiver.recv_timeout(Duration::from_secs(120)).unwrap_or_else(|_| panic!("not ready: {command:?}"));
        Running(child)
    }

    /// A process that says nothing when it is ready: waited for until `port` takes connections.
    fn listening(command: &mut Command, port: u16) -> Running {
        let child = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::inherit()).spawn().unwrap();
        let until = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < until, "not listening on {port}: {command:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Running(child)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child, SIGTERM so it ends what it started.
        unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
        std::thread::sleep(Duration::from_millis(300));
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One `echo` call of server-everything's; its milliseconds.
async fn call_echo(session: &mut HttpSession, round: usize) -> f64 {
    let id = round + 1;
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": format!("round {round}")}}});
    let start = Instant::now();
    let answer = session.post(&call).await;
    let took = start.elapsed().as_secs_f64() * 1000.0;
    assert!(answer.contains(&format!("round {round}")), "{}: {answer}", session.url);
    took
}

fn percentile(times: &mut [f64], at: f64) -> f64 {
    times.sort_by(f64::total_cmp);
    times[((times.len() - 1) as f64 * at).round() as usize]
}
