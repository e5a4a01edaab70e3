//! What the proxy costs, measured against one real server in one run: `tools/call` round trips
//! direct and through the proxy (median, p99), the time the proxy adds to `tools/list` once its
//! caches are warm, and the proxy's peak resident memory.
//!
//! `cargo bench -p tool-mediator-tests --bench proxy` (needs `tests/peers/install`).
//!
//! The client is the harness's minimal line-by-line JSON-RPC client, the same for both paths,
//! so the difference between the two is the proxy. Rounds alternate direct and proxied calls so
//! that a busy machine slows both alike.

use std::time::Duration;

use serde_json::{Value, json};
use tool_mediator_tests::{JsonRpcClient, Peers, binary, peers};

const ROUNDS: usize = 10;
const CALLS_PER_ROUND: usize = 300;
const LISTS_PER_ROUND: usize = 30;

fn percentile(samples: &mut [Duration], fraction: f64) -> Duration {
    samples.sort();
    samples[((samples.len() - 1) as f64 * fraction).round() as usize]
}

fn ms(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1e3)
}

fn main() {
    let peers = peers();
    // A Node server with a trivial tool, and a Python one: the proxy's cost is the same, the
    // round trip it is compared with is not.
    measure(
        &peers,
        "@modelcontextprotocol/server-everything",
        "mcp-server-everything",
        "echo",
        |n| json!({"message": format!("bench {n}")}),
    );
    measure(&peers, "mcp-server-time", "mcp-server-time", "get_current_time", |_| json!({"timezone": "UTC"}));
}

fn measure(peers: &Peers, label: &str, program: &str, tool: &str, arguments: impl Fn(usize) -> Value) {
    let server = peers.bin(program);
    let mut direct = JsonRpcClient::start(peers.command(&server));
    let mut proxied = {
        let mut command = peers.command(binary());
        command.args(["proxy", "--overrides", "mediator/overrides"]).arg(&server);
        JsonRpcClient::start(command)
    };
    let call = |client: &mut JsonRpcClient, n: usize| {
        client.request("tools/call", json!({"name": tool, "arguments": arguments(n)})).1
    };
    // Warm both: the server, the proxy's first listing (enhancement) and its caches.
    for n in 0..200 {
        call(&mut direct, n);
        call(&mut proxied, n);
    }
    let (listed, _) = proxied.request("tools/list", json!({}));
    direct.request("tools/list", json!({}));

    let (mut direct_calls, mut proxied_calls) = (Vec::new(), Vec::new());
    let (mut direct_lists, mut proxied_lists) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        for n in 0..CALLS_PER_ROUND {
            direct_calls.push(call(&mut direct, round * CALLS_PER_ROUND + n));
            proxied_calls.push(call(&mut proxied, round * CALLS_PER_ROUND + n));
        }
        for _ in 0..LISTS_PER_ROUND {
            direct_lists.push(direct.request("tools/list", json!({})).1);
            proxied_lists.push(proxied.request("tools/list", json!({})).1);
        }
    }

    let (direct_median, direct_p99) = (percentile(&mut direct_calls, 0.5), percentile(&mut direct_calls, 0.99));
    let (proxied_median, proxied_p99) = (percentile(&mut proxied_calls, 0.5), percentile(&mut proxied_calls, 0.99));
    let added = proxied_median.saturating_sub(direct_median);
    let list_direct = percentile(&mut direct_lists, 0.5);
    let list_proxied = percentile(&mut proxied_lists, 0.5);
    println!("{label}, tool `{tool}`: {} calls and {} lists per path", direct_calls.len(), direct_lists.len());
    println!("  tools/call direct:   median {}  p99 {}", ms(direct_median), ms(direct_p99));
    println!("  tools/call proxied:  median {}  p99 {}", ms(proxied_median), ms(proxied_p99));
    println!(
        "  added at the median: {} ({:.1}% of the direct round trip)",
        ms(added),
        100.0 * added.as_secs_f64() / direct_median.as_secs_f64()
    );
    println!(
        "  tools/list ({} tools listed): direct median {}, proxied median {}, added {}",
        listed["result"]["tools"].as_array().map_or(0, Vec::len),
        ms(list_direct),
        ms(list_proxied),
        ms(list_proxied.saturating_sub(list_direct))
    );
    match proxied.peak_memory_kib() {
        Some(kib) => println!("  proxy peak resident memory: {:.1} MiB", kib as f64 / 1024.0),
        None => println!("  proxy peak resident memory: not available (no /proc)"),
    }
}
