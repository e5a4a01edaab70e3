//! Trust on first use where the router receives a server's listing, before the session renames
//! anything: each server's tools are screened against the pins file by the server's key and the
//! server's own names ([`tool_mediator::pin::Pins::screen`]), a tool held back is told on stderr
//! once (the server, the tool, the command to review it), and a review's approval reaches the
//! running session: when the file changes, the last listing of each server is screened again and
//! the client is told its tools changed.

use std::collections::HashSet;

use super::*;
use tool_mediator::pin::{Hold, PinsFile, Stamp, Verdict, quoted_for_shell};
use tool_mediator::screen::printable;

/// How often a running session looks whether the pins file changed (a review approved a tool).
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Held tools remembered as told of, at most.
const MOST_TOLD: usize = 4096;

/// Trust on first use, as one router keeps it.
pub(super) struct Trust {
    file: Arc<PinsFile>,
    /// The file as last looked at: a change since is a review's, or another session's.
    seen: Mutex<Option<Stamp>>,
    /// The held tools already told of, by server, tool and digest: each is told once.
    told: Mutex<HashSet<(String, String, String)>>,
    /// How the command to review names the file: nothing for the user's own.
    review: String,
}

/// A server's listing as it came (once `include`, `exclude` and a lock had their say), before it
/// was screened against the pins, kept to screen it again when a review changes them; and which
/// of its tools were held back.
#[derive(Clone)]
pub(super) struct Screened {
    tools: Arc<Vec<Tool>>,
    held: Vec<bool>,
}

impl Trust {
    pub(super) fn new(file: Arc<PinsFile>) -> Trust {
        let review = match PinsFile::user_path() {
            Some(user) if user == file.path() => "tool-mediator review".to_owned(),
            _ => format!("tool-mediator review --pins-file {}", quoted_for_shell(&file.path().display().to_string())),
        };
        Trust { seen: Mutex::new(file.stamp()), file, told: Mutex::default(), review }
    }
}

impl Router {
    /// Looks whether the pins file changed, every [`LOOK_EVERY`], for as long as the router is
    /// in use.
    pub(super) fn watch_pins(router: &Arc<Router>) {
        if router.trust.is_none() {
            return;
        }
        let router = Arc::downgrade(router);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(LOOK_EVERY).await;
                let Some(router) = router.upgrade() else { return };
                router.notice_reviews().await;
            }
        });
    }

    /// Screens `tools`, server `link`'s listing, against the pins (under the file's lock, off
    /// the runtime's thread): the tools listed, and which were held back. What is held is told
    /// on stderr, once.
    pub(super) async fn screen_pins(
        &self,
        trust: &Trust,
        link: &Link,
        tools: Arc<Vec<Tool>>,
    ) -> Result<(Vec<Tool>, Screened), String> {
        let (file, server, listed) = (trust.file.clone(), link.pinned_as.clone(), tools.clone());
        let verdicts = tokio::task::spawn_blocking(move || file.change(|pins| pins.screen(&server, &listed)))
            .await
            .map_err(|error| format!("the pins could not be read: {error}"))?
            .map_err(|error| error.to_string())?;
        let mut admitted = Vec::with_capacity(tools.len());
        let mut held = Vec::with_capacity(tools.len());
        for (tool, verdict) in tools.iter().zip(&verdicts) {
            held.push(!verdict.admits());
            match verdict {
                Verdict::FirstUse | Verdict::Pinned => admitted.push(tool.clone()),
                Verdict::Held(hold) => self.tell_held(trust, link, tool, *hold),
            }
        }
        if verdicts.first() == Some(&Verdict::FirstUse) {
            tracing::info!(
                "{}",
                printable(&format!(
                    "first use of {}: its {} pinned in {}",
                    server_named(link),
                    tool_mediator::counted(verdicts.len(), "tool is", "tools are"),
                    trust.file.path().display()
                ))
            );
        }
        Ok((admitted, Screened { tools, held }))
    }

    /// Says on stderr, once per definition, that `tool` of `link` is held back, and how to
    /// review it.
    fn tell_held(&self, trust: &Trust, link: &Link, tool: &Tool, hold: Hold) {
        let told = (link.pinned_as.clone(), tool.name.clone(), tool_mediator::cache::digest(tool));
        {
            let mut already = lock(&trust.told);
            // Bounded: a server that changes its tools at every listing is told of again.
            if already.len() >= MOST_TOLD {
                already.clear();
            }
            if !already.insert(told) {
                return;
            }
        }
        let server = server_named(link);
        let key = quoted_for_shell(&format!("{}/{}", link.pinned_as, tool.name));
        let message = match hold {
            Hold::Changed => format!(
                "{server} changed `{}` since it was pinned: held back until you review it ({}, then --approve {key} \
                 or --reject {key})",
                tool.name, trust.review
            ),
            Hold::New => format!(
                "{server} lists `{}`, new since it was first seen: held back until you review it ({}, then \
                 --approve {key} or --reject {key})",
                tool.name, trust.review
            ),
            Hold::Rejected => format!("{server} lists `{}` as a review rejected it: held back", tool.name),
        };
        tracing::warn!("{}", printable(&message));
    }

    /// If the pins file changed since last looked at (a review approved or rejected a tool, or
    /// another session pinned one), screens each server's last listing again and, where what
    /// is held changed, hands the session the tools now listed: it tells the client.
    pub(super) async fn notice_reviews(self: &Arc<Self>) {
        let Some(trust) = &self.trust else { return };
        let now = trust.file.stamp();
        {
            let mut seen = lock(&trust.seen);
            if *seen == now {
                return;
            }
            *seen = now;
        }
        // A server that is down has its tools out of the list; its next listing is screened.
        for link in self.links.iter().filter(|link| link.is_up()) {
            // One listing at a time per server: this is one.
            let _listing = link.listing_gate.lock().await;
            let Some(before) = lock(&link.listing).as_ref().and_then(|listing| listing.screened.clone()) else {
                continue;
            };
            let (admitted, screened) = match self.screen_pins(trust, link, before.tools.clone()).await {
                Ok(screened) => screened,
                Err(reason) => {
                    self.warnings.warn("pins", || format!("cannot screen the tools of {} again: {reason}", link.label));
                    continue;
                }
            };
            if screened.held == before.held {
                continue;
            }
            if let Some(listing) = lock(&link.listing).as_mut() {
                listing.screened = Some(screened);
            }
            let context = ToolContext::new(link.source(self.source.as_ref()), SourceType::Api);
            self.session.take_in_from(link.index, &context, admitted).await;
        }
    }
}

/// How a warning names the server of `link`: its name, and what it is pinned under when that
/// is not its name (the proxy's one server).
fn server_named(link: &Link) -> String {
    if link.pinned_as == link.name {
        link.label.clone()
    } else {
        format!("{} (pinned as `{}`)", link.label, link.pinned_as)
    }
}
