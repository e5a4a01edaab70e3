//! Shared pieces of the end-to-end tests: the built binary, fixtures, the evaluation data.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ sits in the workspace").to_owned()
}

pub fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures").join(name)
}

/// `shared/fixtures/manifests/<name>`: real `tools/list` results.
pub fn shared_manifest(name: &str) -> PathBuf {
    root().join("../shared/fixtures/manifests").join(name)
}

/// The `tool-mediator` binary, built once for this test run in the profile the tests use.
pub fn binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            // target/<profile>/deps/<test> -> target/<profile>/tool-mediator
            let test = std::env::current_exe().expect("the test knows its path");
            let profile_dir = test.parent().and_then(Path::parent).expect("tests run from target/<profile>/deps");
            let release = profile_dir.file_name().is_some_and(|name| name == "release");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut build = Command::new(cargo);
            build.args(["build", "--quiet", "-p", "tool-mediator-cli", "--bin", "tool-mediator"]).current_dir(root());
            if release {
                build.arg("--release");
            }
            let status = build.status().expect("cargo runs");
            assert!(status.success(), "building the tool-mediator binary failed");
            profile_dir.join(format!("tool-mediator{}", std::env::consts::EXE_SUFFIX))
        })
        .clone()
}

/// Runs the binary with `args`, feeding `stdin`.
pub fn run(args: &[&str], stdin: Option<&str>) -> Output {
    run_in(&root(), args, stdin)
}

pub fn run_in(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    run_with(dir, args, stdin, &[])
}

/// Runs the binary in `dir` with extra environment variables; API keys and the log filter of
/// the calling environment are not passed on, so a test sees only what it sets.
pub fn run_with(dir: &Path, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(binary());
    command.env_remove("ANTHROPIC_API_KEY").env_remove("OPENAI_API_KEY").env_remove("TOOL_MEDIATOR_LOG");
    for (name, value) in env {
        command.env(name, value);
    }
    command
        .args(args)
        .current_dir(dir)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("the binary starts");
    if let Some(input) = stdin {
        use std::io::Write as _;
        child.stdin.take().expect("piped").write_all(input.as_bytes()).expect("stdin takes the input");
    }
    child.wait_with_output().expect("the binary finishes")
}

/// The evaluation data set (`shared/eval/dev`), or `None` when it is not beside the checkout.
/// CI always has it: there a missing directory fails the test.
pub fn eval_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("TOOL_MEDIATOR_EVAL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/eval/dev"));
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(std::env::var_os("CI").is_none(), "the evaluation data is missing at {}", dir.display());
    eprintln!("skipping: no evaluation data at {}", dir.display());
    None
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
