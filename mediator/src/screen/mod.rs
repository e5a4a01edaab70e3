//! The screen: whether a tool's text is poisoned, judged by what it asks of the model rather
//! than by a list of phrases. A poisoned description stops describing the tool and starts
//! instructing the model, and asks for something outside the tool's own job: a command line, a
//! secret, an address elsewhere, a call to another tool, a changed argument, something kept
//! from the user. Each of those is evidence with points ([`Evidence`], read by the signs in
//! `signs`); a tool is flagged when its evidence adds up to [`THRESHOLD`]. Evidence that only
//! addresses the model (obligations, claims of authority, pointers to other tools) is what
//! honest descriptions say too, so all of it together counts for at most half the threshold;
//! evidence of the tool's own job (a shell tool's command lines) counts for less.
//!
//! Applied once, in the session, so every front door (the proxy, the gateway, the Node binding)
//! screens alike; the linter reports the same verdicts.

mod hidden;
mod job;
mod signs;
mod texts;

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::ops::Range;

use tool_mediator_core::{EnhancedTool, Tool};

pub use hidden::printable;
use job::Job;
use texts::{Kind, Text};

/// The points at which a tool is flagged as poisoned.
pub const THRESHOLD: u16 = 100;

/// The points from which a tool not flagged is in the grey zone: a language model, when one is
/// configured, may judge it.
pub const GREY: u16 = 50;

/// The most that evidence only addressing the model counts for, together.
const ADDRESSING_AT_MOST: u16 = 50;

/// The most one kind of evidence counts for.
const KIND_AT_MOST: u16 = 100;

/// What a text shows that suggests poisoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Evidence {
    /// It puts obligations to the model (`you must`, `make sure to`, `always call`).
    Instructs,
    /// It claims authority (`SYSTEM:`, `[ADMIN OVERRIDE]`, `mandatory for compliance`).
    ClaimsAuthority,
    /// It wraps text in tags meant for the model (`<IMPORTANT>`, `<system>`).
    MarkupForTheModel,
    /// It gives the model orders inside such tags, where a page shows none of it.
    OrdersInMarkup,
    /// It tells the model to set its instructions or safeguards aside.
    OverridesInstructions,
    /// It shows a command line to run (flags, pipes into a shell, `$(...)`, redirects).
    ShellCommand,
    /// It names a path to secrets or configuration (`~/.ssh`, `.env`, `mcp.json`).
    SecretPath,
    /// It names an address elsewhere: an email address, a URL, a host.
    ForeignDestination,
    /// It sends, posts or keeps data somewhere else.
    SendsData,
    /// It steers the model to another tool (call, prefer, use instead).
    SteersToTool,
    /// It says how another tool must behave or runs it down, puts itself before every other
    /// tool, or names another server's tool.
    ShadowsTool,
    /// It has the model call a tool that acts (sends, writes, deletes) on the side.
    CallsActingTool,
    /// It claims a tool is deprecated, restricted or replaced.
    ClaimsDeprecation,
    /// It changes what the user asked for (`always set`, `regardless of`, `users actually prefer`).
    ChangesArguments,
    /// It asks an argument to carry the conversation, files or credentials.
    CarriesContext,
    /// It asks the model to find secrets, or to put them in its answer.
    RevealsSecrets,
    /// It keeps something from the user (`do not mention`, `silently`).
    KeepsFromUser,
    /// It holds invisible or bidirectional characters.
    HiddenCharacter,
    /// It disguises a letter as a Latin one (`ignоre` with a Cyrillic `о`, mathematical letters).
    DisguisedLetter,
    /// It hides text in an HTML comment.
    HtmlComment,
    /// It carries an encoded payload (a long base64 or hex run).
    EncodedBlob,
    /// It puts text in a schema where the schema holds none (a sentence as a type or a
    /// required name, prose under a key no schema defines).
    MisplacedText,
}

impl Evidence {
    /// Every kind, in the order above.
    pub const ALL: [Evidence; 22] = [
        Evidence::Instructs,
        Evidence::ClaimsAuthority,
        Evidence::MarkupForTheModel,
        Evidence::OrdersInMarkup,
        Evidence::OverridesInstructions,
        Evidence::ShellCommand,
        Evidence::SecretPath,
        Evidence::ForeignDestination,
        Evidence::SendsData,
        Evidence::SteersToTool,
        Evidence::ShadowsTool,
        Evidence::CallsActingTool,
        Evidence::ClaimsDeprecation,
        Evidence::ChangesArguments,
        Evidence::CarriesContext,
        Evidence::RevealsSecrets,
        Evidence::KeepsFromUser,
        Evidence::HiddenCharacter,
        Evidence::DisguisedLetter,
        Evidence::HtmlComment,
        Evidence::EncodedBlob,
        Evidence::MisplacedText,
    ];

    /// A stable id, for JSON and SARIF.
    pub fn id(self) -> &'static str {
        match self {
            Evidence::Instructs => "instructs-the-model",
            Evidence::ClaimsAuthority => "claims-authority",
            Evidence::MarkupForTheModel => "markup-for-the-model",
            Evidence::OrdersInMarkup => "orders-in-markup",
            Evidence::OverridesInstructions => "overrides-instructions",
            Evidence::ShellCommand => "shell-command",
            Evidence::SecretPath => "secret-path",
            Evidence::ForeignDestination => "foreign-destination",
            Evidence::SendsData => "sends-data",
            Evidence::SteersToTool => "steers-to-tool",
            Evidence::ShadowsTool => "shadows-tool",
            Evidence::CallsActingTool => "calls-acting-tool",
            Evidence::ClaimsDeprecation => "claims-deprecation",
            Evidence::ChangesArguments => "changes-arguments",
            Evidence::CarriesContext => "carries-context",
            Evidence::RevealsSecrets => "reveals-secrets",
            Evidence::KeepsFromUser => "keeps-from-user",
            Evidence::HiddenCharacter => "hidden-character",
            Evidence::DisguisedLetter => "disguised-letter",
            Evidence::HtmlComment => "html-comment",
            Evidence::EncodedBlob => "encoded-blob",
            Evidence::MisplacedText => "misplaced-text",
        }
    }

    /// What the evidence shows, in words.
    pub fn what(self) -> &'static str {
        match self {
            Evidence::Instructs => "instructs the model",
            Evidence::ClaimsAuthority => "claims authority",
            Evidence::MarkupForTheModel => "wraps text in markup for the model",
            Evidence::OrdersInMarkup => "gives orders inside markup for the model",
            Evidence::OverridesInstructions => "tells the model to set its instructions aside",
            Evidence::ShellCommand => "shows a command line",
            Evidence::SecretPath => "names a path to secrets or configuration",
            Evidence::ForeignDestination => "names an address elsewhere",
            Evidence::SendsData => "sends data elsewhere",
            Evidence::SteersToTool => "steers the model to another tool",
            Evidence::ShadowsTool => "tells how another tool must behave",
            Evidence::CallsActingTool => "has the model call a tool that acts on the side",
            Evidence::ClaimsDeprecation => "claims a tool is deprecated or replaced",
            Evidence::ChangesArguments => "changes what the user asked for",
            Evidence::CarriesContext => "asks an argument to carry the conversation, files or credentials",
            Evidence::RevealsSecrets => "asks the model to find or reveal secrets",
            Evidence::KeepsFromUser => "keeps something from the user",
            Evidence::HiddenCharacter => "holds an invisible or bidirectional character",
            Evidence::DisguisedLetter => "disguises a letter as a Latin one",
            Evidence::HtmlComment => "hides text in an HTML comment",
            Evidence::EncodedBlob => "carries an encoded payload",
            Evidence::MisplacedText => "puts text where a schema holds none",
        }
    }

    /// Whether the evidence only addresses the model: what honest descriptions do too.
    fn only_addresses(self) -> bool {
        matches!(
            self,
            Evidence::Instructs
                | Evidence::ClaimsAuthority
                | Evidence::MarkupForTheModel
                | Evidence::SteersToTool
                | Evidence::ClaimsDeprecation
        )
    }
}

/// One piece of evidence: its kind, the field it is in (a pointer relative to the tool,
/// segments escaped), the span of that field's text it rests on (bytes), the text of the span
/// (at most [`EXCERPT`] bytes of it), and what it counts for in this tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: Evidence,
    pub field: String,
    pub span: Range<usize>,
    pub excerpt: String,
    pub points: u16,
}

/// The longest excerpt a finding keeps, in bytes.
pub const EXCERPT: usize = 80;

/// What the screen makes of one tool: its evidence, in the order a model reads it, and the
/// points it adds up to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    pub findings: Vec<Finding>,
    pub score: u16,
    /// Why a language model judged the tool poisoned, when one was asked (a tool in the grey
    /// zone) and did: that flags it too.
    pub judgement: Option<String>,
}

impl Verdict {
    /// Whether the evidence adds up to the threshold: the tool is suspected of poisoning.
    pub fn flagged(&self) -> bool {
        self.score >= THRESHOLD || self.judgement.is_some()
    }

    /// Whether the tool has evidence short of the threshold, enough for a second look.
    pub fn grey(&self) -> bool {
        (GREY..THRESHOLD).contains(&self.score) && self.judgement.is_none()
    }

    /// The evidence in words: `score 160 of 100: shows a command line (description: "curl -s
    /// ... | sh"), ...`, each excerpt printable.
    pub fn explanation(&self) -> String {
        let mut out = format!("score {} of {THRESHOLD}:", self.score);
        for (index, finding) in self.findings.iter().enumerate() {
            let separator = if index == 0 { " " } else { "; " };
            let _ = write!(
                out,
                "{separator}{} ({}: \"{}\", {} points)",
                finding.kind.what(),
                printable(&finding.field),
                printable(&finding.excerpt),
                finding.points
            );
        }
        if let Some(judgement) = &self.judgement {
            let _ = write!(out, "; a language model judged it poisoned: {}", printable(judgement));
        }
        out
    }
}

/// A second look at the tools the screen is unsure of: a language model's ([`crate::llm::Judge`]).
/// It may set a verdict's judgement, which flags the tool; it never clears a flag.
#[async_trait::async_trait]
pub trait SecondLook: Send + Sync {
    /// Looks again at each of `source`'s `tools` whose verdict (`verdicts`, in the same order)
    /// is in the grey zone.
    async fn rule(&self, source: &str, tools: &[Tool], verdicts: &mut [Verdict]);
}

/// The other tools a tool is listed with: its siblings from the same source, and the tools of
/// the other servers behind a gateway (each by the name its server gives it).
#[derive(Debug, Clone, Copy, Default)]
pub struct Listing<'a> {
    pub siblings: Option<&'a HashSet<&'a str>>,
    pub others: Option<&'a HashSet<&'a str>>,
}

/// The screen's verdict on `tool` on its own.
pub fn examine(tool: &Tool) -> Verdict {
    examine_in(tool, Listing::default())
}

/// Which place a finding comes from, so each is counted once a tool: a sign (by its index),
/// or a check of the screen's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    Sign(usize),
    Own(Evidence),
}

/// The screen's verdict on `tool`, listed with `listing`.
pub fn examine_in(tool: &Tool, listing: Listing<'_>) -> Verdict {
    let job = Job::of(tool);
    let input_schema = tool.input_schema_value();
    // The best place of each source, with the order of its text for reporting.
    let mut best: BTreeMap<Source, (usize, Finding)> = BTreeMap::new();
    // `weighed`: whether the tool's job counts the evidence down (not where the text hides it in
    // a block of markup for the model, which is no description of the tool).
    let mut keep =
        |source: Source, order: usize, text: &Text<'_>, span: Range<usize>, points: u16, weighed: Weighed| {
            let kind = match source {
                Source::Sign(index) => signs::SIGNS[index].kind,
                Source::Own(kind) => kind,
            };
            let points = match weighed {
                Weighed::ByJob { sensitive } => job.weigh(kind, points, sensitive),
                Weighed::Whole => points,
            };
            if best.get(&source).is_some_and(|(_, known)| known.points >= points) {
                return;
            }
            let finding = Finding { kind, field: text.field.clone(), excerpt: excerpt(text.text, &span), span, points };
            best.insert(source, (order, finding));
        };
    let texts = texts::texts(tool, input_schema.as_ref());
    let spaced: Vec<Option<String>> =
        texts.iter().map(|text| (text.kind == Kind::Identifier).then(|| signs::spaced(text.text))).collect();
    // All of a tool's prose, and all its identifiers, each searched at once for the signs each
    // text may hold; a text is then read for those alone.
    let (mut prose, mut identifiers) = (signs::Joined::default(), signs::Joined::default());
    for (index, (text, spaced)) in texts.iter().zip(&spaced).enumerate() {
        match spaced {
            Some(spaced) => identifiers.push(index, spaced),
            None => prose.push(index, text.text),
        }
    }
    let (prose_read, identifiers_read) = (signs::Haystack::new(&prose.text), signs::Haystack::new(&identifiers.text));
    let mut candidates = vec![signs::Candidates::default(); texts.len()];
    signs::candidates(&prose_read, &prose, false, &mut candidates);
    signs::candidates(&identifiers_read, &identifiers, true, &mut candidates);
    let mut haystacks: Vec<Option<signs::Haystack<'_>>> = (0..texts.len()).map(|_| None).collect();
    for (joined, read) in [(&prose, &prose_read), (&identifiers, &identifiers_read)] {
        for (at, index) in joined.indices() {
            haystacks[index] = Some(joined.part(read, at));
        }
    }
    for (order, (text, spaced)) in texts.iter().zip(&spaced).enumerate() {
        let identifier = spaced.is_some();
        let readings = match (candidates[order].none(), &haystacks[order]) {
            (false, Some(haystack)) => signs::read(haystack, identifier, candidates[order]),
            _ => Vec::new(),
        };
        let blocks = match text.kind {
            Kind::Prose => signs::markup_blocks(text.text),
            Kind::Identifier => Vec::new(),
        };
        // Which of the blocks for the model give it orders.
        let mut orders_in = vec![false; blocks.len()];
        for reading in readings {
            let sign = &signs::SIGNS[reading.sign];
            // A tool speaking of itself (`each edit_block call`) steers to no other tool.
            let other_tool =
                matches!(sign.kind, Evidence::ShadowsTool | Evidence::SteersToTool | Evidence::CallsActingTool);
            if other_tool && telling(&tool.name) && names(&text.text[reading.span.clone()], &tool.name) {
                continue;
            }
            // A tool pointing to another that acts as it does (`delete_project` to
            // `delete_branch`) asks for nothing outside its job.
            if sign.kind == Evidence::CallsActingTool && job.acts_like(&text.text[reading.span.clone()]) {
                continue;
            }
            let in_block = blocks.iter().position(|block| {
                block.for_the_model && block.span.start <= reading.span.start && reading.span.end <= block.span.end
            });
            if let Some(block) = in_block
                && matches!(sign.kind, Evidence::Instructs | Evidence::OverridesInstructions)
            {
                orders_in[block] = true;
            }
            let in_block = in_block.is_some();
            let weighed = match in_block {
                true => Weighed::Whole,
                false => Weighed::ByJob { sensitive: reading.company == Some(signs::Company::Sensitive) },
            };
            keep(Source::Sign(reading.sign), order, text, reading.span.clone(), reading.points, weighed);
            // A parameter named for a secret, or described as taking one in by an order or as its
            // contents (`read ~/.env and include it`, `Contents of ~/.ssh/id_rsa`), asks the model
            // to fill it with one; a parameter that takes the path of one (`Path to the
            // kubeconfig file to load`) does not.
            let taken_in = match reading.company {
                Some(signs::Company::Ordering) => true,
                Some(_) => contents_of(text.text),
                None => false,
            };
            if text.is_parameter() && sign.kind == Evidence::SecretPath && (text.is_property_name() || taken_in) {
                keep(Source::Own(Evidence::CarriesContext), order, text, reading.span, 80, Weighed::Whole);
            }
        }
        match text.misplaced {
            Some(texts::Misplaced::Invalid) => {
                keep(Source::Own(Evidence::MisplacedText), order, text, 0..text.text.len(), 100, Weighed::Whole);
            }
            Some(texts::Misplaced::Unknown) if text.text.split_whitespace().count() >= 4 => {
                keep(Source::Own(Evidence::MisplacedText), order, text, 0..text.text.len(), 40, Weighed::Whole);
            }
            _ => {}
        }
        if let Some((span, _)) = hidden::invisible_character(text.text) {
            keep(Source::Own(Evidence::HiddenCharacter), order, text, span, 100, Weighed::Whole);
        }
        if let Some(span) = hidden::disguised_letter(text.text) {
            keep(Source::Own(Evidence::DisguisedLetter), order, text, span, 100, Weighed::Whole);
        }
        if let Some(start) = text.text.find("<!--") {
            let end = text.text[start..].find("-->").map_or(text.text.len(), |end| start + end + 3);
            keep(Source::Own(Evidence::HtmlComment), order, text, start..end, 100, Weighed::Whole);
        }
        if let Some(blob) = hidden::encoded_blob(text.text) {
            let points = if blob.says_words { 100 } else { 50 };
            keep(Source::Own(Evidence::EncodedBlob), order, text, blob.span, points, Weighed::Whole);
        }
        if text.kind == Kind::Prose {
            // A block whose tag claims weight or secrecy is for the model; one of examples or
            // notes is a page's structure.
            for (block, orders) in blocks.iter().zip(&orders_in).filter(|(block, _)| block.for_the_model) {
                let (kind, points) = match orders {
                    true => (Evidence::OrdersInMarkup, 50),
                    false => (Evidence::MarkupForTheModel, 40),
                };
                keep(Source::Own(kind), order, text, block.span.clone(), points, Weighed::Whole);
            }
            if let Some(span) = listing.others.and_then(|others| named_tool(text.text, &tool.name, others)) {
                keep(Source::Own(Evidence::ShadowsTool), order, text, span, 60, Weighed::Whole);
            }
            if let Some(span) = listing.siblings.and_then(|siblings| named_tool(text.text, &tool.name, siblings)) {
                keep(Source::Own(Evidence::SteersToTool), order, text, span, 20, Weighed::Whole);
            }
        }
    }
    // A name that hides a character or disguises a letter passes for another tool's (`reаd_file`,
    // a Cyrillic `а`): its own text, read for those alone, before the others.
    let name = Text { field: "name".to_owned(), text: &tool.name, kind: Kind::Identifier, misplaced: None };
    if let Some((span, _)) = hidden::invisible_character(&tool.name) {
        keep(Source::Own(Evidence::HiddenCharacter), 0, &name, span, 100, Weighed::Whole);
    }
    if let Some(span) = hidden::disguised_letter(&tool.name) {
        keep(Source::Own(Evidence::DisguisedLetter), 0, &name, span, 100, Weighed::Whole);
    }
    let mut findings: Vec<(usize, Finding)> = best.into_values().filter(|(_, finding)| finding.points > 0).collect();
    findings.sort_by_key(|(order, finding)| (*order, finding.span.start));
    let findings: Vec<Finding> = findings.into_iter().map(|(_, finding)| finding).collect();
    Verdict { score: score(&findings), findings, judgement: None }
}

/// The points `findings` add up to: each kind counts for at most [`KIND_AT_MOST`], and what
/// only addresses the model for at most [`ADDRESSING_AT_MOST`] together.
fn score(findings: &[Finding]) -> u16 {
    let mut by_kind: BTreeMap<Evidence, u16> = BTreeMap::new();
    for finding in findings {
        let points = by_kind.entry(finding.kind).or_default();
        *points = (*points + finding.points).min(KIND_AT_MOST);
    }
    let addressing: u16 = by_kind.iter().filter(|(kind, _)| kind.only_addresses()).map(|(_, points)| points).sum();
    let acting: u16 = by_kind.iter().filter(|(kind, _)| !kind.only_addresses()).map(|(_, points)| points).sum();
    addressing.min(ADDRESSING_AT_MOST) + acting
}

/// What the screen keeps of one of a source's tools for when it is listed beside other
/// servers' tools (a gateway's): its verdict on the source's own text, its digest (to allow it
/// by), and the names of tools its prose mentions, each with the first place it does. When the
/// servers meet, only those names are looked up: the tool is not screened again.
#[derive(Debug, Clone, Default)]
pub struct Screening {
    pub verdict: Verdict,
    pub digest: String,
    mentions: Vec<(String, String, Range<usize>)>,
}

/// At most this many names a tool mentions are kept.
const MENTIONS: usize = 64;

impl Screening {
    /// What is kept of `tool`, screened as `verdict`.
    pub fn of(tool: &Tool, verdict: Verdict) -> Screening {
        let input_schema = tool.input_schema_value();
        let mut mentions: Vec<(String, String, Range<usize>)> = Vec::new();
        for text in texts::texts(tool, input_schema.as_ref()).iter().filter(|text| text.kind == Kind::Prose) {
            for (name, span) in tool_names(text.text, &tool.name) {
                if mentions.len() == MENTIONS {
                    break;
                }
                if !mentions.iter().any(|(known, _, _)| known == name) {
                    mentions.push((name.to_owned(), text.field.clone(), span));
                }
            }
        }
        Screening { verdict, digest: crate::cache::digest(tool), mentions }
    }

    /// The verdict once the tool is listed beside `others` (the other servers' tools, by their
    /// own names), when its prose names one of them: that shadows it, evidence it adds.
    pub fn beside(&self, others: &HashSet<&str>) -> Option<Verdict> {
        let (name, field, span) = self.mentions.iter().find(|(name, _, _)| others.contains(name.as_str()))?;
        let mut verdict = self.verdict.clone();
        let finding = Finding {
            kind: Evidence::ShadowsTool,
            field: field.clone(),
            span: span.clone(),
            excerpt: name.clone(),
            points: 60,
        };
        verdict.findings.push(finding);
        verdict.score = score(&verdict.findings);
        Some(verdict)
    }
}

/// Whether a piece of evidence counts for less in a tool whose job it is.
#[derive(Debug, Clone, Copy)]
enum Weighed {
    /// As the tool's job weighs it; `sensitive`, when it is about secrets or the conversation.
    ByJob { sensitive: bool },
    /// Whole.
    Whole,
}

/// Whether a tool's name is distinct enough to tell when a text names it: five characters or
/// more, with a `_`, `-` or `.` (a tool named `search` would cancel every "search" it says).
fn telling(name: &str) -> bool {
    name.len() >= 5 && name.contains(['_', '-', '.'])
}

/// Whether `text` speaks of the contents of something (what a parameter is to carry).
fn contents_of(text: &str) -> bool {
    text.to_ascii_lowercase().contains("content")
}

/// Whether `text` names the tool `name` as a word of its own.
fn names(text: &str, name: &str) -> bool {
    let in_name = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-');
    !name.is_empty()
        && text
            .match_indices(name)
            .any(|(at, _)| !text[..at].ends_with(in_name) && !text[at + name.len()..].starts_with(in_name))
}

/// The text of `span`, at most [`EXCERPT`] bytes of it (cut at a character), with runs of
/// whitespace as one space.
fn excerpt(text: &str, span: &Range<usize>) -> String {
    let mut out = String::new();
    for word in text[span.clone()].split_whitespace() {
        if out.len() + word.len() + 1 > EXCERPT {
            let room = EXCERPT.saturating_sub(out.len() + 1);
            let mut cut = room.min(word.len());
            while !word.is_char_boundary(cut) {
                cut -= 1;
            }
            if !out.is_empty() && cut > 0 {
                out.push(' ');
            }
            out.push_str(&word[..cut]);
            out.push('…');
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Where `text` names one of `names` (not `own`).
fn named_tool(text: &str, own: &str, names: &HashSet<&str>) -> Option<Range<usize>> {
    tool_names(text, own).find(|(name, _)| names.contains(name)).map(|(_, span)| span)
}

/// The words of `text` that may be tool names (not `own`), and where: a name shorter than
/// five characters, or without a `_`, `-` or `.`, is too common a word to tell.
fn tool_names<'t>(text: &'t str, own: &str) -> impl Iterator<Item = (&'t str, Range<usize>)> {
    let telling = move |name: &str| name.len() >= 5 && name.contains(['_', '-', '.']) && name != own;
    let in_name = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.');
    let mut start = None;
    // Each word by the byte offsets of its characters (separators may be several bytes long).
    text.char_indices().chain(std::iter::once((text.len(), ' '))).filter_map(move |(at, c)| {
        match (in_name(c), start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                start = None;
                let word = &text[from..at];
                let trimmed = word.trim_matches('.');
                if telling(trimmed) {
                    let offset = from + (word.len() - word.trim_start_matches('.').len());
                    return Some((trimmed, offset..offset + trimmed.len()));
                }
            }
            _ => {}
        }
        None
    })
}

/// A tool the user allowed after reviewing it: by its source's name and its canonical digest
/// (the one `tool-mediator pin` writes), so a changed definition is screened again.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Allowed {
    pub tool: String,
    pub digest: String,
}

/// Whether `tool` is one `allowed` names with its definition as reviewed.
pub fn is_allowed(tool: &Tool, allowed: &[Allowed]) -> bool {
    let mut named = allowed.iter().filter(|allowed| allowed.tool == tool.name).peekable();
    named.peek().is_some() && {
        let digest = crate::cache::digest(tool);
        named.any(|allowed| allowed.digest == digest)
    }
}

/// What the screen made of one source's tools: the verdict of each, in their order, and the
/// names of those let through as reviewed.
#[derive(Debug, Clone, Default)]
pub struct Screened {
    pub verdicts: Vec<Verdict>,
    pub reviewed: HashSet<String>,
}

/// The verdicts on one source's tools, each examined in their listing; those in `allowed` are
/// let through as reviewed.
pub fn examine_source(tools: &[Tool], allowed: &[Allowed]) -> Screened {
    let siblings: HashSet<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    let mut reviewed = HashSet::new();
    let verdicts = tools
        .iter()
        .map(|tool| {
            if is_allowed(tool, allowed) {
                reviewed.insert(tool.name.clone());
                return Verdict::default();
            }
            examine_in(tool, Listing { siblings: Some(&siblings), others: None })
        })
        .collect();
    Screened { verdicts, reviewed }
}

/// `judge`'s second look at `source`'s `tools`, screened as `screened` says: the tools a user
/// reviewed and allows are never asked about (a judge that flagged one would ask for the
/// `[[allow]]` the user has already given).
pub async fn second_look(judge: &dyn SecondLook, source: &str, tools: &[Tool], screened: &mut Screened) {
    if screened.reviewed.is_empty() {
        return judge.rule(source, tools, &mut screened.verdicts).await;
    }
    let asked: Vec<usize> = (0..tools.len()).filter(|&at| !screened.reviewed.contains(&tools[at].name)).collect();
    let looked_at: Vec<Tool> = asked.iter().map(|&at| tools[at].clone()).collect();
    let mut verdicts: Vec<Verdict> = asked.iter().map(|&at| screened.verdicts[at].clone()).collect();
    judge.rule(source, &looked_at, &mut verdicts).await;
    for (at, verdict) in asked.into_iter().zip(verdicts) {
        screened.verdicts[at] = verdict;
    }
}

/// Acts on the verdicts on `source`'s `tools` (in their order): each flagged is reported,
/// naming the evidence and how to allow it, and with `quarantine` left out.
pub fn apply(source: &str, tools: &mut Vec<Tool>, verdicts: &[Verdict], quarantine: bool) {
    let mut verdicts = verdicts.iter();
    tools.retain(|tool| {
        let Some(verdict) = verdicts.next().filter(|verdict| verdict.flagged()) else { return true };
        let action = if quarantine { "hidden (--quarantine)" } else { "listed; --quarantine hides it" };
        tracing::warn!(
            "`{}` lists `{}`, suspected of poisoning, {action}: {}. Once reviewed, allow it with \
             [[allow]] tool = \"{}\" digest = \"{}\" in the configuration",
            printable(source),
            printable(&tool.name),
            verdict.explanation(),
            printable(&tool.name),
            crate::cache::digest(tool)
        );
        !quarantine
    });
}

/// Reads each of `source`'s tools as the client will see it, after the chain: a rewrite the
/// screen flags (a language model's answer, a remote override, a cached record) where the
/// source's own text was not flagged is undone, said in the log, and the tool is listed as the
/// source published it (`upstream`, the chain's input, one for each of `enhanced`). A tool whose
/// own name another tool now has is left out instead.
pub fn undo_flagged_rewrites(source: &str, upstream: Vec<Tool>, enhanced: &mut Vec<EnhancedTool>) {
    let names: HashSet<&str> = enhanced.iter().map(|tool| tool.tool.name.as_str()).collect();
    let flagged: Vec<(usize, Verdict)> = enhanced
        .iter()
        .zip(&upstream)
        .enumerate()
        .filter(|(_, (tool, _))| tool.changes.any())
        .filter_map(|(index, (tool, raw))| {
            let verdict = examine_in(&tool.tool, Listing { siblings: Some(&names), others: None });
            (verdict.flagged() && !examine_in(raw, Listing { siblings: Some(&names), others: None }).flagged())
                .then_some((index, verdict))
        })
        .collect();
    if flagged.is_empty() {
        return;
    }
    let mut upstream: Vec<Option<Tool>> = upstream.into_iter().map(Some).collect();
    let mut taken: HashSet<String> = enhanced.iter().map(|tool| tool.tool.name.clone()).collect();
    let mut left_out = HashSet::new();
    for (index, verdict) in flagged {
        let Some(raw) = upstream[index].take() else { continue };
        let rewritten = &enhanced[index];
        taken.remove(&rewritten.tool.name);
        let shown = if taken.insert(raw.name.clone()) { "listed as the source published it" } else { "left out" };
        tracing::warn!(
            "`{}` lists `{}`, which `{}` rewrote into text suspected of poisoning; the rewrite is \
             undone, and the tool {shown}: {}",
            printable(source),
            printable(&raw.name),
            printable(&rewritten.enhanced_by),
            verdict.explanation(),
        );
        if shown == "left out" {
            left_out.insert(index);
        }
        enhanced[index] = EnhancedTool::unchanged(raw);
    }
    let mut index = 0;
    enhanced.retain(|_| {
        index += 1;
        !left_out.contains(&(index - 1))
    });
}

/// One source's tools screened without a second look ([`examine_source`], then [`apply`]).
pub fn screen(source: &str, tools: &mut Vec<Tool>, quarantine: bool, allowed: &[Allowed]) -> Screened {
    let screened = examine_source(tools, allowed);
    apply(source, tools, &screened.verdicts, quarantine);
    screened
}

#[cfg(test)]
mod tests;
