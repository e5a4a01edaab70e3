//! `cargo bench -p tool-mediator-tests --bench gateway`: `tools/list` of about a thousand tools
//! merged from ten servers, warm, through `tool-mediator gateway` (every page of 100, all in one
//! page, and the first page as disclosure shows it), and through FastMCP's proxy of the same servers file
//! (`create_proxy(config)`, the MCPConfig form of its proxy), side by side in one run; and the
//! gateway's peak resident memory (VmHWM) with the ten servers behind it.
//!
//! The servers are `tests/peers/named.py` (the MCP Python SDK) with 99 extra tools each: 102
//! tools a server, every name shared by all ten, so every one is prefixed with its server's
//! name. They say they announce tool list changes, so a warm gateway answers from its list.
//! The clients alternate, one listing each a round.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use tool_mediator_tests::{JsonRpcClient, binary, fastmcp_venv, peers, root};

const SERVERS: usize = 10;
const EXTRA_TOOLS: usize = 99;
const ROUNDS: usize = 200;
const WARM_UP: usize = 10;
/// FastMCP's proxy lists every server again for each listing, taking seconds: fewer rounds.
const THEIR_ROUNDS: usize = 5;

fn main() {
    let peers = peers();
    let venv = fastmcp_venv();
    let dir = tempfile::tempdir().unwrap();
    let named = root().join("tests/peers/named.py");
    let servers: serde_json::Map<String, Value> = (0..SERVERS)
        .map(|n| {
            let args = json!([named, format!("s{n}"), "--tools", EXTRA_TOOLS.to_string(), "--list-changed"]);
            (format!("s{n}"), json!({"command": peers.bin("python"), "args": args}))
        })
        .collect();
    let config = dir.path().join("servers.json");
    std::fs::write(&config, json!({"mcpServers": servers}).to_string()).unwrap();

    let gateway = |extra: &[&str]| {
        let mut command = peers.command(binary());
        command.args(["gateway", "--servers"]).arg(&config).args(extra);
        JsonRpcClient::start(command)
    };
    let mut every = gateway(&["--no-disclosure"]);
    let mut whole = gateway(&["--no-disclosure", "--page-size", "0"]);
    let mut folded = gateway(&[]);
    let mut theirs = JsonRpcClient::start(fastmcp_proxy(&venv, &config));

    // The first listing starts the servers' lists; it is not what is measured.
    let (count, cold) = list_every_page(&mut every);
    let (theirs_count, theirs_cold) = list_every_page(&mut theirs);
    let (shown, folded_cold) = first_page(&mut folded);
    list_every_page(&mut whole);
    println!("first listing (servers just started): tool-mediator {count} tools in {:.1} ms", ms(cold));
    println!("first listing: FastMCP's proxy {theirs_count} tools in {:.1} ms", ms(theirs_cold));
    println!("first listing with disclosure: tool-mediator shows {shown} entries in {:.1} ms", ms(folded_cold));

    let mut times: [Vec<f64>; 4] = Default::default();
    for round in 0..WARM_UP + ROUNDS {
        let took = [ms(list_every_page(&mut every).1), ms(first_page(&mut folded).1), ms(first_page(&mut whole).1)];
        if round >= WARM_UP {
            for (times, took) in times.iter_mut().zip(took) {
                times.push(took);
            }
        }
        if round % (ROUNDS / THEIR_ROUNDS) == 0 && round >= WARM_UP {
            times[3].push(ms(list_every_page(&mut theirs).1));
        }
    }
    println!("\ntools/list, warm, {ROUNDS} listings a path ({THEIR_ROUNDS} of FastMCP's), interleaved (milliseconds)");
    println!("| path | median | p90 |");
    println!("|---|---|---|");
    let paths = [
        format!("tool-mediator gateway, all {count} tools (every page)"),
        format!("tool-mediator gateway, disclosure on ({shown} entries)"),
        format!("tool-mediator gateway, all {count} tools in one page (--page-size 0)"),
        format!("FastMCP's proxy, all {theirs_count} tools"),
    ];
    let mut medians = Vec::new();
    for (path, times) in paths.iter().zip(times.iter_mut()) {
        let median = percentile(times, 0.5);
        medians.push(median);
        println!("| {path} | {median:.3} | {:.3} |", percentile(times, 0.9));
    }
    println!("FastMCP's proxy takes {:.0}x as long for the whole list", medians[3] / medians[0].max(0.001));
    for (name, client) in [("every tool", &every), ("with disclosure", &folded), ("one page", &whole)] {
        let peak =
            client.peak_memory_kib().map_or("unknown".to_owned(), |kib| format!("{:.1} MiB", kib as f64 / 1024.0));
        println!("peak RSS of tool-mediator gateway ({name}) with {SERVERS} servers: {peak}");
    }
    if let Some(kib) = theirs.peak_memory_kib() {
        println!("peak RSS of FastMCP's proxy with {SERVERS} servers: {:.1} MiB", kib as f64 / 1024.0);
    }
}

/// FastMCP's proxy of the servers file, over stdio.
fn fastmcp_proxy(venv: &Path, config: &Path) -> Command {
    let script = "import json, sys\n\
                  from fastmcp.server import create_proxy\n\
                  create_proxy(json.load(open(sys.argv[1]))).run(show_banner=False)\n";
    let mut command = Command::new(venv.join("bin/python"));
    command.arg("-c").arg(script).arg(config).env("FASTMCP_LOG_LEVEL", "ERROR");
    command
}

/// Lists every page; how many tools, and how long it took.
fn list_every_page(client: &mut JsonRpcClient) -> (usize, Duration) {
    let (mut count, mut took, mut cursor) = (0, Duration::ZERO, None::<String>);
    loop {
        let params = cursor.as_ref().map_or(json!({}), |cursor| json!({"cursor": cursor}));
        let (answer, elapsed) = client.request("tools/list", params);
        count += answer["result"]["tools"].as_array().map_or(0, Vec::len);
        took += elapsed;
        match answer["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (count, took),
        }
    }
}

/// The first page only: what a client sees first.
fn first_page(client: &mut JsonRpcClient) -> (usize, Duration) {
    let (answer, took) = client.request("tools/list", json!({}));
    (answer["result"]["tools"].as_array().map_or(0, Vec::len), took)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn percentile(times: &mut [f64], at: f64) -> f64 {
    times.sort_by(f64::total_cmp);
    times[((times.len() - 1) as f64 * at).round() as usize]
}
