//! Peak resident memory, against the size of what came in.
//!
//! `cargo bench -p tool-mediator-tests --bench memory`
//!
//! - `enhance` of the enhance benchmark's manifests (10,000 and 100,000 real github tools, every
//!   fourth one cryptic, compact JSON), to standard output and `--in-place`: the peak of the
//!   process (`ru_maxrss` from `wait4`), beside the manifest's size; and `tokens` of each, which
//!   lists it in every disclosure mode. The time each run took is printed beside its peak.
//! - The proxy in front of a server listing 50,000 small tools (`tests/peers/hostile.py
//!   --tools 50000`): the proxy's peak (`VmHWM`) after three listings, beside the size of the
//!   server's own `tools/list` result, asked of it directly.

use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;
use tool_mediator_tests::{JsonRpcClient, binary, root};

#[path = "../../mediator/benches/data/github.rs"]
mod github;

const MIB: f64 = 1024.0 * 1024.0;

fn main() {
    // Linux counts the memory of the process that starts a child into the child's peak (the
    // peak of the old address space is kept across exec), so each run is started from a fresh,
    // small copy of this benchmark: `memory --peak-of ARGS...` prints the peak of one run.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(run) = args.iter().position(|arg| arg == "--peak-of") {
        let run: Vec<&str> = args[run + 1..].iter().map(String::as_str).collect();
        println!("{}", peak_kib(&run));
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    println!("{:<44} {:>10} {:>12} {:>8} {:>8}", "what", "input", "peak RSS", "ratio", "time");
    for n in [10_000, 100_000] {
        let manifest = dir.path().join(format!("github-{n}.json"));
        std::fs::write(&manifest, github::manifest(n)).expect("writes the manifest");
        let size = std::fs::metadata(&manifest).expect("written").len() as f64;
        let to_stdout = peak_of(&["enhance", path(&manifest), "--source", "bench"]);
        report(&format!("enhance, {n} tools, to stdout"), size, to_stdout);
        let copy = dir.path().join(format!("in-place-{n}.json"));
        std::fs::copy(&manifest, &copy).expect("copies");
        let in_place = peak_of(&["enhance", "--in-place", path(&copy), "--source", "bench"]);
        report(&format!("enhance, {n} tools, --in-place"), size, in_place);
        let tokens = peak_of(&["tokens", path(&manifest)]);
        report(&format!("tokens, {n} tools"), size, tokens);
    }

    let tools = 50_000;
    let hostile = root().join("tests/peers/hostile.py");
    let mut server = Command::new("python3");
    server.arg(&hostile).args(["--tools", &tools.to_string()]);
    let mut server = JsonRpcClient::start(server);
    let (listed, _) = server.request("tools/list", json!({}));
    let list_size = listed["result"].to_string().len() as f64;
    drop(server);
    let mut proxy = Command::new(binary());
    proxy.args(["proxy", "--", "python3"]).arg(&hostile).args(["--tools", &tools.to_string()]);
    let mut client = JsonRpcClient::start(proxy);
    for _ in 0..3 {
        let (page, _) = client.request("tools/list", json!({}));
        assert!(page["result"]["tools"].is_array(), "{page}");
    }
    let peak = client.peak_memory_kib().expect("the proxy's /proc status");
    report(&format!("proxy, {tools} tools listed 3 times"), list_size, (peak, None));
}

fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

fn report(what: &str, input_bytes: f64, (peak_kib, seconds): (u64, Option<f64>)) {
    let peak = peak_kib as f64 * 1024.0;
    let time = seconds.map_or(String::new(), |seconds| format!("{seconds:>7.2}s"));
    println!(
        "{what:<44} {:>7.1} MiB {:>8.1} MiB {:>7.1}x {time:>8}",
        input_bytes / MIB,
        peak / MIB,
        peak / input_bytes
    );
}

/// [`peak_kib`] in a fresh process of this benchmark, and how long the run took (the fresh
/// process's start is counted in, a few milliseconds).
fn peak_of(args: &[&str]) -> (u64, Option<f64>) {
    let started = std::time::Instant::now();
    let binary = binary();
    let output = Command::new(std::env::current_exe().expect("the benchmark knows its path"))
        .env("TOOL_MEDIATOR_BENCH_BINARY", &binary)
        .arg("--peak-of")
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .expect("the benchmark runs itself");
    assert!(output.status.success(), "measuring {args:?} failed");
    let peak = String::from_utf8_lossy(&output.stdout).trim().parse().expect("a peak in KiB");
    (peak, Some(started.elapsed().as_secs_f64()))
}

/// Runs the binary to the end, output to /dev/null; its peak resident set in KiB.
#[allow(clippy::zombie_processes)] // waited for with wait4, which also gives its resource usage
fn peak_kib(args: &[&str]) -> u64 {
    let binary = std::env::var_os("TOOL_MEDIATOR_BENCH_BINARY").map_or_else(binary, Into::into);
    let child = Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the binary starts");
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child; both pointers are valid for the call.
    let waited = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(waited, child.id() as libc::pid_t, "wait4 failed");
    let status = std::process::ExitStatus::from_raw(status);
    assert!(status.success(), "tool-mediator {args:?} failed: {status}");
    usage.ru_maxrss as u64
}
