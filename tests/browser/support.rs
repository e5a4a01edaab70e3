//! What the browser test and the browser benchmark share: the browser driver
//! (`tests/browser/driver.mjs`: the seed's page on 127.0.0.1 in Debian's headless Chromium,
//! driven by playwright-core), its control API, free ports, and clean-up that holds when a test
//! fails: every process started here is ended when its guard drops.

// The test and the benchmark each use part of it.
#![allow(dead_code)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_mediator_tests::{Peers, root};

/// Debian's Chromium (`apt-get install chromium`, done by `tests/peers/install` when
/// `TOOL_MEDIATOR_BROWSER=1`).
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Chromium is there, or the browser story fails with one line saying how to run it. Without it
/// the story is ignored (tests/build.rs), unless `TOOL_MEDIATOR_BROWSER=1` asked for it (CI).
pub fn chromium_needed() {
    assert!(
        Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} is missing: TOOL_MEDIATOR_BROWSER=1 tests/peers/install installs Debian's chromium"
    );
}

/// A port nobody listens on now (the kernel's pick, released at once). Never in the relay's own
/// range (9333-9348), where the embed script looks when the port it was given does not answer.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().unwrap().port()
}

/// A relay id no other test uses: the page's embed script attaches only to the relay that
/// answers with its id, and the guards find leftover processes by it.
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}-{}-{nanos}", std::process::id())
}

/// The Node.js the peers installed (the relay needs Node >= 22).
pub fn node(peers: &Peers) -> PathBuf {
    std::env::split_paths(&peers.path())
        .map(|dir| dir.join("node"))
        .find(|node| node.is_file())
        .expect("Node.js is installed: run tests/peers/install")
}

/// The relay's command line: its WebSocket port, its id, and the one page origin it accepts.
pub fn relay_command(peers: &Peers, port: u16, relay_id: &str, origin: &str) -> Vec<String> {
    let relay = peers.bin("webmcp-local-relay");
    assert!(relay.is_file(), "{} is missing: run tests/peers/install", relay.display());
    vec![
        relay.display().to_string(),
        "--port".into(),
        port.to_string(),
        "--relay-id".into(),
        relay_id.into(),
        "--widget-origin".into(),
        origin.into(),
    ]
}

/// Ends every process whose command line has an argument equal to `marker`, or containing it
/// when `contains` is set: a relay by its id, Chromium by its profile directory.
pub fn end_processes_marked(marker: &str, contains: bool) {
    let Ok(entries) = std::fs::read_dir("/proc") else { return };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else { continue };
        if pid == std::process::id() as i32 {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let marked = cmdline.split(|byte| *byte == 0).any(|argument| {
            let argument = String::from_utf8_lossy(argument);
            if contains { argument.contains(marker) } else { argument == marker }
        });
        if marked {
            // SAFETY: kill(2) with a pid read from /proc and a valid signal.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The browser driver: a Node process serving the page and running Chromium. Dropping it
/// closes the driver's standard input (it closes Chromium and exits), waits for it, and
/// ends whatever is left by force.
pub struct Driver {
    child: Child,
    stdin: Option<ChildStdin>,
    pub control: String,
    pub origin: String,
    dir: tempfile::TempDir,
}

impl Driver {
    pub fn start(peers: &Peers) -> Driver {
        assert!(
            Path::new(CHROMIUM).is_file(),
            "{CHROMIUM} is missing: run tests/peers/install (it installs Debian's chromium)"
        );
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("chromium-profile");
        let log = std::fs::File::create(dir.path().join("driver.log")).unwrap();
        let mut child = peers
            .command(node(peers))
            .arg(root().join("tests/browser/driver.mjs"))
            .args(["--chromium", CHROMIUM, "--profile"])
            .arg(&profile)
            .args(["--lifetime", "900"])
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("the browser driver starts");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = sender.send(line);
        });
        let mut driver = Driver { child, stdin, control: String::new(), origin: String::new(), dir };
        let line = receiver.recv_timeout(Duration::from_secs(90)).unwrap_or_default();
        let ready: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("the browser driver did not start (printed {line:?}):\n{}", driver.log()));
        driver.control = ready["control"].as_str().expect("a control URL").to_owned();
        driver.origin = ready["origin"].as_str().expect("the page origin").to_owned();
        driver
    }

    /// What the driver wrote on stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("driver.log")).unwrap_or_default()
    }

    /// Chromium's profile directory: in Chromium's command line, so a leftover can be found.
    fn profile(&self) -> PathBuf {
        self.dir.path().join("chromium-profile")
    }

    /// A request to the control API.
    pub fn ask(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        control(&self.control, method, path, body).unwrap_or_else(|error| panic!("{error}\n{}", self.log()))
    }

    /// Opens the seed's page in a new tab, pointed at the relay on `relay_port` with `relay_id`.
    pub fn open(&self, relay_port: u16, relay_id: &str) -> u64 {
        let opened = self.ask("POST", "/open", Some(json!({"relayPort": relay_port, "relayId": relay_id})));
        opened["tab"].as_u64().unwrap_or_else(|| panic!("{opened}"))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: kill(2) on the process group the driver leads (it was spawned with
        // process_group(0)); a group already gone is no harm.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
        end_processes_marked(&self.profile().display().to_string(), true);
    }
}

/// Ends the relays started with `relay_id` when dropped: a relay does not exit when its
/// standard input closes (only on SIGTERM or SIGINT), so one whose proxy died would stay.
pub struct RelayGuard(pub String);

impl Drop for RelayGuard {
    fn drop(&mut self) {
        end_processes_marked(&self.0, false);
    }
}

/// One HTTP/1.1 request to the driver's control API, with timeouts; the answer's JSON.
pub fn control(base: &str, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
    let address = base.strip_prefix("http://").ok_or_else(|| format!("not an http URL: {base}"))?;
    let mut stream = TcpStream::connect(address).map_err(|error| format!("{method} {path}: {error}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(90))).unwrap();
    stream.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = body.map(|body| body.to_string()).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(|error| format!("{method} {path}: {error}"))?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).map_err(|error| format!("{method} {path}: {error}"))?;
    let (head, body) = answer.split_once("\r\n\r\n").ok_or_else(|| format!("{method} {path}: {answer:?}"))?;
    let value: Value = serde_json::from_str(body).map_err(|error| format!("{method} {path}: {error}: {body:?}"))?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!("{method} {path}: {}: {value}", head.lines().next().unwrap_or_default()));
    }
    Ok(value)
}

/// Runs `command` to its end or until `limit`, when it is ended by force; returns its exit
/// status (None when it timed out), stdout and stderr.
pub fn run_bounded(mut command: Command, limit: Duration) -> (Option<std::process::ExitStatus>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0)
        .spawn()
        .expect("starts");
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            // SAFETY: kill(2) on the group the child leads.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    (status, read(&out), read(&err))
}
