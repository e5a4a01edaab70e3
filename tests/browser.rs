//! The seed's browser story, end to end with real parts: a page on 127.0.0.1 registers the
//! cryptic tools `gt_usr`, `del` and `upd_prf` with `@mcp-b/global` (the WebMCP polyfill) in
//! Debian's headless Chromium (driven by playwright-core, `tests/browser/driver.mjs`); the
//! relay's embed script bridges them to `@mcp-b/webmcp-local-relay`, an MCP stdio server; the
//! proxy stands in front of the relay; the MCP Python SDK is the client. All of it comes from
//! the package registries (`tests/peers/install`).

#[path = "browser/support.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Driver, RelayGuard, free_port, relay_command, run_bounded, unique};
use tool_mediator_tests::{binary, peers, root};

fn names(list: &Value) -> Vec<&str> {
    list.as_array().expect("a list").iter().map(|name| name.as_str().expect("a name")).collect()
}

#[test]
#[cfg_attr(no_chromium, ignore = "needs Debian's chromium: TOOL_MEDIATOR_BROWSER=1 tests/peers/install")]
fn a_webmcp_page_reaches_the_client_enhanced_through_the_relay_and_the_proxy() {
    support::chromium_needed();
    let started = Instant::now();
    let peers = peers();
    let driver = Driver::start(&peers);
    let (relay_port, relay_id) = (free_port(), unique("tool-mediator-browser"));
    let _relay = RelayGuard(relay_id.clone());

    // The relay names its server `webmcp-local-relay` for every page it relays, so the proxy is
    // told which override file applies: the page plays the seed's example.com.
    let mut proxy = vec![
        binary().display().to_string(),
        "proxy".into(),
        "--overrides".into(),
        "mediator/overrides".into(),
        "--source".into(),
        "example.com".into(),
        "--".into(),
    ];
    proxy.extend(relay_command(&peers, relay_port, &relay_id, &driver.origin));

    // The relay keeps its port in $HOME/.webmcp: a home of the test's own keeps it there.
    let home = tempfile::tempdir().unwrap();
    let mut client = peers.command(peers.bin("python"));
    client
        .arg(root().join("tests/peers/client.py"))
        .args(["browser", &driver.control, &relay_port.to_string(), &relay_id, "--"])
        .args(&proxy)
        .env("HOME", home.path());
    let (status, stdout, stderr) = run_bounded(client, Duration::from_secs(180));
    assert!(
        status.is_some_and(|status| status.success()),
        "the browser scenario failed ({status:?}):\n{stderr}\n--- driver ---\n{}",
        driver.log()
    );
    let outcome: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|error| panic!("the scenario printed {stdout:?}: {error}"));

    assert_eq!(outcome["server"], json!("webmcp-local-relay"), "{outcome}");
    assert_eq!(outcome["list_changed_capability"], json!(true));

    // Opening the tab: the client hears of it and sees the seed's tools by their new names.
    assert!(outcome["opened_notifications"].as_u64() >= Some(1), "{outcome}");
    let opened = names(&outcome["opened"]);
    for name in ["get_user", "delete_user", "update_profile"] {
        assert!(opened.contains(&name), "{name} is listed: {opened:?}");
    }
    for cryptic in ["gt_usr", "del", "upd_prf"] {
        assert!(!opened.contains(&cryptic), "{cryptic} is not listed by its own name: {opened:?}");
    }
    let get_user = &outcome["tools"]["get_user"];
    assert_eq!(get_user["description"], json!("Retrieve a user by their ID or email address. Give one of the two."));
    assert_eq!(
        get_user.pointer("/inputSchema/properties/userId/type"),
        Some(&json!("number")),
        "the model sees the curated argument names: {get_user}"
    );
    let provenance = &get_user["_meta"]["tool-mediator/provenance"];
    assert_eq!(provenance["originalName"], json!("gt_usr"), "{get_user}");
    assert_eq!(provenance["argumentAliases"], json!({"email": "eml", "userId": "uid"}), "{get_user}");

    // The calls by the new names and arguments reach the page's `execute` under the old ones.
    assert_eq!(
        outcome["calls"]["get_user"]["structuredContent"],
        json!({"tool": "gt_usr", "arguments": {"uid": 42, "eml": "ada@example.com"}}),
        "{outcome}"
    );
    assert_eq!(
        outcome["page_calls"],
        json!([
            {"tool": "gt_usr", "arguments": {"uid": 42, "eml": "ada@example.com"}},
            {"tool": "upd_prf", "arguments": {"uid": 42, "nm": "Ada", "bio": "Counts."}},
            {"tool": "del", "arguments": {"uid": 42}},
        ]),
        "what the page recorded"
    );

    // A tool the page registers later arrives with a list change, enhanced by the rules.
    assert!(outcome["registered_notifications"].as_u64() >= Some(1), "{outcome}");
    let extra = outcome["extra"].as_array().unwrap();
    assert_eq!(extra.len(), 1, "{outcome}");
    assert_eq!(extra[0]["name"], json!("search_images"), "{outcome}");
    assert_eq!(extra[0]["_meta"]["tool-mediator/provenance"]["originalName"], json!("srch_imgs"));
    assert_eq!(extra[0]["_meta"]["tool-mediator/provenance"]["enhancedBy"], json!("rules"));

    // Closing the tab takes its tools away, with a list change; the relay's own tools stay.
    assert!(outcome["closed_notifications"].as_u64() >= Some(1), "{outcome}");
    assert_eq!(outcome["closed"], outcome["before"], "{outcome}");

    drop(driver);
    eprintln!("the browser story took {:.1} s", started.elapsed().as_secs_f64());
}
