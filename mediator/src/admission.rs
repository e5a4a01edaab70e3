//! Admission: what a source's listing must pass before a session takes any of it in, one step
//! for every host (the proxy, the gateway, the Node binding, a crate user), in this order:
//!
//! 1. the source's settings: only the tools it includes, none it excludes ([`ToolFilter`]);
//! 2. a lock (`tool-mediator pin`): a tool changed since it was pinned is hidden (or listed with
//!    a warning), a new one is reported;
//! 3. trust on first use (a pins file): each source's tools are pinned the first time they are
//!    seen, and a changed or new tool is held back until a review approves it; each held tool
//!    is told of once (the source, the tool, the command to review it).
//!
//! All of it by the source's own names, before the chain renames anything. The poisoning
//! screen and the judge follow, in the session, on what is admitted. A review's approval
//! reaches a running session: each listing remembers the pins file as it was screened against
//! ([`Screened`]); one screened before the file changed (a review, another session's first
//! use) is screened again ([`Admission::again`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use tool_mediator_core::Tool;
use tool_mediator_core::sync::lock;

use crate::pin::{Hold, Lock, PinsFile, Stamp, Standing, Verdict, quoted_for_shell};
use crate::screen::printable;

/// Held tools remembered as told of, at most.
const MOST_TOLD: usize = 4096;

/// Which of a source's tools its settings let through, by the source's names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    /// Only these; all when `None`.
    pub include: Option<HashSet<String>>,
    /// Never these.
    pub exclude: HashSet<String>,
}

impl ToolFilter {
    pub fn of(include: Option<Vec<String>>, exclude: Vec<String>) -> ToolFilter {
        ToolFilter { include: include.map(|names| names.into_iter().collect()), exclude: exclude.into_iter().collect() }
    }

    /// A filter that lets nothing through.
    pub fn nothing() -> ToolFilter {
        ToolFilter { include: Some(HashSet::new()), exclude: HashSet::new() }
    }

    pub fn admits(&self, tool: &Tool) -> bool {
        self.include.as_ref().is_none_or(|names| names.contains(&tool.name)) && !self.exclude.contains(&tool.name)
    }
}

/// Who a listing comes from, as admission knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Its name: a gateway's server's name in the servers file, what a lock of several sources
    /// keys its tools by (`<name>/<tool>`); empty for the proxy's one server.
    pub name: String,
    /// What trust on first use pins its tools under.
    pub pinned_as: String,
    /// How messages name it ("the MCP server `github`", "the page example.com").
    pub label: String,
    pub filter: ToolFilter,
}

impl Source {
    /// A source known by one name (a page's origin, a manifest's source), every tool through.
    pub fn named(name: &str) -> Source {
        Source {
            name: name.to_owned(),
            pinned_as: name.to_owned(),
            label: format!("the source `{name}`"),
            filter: ToolFilter::default(),
        }
    }

    /// How a warning names it: its label, and what it is pinned under when that is not its
    /// name (the proxy's one server).
    fn in_messages(&self) -> String {
        if self.pinned_as == self.name {
            self.label.clone()
        } else {
            format!("{} (pinned as `{}`)", self.label, self.pinned_as)
        }
    }
}

/// What the pins file says of a listing, kept to screen it again when a review changes them:
/// the tools as they came to the pins (past the filter and the lock), which were held, and the
/// file as it was then.
#[derive(Debug, Clone)]
pub struct Screened {
    tools: Arc<Vec<Tool>>,
    held: Vec<bool>,
    pub(crate) stamp: Option<Stamp>,
}

/// A listing as admitted: the tools a session may take in, and, with trust on first use, what
/// the pins said of it.
#[derive(Debug)]
pub struct Admitted {
    pub tools: Vec<Tool>,
    pub screened: Option<Screened>,
}

/// The pins file could not be read or written: nothing of the listing is admitted.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct AdmissionError(String);

/// The pin lock and trust on first use, as one host keeps them. The default admits every tool
/// its source's filter lets through.
#[derive(Default)]
pub struct Admission {
    lock: Option<(Arc<Lock>, bool)>,
    trust: Option<Trust>,
}

/// Trust on first use, and what it told.
struct Trust {
    file: Arc<PinsFile>,
    /// The held tools already told of, by source, tool and digest: each is told once.
    told: Mutex<HashSet<(String, String, String)>>,
    /// How the command to review names the file: nothing for the user's own.
    review: String,
}

impl Admission {
    /// Holds every listing against `lock`: a tool changed since it was pinned is left out when
    /// `hide_changed`, else listed with a warning.
    pub fn with_lock(mut self, lock: Arc<Lock>, hide_changed: bool) -> Admission {
        self.lock = Some((lock, hide_changed));
        self
    }

    /// Trust on first use, its pins in `file`.
    pub fn with_pins(mut self, file: Arc<PinsFile>) -> Admission {
        let review = match PinsFile::user_path() {
            Some(user) if user == file.path() => "tool-mediator review".to_owned(),
            _ => format!("tool-mediator review --pins-file {}", quoted_for_shell(&file.path().display().to_string())),
        };
        self.trust = Some(Trust { file, told: Mutex::default(), review });
        self
    }

    /// Whether a tool may be held back: then no call passes before its source is listed.
    pub fn holds_back(&self) -> bool {
        self.lock.is_some() || self.trust.is_some()
    }

    /// Whether trust on first use is on.
    pub fn has_pins(&self) -> bool {
        self.trust.is_some()
    }

    /// `tools`, `source`'s listing, as a session may take it in. Trust on first use reads and
    /// writes the pins file (under its lock, off the runtime's thread).
    pub async fn admit(&self, source: &Source, mut tools: Vec<Tool>) -> Result<Admitted, AdmissionError> {
        tools.retain(|tool| source.filter.admits(tool));
        if let Some((lock, hide_changed)) = &self.lock {
            tools.retain(|tool| match lock.standing_of(Some(&source.name), tool) {
                Standing::Pinned => true,
                Standing::New => {
                    let message = format!("{} lists `{}`, which is new since the lock", source.label, tool.name);
                    tracing::warn!("{}", printable(&message));
                    true
                }
                Standing::Changed => {
                    let action = if *hide_changed { "hidden until the lock is updated" } else { "listed" };
                    let message = format!("{} changed `{}` since it was pinned; {action}", source.label, tool.name);
                    tracing::warn!("{}", printable(&message));
                    !hide_changed
                }
            });
        }
        let Some(trust) = &self.trust else { return Ok(Admitted { tools, screened: None }) };
        let (tools, screened) = self.screen_pins(trust, source, Arc::new(tools)).await?;
        Ok(Admitted { tools, screened: Some(screened) })
    }

    /// The pins file as it is now: a listing [`Screened`] against it as it was before (a
    /// review approved or rejected a tool since, or another session pinned one) is screened
    /// again. `None` without trust on first use, or no file yet.
    pub fn pins_now(&self) -> Option<Stamp> {
        self.trust.as_ref().and_then(|trust| trust.file.stamp())
    }

    /// `before`, `source`'s listing as last admitted, screened against the pins as they are
    /// now; and whether what is held changed (then the session takes it in again).
    pub async fn again(&self, source: &Source, before: &Screened) -> Result<(Admitted, bool), AdmissionError> {
        let Some(trust) = &self.trust else {
            return Ok((Admitted { tools: before.tools.to_vec(), screened: Some(before.clone()) }, false));
        };
        let (tools, screened) = self.screen_pins(trust, source, before.tools.clone()).await?;
        let changed = screened.held != before.held;
        Ok((Admitted { tools, screened: Some(screened) }, changed))
    }

    /// Screens `tools` against the pins: the tools admitted, and which were held back. What is
    /// held is told once.
    async fn screen_pins(
        &self,
        trust: &Trust,
        source: &Source,
        tools: Arc<Vec<Tool>>,
    ) -> Result<(Vec<Tool>, Screened), AdmissionError> {
        let (file, pinned_as, listed) = (trust.file.clone(), source.pinned_as.clone(), tools.clone());
        let (verdicts, stamp) =
            tokio::task::spawn_blocking(move || file.change_seen(|pins| pins.screen(&pinned_as, &listed)))
                .await
                .map_err(|error| AdmissionError(format!("the pins could not be read: {error}")))?
                .map_err(|error| AdmissionError(error.to_string()))?;
        let mut admitted = Vec::with_capacity(tools.len());
        let mut held = Vec::with_capacity(tools.len());
        for (tool, verdict) in tools.iter().zip(&verdicts) {
            held.push(!verdict.admits());
            match verdict {
                Verdict::FirstUse | Verdict::Pinned => admitted.push(tool.clone()),
                Verdict::Held(hold) => trust.tell_held(source, tool, *hold),
            }
        }
        if verdicts.first() == Some(&Verdict::FirstUse) {
            let message = format!(
                "first use of {}: its {} pinned in {}",
                source.in_messages(),
                tool_mediator_core::counted(verdicts.len(), "tool is", "tools are"),
                trust.file.path().display()
            );
            tracing::info!("{}", printable(&message));
        }
        Ok((admitted, Screened { tools, held, stamp }))
    }
}

impl Screened {
    /// The same, as if screened against the pins file as it is `now`: not screened again until
    /// the file changes again (one that cannot be read is warned of once per change).
    pub(crate) fn seen_at(mut self, now: Option<Stamp>) -> Screened {
        self.stamp = now;
        self
    }
}

impl Trust {
    /// Warns, once per definition, that `tool` of `source` is held back, and how to review it.
    fn tell_held(&self, source: &Source, tool: &Tool, hold: Hold) {
        let told = (source.pinned_as.clone(), tool.name.clone(), crate::cache::digest(tool));
        {
            let mut already = lock(&self.told);
            // Bounded: a source that changes its tools at every listing is told of again.
            if already.len() >= MOST_TOLD {
                already.clear();
            }
            if !already.insert(told) {
                return;
            }
        }
        let named = source.in_messages();
        let key = quoted_for_shell(&format!("{}/{}", source.pinned_as, tool.name));
        let message = match hold {
            Hold::Changed => format!(
                "{named} changed `{}` since it was pinned: held back until you review it ({}, then --approve {key} \
                 or --reject {key})",
                tool.name, self.review
            ),
            Hold::New => format!(
                "{named} lists `{}`, new since it was first seen: held back until you review it ({}, then \
                 --approve {key} or --reject {key})",
                tool.name, self.review
            ),
            Hold::Rejected => format!("{named} lists `{}` as a review rejected it: held back", tool.name),
        };
        tracing::warn!("{}", printable(&message));
    }
}
