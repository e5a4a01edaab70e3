//! `tool-mediator review`: what trust on first use holds back, server by server, each change shown
//! as a diff of the definition; `--approve` pins a held tool as it is now, `--reject` keeps it
//! held and never offers that definition again.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::Args;
use serde_json::Value;
use tool_mediator::Tool;
use tool_mediator::pin::{HeldTool, PinsFile, Unheld, quoted_for_shell};

use crate::config;
use crate::flags::ConfigArgs;
use crate::output;

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The pins file (the configuration's `pins_file`, else `tool-mediator/pins.json` in the
    /// platform data directory).
    #[arg(long, value_name = "FILE")]
    pub pins_file: Option<PathBuf>,

    /// Pin this held tool, `SERVER/TOOL@DIGEST` as the review shows it: refused when the tool
    /// has changed again since (without `@DIGEST`, pinned as the server lists it now);
    /// repeatable. A running proxy or gateway lists it within a second.
    #[arg(long, value_name = "SERVER/TOOL")]
    pub approve: Vec<String>,

    /// Pin every held tool as the servers list them now (after any `--reject`).
    #[arg(long)]
    pub approve_all: bool,

    /// Keep this held tool held back, and do not offer this definition for review again (a
    /// further change is), `SERVER/TOOL@DIGEST` as the review shows it; repeatable.
    #[arg(long, value_name = "SERVER/TOOL")]
    pub reject: Vec<String>,

    /// Exit 1 when a tool is held back still (for CI).
    #[arg(long)]
    pub check: bool,

    #[command(flatten)]
    pub config: ConfigArgs,
}

pub fn run(args: ReviewArgs) -> Result<ExitCode> {
    let path = match &args.pins_file {
        Some(path) => path.clone(),
        None => config::load(&args.config)?
            .0
            .pins_path()
            .context("no data directory for the pins file (set XDG_DATA_HOME or HOME, or give --pins-file)")?,
    };
    let file = PinsFile::at(&path);
    // How the commands this prints name the file: not at all when it is the user's own.
    let named = match PinsFile::user_path() {
        Some(user) if user == path && args.pins_file.is_none() => String::new(),
        _ => format!(" --pins-file {}", quoted_for_shell(&path.display().to_string())),
    };
    let deciding = args.approve_all || !args.approve.is_empty() || !args.reject.is_empty();
    if deciding {
        // Each key read before the file is touched: a malformed one decides nothing.
        let mut decisions = Vec::new();
        for (keys, approve) in [(&args.reject, false), (&args.approve, true)] {
            for key in keys {
                let (named, digest) = reviewed(key).map_err(|why| anyhow::anyhow!("`{key}`: {why}"))?;
                decisions.push((key, named, digest, approve));
            }
        }
        let decided = file.change(|pins| {
            // All or nothing: one name that is not held back changes nothing.
            let mut next = pins.clone();
            let mut decided = Vec::new();
            for &(key, named, ref digest, approve) in &decisions {
                let (server, name) = next.find_held(named, digest.as_deref()).map_err(|unheld| match unheld {
                    Unheld::NotHeld => Refused::NotHeld(key.clone()),
                    Unheld::Changed => Refused::Changed(key.clone()),
                })?;
                if approve {
                    next.approve(&server, &name);
                    decided.push(format!("approved {key}: pinned as the server lists it now"));
                } else {
                    next.reject(&server, &name);
                    decided.push(format!("rejected {key}: held back, and not offered again unless it changes"));
                }
            }
            if args.approve_all {
                for held in next.held() {
                    decided.push(format!("approved {}: pinned as the server lists it now", held.key()));
                }
                next.approve_all();
            }
            *pins = next;
            Ok(decided)
        })?;
        match decided {
            Ok(decided) => {
                let text: String = decided.iter().map(|line| format!("{line}\n")).collect();
                output::print(&output::printable_lines(&text))?;
            }
            Err(Refused::NotHeld(key)) => {
                bail!("{}: `{key}` is not held back; `tool-mediator review{named}` lists what is", output::shown(&path))
            }
            Err(Refused::Changed(key)) => bail!(
                "{}: `{key}` has changed again since that review, and nothing was decided; `tool-mediator \
                 review{named}` shows it as it is now",
                output::shown(&path)
            ),
        }
    }
    let pins = file.read()?;
    let held = pins.held();
    let mut text = String::new();
    if !deciding {
        for tool in &held {
            text.push_str(&shown(tool, &named));
            text.push('\n');
        }
    }
    text.push_str(&match held.len() {
        0 => format!("Nothing is held back in {}.\n", path.display()),
        1 => format!("1 tool is held back in {}.\n", path.display()),
        count => format!("{count} tools are held back in {}.\n", path.display()),
    });
    output::print(&output::printable_lines(&text))?;
    Ok(if args.check && !held.is_empty() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Why a review's decisions were not taken (all or nothing).
enum Refused {
    /// The key names no held tool.
    NotHeld(String),
    /// The held tool is no longer the definition the key's digest names.
    Changed(String),
}

/// A review's `SERVER/TOOL@sha256:<64 hexadecimal digits>`: the key, and the digest of the
/// definition reviewed when it names one (in lower case). The whole digest, never a prefix: a
/// server that chose two definitions whose digests begin alike could otherwise swap one for
/// the other after the review.
fn reviewed(key: &str) -> Result<(&str, Option<String>), String> {
    let Some((named, digest)) = key.rsplit_once("@sha256:") else { return Ok((key, None)) };
    let hex = digest.to_ascii_lowercase();
    match hex.len() == 64 && hex.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        true => Ok((named, Some(format!("sha256:{hex}")))),
        false => Err("a reviewed definition is named by its whole digest, `@sha256:` and 64 hexadecimal digits, \
                       as the review prints it"
            .to_owned()),
    }
}

/// One held tool: why, the diff of its definition from the pinned one (the whole definition for
/// a new tool), and the commands that decide.
fn shown(held: &HeldTool<'_>, named: &str) -> String {
    let key = held.key();
    let now = pretty(&held.held.tool);
    let (why, before, from) = match held.pinned {
        Some(pinned) => (
            format!("changed since it was pinned ({} -> {})", short(&pinned.digest), short(&held.held.digest)),
            pretty(&pinned.tool),
            format!("{key} (pinned)"),
        ),
        None => (
            format!("new since `{}` was first seen ({})", held.server, short(&held.held.digest)),
            String::new(),
            "/dev/null".to_owned(),
        ),
    };
    let diff = similar::TextDiff::from_lines(&before, &now);
    let diff = diff.unified_diff().context_radius(3).header(&from, &format!("{key} (held back)")).to_string();
    let argument = quoted_for_shell(&format!("{key}@{}", held.held.digest));
    format!(
        "{key}: {why}\n{diff}approve: tool-mediator review{named} --approve {argument}\nreject:  tool-mediator \
         review{named} --reject {argument}\n"
    )
}

/// `sha256:` and the first 12 hexadecimal digits: enough to tell two definitions apart.
fn short(digest: &str) -> &str {
    digest.get(..7 + 12).unwrap_or(digest)
}

/// A definition as pretty JSON, ending in a line break: the tool's own fields in their order,
/// the members of every object inside in name order, so only what changed shows in a diff.
fn pretty(tool: &Tool) -> String {
    let value = serde_json::to_value(tool).unwrap_or(Value::Null);
    let value = match value {
        Value::Object(members) => Value::Object(members.into_iter().map(|(key, value)| (key, sorted(value))).collect()),
        other => other,
    };
    serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
}

fn sorted(value: Value) -> Value {
    match value {
        Value::Object(members) => {
            let mut members: Vec<(String, Value)> = members.into_iter().collect();
            members.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(members.into_iter().map(|(key, value)| (key, sorted(value))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}
