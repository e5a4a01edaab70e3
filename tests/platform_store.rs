//! Sign-ins kept in the platform's credential store: a real Secret Service (GNOME Keyring, on a
//! D-Bus session of the test's own, its keyrings in a temporary folder) holds the tokens, and the
//! credentials file only says which server they are for; with no Secret Service, the file holds
//! them. Needs Debian's gnome-keyring and dbus-daemon (tests/peers/install brings them when
//! TOOL_MEDIATOR_KEYRING=1, as CI sets it); without them the test is ignored (tests/build.rs),
//! unless TOOL_MEDIATOR_KEYRING=1, when it fails.
#![cfg(target_os = "linux")]

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tool_mediator_mcp::upstream::auth::{CredentialStore, Credentials, KeptIn, StoreError};

/// Children ended when the test ends, however it ends.
struct Running(Vec<Child>);

impl Drop for Running {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn found(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn credentials(access: &str) -> Credentials {
    serde_json::from_value(serde_json::json!({
        "issuer": "https://auth.test",
        "token_endpoint": "https://auth.test/token",
        "resource": "https://mcp.test/mcp",
        "client": {"id": "client-1", "secret": "client-secret-1", "token_auth": "client_secret_post", "registered": true},
        "access_token": access,
        "refresh_token": "refresh-secret-1",
        "expires_at": 4_000_000_000_u64,
    }))
    .unwrap()
}

/// A session bus's configuration with no service directories, so nothing is started on demand:
/// only the daemons the test starts itself are on it.
fn bus_without_activation(socket: &std::path::Path) -> String {
    format!(
        r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
        socket.display()
    )
}

#[test]
#[cfg_attr(
    no_keyring,
    ignore = "needs gnome-keyring-daemon and dbus-daemon: TOOL_MEDIATOR_KEYRING=1 tests/peers/install"
)]
fn tokens_go_to_the_secret_service_when_there_is_one_and_to_the_file_when_there_is_none() {
    assert!(
        found("gnome-keyring-daemon") && found("dbus-daemon"),
        "gnome-keyring-daemon or dbus-daemon is missing: TOOL_MEDIATOR_KEYRING=1 tests/peers/install installs them"
    );
    let dir = tempfile::tempdir().unwrap();
    let server = "https://mcp.test/mcp";

    // No Secret Service on the bus: the file keeps everything. (This test is alone in its binary:
    // the environment it changes is its own.)
    unsafe {
        std::env::set_var("DBUS_SESSION_BUS_ADDRESS", format!("unix:path={}", dir.path().join("none").display()))
    };
    let store = CredentialStore::at(dir.path().join("plain/credentials.json")).with_platform_store();
    store.put(server, credentials("access-secret-1")).unwrap();
    assert_eq!(store.kept_in(server).unwrap(), KeptIn::File);
    let text = std::fs::read_to_string(store.path()).unwrap();
    assert!(text.contains("access-secret-1") && text.contains("refresh-secret-1"), "{text}");
    assert_eq!(store.get(server).unwrap().unwrap().access_token, "access-secret-1");

    // A session bus of the test's own, and GNOME Keyring on it with a new keyring, unlocked.
    // The bus starts no services on demand: the system's session bus would start a second,
    // locked keyring when the store asks before ours has taken the name (it then stands aside,
    // "another secret service is running", and every put is refused).
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let bus_config = dir.path().join("bus.conf");
    std::fs::write(&bus_config, bus_without_activation(&dir.path().join("bus"))).unwrap();
    let mut running = Running(Vec::new());
    let mut bus = Command::new("dbus-daemon")
        .arg(format!("--config-file={}", bus_config.display()))
        .args(["--nofork", "--print-address=1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut address = String::new();
    BufReader::new(bus.stdout.take().unwrap()).read_line(&mut address).unwrap();
    running.0.push(bus);
    let address = address.trim().to_owned();
    // Nothing answers on it yet, and asking starts nothing: the file keeps the secrets.
    unsafe { std::env::set_var("DBUS_SESSION_BUS_ADDRESS", &address) };
    let early = CredentialStore::at(dir.path().join("early/credentials.json")).with_platform_store();
    early.put(server, credentials("access-secret-0")).unwrap();
    assert_eq!(early.kept_in(server).unwrap(), KeptIn::File);
    // What the daemon says goes to a file, shown if it never answers.
    let said = dir.path().join("keyring.log");
    let mut keyring = Command::new("gnome-keyring-daemon")
        .args(["--foreground", "--unlock", "--components=secrets"])
        .env("DBUS_SESSION_BUS_ADDRESS", &address)
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_RUNTIME_DIR", &home)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&said).unwrap())
        .spawn()
        .unwrap();
    keyring.stdin.take().unwrap().write_all(b"test-password").unwrap();
    running.0.push(keyring);
    unsafe { std::env::set_var("DBUS_SESSION_BUS_ADDRESS", &address) };

    // The keyring takes a moment to be on the bus: until it is, the file is used.
    let store = CredentialStore::at(dir.path().join("platform/credentials.json")).with_platform_store();
    let began = Instant::now();
    loop {
        // A keyring on the bus but not yet answering refuses (the store then keeps nothing
        // rather than write the secrets in the clear); it answers once it has started.
        match store.put(server, credentials("access-secret-2")) {
            Ok(()) if store.kept_in(server).unwrap() == KeptIn::PlatformStore => break,
            Ok(()) | Err(StoreError::Platform(_)) => {}
            Err(error) => panic!("{error}"),
        }
        // A loaded machine (a CI run building beside it) may take a while to start the daemon.
        if began.elapsed() > Duration::from_secs(90) {
            let exited = running.0.last_mut().and_then(|keyring| keyring.try_wait().ok().flatten());
            let said = std::fs::read_to_string(&said).unwrap_or_default();
            panic!("the Secret Service never came up (the daemon: {exited:?}; it said: {said})");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // The file names the server and what is not secret; the secrets are in the keyring alone.
    let text = std::fs::read_to_string(store.path()).unwrap();
    assert!(text.contains("https://auth.test/token") && text.contains("client-1"), "{text}");
    for secret in ["access-secret", "refresh-secret", "client-secret"] {
        assert!(!text.contains(secret), "{secret} in the file: {text}");
    }
    let kept = store.get(server).unwrap().unwrap();
    assert_eq!(
        (kept.access_token.as_str(), kept.refresh_token.as_deref(), kept.client.secret.as_deref()),
        ("access-secret-2", Some("refresh-secret-1"), Some("client-secret-1"))
    );
    assert_eq!(store.all().unwrap()[server].access_token, "access-secret-2");
    // A refresh rotates what the keyring holds.
    store.put(server, Credentials { access_token: "access-secret-3".into(), ..kept }).unwrap();
    assert_eq!(store.get(server).unwrap().unwrap().access_token, "access-secret-3");

    // Forgotten from both; a file that still names it (put back by hand) finds nothing.
    let listed = std::fs::read_to_string(store.path()).unwrap();
    assert!(store.remove(server).unwrap());
    assert!(store.get(server).unwrap().is_none());
    std::fs::write(store.path(), listed).unwrap();
    assert!(store.get(server).unwrap().is_none(), "the keyring's entry is gone");

    // Signing out where the keyring cannot be reached (over SSH, say) still forgets the sign-in.
    store.put(server, credentials("access-secret-4")).unwrap();
    assert_eq!(store.kept_in(server).unwrap(), KeptIn::PlatformStore);
    unsafe {
        std::env::set_var("DBUS_SESSION_BUS_ADDRESS", format!("unix:path={}", dir.path().join("none").display()))
    };
    assert_eq!(store.all().unwrap().len(), 1, "listed, without what cannot be read");
    assert!(store.remove(server).unwrap());
    assert!(store.all().unwrap().is_empty());
}
