//! `tool-mediator wrap` and `unwrap` on the configuration files of real clients (fixtures in
//! tests/fixtures/clients/, one per client, written from each client's documentation), and a
//! wrapped entry started as its client would start it, under the MCP Python SDK.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tool_mediator_tests::{binary, fixture, peers, run_in, run_with, stderr, stdout};

/// Every fixture: the client's directory in tests/fixtures/clients/ and its file's name.
const FIXTURES: [(&str, &str); 6] = [
    ("claude-desktop", "claude_desktop_config.json"),
    ("claude-code", ".mcp.json"),
    ("claude-code-user", ".claude.json"),
    ("cursor", "mcp.json"),
    ("vscode", "mcp.json"),
    ("windsurf", "mcp_config.json"),
];

/// A copy of a fixture in a directory of its own: (the directory, the file).
fn copy(client: &str, name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    fs::copy(fixture("clients").join(client).join(name), &path).unwrap();
    (dir, path)
}

fn tool_mediator(dir: &Path, args: &[&str]) -> std::process::Output {
    run_in(dir, args, None)
}

/// The names of the files in a directory, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn every_fixture_comes_back_byte_for_byte_after_wrap_and_unwrap() {
    for (client, name) in FIXTURES {
        for gateway in [false, true] {
            let (dir, path) = copy(client, name);
            let original = fs::read(&path).unwrap();
            let mut wrap = vec!["wrap", "--config", name];
            if gateway {
                wrap.push("--gateway");
            }
            let wrapped = tool_mediator(dir.path(), &wrap);
            assert!(wrapped.status.success(), "{client} (gateway: {gateway}): {}", stderr(&wrapped));
            let after = fs::read(&path).unwrap();
            assert_ne!(after, original, "{client} (gateway: {gateway}): something is wrapped");
            assert_eq!(
                fs::read(dir.path().join(format!("{name}.bak"))).unwrap(),
                original,
                "the backup is the file as it was"
            );
            let text = String::from_utf8(after.clone()).unwrap();
            if gateway {
                assert!(text.contains(r#""args": ["gateway", "--config", "#), "{text}");
                let stem = name.trim_end_matches(".json");
                let servers = dir.path().join(format!("{stem}.tool-mediator.json"));
                let servers: Value = serde_json::from_str(&fs::read_to_string(&servers).unwrap()).unwrap();
                assert!(!servers["mcpServers"].as_object().unwrap().is_empty(), "{servers}");
            } else {
                assert!(
                    text.contains(r#""command": "tool-mediator","#) && text.contains(r#""args": ["proxy", "#),
                    "{text}"
                );
            }

            let again = tool_mediator(dir.path(), &wrap);
            assert!(again.status.success(), "{}", stderr(&again));
            assert!(stderr(&again).contains("nothing to change"), "{client}: {}", stderr(&again));
            assert_eq!(
                fs::read(&path).unwrap(),
                after,
                "{client} (gateway: {gateway}): wrapping twice changes nothing"
            );

            let unwrapped = tool_mediator(dir.path(), &["unwrap", "--config", name]);
            assert!(unwrapped.status.success(), "{}", stderr(&unwrapped));
            assert_eq!(
                String::from_utf8(fs::read(&path).unwrap()).unwrap(),
                String::from_utf8(original.clone()).unwrap(),
                "{client} (gateway: {gateway}): unwrap gives the same bytes back"
            );
            // The gateway's files go with it; the backup of the last change stays.
            assert_eq!(listing(dir.path()), [name.to_owned(), format!("{name}.bak")], "{client} (gateway: {gateway})");
        }
    }
}

#[test]
fn the_comments_of_a_vscode_configuration_survive() {
    let original = fs::read_to_string(fixture("clients/vscode/mcp.json")).unwrap();
    let comments: Vec<&str> =
        original.lines().map(str::trim).filter(|line| line.starts_with("//") || line.starts_with("/*")).collect();
    assert!(comments.len() >= 3, "the fixture has comments: {comments:?}");
    for gateway in [false, true] {
        let (dir, path) = copy("vscode", "mcp.json");
        let mut args = vec!["wrap", "--config", "mcp.json"];
        if gateway {
            args.push("--gateway");
        }
        let output = tool_mediator(dir.path(), &args);
        assert!(output.status.success(), "{}", stderr(&output));
        let wrapped = fs::read_to_string(&path).unwrap();
        for comment in &comments {
            assert!(wrapped.contains(comment), "{comment:?} is kept (gateway: {gateway}):\n{wrapped}");
        }
        assert!(
            gateway || wrapped.contains(r#""args": ["proxy", "--", "uvx", "mcp-server-time"], // the local"#),
            "{wrapped}"
        );
        // `inputs` and the trailing commas are the file's, untouched.
        assert!(wrapped.contains(r#""id": "perplexity-key","#), "{wrapped}");
        assert!(wrapped.trim_end().ends_with("},\n}"), "{wrapped}");
    }
}

#[test]
fn a_dry_run_shows_a_diff_and_writes_nothing() {
    for gateway in [false, true] {
        let (dir, path) = copy("claude-desktop", "claude_desktop_config.json");
        let before = fs::read(&path).unwrap();
        let mut args = vec!["wrap", "--config", "claude_desktop_config.json", "--dry-run"];
        if gateway {
            args.push("--gateway");
        }
        let output = tool_mediator(dir.path(), &args);
        assert!(output.status.success(), "{}", stderr(&output));
        let diff = stdout(&output);
        assert!(diff.contains("--- a/claude_desktop_config.json\n+++ b/claude_desktop_config.json\n"), "{diff}");
        assert!(diff.contains("+    \"tool-mediator\": {") || !gateway, "{diff}");
        assert!(diff.contains("+      \"command\": \"tool-mediator\",") || gateway, "{diff}");
        if gateway {
            assert!(diff.contains("+++ b/claude_desktop_config.tool-mediator.json"), "{diff}");
        }
        assert_eq!(fs::read(&path).unwrap(), before);
        assert_eq!(listing(dir.path()), ["claude_desktop_config.json"], "no backup, no servers file");
    }
}

#[test]
fn an_environment_and_other_keys_stay_with_the_wrapped_entry() {
    let (dir, path) = copy("claude-desktop", "claude_desktop_config.json");
    let output = tool_mediator(dir.path(), &["wrap", "--config", "claude_desktop_config.json", "github", "weather"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let wrapped: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let servers = &wrapped["mcpServers"];
    assert_eq!(servers["github"]["command"], "tool-mediator");
    assert_eq!(
        servers["github"]["args"],
        json!([
            "proxy",
            "--",
            "docker",
            "run",
            "-i",
            "--rm",
            "-e",
            "GITHUB_PERSONAL_ACCESS_TOKEN",
            "ghcr.io/github/github-mcp-server"
        ])
    );
    assert_eq!(servers["github"]["env"], json!({"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}));
    assert_eq!(servers["weather"]["args"], json!(["proxy", "/Users/ada/.local/bin/weather-server"]));
    assert_eq!(servers["weather"]["env"]["WEATHER_API_KEY"], "example-key");
    // The servers not named are untouched.
    assert_eq!(servers["time"]["command"], "uvx");
    assert_eq!(wrapped["globalShortcut"], "Ctrl+Space");
}

#[test]
fn http_servers_are_left_as_they_are_unless_the_gateway_takes_them() {
    let (dir, path) = copy("cursor", "mcp.json");
    let output = tool_mediator(dir.path(), &["wrap", "--config", "mcp.json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("`remote-docs`: an HTTP server, left as it is"), "{}", stderr(&output));
    let wrapped: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        wrapped["mcpServers"]["remote-docs"],
        json!({"url": "https://docs.example.com/mcp", "headers": {"API_KEY": "value"}})
    );

    let (dir, _) = copy("cursor", "mcp.json");
    let output = tool_mediator(dir.path(), &["wrap", "--config", "mcp.json", "--gateway"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let servers: Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("mcp.tool-mediator.json")).unwrap()).unwrap();
    assert_eq!(servers["mcpServers"]["remote-docs"]["url"], "https://docs.example.com/mcp");
    assert_eq!(servers["mcpServers"]["project-tools"]["cwd"], "/Users/ada/code/project-tools");
}

#[test]
fn bad_input_exits_2_names_the_place_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let broken = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"}\n    \"b\": {\"command\": \"b\"}\n  }\n}\n";
    fs::write(dir.path().join("broken.json"), broken).unwrap();
    let output = tool_mediator(dir.path(), &["wrap", "--config", "broken.json"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("broken.json:3:26: Expected comma"), "{}", stderr(&output));

    fs::write(dir.path().join("other.json"), r#"{"editor.fontSize": 14}"#).unwrap();
    let output = tool_mediator(dir.path(), &["wrap", "--config", "other.json"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("other.json: no `mcpServers`"), "{}", stderr(&output));

    let (_source, path) = copy("cursor", "mcp.json");
    fs::copy(&path, dir.path().join("mcp.json")).unwrap();
    let output = tool_mediator(dir.path(), &["wrap", "--config", "mcp.json", "postgres", "no-such-server"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("mcp.json: `/mcpServers`: no server named `no-such-server`"),
        "{}",
        stderr(&output)
    );

    let output = tool_mediator(dir.path(), &["unwrap", "--config", "broken.json"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(fs::read_to_string(dir.path().join("broken.json")).unwrap(), broken);
    assert_eq!(fs::read(dir.path().join("mcp.json")).unwrap(), fs::read(&path).unwrap());
    assert_eq!(listing(dir.path()), ["broken.json", "mcp.json", "other.json"], "no backup, nothing written");
}

#[test]
fn a_client_is_found_where_it_keeps_its_configuration() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let config = home.path().join(".config");
    let env = [("HOME", home.path().to_str().unwrap()), ("XDG_CONFIG_HOME", config.to_str().unwrap())];
    let places = [
        (vec!["--client", "claude-desktop"], config.join("Claude/claude_desktop_config.json"), "claude-desktop"),
        (vec!["--client", "cursor", "--scope", "user"], home.path().join(".cursor/mcp.json"), "cursor"),
        (vec!["--client", "vscode"], project.path().join(".vscode/mcp.json"), "vscode"),
        (vec!["--client", "claude-code"], project.path().join(".mcp.json"), "claude-code"),
        (vec!["--client", "windsurf"], home.path().join(".codeium/windsurf/mcp_config.json"), "windsurf"),
    ];
    for (args, path, client) in places {
        let missing = run_with(project.path(), &[&["wrap"], &args[..]].concat(), None, &env);
        assert_eq!(missing.status.code(), Some(2), "{client}");
        assert!(stderr(&missing).contains(&format!("{}: no ", path.display())), "{client}: {}", stderr(&missing));

        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let source = FIXTURES.iter().find(|(name, _)| *name == client).unwrap();
        fs::copy(fixture("clients").join(source.0).join(source.1), &path).unwrap();
        let output = run_with(project.path(), &[&["wrap"], &args[..]].concat(), None, &env);
        assert!(output.status.success(), "{client}: {}", stderr(&output));
        assert!(fs::read_to_string(&path).unwrap().contains("\"proxy\""), "{client}: {} is wrapped", path.display());
    }
}

/// Regression (issue 42, item 13): run outside a project, `wrap --client cursor` said there was
/// no Cursor configuration while `~/.cursor/mcp.json` was there. A client whose file is looked
/// for in the project says where the user's is, and that `--scope user` changes it.
#[test]
fn outside_a_project_wrap_points_to_the_users_configuration() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let config = home.path().join(".config");
    let env = [("HOME", home.path().to_str().unwrap()), ("XDG_CONFIG_HOME", config.to_str().unwrap())];
    let users = [
        ("cursor", home.path().join(".cursor/mcp.json"), ("cursor", "mcp.json")),
        ("claude-code", home.path().join(".claude.json"), ("claude-code-user", ".claude.json")),
        ("vscode", config.join("Code/User/mcp.json"), ("vscode", "mcp.json")),
    ];
    for (client, user, (fixture_dir, fixture_name)) in users {
        let wrap = || run_with(project.path(), &["wrap", "--client", client], None, &env);
        let missing = wrap();
        assert_eq!(missing.status.code(), Some(2), "{client}");
        let said = stderr(&missing);
        assert!(said.contains("--scope user") && said.contains(&user.display().to_string()), "{client}: {said}");

        fs::create_dir_all(user.parent().unwrap()).unwrap();
        fs::copy(fixture("clients").join(fixture_dir).join(fixture_name), &user).unwrap();
        let elsewhere = wrap();
        assert_eq!(elsewhere.status.code(), Some(2), "{client}: the project's file is still the one meant");
        let said = stderr(&elsewhere);
        assert!(
            said.contains(&format!("the user's is {}", user.display())) && said.contains("--scope user"),
            "{client}: {said}"
        );
        let output = run_with(project.path(), &["wrap", "--client", client, "--scope", "user"], None, &env);
        assert!(output.status.success(), "{client}: {}", stderr(&output));
    }
}

/// Runs an entry of a client configuration as the client would: its command and arguments, its
/// environment added to ours, in its `cwd`; through the `gateway-tour` scenario, which lists the
/// tools and makes `calls`.
fn start(entry: &Value, calls: Value) -> Value {
    let mut command = vec!["env".to_owned()];
    if let Some(cwd) = entry["cwd"].as_str() {
        command.extend(["-C".to_owned(), cwd.to_owned()]);
    }
    for (name, value) in entry["env"].as_object().into_iter().flatten() {
        command.push(format!("{name}={}", value.as_str().unwrap()));
    }
    command.push(entry["command"].as_str().unwrap().to_owned());
    command.extend(entry["args"].as_array().unwrap().iter().map(|arg| arg.as_str().unwrap().to_owned()));
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    peers().python_client("gateway-tour", &[&calls.to_string(), "[]", "null"], &command)
}

/// A stdio MCP server in a few lines of Python whose one tool, `where`, answers with its working
/// directory and its `WHO` environment variable: what a wrapped entry must still give it.
const PROBE: &str = r#"
import json, os, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "probe", "version": "1"}}
    elif message["method"] == "tools/list":
        result = {"tools": [{"name": "where", "description": "Says where it runs.", "inputSchema": {"type": "object"}}]}
    elif message["method"] == "tools/call":
        result = {"content": [{"type": "text", "text": os.getcwd() + " " + os.environ.get("WHO", "nobody")}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"#;

#[test]
fn a_wrapped_configuration_still_starts_its_servers_with_their_arguments_environment_and_directory() {
    let peers = peers();
    let time = peers.bin("mcp-server-time").display().to_string();
    let python = peers.bin("python").display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    fs::create_dir(&home).unwrap();
    let home = home.canonicalize().unwrap();
    let probe = dir.path().join("probe.py");
    fs::write(&probe, PROBE).unwrap();
    let config = json!({"mcpServers": {
        "time": {"command": time, "args": ["--local-timezone=Asia/Tokyo"], "env": {"TZ": "Asia/Tokyo"}, "cwd": dir.path()},
        "probe": {"command": python, "args": [probe], "env": {"WHO": "ada"}, "cwd": home},
    }});
    let text = serde_json::to_string_pretty(&config).unwrap();
    let mediator = binary().display().to_string();
    let time_call = json!(["get_current_time", {"timezone": "Europe/Paris"}]);
    let here = format!("{} ada", home.display());
    let check_time = |outcome: &Value, at: usize| {
        let answer: Value = serde_json::from_str(outcome["calls"][at].as_str().unwrap()).unwrap();
        assert_eq!(answer["timezone"], "Europe/Paris", "{outcome}");
    };
    for gateway in [false, true] {
        let path = dir.path().join("claude_desktop_config.json");
        fs::write(&path, &text).unwrap();
        let mut args = vec!["wrap", "--config", "claude_desktop_config.json", "--mediator", &mediator];
        if gateway {
            args.push("--gateway");
        }
        let output = tool_mediator(dir.path(), &args);
        assert!(output.status.success(), "{}", stderr(&output));
        let wrapped: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        if gateway {
            let entry = &wrapped["mcpServers"]["tool-mediator"];
            assert_eq!(entry["command"], json!(mediator));
            let outcome = start(entry, json!([time_call, ["where", {}]]));
            let mut tools = outcome["tools"].as_array().unwrap().clone();
            tools.sort_by_key(|tool| tool.as_str().unwrap_or_default().to_owned());
            assert_eq!(tools, [json!("convert_time"), json!("get_current_time"), json!("where")], "{outcome}");
            check_time(&outcome, 0);
            assert_eq!(outcome["calls"][1], json!(here), "the gateway starts it where and as the client did");
        } else {
            let entry = &wrapped["mcpServers"]["time"];
            assert_eq!(entry["command"], json!(mediator));
            let outcome = start(entry, json!([time_call]));
            assert_eq!(outcome["tools"], json!(["convert_time", "get_current_time"]), "{outcome}");
            check_time(&outcome, 0);
            let outcome = start(&wrapped["mcpServers"]["probe"], json!([["where", {}]]));
            assert_eq!(outcome["calls"][0], json!(here), "the proxy passes its directory and environment on");
        }

        let output = tool_mediator(dir.path(), &["unwrap", "--config", "claude_desktop_config.json"]);
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }
}

/// What a hostile project can leave where wrap and unwrap put a file of their own (git stores
/// links, so a clone can hold any of the links).
#[cfg(unix)]
#[derive(Debug, Clone, Copy, PartialEq)]
enum Planted {
    /// `../../.bashrc`, from the project to the user's home.
    RelativeLink,
    AbsoluteLink,
    /// A link to a file that does not exist, which writing through would create.
    DanglingLink,
    /// A second name of the user's file.
    HardLink,
    Fifo,
    Directory,
}

#[cfg(unix)]
const PLANTED: [Planted; 6] = [
    Planted::RelativeLink,
    Planted::AbsoluteLink,
    Planted::DanglingLink,
    Planted::HardLink,
    Planted::Fifo,
    Planted::Directory,
];

/// A user's home with a `.bashrc`, and a project cloned into `home/projects/clone` holding a
/// Claude Code `.mcp.json`: (the temporary directory, the home, the project).
#[cfg(unix)]
fn hostile_clone() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = home.join("projects/clone");
    fs::create_dir_all(&project).unwrap();
    fs::write(home.join(".bashrc"), "# the user's own\n").unwrap();
    fs::copy(fixture("clients/claude-code/.mcp.json"), project.join(".mcp.json")).unwrap();
    (dir, home, project)
}

#[cfg(unix)]
fn plant(kind: Planted, at: &Path, home: &Path) {
    let _ = fs::remove_file(at);
    match kind {
        Planted::RelativeLink => std::os::unix::fs::symlink("../../.bashrc", at).unwrap(),
        Planted::AbsoluteLink => std::os::unix::fs::symlink(home.join(".bashrc"), at).unwrap(),
        Planted::DanglingLink => std::os::unix::fs::symlink(home.join(".profile"), at).unwrap(),
        Planted::HardLink => fs::hard_link(home.join(".bashrc"), at).unwrap(),
        Planted::Fifo => {
            let path = std::ffi::CString::new(at.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a valid C string; mkfifo only reads it.
            assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0, "mkfifo {}", at.display());
        }
        Planted::Directory => fs::create_dir(at).unwrap(),
    }
}

/// Everything under `dir`: each name with what it is (a file's bytes, a link's target).
#[cfg(unix)]
fn snapshot(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let kind = fs::symlink_metadata(&path).unwrap().file_type();
            let what = if kind.is_symlink() {
                format!("link to {}", fs::read_link(&path).unwrap().display())
            } else if kind.is_dir() {
                stack.push(path.clone());
                "directory".to_owned()
            } else if kind.is_file() {
                format!("file {:?}", fs::read(&path).unwrap())
            } else {
                "other".to_owned()
            };
            found.push((path, what));
        }
    }
    found.sort();
    found
}

/// Runs the binary in `dir`, killed after 30 seconds (a read of a fifo never ends).
#[cfg(unix)]
fn tool_mediator_within(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut child = std::process::Command::new(binary())
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("tool-mediator {args:?} did not finish within 30 seconds");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[cfg(unix)]
#[test]
fn wrap_never_writes_through_a_planted_side_file() {
    // (the command, the side file planted)
    let cases: [(&[&str], &str); 5] = [
        (&["wrap", "--client", "claude-code"], ".mcp.json.bak"),
        (&["wrap", "--client", "claude-code", "--gateway"], ".mcp.json.bak"),
        (&["wrap", "--client", "claude-code", "--gateway"], ".mcp.tool-mediator.json"),
        (&["wrap", "--client", "claude-code", "--gateway"], ".mcp.tool-mediator.unwrap.json"),
        (&["unwrap", "--client", "claude-code"], ".mcp.json.bak"),
    ];
    for (command, side) in cases {
        for dry_run in [false, true] {
            for kind in PLANTED {
                let case = format!("{command:?} (dry run: {dry_run}), {side} planted as {kind:?}");
                let (dir, home, project) = hostile_clone();
                if command[0] == "unwrap" {
                    let wrapped = tool_mediator(&project, &["wrap", "--client", "claude-code", "--gateway"]);
                    assert!(wrapped.status.success(), "{case}: {}", stderr(&wrapped));
                }
                plant(kind, &project.join(side), &home);
                let before = snapshot(dir.path());
                let mut args = command.to_vec();
                if dry_run {
                    args.push("--dry-run");
                }
                let output = tool_mediator_within(&project, &args);
                assert_eq!(fs::read(home.join(".bashrc")).unwrap(), b"# the user's own\n", "{case}");
                assert!(!home.join(".profile").exists(), "{case}: the dangling link's target is not made");
                if kind == Planted::HardLink {
                    // A regular file (an earlier run's, say): replaced by a new one, never
                    // written into, so the other name keeps its bytes.
                    assert!(output.status.success(), "{case}: {}", stderr(&output));
                    if !dry_run {
                        use std::os::unix::fs::MetadataExt as _;
                        assert_eq!(fs::metadata(project.join(side)).unwrap().nlink(), 1, "{case}");
                    }
                    continue;
                }
                assert!(!stdout(&output).contains("the user's own"), "{case}: {}", stdout(&output));
                assert_eq!(output.status.code(), Some(2), "{case}: {}", stderr(&output));
                assert!(stderr(&output).contains(side), "{case}: the error names the file: {}", stderr(&output));
                assert_eq!(snapshot(dir.path()), before, "{case}: nothing is written");
            }
        }
    }
}

#[cfg(unix)]
#[test]
fn unwrap_does_not_read_its_records_through_a_planted_link() {
    let (dir, home, project) = hostile_clone();
    let wrapped = tool_mediator(&project, &["wrap", "--client", "claude-code", "--gateway"]);
    assert!(wrapped.status.success(), "{}", stderr(&wrapped));
    // The record as the user's file would be read: a copy of it there, a link to it here.
    let record = project.join(".mcp.tool-mediator.unwrap.json");
    fs::rename(&record, home.join("record.json")).unwrap();
    std::os::unix::fs::symlink("../../record.json", &record).unwrap();
    let before = snapshot(dir.path());
    for dry_run in [false, true] {
        let mut args = vec!["unwrap", "--client", "claude-code"];
        if dry_run {
            args.push("--dry-run");
        }
        let output = tool_mediator_within(&project, &args);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains(".mcp.tool-mediator.unwrap.json"), "{}", stderr(&output));
        assert_eq!(snapshot(dir.path()), before, "nothing is written");
    }
}

#[cfg(unix)]
#[test]
fn side_files_go_beside_the_path_named_not_beside_a_link_target() {
    // The configuration is a link into another directory: its backup and the gateway's files
    // are the project's, beside the link; the link's target gets the new text, the link stays.
    let (dir, home, project) = hostile_clone();
    let elsewhere = home.join("dotfiles");
    fs::create_dir(&elsewhere).unwrap();
    fs::rename(project.join(".mcp.json"), elsewhere.join("mcp.json")).unwrap();
    std::os::unix::fs::symlink("../../dotfiles/mcp.json", project.join(".mcp.json")).unwrap();
    let output = tool_mediator(&project, &["wrap", "--client", "claude-code", "--gateway"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(fs::symlink_metadata(project.join(".mcp.json")).unwrap().file_type().is_symlink());
    assert!(fs::read_to_string(elsewhere.join("mcp.json")).unwrap().contains("\"gateway\""));
    assert_eq!(listing(&elsewhere), ["mcp.json"]);
    assert_eq!(
        listing(&project),
        [".mcp.json", ".mcp.json.bak", ".mcp.tool-mediator.json", ".mcp.tool-mediator.unwrap.json"]
    );
    drop(dir);
}

#[cfg(unix)]
#[test]
fn wrap_refuses_a_configuration_that_never_ends() {
    let dir = tempfile::tempdir().unwrap();
    for command in ["wrap", "unwrap"] {
        let output = limited_memory(dir.path(), &[command, "--config", "/dev/zero"]);
        assert_eq!(output.status.code(), Some(2), "{command}: {}", stderr(&output));
        assert!(stderr(&output).contains("/dev/zero: larger than the limit of"), "{command}: {}", stderr(&output));
    }
}

/// Runs the binary with its address space limited to 1 GiB, so that reading without a limit
/// ends in a failed allocation rather than in the machine's memory.
#[cfg(unix)]
fn limited_memory(dir: &Path, args: &[&str]) -> std::process::Output {
    use std::os::unix::process::CommandExt as _;
    let mut command = std::process::Command::new(binary());
    command.args(args).current_dir(dir).stdin(std::process::Stdio::null());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 1 << 30, rlim_max: 1 << 30 };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
        });
    }
    command.output().unwrap()
}
