//! `cargo bench -p tool-mediator-tests --bench http`: the added latency of a `tools/call` over
//! Streamable HTTP through `tool-mediator proxy --listen ... --url ...` and through `tool-mediator
//! gateway --listen ...` with the server as its one entry and with a second server beside it, against the same call to the server's
//! endpoint directly and through FastMCP's proxy (`fastmcp run URL --transport http`), side by
//! side in one run. The server is server-everything in its `streamableHttp`
//! mode; FastMCP comes from PyPI into `.tools/bench-venv` on the first run.
//!
//! One client (reqwest, keep-alive) per path, each with its own MCP session; the calls
//! alternate between the paths, one each a round, each round starting at the next path, so all
//! of them see the same machine and none always follows the same one.

use std::io::{BufRead as _, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use tool_mediator_tests::{HttpSession, binary, fastmcp_venv, peers};

const ROUNDS: usize = 1_000;
const WARM_UP: usize = 100;

fn main() {
    let peers = peers();
    let fastmcp = fastmcp_venv().join("bin/fastmcp");
    let port = |_| TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let [server_port, ours_port, gateway_port, several_port, theirs_port]: [u16; 5] = std::array::from_fn(port);

    let server = Running::start(
        peers.command(peers.bin("mcp-server-everything")).arg("streamableHttp").env("PORT", server_port.to_string()),
        "listening on port",
    );
    let upstream = format!("http://127.0.0.1:{server_port}/mcp");
    let ours = Running::start(
        peers.command(binary()).args([
            "proxy",
            "--no-disclosure",
            "--listen",
            &format!("127.0.0.1:{ours_port}"),
            "--url",
            &upstream,
        ]),
        "serving MCP at",
    );
    // The gateway with the same server as its one entry.
    let servers = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(servers.path(), json!({"mcpServers": {"everything": {"url": upstream}}}).to_string()).unwrap();
    let gateway = Running::start(
        peers
            .command(binary())
            .args(["gateway", "--no-disclosure", "--listen", &format!("127.0.0.1:{gateway_port}"), "--servers"])
            .arg(servers.path()),
        "serving MCP at",
    );
    // The gateway with a second server beside it (mcp-server-time, over stdio, which has no
    // `echo`): the call is routed among servers by the session, not passed through.
    let two = tempfile::NamedTempFile::new().unwrap();
    let time = peers.bin("mcp-server-time").display().to_string();
    let entries = json!({"mcpServers": {"everything": {"url": upstream}, "time": {"command": time}}});
    std::fs::write(two.path(), entries.to_string()).unwrap();
    let several = Running::start(
        peers
            .command(binary())
            .args(["gateway", "--no-disclosure", "--listen", &format!("127.0.0.1:{several_port}"), "--servers"])
            .arg(two.path()),
        "serving MCP at",
    );
    let theirs = Running::start(
        Command::new(&fastmcp).args([
            "run",
            &upstream,
            "--transport",
            "http",
            "--port",
            &theirs_port.to_string(),
            "--no-banner",
        ]),
        "Uvicorn running",
    );

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut paths = [
            ("server-everything directly", HttpSession::open(&upstream).await),
            ("through tool-mediator proxy", HttpSession::open(&format!("http://127.0.0.1:{ours_port}/mcp")).await),
            ("through tool-mediator gateway", HttpSession::open(&format!("http://127.0.0.1:{gateway_port}/mcp")).await),
            (
                "through tool-mediator gateway, two servers",
                HttpSession::open(&format!("http://127.0.0.1:{several_port}/mcp")).await,
            ),
            ("through FastMCP's proxy", HttpSession::open(&format!("http://127.0.0.1:{theirs_port}/mcp")).await),
        ];
        let mut times: [Vec<f64>; 5] = Default::default();
        // Each round starts at another path: the call right after a direct one was measured
        // 0.13 ms slower, whichever path it was, so no path may always stand there.
        let count = paths.len();
        for round in 0..WARM_UP + ROUNDS {
            for step in 0..count {
                let index = (round + step) % count;
                let took = call_echo(&mut paths[index].1, round).await;
                if round >= WARM_UP {
                    times[index].push(took);
                }
            }
        }
        let medians: Vec<f64> = times.iter_mut().map(|times| percentile(times, 0.5)).collect();
        println!("tools/call `echo`, {ROUNDS} calls a path, alternating (milliseconds)");
        println!("| path | median | p90 | added at the median |");
        println!("|---|---|---|---|");
        for (index, (name, _)) in paths.iter().enumerate() {
            let added = medians[index] - medians[0];
            println!(
                "| {name} | {:.3} | {:.3} | {} |",
                medians[index],
                percentile(&mut times[index], 0.9),
                if index == 0 { "".to_owned() } else { format!("{added:.3}") }
            );
        }
        let theirs = medians[4] - medians[0];
        for (index, (name, _)) in paths.iter().enumerate().take(4).skip(1) {
            let ours = medians[index] - medians[0];
            println!("FastMCP's proxy adds {:.1}x what tool-mediator adds {name}", theirs / ours.max(0.001));
        }
    });
    drop((server, ours, gateway, several, theirs));
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
