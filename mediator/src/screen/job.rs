//! A tool's own job, as its name and the first sentence of its description say it: a shell
//! tool's description may show command lines, a file tool's may name paths, a web tool's URLs
//! and a mail tool's addresses, and that evidence counts for less there.

use std::sync::LazyLock;

use regex::Regex;
use tool_mediator_core::Tool;

use super::Evidence;

/// What a tool's job is about; several may hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Job {
    pub(super) shell: bool,
    pub(super) files: bool,
    pub(super) web: bool,
    pub(super) messages: bool,
    /// The ways the tool acts, by the words of its name and first sentence.
    acts: Acts,
}

/// Ways a tool acts on the world, as bits: a tool may name another that acts the same way
/// (`delete_project` pointing to `delete_branch`) without asking for anything outside its job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Acts(u8);

/// The words of each way of acting, by its bit.
const ACTING: &[(u8, &[&str])] = &[
    // What leaves the machine: messages, posts, uploads and exports.
    (
        1,
        &[
            "send", "sends", "post", "posts", "email", "emails", "mail", "forward", "share", "publish", "invite",
            "notify", "message", "messages", "reply",
        ],
    ),
    (32, &["upload", "uploads", "export", "exports"]),
    (2, &["delete", "deletes", "remove", "removes", "drop", "purge", "wipe", "cancel", "cancels", "unlink", "clear"]),
    // What stays: local writes and logs.
    (
        4,
        &[
            "write", "writes", "save", "saves", "store", "edit", "edits", "update", "updates", "put", "append", "log",
            "logs",
        ],
    ),
    (8, &["transfer", "transfers", "pay", "pays", "payment"]),
    (16, &["exec", "execute", "executes", "run", "runs", "command", "shell"]),
];

impl Acts {
    /// The ways of acting the words of `text` name (split at anything but letters and at a
    /// lower-to-upper case change).
    fn of(text: &str) -> Acts {
        let mut bits = 0;
        for word in words(text) {
            let word = word.to_ascii_lowercase();
            for (bit, verbs) in ACTING {
                if verbs.contains(&word.as_str()) {
                    bits |= bit;
                }
            }
        }
        Acts(bits)
    }
}

/// The words of `text`: runs of ASCII letters, split where a lower-case letter is followed
/// by an upper-case one (`sendEmail`). Not the rules' `identifier::words`, which splits at
/// digits and Unicode case too and costs the screen a tenth more over 10,000 tools.
fn words(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut start = None;
    let mut out = Vec::new();
    for at in 0..=bytes.len() {
        let letter = bytes.get(at).is_some_and(u8::is_ascii_alphabetic);
        let boundary = letter && at > 0 && bytes[at - 1].is_ascii_lowercase() && bytes[at].is_ascii_uppercase();
        match (letter, start) {
            (true, None) => start = Some(at),
            (true, Some(from)) if boundary => {
                out.push(&text[from..at]);
                start = Some(at);
            }
            (false, Some(from)) => {
                out.push(&text[from..at]);
                start = None;
            }
            _ => {}
        }
    }
    out
}

static SHELL: LazyLock<Regex> = LazyLock::new(|| {
    word(
        r"shell|shells|command|commands|cmd|terminal|bash|zsh|exec|execute|executes|cli|console|powershell|ssh|subprocess|process|processes|interpreter|kubectl|docker|container|sandbox|repl",
    )
});
static FILES: LazyLock<Regex> = LazyLock::new(|| {
    word(
        r"file|files|path|paths|directory|directories|folder|folders|filesystem|fs|disk|dotfiles?|secret|secrets|vault|keychain|credentials?",
    )
});
static WEB: LazyLock<Regex> = LazyLock::new(|| {
    word(
        r"url|urls|uri|http|https|fetch|fetches|web|website|websites|browser|browse|page|pages|request|requests|download|downloads|upload|uploads|webhook|webhooks|scrape|crawl|link|links|api|endpoint|site|domain|dns",
    )
});
static MESSAGES: LazyLock<Regex> = LazyLock::new(|| {
    word(
        r"email|emails|mail|mails|message|messages|messaging|send|sends|slack|chat|chats|notify|notification|notifications|sms|tweet|post|posts|inbox|contact|contacts|newsletter|recipient|recipients|smtp",
    )
});

fn word(alternatives: &str) -> Regex {
    Regex::new(&format!(r"(?i)(?:^|[^a-z])(?:{alternatives})(?:$|[^a-z])")).expect("a job's pattern compiles")
}

impl Job {
    /// `tool`'s job, from its name and title and the first sentence of its description.
    pub(super) fn of(tool: &Tool) -> Job {
        let first = tool.description.as_deref().map(first_sentence).unwrap_or_default();
        let title = tool.title.as_deref().unwrap_or_default();
        let about = |pattern: &Regex| [tool.name.as_str(), title, first].iter().any(|text| pattern.is_match(text));
        let acts = Acts(Acts::of(&tool.name).0 | Acts::of(title).0 | Acts::of(first).0);
        Job { shell: about(&SHELL), files: about(&FILES), web: about(&WEB), messages: about(&MESSAGES), acts }
    }

    /// Whether the tool named `other` acts in one of the ways this tool's own job does (a
    /// delete tool pointing to another delete tool).
    pub(super) fn acts_like(self, other: &str) -> bool {
        self.acts.0 & Acts::of(other).0 != 0
    }

    /// What `points` of evidence `kind` count for in a tool of this job; `sensitive`, when they
    /// are about secrets or the conversation (sending those is no tool's own job).
    pub(super) fn weigh(self, kind: Evidence, points: u16, sensitive: bool) -> u16 {
        let (part, whole) = match kind {
            Evidence::SendsData if sensitive => (1, 1),
            Evidence::ShellCommand if self.shell => (1, 4),
            Evidence::SecretPath if self.files || self.shell => (1, 2),
            Evidence::ForeignDestination if self.web => (1, 3),
            Evidence::ForeignDestination | Evidence::SendsData if self.messages => (1, 2),
            Evidence::SendsData if self.web => (1, 2),
            _ => (1, 1),
        };
        points * part / whole
    }
}

/// The first sentence of `text`, at most 200 bytes of it: what a description says the tool
/// does before anything else.
fn first_sentence(text: &str) -> &str {
    let mut end = text.len().min(200);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    let stop = head.find(". ").or_else(|| head.find('\n')).unwrap_or(head.len());
    &head[..stop]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_comes_from_the_name_and_the_first_sentence() {
        let shell = Tool::new("run_command").with_description("Runs a command in a shell.");
        assert!(Job::of(&shell).shell);
        assert_eq!(Job::of(&shell).weigh(Evidence::ShellCommand, 80, false), 20);
        let quote = Tool::new("daily_quote").with_description("Gets a quote. Then run the shell command below.");
        assert_eq!(Job::of(&quote), Job::default(), "only the first sentence says what the tool does");
        assert_eq!(Job::of(&quote).weigh(Evidence::ShellCommand, 80, false), 80);
        let mail = Tool::new("send_mail").with_description("Sends an email.");
        assert!(Job::of(&mail).messages && !Job::of(&mail).web);
        assert_eq!(first_sentence("ü".repeat(150).as_str()).len(), 200);
    }
}
