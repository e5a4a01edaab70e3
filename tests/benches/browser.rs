//! The whole browser path, measured: a `tools/call` from an MCP client through the proxy to
//! `webmcp-local-relay`, over its WebSocket to the seed's page in headless Chromium (the relay's
//! widget iframe, postMessage to the page, the page's `execute`) and back, against the same call
//! made to the relay directly. Also a call of one of the relay's own tools
//! (`webmcp_list_sources`), which never leaves the relay, to show the browser's share.
//!
//! `cargo bench -p tool-mediator-tests --bench browser` (needs `tests/peers/install`).
//!
//! One Chromium, one tab per relay (each relay has its own port and id: a page's embed script
//! attaches to one relay); the client is the harness's minimal line-by-line JSON-RPC client for
//! both paths, and calls alternate between the paths so that a busy machine slows both alike.
//! Four sessions, each with fresh relays and tabs, open the two tabs in alternating orders, so
//! neither path always has the older tab; the figures are pooled over all of them. The browser
//! round trip is spread wide (a few milliseconds, or about ten), so the report gives the mean
//! and several percentiles beside the median.

#[path = "../browser/support.rs"]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Driver, RelayGuard, free_port, relay_command, unique};
use tool_mediator_tests::{JsonRpcClient, Peers, binary, peers};

const WARM_UP: usize = 20;
const CALLS: usize = 300;
const SESSIONS: usize = 4;

fn percentile(samples: &mut [Duration], fraction: f64) -> Duration {
    samples.sort();
    samples[((samples.len() - 1) as f64 * fraction).round() as usize]
}

fn ms(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1e3)
}

/// Lists until `name` is there (the page's widget attaches to the relay on its own time).
fn wait_for_tool(client: &mut JsonRpcClient, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (listed, _) = client.request("tools/list", json!({}));
        let tools = listed["result"]["tools"].as_array().cloned().unwrap_or_default();
        if tools.iter().any(|tool| tool["name"] == name) {
            return;
        }
        assert!(Instant::now() < deadline, "{name} was not listed within 30 s: {listed}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn main() {
    let peers = peers();
    let driver = Driver::start(&peers);
    let home = tempfile::tempdir().unwrap();
    let mut samples = Samples::default();
    for session in 0..SESSIONS {
        measure(&peers, &driver, home.path(), session % 2 == 1, &mut samples);
    }
    let Samples { mut direct_page, mut proxied_page, mut direct_relay, mut proxied_relay } = samples;
    report(
        "the page's tool (`get_user` through the proxy, `gt_usr` direct): relay, WebSocket, Chromium, execute",
        &mut direct_page,
        &mut proxied_page,
    );
    report("the relay's own `webmcp_list_sources` (no browser)", &mut direct_relay, &mut proxied_relay);
    drop(driver);
}

#[derive(Default)]
struct Samples {
    direct_page: Vec<Duration>,
    proxied_page: Vec<Duration>,
    direct_relay: Vec<Duration>,
    proxied_relay: Vec<Duration>,
}

/// One session: a relay asked directly and one behind the proxy, each with its tab.
fn measure(peers: &Peers, driver: &Driver, home: &Path, proxied_tab_first: bool, samples: &mut Samples) {
    let (direct_port, direct_id) = (free_port(), unique("tool-mediator-bench-direct"));
    let (proxied_port, proxied_id) = (free_port(), unique("tool-mediator-bench-proxied"));
    let _guards = (RelayGuard(direct_id.clone()), RelayGuard(proxied_id.clone()));

    let mut direct = {
        let relay = relay_command(peers, direct_port, &direct_id, &driver.origin);
        let mut command = peers.command(&relay[0]);
        command.args(&relay[1..]).env("HOME", home);
        JsonRpcClient::start(command)
    };
    let mut proxied = {
        let mut command = peers.command(binary());
        command
            .args(["proxy", "--overrides", "mediator/overrides", "--source", "example.com", "--"])
            .args(relay_command(peers, proxied_port, &proxied_id, &driver.origin))
            .env("HOME", home);
        JsonRpcClient::start(command)
    };
    let tabs = if proxied_tab_first {
        let proxied_tab = driver.open(proxied_port, &proxied_id);
        [proxied_tab, driver.open(direct_port, &direct_id)]
    } else {
        let direct_tab = driver.open(direct_port, &direct_id);
        [direct_tab, driver.open(proxied_port, &proxied_id)]
    };
    wait_for_tool(&mut direct, "gt_usr");
    wait_for_tool(&mut proxied, "get_user");

    let page_call = |client: &mut JsonRpcClient, proxied: bool, n: usize| {
        let (name, arguments) = if proxied {
            ("get_user", json!({"userId": n, "email": "ada@example.com"}))
        } else {
            ("gt_usr", json!({"uid": n, "eml": "ada@example.com"}))
        };
        let (answer, took) = client.request("tools/call", json!({"name": name, "arguments": arguments}));
        let received = &answer["result"]["structuredContent"];
        assert_eq!(received, &json!({"tool": "gt_usr", "arguments": {"uid": n, "eml": "ada@example.com"}}), "{answer}");
        took
    };
    let relay_call = |client: &mut JsonRpcClient| -> Duration {
        let (answer, took): (Value, Duration) =
            client.request("tools/call", json!({"name": "webmcp_list_sources", "arguments": {}}));
        assert_eq!(answer["result"]["structuredContent"]["count"], json!(1), "{answer}");
        took
    };

    for n in 0..WARM_UP {
        page_call(&mut direct, false, n);
        page_call(&mut proxied, true, n);
        relay_call(&mut direct);
        relay_call(&mut proxied);
    }
    for n in 0..CALLS {
        samples.direct_page.push(page_call(&mut direct, false, n));
        samples.proxied_page.push(page_call(&mut proxied, true, n));
        samples.direct_relay.push(relay_call(&mut direct));
        samples.proxied_relay.push(relay_call(&mut proxied));
    }
    drop((direct, proxied));
    for tab in tabs {
        driver.ask("POST", "/close", Some(json!({"tab": tab})));
    }
}

fn mean(samples: &[Duration]) -> Duration {
    samples.iter().sum::<Duration>() / samples.len() as u32
}

fn report(what: &str, direct: &mut [Duration], proxied: &mut [Duration]) {
    let line = |samples: &mut [Duration]| {
        format!(
            "p10 {}  p25 {}  median {}  p90 {}  mean {}",
            ms(percentile(samples, 0.1)),
            ms(percentile(samples, 0.25)),
            ms(percentile(samples, 0.5)),
            ms(percentile(samples, 0.9)),
            ms(mean(samples))
        )
    };
    println!("{what}: {} calls per path", direct.len());
    println!("  direct to the relay: {}", line(direct));
    println!("  through the proxy:   {}", line(proxied));
    let (direct_median, proxied_median) = (percentile(direct, 0.5), percentile(proxied, 0.5));
    let added = proxied_median.as_secs_f64() - direct_median.as_secs_f64();
    println!(
        "  added at the median: {:.3} ms ({:.1}% of the direct round trip); at p90: {:.3} ms; to the mean: {:.3} ms",
        added * 1e3,
        100.0 * added / direct_median.as_secs_f64(),
        (percentile(proxied, 0.9).as_secs_f64() - percentile(direct, 0.9).as_secs_f64()) * 1e3,
        (mean(proxied).as_secs_f64() - mean(direct).as_secs_f64()) * 1e3
    );
}
