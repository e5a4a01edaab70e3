//! `tool-mediator completions SHELL` and `tool-mediator man [--out DIR]`: the shell completion
//! scripts and the manual pages, generated from the clap definitions the binary parses with, so
//! they never disagree with it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::output;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `tool-mediator.1` and one page per subcommand (`tool-mediator-enhance.1`, ...) into
    /// this directory, created if missing, and print their paths; the root page goes to
    /// standard output otherwise.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// The name the scripts complete: the binary's.
const BIN_NAME: &str = "tool-mediator";

/// Prints the completion script for one shell on standard output; `root` is the command line's
/// own definition (`Cli::command()`), which this room does not name: the commands are below it.
pub fn completions(args: &CompletionsArgs, mut root: clap::Command) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut root, BIN_NAME, &mut script);
    let mut script = String::from_utf8(script).context("the completion script is not UTF-8")?;
    if args.shell == clap_complete::Shell::Bash {
        script = fix_bash_states(&script);
    }
    output::print(&script)?;
    Ok(ExitCode::SUCCESS)
}

/// clap_complete (up to 4.6.11 at least, clap-rs/clap#6421) spells the state of a subcommand
/// two ways in a bash script when the binary's name has a hyphen: the loop that reads the words
/// sets `tool__mediator__subcmd__gateway`, the arms that complete match
/// `tool__subcmd__mediator__subcmd__gateway`, so nothing after a subcommand ever completes.
/// Spell the arms as the loop does.
fn fix_bash_states(script: &str) -> String {
    let wrong = format!("{}__subcmd__", BIN_NAME.replace('-', "__subcmd__"));
    let right = format!("{}__subcmd__", BIN_NAME.replace('-', "__"));
    script.replace(&wrong, &right)
}

/// Prints the root command's page, or writes one page per command and subcommand into
/// `--out DIR` (created if missing), all or none, and prints the paths written, one a line;
/// `root` is the command line's definition, as for [`completions`].
pub fn man(args: &ManArgs, root: clap::Command) -> anyhow::Result<ExitCode> {
    // Building the root names every subcommand's page after its full path
    // (`tool-mediator-overrides-validate`). `help` is not a command of its own to document.
    let mut root = root.disable_help_subcommand(true);
    root.build();
    match &args.out {
        None => output::print(&render(root)?)?,
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
            let mut pages = Vec::new();
            collect_pages(root, dir, &mut pages)?;
            output::write_atomically(&pages)?;
            let paths: String = pages.iter().map(|(path, _)| format!("{}\n", output::shown(path))).collect();
            output::print(&paths)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `command`'s page, then those of its subcommands, depth first.
fn collect_pages(
    command: clap::Command,
    dir: &std::path::Path,
    pages: &mut Vec<(PathBuf, String)>,
) -> anyhow::Result<()> {
    let subcommands: Vec<clap::Command> =
        command.get_subcommands().filter(|sub| !sub.is_hide_set() && sub.get_name() != "help").cloned().collect();
    let path = dir.join(clap_mangen::Man::new(command.clone()).get_filename());
    pages.push((path, render(command)?));
    for sub in subcommands {
        collect_pages(sub, dir, pages)?;
    }
    Ok(())
}

fn render(command: clap::Command) -> anyhow::Result<String> {
    // Titles are upper case by convention (`.TH TOOL-MEDIATOR-ENHANCE 1`).
    let title = command.get_display_name().unwrap_or_else(|| command.get_name()).to_uppercase();
    let mut page = Vec::new();
    clap_mangen::Man::new(command).title(title).render(&mut page).context("cannot render a manual page")?;
    String::from_utf8(page).context("a manual page is not UTF-8")
}
