//! The README's commands, run as written, so the documentation and the tool cannot drift apart.
//!
//! Read: README.md and every `docs/*.md`. Their shell blocks (```sh, ```bash, ```shell,
//! ```console) are commands:
//!
//! - in `sh`, `bash` and `shell` blocks each line is a command (`\` continues it, a heredoc runs
//!   to its end marker, a line that is only a comment is skipped);
//! - in `console` blocks a command follows `$ `, and the lines up to the next `$ ` are what it
//!   prints, stdout and stderr together: every line as shown, a line `...` standing for any
//!   number of lines. Without `...` the output must be exactly what is shown; a command shown
//!   with nothing after it may print anything.
//!
//! A command must exit 0, unless it ends with the comment `# exit N`. Each runs in bash with the
//! freshly built `tool-mediator` first on the PATH (`cargo run -p tool-mediator-cli -- ARGS` is
//! read as `tool-mediator ARGS`), in a scratch directory of its document holding copies of the
//! checkout's files the command names, with HOME and the XDG directories in that scratch too:
//! nothing is written into the checkout or the user's own files (checked afterwards). A command
//! may run `tool-mediator`, and `mkdir`, `echo`, `printf` or `cat` around it; anything else
//! cannot run here and must be accounted for in the Markdown source, just before its block:
//!
//! - `<!-- readme-test: skip: REASON -->`: the block is not run, for REASON (say where it runs
//!   instead, when it does: another test, or CI's `.ci/run`);
//! - `<!-- readme-test: not run `COMMAND`: REASON -->`: the block's commands starting with
//!   COMMAND are not run, the others are;
//! - `<!-- readme-test: home: PATH = FIXTURE -->`: before the block, the checkout's FIXTURE is
//!   copied to PATH in the scratch home (a client's configuration file, say);
//! - `<!-- readme-test: synopsis -->`: a usage summary, not run: every subcommand it names
//!   must exist, every flag must be one that subcommand's `--help` lists, and every set of
//!   values written `a|b|c` must be exactly the values the help gives.
//!
//! A block that cannot run and is not accounted for fails the test, and so does a marker that
//! no longer applies. Besides: every `tool-mediator SUBCOMMAND --flag` written in the prose's
//! code spans names a subcommand and flags it takes; each ```toml block is a configuration
//! `tool-mediator config --config FILE` accepts, naming every setting `config` prints; and every
//! relative link, and every `#anchor` (as GitHub makes them from headings), points at something
//! that exists.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use tool_mediator_tests::{binary, root, subcommands};

/// The longest a README command may take.
const TIMEOUT: Duration = Duration::from_secs(120);

/// What a runnable command may start with, besides `tool-mediator`.
const SHELL_HELPERS: [&str; 4] = ["mkdir", "echo", "printf", "cat"];

/// The Markdown files whose commands are run: README.md and docs/*.md, as paths from the root.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/ is there")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| path.strip_prefix(root()).unwrap().to_owned())
        .collect();
    docs.sort();
    docs.insert(0, PathBuf::from("README.md"));
    docs
}

/// A fenced code block of a Markdown file.
#[derive(Debug)]
struct Block {
    /// The Markdown file, from the root.
    file: PathBuf,
    /// The line of the opening fence, from 1.
    line: usize,
    /// The info string's first word: `sh`, `console`, `rust`...
    info: String,
    /// The lines between the fences, with the fence's indentation taken off.
    body: Vec<String>,
    /// The `readme-test` markers on the lines right before the fence.
    markers: Vec<Marker>,
}

impl Block {
    fn place(&self) -> String {
        format!("{}:{}", self.file.display(), self.line)
    }

    fn is_shell(&self) -> bool {
        matches!(self.info.as_str(), "sh" | "bash" | "shell" | "console")
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Marker {
    Skip(String),
    NotRun { command: String, reason: String },
    Home { path: String, fixture: String },
    Synopsis,
}

fn parse_marker(text: &str, place: &str) -> Marker {
    let fail = |why: &str| -> ! { panic!("{place}: `<!-- readme-test: {text} -->`: {why}") };
    if text == "synopsis" {
        Marker::Synopsis
    } else if let Some(reason) = text.strip_prefix("skip:") {
        let reason = reason.trim();
        if reason.is_empty() {
            fail("a skip says why");
        }
        Marker::Skip(reason.to_owned())
    } else if let Some(rest) = text.strip_prefix("not run `") {
        let (command, reason) = rest.split_once("`:").unwrap_or_else(|| fail("write not run `COMMAND`: REASON"));
        if reason.trim().is_empty() {
            fail("a command not run says why");
        }
        Marker::NotRun { command: command.trim().to_owned(), reason: reason.trim().to_owned() }
    } else if let Some(rest) = text.strip_prefix("home:") {
        let (path, fixture) = rest.split_once('=').unwrap_or_else(|| fail("write home: PATH = FIXTURE"));
        Marker::Home { path: path.trim().to_owned(), fixture: fixture.trim().to_owned() }
    } else {
        fail("not a marker this test knows (skip, not run, home, synopsis)")
    }
}

/// The fenced code blocks of `file`, and its headings (outside code) with their lines.
fn parse(file: &Path) -> (Vec<Block>, Vec<(usize, String)>) {
    let text = fs::read_to_string(root().join(file)).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut headings = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let fence: String = trimmed.chars().take_while(|&c| c == '`' || c == '~').collect();
        if fence.len() >= 3 && fence.chars().all(|c| c == fence.chars().next().unwrap()) {
            let info = trimmed[fence.len()..].split_whitespace().next().unwrap_or("").to_owned();
            let mut markers = Vec::new();
            let mut before = index;
            while before > 0 {
                let previous = lines[before - 1].trim();
                let Some(inner) = previous.strip_prefix("<!--").and_then(|rest| rest.strip_suffix("-->")) else {
                    break;
                };
                let Some(marker) = inner.trim().strip_prefix("readme-test:") else { break };
                markers.insert(0, parse_marker(marker.trim(), &format!("{}:{}", file.display(), before)));
                before -= 1;
            }
            let start = index;
            let mut body = Vec::new();
            index += 1;
            while index < lines.len() && !lines[index].trim().starts_with(fence.as_str()) {
                let line = lines[index];
                let cut = line.len() - line.trim_start().len();
                body.push(line[cut.min(indent)..].to_owned());
                index += 1;
            }
            assert!(index < lines.len(), "{}:{}: a code block that is never closed", file.display(), start + 1);
            blocks.push(Block { file: file.to_owned(), line: start + 1, info, body, markers });
        } else if let Some(heading) = line.strip_prefix('#') {
            let heading = heading.trim_start_matches('#');
            if heading.starts_with(' ') {
                headings.push((index + 1, heading.trim().to_owned()));
            }
        }
        index += 1;
    }
    (blocks, headings)
}

/// A command of a shell block: where it is, its text, and what it should print and exit with.
#[derive(Debug)]
struct Step {
    line: usize,
    text: String,
    /// A console's shown output; `None` for a shell block's command.
    output: Option<Vec<String>>,
    exit: i32,
}

/// `# exit N` at the end of a command: the text without it, and N (0 without it).
fn expected_exit(text: &str) -> (String, i32) {
    if let Some((command, comment)) = text.rsplit_once('#')
        && let Some(code) = comment.trim().strip_prefix("exit ").and_then(|code| code.trim().parse().ok())
    {
        return (command.trim_end().to_owned(), code);
    }
    (text.to_owned(), 0)
}

/// The commands of a shell block, in order.
fn steps(block: &Block) -> Vec<Step> {
    let mut steps = Vec::new();
    let console = block.info == "console";
    let mut index = 0;
    let lines = &block.body;
    while index < lines.len() {
        let line_number = block.line + 1 + index;
        let line = &lines[index];
        index += 1;
        let command = if console {
            match line.strip_prefix("$ ") {
                Some(command) => command.to_owned(),
                None => panic!(
                    "{}:{line_number}: a console block's output without a `$ ` command before it",
                    block.file.display()
                ),
            }
        } else if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        } else {
            line.clone()
        };
        let mut text = command;
        while text.ends_with('\\') && index < lines.len() {
            text.pop();
            text.push('\n');
            text.push_str(&lines[index]);
            index += 1;
        }
        if let Some(delimiter) = heredoc_delimiter(&text) {
            while index < lines.len() {
                text.push('\n');
                text.push_str(&lines[index]);
                index += 1;
                if lines[index - 1].trim() == delimiter {
                    break;
                }
            }
        }
        let (text, exit) = expected_exit(&text);
        let output = console.then(|| {
            let mut shown = Vec::new();
            while index < lines.len() && !lines[index].starts_with("$ ") {
                shown.push(lines[index].trim_end().to_owned());
                index += 1;
            }
            shown
        });
        steps.push(Step { line: line_number, text, output, exit });
    }
    steps
}

/// The end marker of a heredoc the command opens (`<<'EOF'`, `<<EOF`, `<<-EOF`), if any.
fn heredoc_delimiter(text: &str) -> Option<String> {
    let after = text.split_once("<<")?.1.trim_start_matches('-').trim_start();
    let word: String = after.chars().take_while(|c| !c.is_whitespace()).collect();
    let word = word.trim_matches(|c| c == '\'' || c == '"');
    (!word.is_empty()).then(|| word.to_owned())
}

/// The command's words, split as a shell would at blanks, quotes taken off.
fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(open), c) if c == open => quote = None,
            (Some('"'), '\\') => word.extend(chars.next()),
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                word.extend(chars.next().filter(|&c| c != '\n'));
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// `cargo run -p tool-mediator-cli -- ARGS` is what `tool-mediator ARGS` is, built from here.
fn as_tool_mediator(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() > 2
        && words[0] == "cargo"
        && words[1] == "run"
        && let Some(dashes) = words.iter().position(|&word| word == "--")
    {
        let options = &words[2..dashes];
        let package = options.windows(2).any(|pair| pair == ["-p", "tool-mediator-cli"]);
        if package && options.iter().all(|word| ["-p", "tool-mediator-cli", "-q", "--quiet", "--locked"].contains(word))
        {
            return format!("tool-mediator {}", words[dashes + 1..].join(" "));
        }
    }
    text.to_owned()
}

/// Why `text` cannot run here, if it cannot: a program other than tool-mediator and the shell
/// helpers, or a path out of the scratch directory.
fn cannot_run(text: &str) -> Option<String> {
    let words = words(text);
    let mut first = true;
    for word in &words {
        if ["|", "||", "&&", ";"].contains(&word.as_str()) {
            first = true;
            continue;
        }
        if word.contains("..") && Path::new(word).components().any(|part| part == Component::ParentDir) {
            return Some(format!("`{word}` leads out of the scratch directory"));
        }
        if first {
            if word.contains('=') && !word.starts_with('=') {
                continue; // VAR=value before the program
            }
            first = false;
            if word != "tool-mediator" && !SHELL_HELPERS.contains(&word.as_str()) {
                return Some(format!("it runs `{word}`, which this test does not run"));
            }
        }
    }
    None
}

/// A scratch directory for one document's commands: a working directory, a home, and a PATH
/// whose first entry holds the freshly built tool-mediator.
struct Scratch {
    _dir: tempfile::TempDir,
    work: PathBuf,
    home: PathBuf,
    bin: PathBuf,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        let (work, home, bin) = (dir.path().join("work"), dir.path().join("home"), dir.path().join("bin"));
        for path in [&work, &home, &bin] {
            fs::create_dir_all(path).unwrap();
        }
        std::os::unix::fs::symlink(binary(), bin.join("tool-mediator")).unwrap();
        Scratch { _dir: dir, work, home, bin }
    }

    /// Copies into the working directory the checkout's files and folders `text` names.
    fn copy_named(&self, text: &str) {
        for word in words(text) {
            let word = word.trim_end_matches('/');
            let path = Path::new(word);
            if word.is_empty()
                || path.is_absolute()
                || !path.components().all(|part| matches!(part, Component::Normal(_)))
            {
                continue;
            }
            let first = path.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
            if [".git", ".tools", "target", "node_modules"].contains(&first.as_str()) {
                continue;
            }
            let source = root().join(path);
            let target = self.work.join(path);
            if source.exists() && !target.exists() {
                copy_tree(&source, &target);
            }
        }
    }

    fn run(&self, text: &str) -> (i32, String) {
        let log = self.work.parent().unwrap().join("output.log");
        let file = fs::File::create(&log).unwrap();
        let path = std::env::join_paths(
            std::iter::once(self.bin.clone())
                .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
        )
        .unwrap();
        let mut child = Command::new("bash")
            .args(["--noprofile", "--norc", "-o", "pipefail", "-c", text])
            .current_dir(&self.work)
            .env_clear()
            .env("PATH", path)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .expect("bash starts");
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                panic!("`{text}` took longer than {TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let output = String::from_utf8_lossy(&fs::read(&log).unwrap()).into_owned();
        (status.code().unwrap_or(-1), output)
    }
}

fn copy_tree(source: &Path, target: &Path) {
    if source.is_dir() {
        fs::create_dir_all(target).unwrap();
        for entry in fs::read_dir(source).unwrap() {
            let entry = entry.unwrap();
            if entry.file_name() != "node_modules" && entry.file_name() != "target" {
                copy_tree(&entry.path(), &target.join(entry.file_name()));
            }
        }
    } else {
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::copy(source, target).unwrap_or_else(|error| panic!("copying {}: {error}", source.display()));
    }
}

/// Whether `actual` is what a console block shows: line by line, `...` for any lines.
fn output_matches(shown: &[String], actual: &[&str]) -> bool {
    match shown.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first.trim() == "..." => {
            (0..=actual.len()).any(|skipped| output_matches(rest, &actual[skipped..]))
        }
        Some((first, rest)) => actual.first().is_some_and(|line| line == first) && output_matches(rest, &actual[1..]),
    }
}

/// At most 40 lines of `text`, for a failure's message.
fn abridged(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    match lines.len() {
        0..=40 => text.to_owned(),
        n => format!("{}\n... ({} more lines)", lines[..40].join("\n"), n - 40),
    }
}

/// Every file of the checkout (but the build's, git's and the installed peers') with its size
/// and modification time: what a README command must leave as it was.
fn checkout_state() -> BTreeMap<PathBuf, (u64, Option<SystemTime>)> {
    fn walk(dir: &Path, state: &mut BTreeMap<PathBuf, (u64, Option<SystemTime>)>) {
        let Ok(entries) = fs::read_dir(dir) else { return };
        for entry in entries.map_while(Result::ok) {
            let name = entry.file_name();
            if [".git", ".tools", "target", "node_modules"].iter().any(|skip| name == *skip) {
                continue;
            }
            let path = entry.path();
            let Ok(metadata) = fs::symlink_metadata(&path) else { continue };
            if metadata.is_dir() {
                walk(&path, state);
            } else {
                state.insert(path, (metadata.len(), metadata.modified().ok()));
            }
        }
    }
    let mut state = BTreeMap::new();
    walk(&root(), &mut state);
    state
}

#[test]
fn every_command_in_the_readme_and_the_docs_runs_as_written() {
    let before = checkout_state();
    let mut ran = 0;
    let mut accounted = Vec::new();
    let mut failures = Vec::new();
    let mut shell_blocks = 0;
    for document in documents() {
        let (blocks, _) = parse(&document);
        let written = fs::read_to_string(root().join(&document)).unwrap().matches("<!-- readme-test:").count();
        let attached: usize = blocks.iter().map(|block| block.markers.len()).sum();
        if written != attached {
            failures.push(format!(
                "{}: {} `readme-test` markers stand elsewhere than on the lines right before a code block",
                document.display(),
                written - attached
            ));
        }
        let scratch = Scratch::new();
        for block in blocks.iter().filter(|block| block.is_shell()) {
            shell_blocks += 1;
            let skip = block.markers.iter().find_map(|marker| match marker {
                Marker::Skip(reason) => Some(reason.clone()),
                _ => None,
            });
            let not_run: Vec<(&String, &String)> = block
                .markers
                .iter()
                .filter_map(|marker| match marker {
                    Marker::NotRun { command, reason } => Some((command, reason)),
                    _ => None,
                })
                .collect();
            if block.markers.contains(&Marker::Synopsis) {
                accounted.push(format!("{}: a synopsis, checked against --help", block.place()));
                continue;
            }
            let steps = steps(block);
            if let Some(reason) = skip {
                // A skipped block must need the skip: one this test could run says so.
                if !steps.is_empty() && steps.iter().all(|step| cannot_run(&as_tool_mediator(&step.text)).is_none()) {
                    failures.push(format!("{}: marked skip, but every command in it runs here: run it", block.place()));
                }
                accounted.push(format!("{}: skipped: {reason}", block.place()));
                continue;
            }
            for marker in &block.markers {
                if let Marker::Home { path, fixture } = marker {
                    let source = root().join(fixture);
                    assert!(source.is_file(), "{}: the home fixture {fixture} is not a file", block.place());
                    let target = scratch.home.join(path);
                    fs::create_dir_all(target.parent().unwrap()).unwrap();
                    fs::copy(&source, &target).unwrap();
                }
            }
            let mut used = BTreeSet::new();
            for step in &steps {
                let place = format!("{}:{}", block.file.display(), step.line);
                if let Some((command, reason)) =
                    not_run.iter().find(|(command, _)| step.text.starts_with(command.as_str()))
                {
                    used.insert(command.to_string());
                    accounted.push(format!("{place}: `{command}` not run: {reason}"));
                    continue;
                }
                let text = as_tool_mediator(&step.text);
                if let Some(why) = cannot_run(&text) {
                    failures.push(format!(
                        "{place}: `{}` cannot run in this test ({why}): mark its block `<!-- readme-test: skip: REASON -->`, \
                         or `<!-- readme-test: not run `COMMAND`: REASON -->`",
                        step.text
                    ));
                    continue;
                }
                scratch.copy_named(&text);
                let (code, output) = scratch.run(&text);
                ran += 1;
                if code != step.exit {
                    failures.push(format!(
                        "{place}: `{}` exited with {code}, not {} (write `# exit {code}` after it if that is right); it printed:\n{}",
                        step.text,
                        step.exit,
                        abridged(&output)
                    ));
                    continue;
                }
                if let Some(shown) = step.output.as_ref().filter(|shown| !shown.is_empty()) {
                    let actual: Vec<&str> = output.lines().map(str::trim_end).collect();
                    let mut actual = actual.as_slice();
                    while actual.last() == Some(&"") {
                        actual = &actual[..actual.len() - 1];
                    }
                    let mut shown = shown.as_slice();
                    while shown.last().is_some_and(|line| line.is_empty()) {
                        shown = &shown[..shown.len() - 1];
                    }
                    if !output_matches(shown, actual) {
                        failures.push(format!(
                            "{place}: `{}` printed something else than the README shows.\nshown:\n{}\nprinted:\n{}",
                            step.text,
                            shown.join("\n"),
                            abridged(&actual.join("\n"))
                        ));
                    }
                }
            }
            for (command, _) in not_run {
                if !used.contains(command.as_str()) {
                    failures
                        .push(format!("{}: the marker names `{command}`, which the block does not run", block.place()));
                }
            }
        }
    }
    let after = checkout_state();
    let changed: Vec<_> = before
        .keys()
        .chain(after.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|path| before.get(*path) != after.get(*path))
        .collect();
    if !changed.is_empty() {
        failures.push(format!("README commands changed the checkout: {changed:?}"));
    }
    println!("{shell_blocks} shell blocks; {ran} commands run; not run:");
    for line in &accounted {
        println!("  {line}");
    }
    assert!(failures.is_empty(), "{} problems:\n\n{}", failures.len(), failures.join("\n\n"));
    assert!(ran >= 10, "only {ran} commands ran: is the README read at all?");
}

/// The help of `tool-mediator PATH...`.
fn help(path: &[&str]) -> String {
    let output = Command::new(binary())
        .args(path)
        .arg("--help")
        .env("COLUMNS", "200")
        .env_remove("TOOL_MEDIATOR_LOG")
        .output()
        .expect("tool-mediator runs");
    assert!(output.status.success(), "tool-mediator {} --help fails", path.join(" "));
    String::from_utf8(output.stdout).unwrap()
}

/// The options a help lists, long and short (`--output`, `-o`), each with the values it
/// takes when the help names them.
fn options(help: &str) -> BTreeMap<String, Vec<String>> {
    let mut options: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Vec<String> = Vec::new();
    let mut in_list = false;
    for line in help.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if indent <= 6 && trimmed.starts_with('-') && !trimmed.starts_with("- ") {
            current = trimmed
                .split([' ', ','])
                .take_while(|word| word.starts_with('-') || word.is_empty())
                .filter(|word| !word.is_empty())
                // An optional value: `--report[=<DETAIL>]`.
                .map(|word| word.split("[=").next().unwrap().to_owned())
                .collect();
            for name in &current {
                options.entry(name.clone()).or_default();
            }
            in_list = false;
        } else if indent <= 2 && !trimmed.is_empty() && !trimmed.starts_with('-') && !trimmed.starts_with('[') {
            // A section's title or a positional argument: the option before it is over.
            current.clear();
        }
        if let Some(values) = trimmed.split_once("[possible values: ").map(|(_, rest)| rest.trim_end_matches(']')) {
            let values: Vec<String> = values.split(", ").map(str::to_owned).collect();
            for name in &current {
                options.insert(name.clone(), values.clone());
            }
            if current.is_empty() {
                options.insert("<positional>".to_owned(), values);
            }
        }
        if trimmed == "Possible values:" {
            in_list = true;
            continue;
        }
        if in_list {
            if let Some(value) = trimmed.strip_prefix("- ") {
                let value = value.split(':').next().unwrap().trim().to_owned();
                let key = current.first().cloned().unwrap_or_else(|| "<positional>".to_owned());
                for name in current.iter().chain(std::iter::once(&key)) {
                    let values = options.entry(name.clone()).or_default();
                    if !values.contains(&value) {
                        values.push(value.clone());
                    }
                }
            } else if !trimmed.is_empty() && !line.starts_with("            ") {
                in_list = false;
            }
        }
    }
    options
}

/// `a|b|c`: a choice among values (not `FILES|DIRS|-`, placeholders, nor a lone `|`).
fn is_choice(word: &str) -> bool {
    let choices: Vec<&str> = word.split('|').collect();
    choices.len() > 1
        && choices.iter().all(|choice| {
            !choice.is_empty()
                && choice.starts_with(|c: char| c.is_ascii_lowercase())
                && choice.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
}

#[test]
fn the_synopsis_names_only_what_the_tool_takes() {
    let mut problems = Vec::new();
    let top = help(&[]);
    let commands = subcommands(&top);
    let mut named = BTreeSet::new();
    let mut synopses = 0;
    for document in documents() {
        let (blocks, _) = parse(&document);
        for block in blocks.iter().filter(|block| block.markers.contains(&Marker::Synopsis)) {
            synopses += 1;
            // Each command with its continuation lines; `# on A, B and C:` starts lines that
            // hold for each of A, B and C.
            let mut entries: Vec<(usize, Vec<Vec<String>>, String)> = Vec::new();
            let mut shared: Option<Vec<String>> = None;
            for (offset, line) in block.body.iter().enumerate() {
                let number = block.line + 1 + offset;
                let code = line.split(" # ").next().unwrap().split("   #").next().unwrap();
                if let Some(list) = line.trim().strip_prefix("# on ") {
                    let list = list.trim_end_matches(':').replace(" and ", ", ");
                    shared = Some(list.split(", ").map(|name| name.trim().to_owned()).collect());
                    continue;
                }
                if line.trim().starts_with('#') || line.trim().is_empty() {
                    shared = None;
                    continue;
                }
                if let Some(rest) = code.trim().strip_prefix("tool-mediator ") {
                    let mut words: Vec<&str> = rest.split_whitespace().collect();
                    let mut path = Vec::new();
                    let mut level = commands.clone();
                    while let Some(word) = words.first() {
                        if level.iter().any(|name| name == word) {
                            path.push(word.to_string());
                            level = subcommands(&help(&path.iter().map(String::as_str).collect::<Vec<_>>()));
                            words.remove(0);
                        } else {
                            break;
                        }
                    }
                    if path.is_empty() {
                        problems.push(format!(
                            "{}:{number}: `{}` names no subcommand",
                            block.file.display(),
                            line.trim()
                        ));
                        continue;
                    }
                    named.insert(path[0].clone());
                    entries.push((number, vec![path], words.join(" ")));
                } else if line.starts_with(' ') {
                    if let Some(names) = &shared {
                        let paths = names.iter().map(|name| vec![name.clone()]).collect();
                        entries.push((number, paths, code.trim().to_owned()));
                    } else if let Some(last) = entries.last_mut() {
                        last.2.push(' ');
                        last.2.push_str(code.trim());
                    }
                }
            }
            for (number, paths, text) in entries {
                let place = format!("{}:{number}", block.file.display());
                for path in paths {
                    let path: Vec<&str> = path.iter().map(String::as_str).collect();
                    let help = help(&path);
                    let options = options(&help);
                    let words: Vec<String> = text
                        .split_whitespace()
                        .map(|word| word.trim_matches(|c| "[]()".contains(c)).to_owned())
                        .collect();
                    for (index, word) in words.iter().enumerate() {
                        if word.starts_with('-') && word.len() > 1 && word != "--" && !word.starts_with("---") {
                            let flag = word.split('=').next().unwrap();
                            let Some(values) = options.get(flag) else {
                                problems
                                    .push(format!("{place}: `tool-mediator {}` has no option {flag}", path.join(" ")));
                                continue;
                            };
                            if let Some(next) = words.get(index + 1).filter(|next| is_choice(next)) {
                                let shown: BTreeSet<&str> = next.split('|').collect();
                                let takes: BTreeSet<&str> = values.iter().map(String::as_str).collect();
                                if shown != takes {
                                    problems.push(format!(
                                        "{place}: `tool-mediator {} {flag}` takes {takes:?}, the synopsis says {shown:?}",
                                        path.join(" ")
                                    ));
                                }
                            }
                        } else if index == 0 && is_choice(word) {
                            // Alternatives right after the command: its subcommands or values.
                            let shown: BTreeSet<&str> = word.split('|').collect();
                            let subcommands = subcommands(&help);
                            let takes: BTreeSet<&str> = if subcommands.is_empty() {
                                options.get("<positional>").into_iter().flatten().map(String::as_str).collect()
                            } else {
                                subcommands.iter().map(String::as_str).collect()
                            };
                            if shown != takes {
                                problems.push(format!(
                                    "{place}: `tool-mediator {}` takes {takes:?}, the synopsis says {shown:?}",
                                    path.join(" ")
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(synopses > 0, "no block is marked `<!-- readme-test: synopsis -->`");
    for command in &commands {
        if !named.contains(command) {
            problems.push(format!("the synopsis does not name `tool-mediator {command}`"));
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// The lines (from 1) of `document` inside code blocks, fences included.
fn code_lines(document: &Path) -> BTreeSet<usize> {
    let (blocks, _) = parse(document);
    blocks.iter().flat_map(|block| block.line..=block.line + block.body.len() + 1).collect()
}

#[test]
fn every_command_named_in_the_text_takes_the_flags_it_is_shown_with() {
    let commands = subcommands(&help(&[]));
    let mut problems = Vec::new();
    let mut checked = 0;
    for document in documents() {
        let text = fs::read_to_string(root().join(&document)).unwrap();
        let in_code = code_lines(&document);
        // The prose, one line, so that code spans broken across lines are whole.
        let prose: Vec<&str> = text
            .lines()
            .enumerate()
            .filter(|(index, _)| !in_code.contains(&(index + 1)))
            .map(|(_, line)| line)
            .collect();
        let prose = prose.join(" ");
        for (index, span) in prose.split('`').enumerate() {
            let Some(rest) = span.strip_prefix("tool-mediator ").filter(|_| index % 2 == 1) else { continue };
            let mut words: Vec<&str> = rest.split_whitespace().collect();
            if words.first().is_some_and(|word| word.chars().all(|c| c.is_ascii_uppercase())) {
                continue; // tool-mediator COMMAND ...
            }
            let mut path: Vec<&str> = Vec::new();
            let mut level = commands.clone();
            while let Some(word) = words.first().copied() {
                if !level.iter().any(|name| name == word) {
                    break;
                }
                path.push(word);
                level = subcommands(&help(&path));
                words.remove(0);
            }
            checked += 1;
            if path.is_empty() {
                problems.push(format!("{}: `{span}` names no subcommand", document.display()));
                continue;
            }
            let options = options(&help(&path));
            for word in words {
                let flag = word.trim_matches(|c| "[]().,".contains(c)).split('=').next().unwrap();
                if flag.starts_with("--") && flag.len() > 2 && !options.contains_key(flag) {
                    problems.push(format!(
                        "{}: `{span}`: `tool-mediator {}` has no option {flag}",
                        document.display(),
                        path.join(" ")
                    ));
                }
            }
        }
    }
    assert!(checked > 10, "only {checked} commands named in the text");
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn every_configuration_shown_is_one_the_tool_reads() {
    let scratch = Scratch::new();
    let (code, defaults) = scratch.run("tool-mediator config");
    assert_eq!(code, 0, "tool-mediator config: {defaults}");
    let settings: Vec<&str> = defaults
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once(" = ").map(|(key, _)| key.trim()))
        .collect();
    assert!(settings.len() >= 5, "tool-mediator config printed: {defaults}");
    let mut checked = 0;
    for document in documents() {
        let (blocks, _) = parse(&document);
        for block in blocks.iter().filter(|block| block.info == "toml") {
            checked += 1;
            let file = scratch.work.join("shown.toml");
            fs::write(&file, block.body.join("\n")).unwrap();
            let (code, output) = scratch.run("tool-mediator config --config shown.toml");
            assert_eq!(code, 0, "{}: tool-mediator config does not take this configuration:\n{output}", block.place());
            let written: BTreeSet<&str> = block
                .body
                .iter()
                .filter_map(|line| line.trim_start_matches(['#', ' ']).split_once(" = ").map(|(key, _)| key.trim()))
                .collect();
            let missing: Vec<&&str> = settings.iter().filter(|key| !written.contains(**key)).collect();
            assert!(missing.is_empty(), "{}: the configuration shown leaves out {missing:?}", block.place());
        }
    }
    assert!(checked > 0, "no ```toml block: the configuration file is shown nowhere");
}

/// The anchor GitHub gives a heading: lower case, punctuation left out, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || c == ' ' || c == '-' || c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings, numbered as GitHub numbers repeated ones.
fn anchors(file: &Path) -> BTreeSet<String> {
    let (_, headings) = parse(file);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for (_, heading) in headings {
        let base = slug(&heading);
        let count = seen.entry(base.clone()).or_default();
        anchors.insert(if *count == 0 { base.clone() } else { format!("{base}-{count}") });
        *count += 1;
    }
    anchors
}

#[test]
fn every_link_and_anchor_points_somewhere() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for document in documents() {
        let text = fs::read_to_string(root().join(&document)).unwrap();
        let in_code = code_lines(&document);
        for (index, line) in text.lines().enumerate() {
            if in_code.contains(&(index + 1)) {
                continue;
            }
            let mut rest = line;
            while let Some(start) = rest.find("](") {
                let after = &rest[start + 2..];
                let Some(end) = after.find(')') else { break };
                let target = &after[..end];
                rest = &after[end..];
                if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                    continue;
                }
                checked += 1;
                let place = format!("{}:{}", document.display(), index + 1);
                let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
                let file = if path.is_empty() {
                    document.clone()
                } else {
                    let joined = document.parent().unwrap().join(path);
                    let mut normal = PathBuf::new();
                    for part in joined.components() {
                        match part {
                            Component::ParentDir => {
                                normal.pop();
                            }
                            Component::CurDir => {}
                            part => normal.push(part),
                        }
                    }
                    normal
                };
                if !root().join(&file).exists() {
                    problems.push(format!("{place}: {target}: there is no {}", file.display()));
                    continue;
                }
                if !anchor.is_empty() {
                    if file.extension().is_none_or(|ext| ext != "md") {
                        problems.push(format!("{place}: {target}: an anchor into a file that is not Markdown"));
                    } else if !anchors(&file).contains(anchor) {
                        problems.push(format!("{place}: {target}: {} has no heading #{anchor}", file.display()));
                    }
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} links found");
    assert!(problems.is_empty(), "{} broken links:\n{}", problems.len(), problems.join("\n"));
}
