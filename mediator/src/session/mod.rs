//! The transport hook: what one connected client sees now, and where each of its calls goes.
//!
//! A transport (a browser bridge, an MCP server, a gateway, the proxy) hands a [`Session`] the
//! upstream tools and asks [`Session::list_tools`] what to show; it hands it each call and asks
//! [`Session::route_call`] where it goes. With the default [`SessionPolicy`] the session is a
//! passthrough: the same tools in the same order. Beyond that, four mechanisms decide what the
//! model sees, all in one tool set:
//!
//! - progressive disclosure: categories of at least `disclosure` tools fold into one category
//!   tool each (`<category>_tools`); calling it lists the category's tools with their schemas
//!   and makes them visible and callable by name (even if the client never lists again);
//! - groups: a tool may belong to a group, shown only while the group is active; each group has
//!   an activator (`<group>.activate`) and a deactivator; children need their parent active,
//!   exclusion sets switch each other off, hooks run first and can refuse;
//! - state: a tool may depend on the host's [`StateView`]; by default it stays listed with
//!   `_meta` hints ([`StateStrategy::Annotate`]), or it is shown only while actionable
//!   ([`StateStrategy::Hide`], changes debounced);
//! - provenance under `_meta` for tools a transformer changed.
//!
//! A tool the client cannot see answers exactly as an unknown tool does. The session emits a
//! [`ListChanged`] event only when the visible set actually changes. Hooks and predicates run
//! while the session holds its locks: they must not call back into the session.

mod admitted;
mod cursor;
mod disclosure;
mod earlier;
mod groups;
mod search;
mod sources;
mod state;
mod view;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use crate::admission::{Admission, AdmissionError, Admitted, Source};
use crate::chain::Mediator;
use crate::screen;
use tool_mediator_core::{EnhancedTool, Tool, ToolContext};

pub use disclosure::{DisclosureMode, WHOLE_BELOW, category_tool_name};
pub use groups::{GroupConfig, GroupError, GroupHook, GroupInfo, Switch, switch_name};
pub use state::{EnumFilter, Predicate, STATE_KEY, StateStrategy, StateView, Visibility};

use cursor::{decode, encode_cursor};
use groups::Groups;
use view::{Derived, Listed, Local};

/// What the session does beyond passing tools through. The default does nothing: same tools,
/// same order.
#[derive(Debug, Clone)]
pub struct SessionPolicy {
    /// Fold categories of at least this many tools into one category tool each.
    pub disclosure: Option<usize>,
    /// List tools sorted by name (stable pages for clients that paginate).
    pub sort_by_name: bool,
    /// Put provenance under `_meta` for tools a transformer changed.
    pub provenance: bool,
    /// Tools per `tools/list` page; `None` answers in one page.
    pub page_size: Option<usize>,
    pub groups: Vec<GroupConfig>,
    /// Sets of groups of which at most one is active.
    pub exclusions: Vec<Vec<String>>,
    /// By exposed or original tool name; tools not named here are always visible.
    pub visibility: HashMap<String, Visibility>,
    pub state_strategy: StateStrategy,
    /// Enum values that follow the state; used only with [`StateStrategy::Hide`].
    pub enum_filters: Vec<EnumFilter>,
    /// With several sources, prefix every tool's name with its source's (`<source>_<name>`);
    /// otherwise only the names two sources share are.
    pub prefix: bool,
    /// List a `search_tools` tool that finds tools by what they do; what it finds is listed
    /// and callable from then on. Without categories (`disclosure: None`), only what was found
    /// and the tools always visible are listed.
    pub search: bool,
    /// Fewer visible tools than this are listed whole: no category folded, no search (0: never).
    pub whole_below: usize,
    /// How much of a query the best tool `search_tools` finds must match (0 to 1,
    /// [`crate::search::MATCH_THRESHOLD`] unless set): below it, unless the embedding model
    /// vouches for a tool, the answer is that no tool matches.
    pub search_threshold: f32,
    /// The embedding model `search_tools` also ranks by, by what tools mean (see
    /// [`crate::search::meaning`]); `None` ranks by words alone.
    pub embedder: Option<Arc<crate::search::meaning::Embedder>>,
    /// Answer a call to a tool the client may see but that is folded away (in a category tool
    /// not expanded, or not found by search yet) with an error saying how to see it, instead of
    /// calling it. Off by default: a client that calls a tool by its name knows it (an agent, a
    /// saved prompt, an allowlist), and a tool that does not exist or is hidden is unknown
    /// either way.
    pub calls_follow_disclosure: bool,
    /// Leave out the tools the screen flags as poisoned ([`crate::screen`]), with several
    /// sources counting text that names another source's tool (shadowing) as evidence. Without
    /// it such a tool is listed, and a warning logged.
    pub quarantine: bool,
    /// Tools the user reviewed and allows despite the screen, by name and digest.
    pub allowed: Vec<screen::Allowed>,
}

impl Default for SessionPolicy {
    fn default() -> Self {
        SessionPolicy {
            disclosure: None,
            sort_by_name: false,
            provenance: false,
            page_size: None,
            groups: Vec::new(),
            exclusions: Vec::new(),
            visibility: HashMap::new(),
            state_strategy: StateStrategy::Annotate,
            enum_filters: Vec::new(),
            prefix: false,
            search: false,
            whole_below: 0,
            search_threshold: crate::search::MATCH_THRESHOLD,
            embedder: None,
            calls_follow_disclosure: false,
            quarantine: false,
            allowed: Vec::new(),
        }
    }
}

impl SessionPolicy {
    /// Disclosure from `threshold` tools a category, name order, provenance, pages of 100.
    pub fn mediated(threshold: usize) -> Self {
        SessionPolicy {
            disclosure: Some(threshold.max(2)),
            sort_by_name: true,
            provenance: true,
            page_size: Some(100),
            ..SessionPolicy::default()
        }
    }
}

/// One page of `tools/list`: the tools as the client sees them. Only a page is ever written
/// out; the session keeps the enhanced tools once.
#[derive(Debug, Clone, PartialEq)]
pub struct ListPage {
    tools: Vec<Tool>,
    /// Opaque; pass it back to get the next page.
    pub next_cursor: Option<String>,
}

impl ListPage {
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    pub fn into_tools(self) -> Vec<Tool> {
        self.tools
    }
}

/// Where a call goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// The session answered it (a category tool, a group switch): an MCP `CallToolResult`.
    Local(Value),
    /// Send it upstream to source number `source` (0 in a session of one), under the source's
    /// name, with arguments in the source's names.
    Upstream { source: usize, name: String, arguments: Map<String, Value> },
    /// No such tool for this client now: answer as for an unknown tool.
    NotFound,
}

/// The visible tool list changed; the transport tells the client
/// (`notifications/tools/list_changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListChanged;

/// A cursor this session did not hand out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cursor `{0}`")]
pub struct InvalidCursor(pub String);

#[derive(Default)]
struct State {
    /// The last upstream list given to [`Session::list_tools`], to skip enhancing it again when
    /// it has not changed. [`Session::take_in`] keeps none: its caller knows what changed.
    upstream: Option<Vec<Tool>>,
    /// What the chain did when `upstream` was taken in, when it can change: a list taken in
    /// before the override directories were read again is taken in again.
    chain: Option<crate::chain::ChainVersion>,
    /// Every source's last list, enhanced, merged (names made unique across sources); `None`
    /// before the first listing.
    tools: Option<Vec<EnhancedTool>>,
    /// The source of each tool in `tools`.
    owners: Vec<usize>,
    /// Each source's last list, enhanced, as the chain named its tools; kept only in a session
    /// of several sources (in a session of one it is `tools`).
    sources: Vec<sources::Part>,
    /// What the client sees, worked out once per change of anything above or below.
    derived: Option<Arc<Derived>>,
    expanded: BTreeSet<String>,
    /// Tools `search_tools` found, by exposed name: listed and callable from then on.
    found: BTreeSet<String>,
    /// Category -> the shelf its tools fold on (see `disclosure::shelves`), for the tools of
    /// `tools` the client may see now; worked out with `derived`.
    shelves: HashMap<String, String>,
    /// The search index of `tools`, built on the first search after they changed.
    index: Option<Arc<crate::search::ToolIndex>>,
    /// `tools` as the embedding model reads them, when there is one: begun in the background
    /// as soon as they change.
    reading: Option<Arc<crate::search::meaning::Reading>>,
    groups: Groups,
    view: StateView,
    /// What the client was last shown, to tell real changes from no-ops.
    visible: Option<Vec<String>>,
    /// Bumped at every real change of the listing; cursors carry it.
    generation: u64,
    /// Names the tools had before they were renamed, still callable.
    earlier: earlier::EarlierNames,
    /// The order the sources' listings came in, and what the pins said of each.
    admissions: admitted::Admissions,
}

/// One connected client's view of the tools. Every name it emits (enhanced tools, category
/// tools, group switches) follows the mediator's [`NameRules`](crate::NameRules): build the
/// mediator with the client's profile.
pub struct Session {
    mediator: Arc<Mediator>,
    context: ToolContext,
    /// The sources' names, in order: what a name two of them share is prefixed with.
    source_names: Vec<String>,
    policy: SessionPolicy,
    /// What every listing passes before it is taken in.
    admission: Admission,
    state: Mutex<State>,
    /// Serializes group switches, hooks included, so concurrent calls leave a consistent state.
    switching: tokio::sync::Mutex<()>,
    debounce_pending: AtomicBool,
    events: broadcast::Sender<ListChanged>,
}

impl Session {
    pub fn new(mediator: Arc<Mediator>, context: ToolContext, policy: SessionPolicy) -> Self {
        let name = context.source.clone();
        Session::of_sources(mediator, context, vec![name], policy)
    }

    /// A session over several sources (a gateway's servers), named in order: their tools are
    /// listed as one set, a name two of them share (or, with [`SessionPolicy::prefix`], every
    /// name) prefixed with its source's name, and each call routed to the source of its tool.
    /// Each source's tools come with [`Session::take_in_from`]; `context` is only the default
    /// for [`Session::take_in`] and [`Session::list_tools`], which take in source 0.
    pub fn of_sources(
        mediator: Arc<Mediator>,
        context: ToolContext,
        source_names: Vec<String>,
        policy: SessionPolicy,
    ) -> Self {
        let (events, _) = broadcast::channel(16);
        let groups = Groups::new(policy.groups.clone(), policy.exclusions.clone());
        let sources = vec![sources::Part::default(); source_names.len().max(1)];
        Session {
            mediator,
            context,
            source_names,
            state: Mutex::new(State { groups, sources, ..State::default() }),
            policy,
            admission: Admission::default(),
            switching: tokio::sync::Mutex::new(()),
            debounce_pending: AtomicBool::new(false),
            events,
        }
    }

    /// Every listing passes `admission` (a pin lock, trust on first use) before the session
    /// takes it in; a call passes only to a tool listed.
    pub fn with_admission(mut self, admission: Admission) -> Self {
        self.admission = admission;
        self
    }

    /// A passthrough session: no transformers, no policy.
    pub fn passthrough(context: ToolContext) -> Self {
        Session::new(Arc::new(Mediator::builder().build()), context, SessionPolicy::default())
    }

    /// Events for the transport to turn into `notifications/tools/list_changed`. Fired only
    /// when the visible set changes.
    pub fn subscribe(&self) -> broadcast::Receiver<ListChanged> {
        self.events.subscribe()
    }

    /// Counts the real changes of what the client sees: each [`ListChanged`] follows a new
    /// generation, so a transport that reads the events late can tell one it already announced
    /// (the session is at the generation it announced then) from a newer change.
    pub fn generation(&self) -> u64 {
        self.state().generation
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        tool_mediator_core::sync::lock(&self.state)
    }

    /// What the client sees: `upstream` enhanced, hidden tools left out, categories folded,
    /// group switches added, sorted and paginated as the policy says. The list is enhanced
    /// again only when it differs from the one given last; [`Session::take_in`] and
    /// [`Session::page`] are the same in two steps, for a transport that knows when its list
    /// changed and would rather not keep a copy of it.
    pub async fn list_tools(&self, upstream: &[Tool], cursor: Option<&str>) -> Result<ListPage, InvalidCursor> {
        let position = decode(cursor)?;
        // A review since the last look is seen by the listing that follows it.
        if cursor.is_none() {
            self.notice_reviews().await;
        }
        let taken = {
            let state = self.state();
            state.upstream.as_deref() == Some(upstream) && state.chain == self.mediator.version()
        };
        if !taken {
            self.take_in_keeping(upstream.to_vec(), Some(upstream.to_vec())).await;
        }
        self.page_at(position, cursor)
    }

    /// Takes the list last given to [`Session::list_tools`] in again each time the chain
    /// changes (its override directories were read again), for as long as the session is in
    /// use; the client is told if what it sees changed. Returns at once for a chain that
    /// cannot change.
    pub async fn follow_chain(session: &Arc<Session>) {
        let Some(mut changes) = session.mediator.changes() else { return };
        let session = Arc::downgrade(session);
        while changes.changed().await {
            let Some(session) = session.upgrade() else { return };
            let kept = session.state().upstream.clone();
            if let Some(upstream) = kept {
                session.take_in_keeping(upstream.clone(), Some(upstream)).await;
            }
        }
    }

    /// Takes in a new upstream list: enhances it and works out what the client sees; the
    /// client is told if that changed.
    pub async fn take_in(&self, upstream: Vec<Tool>) {
        self.take_in_keeping(upstream, None).await;
    }

    /// Takes in a list the caller enhanced itself ([`Mediator::enhance`] with this session's
    /// context): for a front door that shows one list under several policies and enhances it
    /// once (`tokens`). It passes no admission: a host whose sessions hold tools back takes its
    /// lists in with the methods that do.
    pub fn take_in_enhanced(&self, enhanced: Vec<EnhancedTool>) {
        self.settle(0, Some(Taken { tools: enhanced, ..Taken::nothing() }), None);
    }

    /// Takes in source number `source`'s new list, enhanced with `context` (its overrides):
    /// the client sees what the admission lets through merged with the other sources' lists,
    /// and is told if that changed. The source is known to the admission by the context's
    /// name; one the pins file cannot screen (it cannot be read) lists nothing, with a warning.
    pub async fn take_in_from(&self, source: usize, context: &ToolContext, upstream: Vec<Tool>) {
        let from = Source::named(&context.source);
        let number = self.state().admissions.start(source);
        match self.admission.admit(&from, upstream).await {
            Ok(admitted) => {
                self.take_in_admitted(source, number, &from, context, admitted, None).await;
            }
            Err(error) => {
                tracing::warn!("{error}: nothing of {} is listed", from.label);
                self.settle_listing(source, number, Taken::nothing(), None);
            }
        }
    }

    /// [`Session::take_in_from`] for a host that names its sources to the admission itself (a
    /// gateway's servers: their names, what they are pinned under, their include and exclude):
    /// whether the listing was taken in. A listing of the same source started later wins (this
    /// one is not taken in), as does the source's going ([`Session::forget`]). A pins file that
    /// cannot be read is the error, and nothing of the listing is taken in: what the source
    /// listed before stands.
    pub async fn take_in_listing(
        &self,
        index: usize,
        from: &Source,
        context: &ToolContext,
        upstream: Vec<Tool>,
    ) -> Result<bool, AdmissionError> {
        let number = self.state().admissions.start(index);
        match self.admission.admit(from, upstream).await {
            Ok(admitted) => Ok(self.take_in_admitted(index, number, from, context, admitted, None).await),
            Err(error) => {
                self.state().admissions.abandon(index, number);
                Err(error)
            }
        }
    }

    /// Source number `source` is gone (its server died): its tools leave the list until it is
    /// taken in again, and the client is told. The names of the other sources' tools stay as
    /// they were meanwhile.
    pub fn forget(&self, source: usize) {
        self.state().admissions.forget(source);
        self.settle(source, None, None);
    }

    /// [`Session::take_in`], keeping `kept` as the list given last, under the same lock.
    async fn take_in_keeping(&self, upstream: Vec<Tool>, kept: Option<Vec<Tool>>) {
        // Read before the chain runs: a change while it does is taken in next time.
        let chain = kept.as_ref().and_then(|_| self.mediator.version());
        let number = self.state().admissions.start(0);
        let from = Source::named(&self.context.source);
        let (admitted, kept) = match self.admission.admit(&from, upstream).await {
            Ok(admitted) => (admitted, kept),
            Err(error) => {
                // Nothing is admitted, and the same list given again is screened again.
                tracing::warn!("{error}: nothing of {} is listed", from.label);
                (Admitted { tools: Vec::new(), screened: None }, None)
            }
        };
        if self.take_in_admitted(0, number, &from, &self.context, admitted, kept).await {
            self.state().chain = chain;
        }
    }

    /// Takes in `admitted`, listing `number` of source `index`, unless a later listing of it
    /// started meanwhile: whether it was.
    async fn take_in_admitted(
        &self,
        index: usize,
        number: u64,
        from: &Source,
        context: &ToolContext,
        admitted: Admitted,
        kept: Option<Vec<Tool>>,
    ) -> bool {
        if let Some(screened) = admitted.screened {
            let mut state = self.state();
            if !state.admissions.is_latest(index, number) {
                return false;
            }
            state.admissions.keep(index, number, from, context, screened);
        }
        let enhanced = self.screened_and_enhanced(admitted.tools, context).await;
        self.settle_listing(index, number, enhanced, kept)
    }

    /// Screens each source's last listing against the pins again if the pins file changed
    /// since (a review approved or rejected a tool, or another session pinned one), and takes
    /// in those of which what is held changed: the client is told.
    pub async fn notice_reviews(&self) {
        if !self.admission.has_pins() {
            return;
        }
        let now = self.admission.pins_now();
        let kept = self.state().admissions.kept();
        for (index, kept) in kept.into_iter().filter(|(_, kept)| kept.screened.stamp != now) {
            match self.admission.again(&kept.source, &kept.screened).await {
                Ok((admitted, true)) => {
                    // A listing of the source that started since is newer than what was
                    // screened: it is screened again itself if it read the pins before they
                    // changed.
                    let Some(number) = self.state().admissions.start_again(index, &kept) else { continue };
                    let upstream = (index == 0).then(|| self.state().upstream.clone()).flatten();
                    self.take_in_admitted(index, number, &kept.source, &kept.context, admitted, upstream).await;
                }
                Ok((Admitted { screened: Some(screened), .. }, false)) => {
                    self.state().admissions.renew(index, &kept, screened);
                }
                Ok((Admitted { screened: None, .. }, false)) => {}
                Err(error) => {
                    tracing::warn!("cannot screen the tools of {} again: {error}", kept.source.label);
                    self.state().admissions.renew(index, &kept, kept.screened.clone().seen_at(now));
                }
            }
        }
    }

    /// Notices reviews ([`Session::notice_reviews`]) every second for as long as the session is
    /// in use (it holds no reference of its own). Returns at once for a session without trust
    /// on first use.
    pub async fn follow_reviews(session: std::sync::Weak<Session>) {
        if !session.upgrade().is_some_and(|session| session.admission.has_pins()) {
            return;
        }
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            let Some(session) = session.upgrade() else { return };
            session.notice_reviews().await;
        }
    }

    /// What every list taken in goes through: the screen (with a language model's second look
    /// at the tools it is unsure of, when the chain has a judge; suspects reported, and with a
    /// quarantine left out), then the chain with `context`, then the screen again on what the
    /// chain rewrote (a flagged rewrite is undone).
    async fn screened_and_enhanced(&self, mut upstream: Vec<Tool>, context: &ToolContext) -> Taken {
        let mut screened = screen::examine_source(&upstream, &self.policy.allowed);
        if let Some(judge) = self.mediator.judge() {
            screen::second_look(judge, &context.source, &upstream, &mut screened).await;
        }
        // Behind a gateway, what the screen found is kept for when the servers meet.
        let screenings = match self.source_names.len() > 1 {
            true => upstream
                .iter()
                .zip(&screened.verdicts)
                .filter(|(tool, _)| !screened.reviewed.contains(&tool.name))
                .map(|(tool, verdict)| (tool.name.clone(), screen::Screening::of(tool, verdict.clone())))
                .collect(),
            false => HashMap::new(),
        };
        screen::apply(&context.source, &mut upstream, &screened.verdicts, self.policy.quarantine);
        // And each tool as the client will see it, after the whole chain.
        let mut tools = self.mediator.enhance(upstream.clone(), context).await;
        screen::undo_flagged_rewrites(&context.source, upstream, &mut tools);
        Taken { tools, reviewed: screened.reviewed, screenings }
    }

    /// [`Session::settle`] listing `number` of source `index`, unless a later one started:
    /// whether it was.
    fn settle_listing(&self, index: usize, number: u64, taken: Taken, kept: Option<Vec<Tool>>) -> bool {
        let mut state = self.state();
        if !state.admissions.is_latest(index, number) {
            return false;
        }
        let changed = self.settle_in(&mut state, index, Some(taken), kept);
        drop(state);
        self.announce(changed);
        true
    }

    /// Puts `taken` in as source `source`'s tools and works out what the client sees.
    fn settle(&self, source: usize, taken: Option<Taken>, kept: Option<Vec<Tool>>) {
        let changed = self.settle_in(&mut self.state(), source, taken, kept);
        self.announce(changed);
    }

    /// [`Session::settle`] under the state's lock: whether what the client sees changed.
    fn settle_in(&self, state: &mut State, source: usize, taken: Option<Taken>, kept: Option<Vec<Tool>>) -> bool {
        let (enhanced, reviewed, screenings) = match taken {
            Some(Taken { tools, reviewed, screenings }) => (Some(tools), reviewed, screenings),
            None => (None, HashSet::new(), HashMap::new()),
        };
        state.upstream = kept;
        let before = earlier::names_of(state.tools.as_deref(), &state.owners);
        // The search tool's name is the session's own: no server takes it.
        let reserved: &[&str] = if self.policy.search { &[search::SEARCH_TOOL] } else { &[] };
        if self.source_names.len() <= 1 {
            let mut enhanced = enhanced;
            if let Some(tools) = enhanced.as_mut() {
                sources::keep_reserved(tools, reserved, self.mediator.name_rules());
            }
            state.owners = vec![0; enhanced.as_ref().map_or(0, Vec::len)];
            state.tools = enhanced;
        } else {
            if let Some(part) = state.sources.get_mut(source) {
                part.down = enhanced.is_none();
                if enhanced.is_some() {
                    part.tools = enhanced;
                    part.reviewed = reviewed;
                    part.screenings = screenings;
                }
            }
            let (tools, owners) = sources::merge(
                &state.sources,
                &self.source_names,
                self.policy.prefix,
                self.policy.quarantine,
                reserved,
                self.mediator.name_rules(),
            );
            state.tools = Some(tools);
            state.owners = owners;
        }
        let State { earlier, tools, owners, sources, .. } = &mut *state;
        earlier.note(before, tools.as_deref(), owners, sources);
        state.derived = None;
        state.index = None;
        state.reading = None;
        if self.policy.search
            && let Some(embedder) = &self.policy.embedder
        {
            self.reading(state, embedder).begin(embedder);
        }
        self.view_now(state).1
    }

    /// One page of what the client sees now, from the start or from `cursor`.
    pub fn page(&self, cursor: Option<&str>) -> Result<ListPage, InvalidCursor> {
        self.page_at(decode(cursor)?, cursor)
    }

    fn page_at(&self, position: Option<(u64, usize)>, cursor: Option<&str>) -> Result<ListPage, InvalidCursor> {
        let invalid = || InvalidCursor(cursor.unwrap_or_default().to_owned());
        let (changed, page) = {
            let mut state = self.state();
            let (derived, changed) = self.view_now(&mut state);
            let offset = match position {
                None => 0,
                // A cursor from before the listing changed would skip or repeat tools.
                Some((from, offset)) if from == state.generation => offset,
                Some(_) => return Err(invalid()),
            };
            let listed = &derived.listed;
            if offset > listed.len() {
                return Err(invalid());
            }
            let page_size = self.policy.page_size.unwrap_or(usize::MAX).max(1);
            let end = offset.saturating_add(page_size).min(listed.len());
            let tools = state.tools.as_deref().unwrap_or_default();
            let page = listed[offset..end]
                .iter()
                .map(|entry| match entry {
                    Listed::Enhanced(index) => self.listed_tool(&state, &derived, tools, *index),
                    Listed::Local(tool) => Tool::clone(tool),
                })
                .collect();
            let next_cursor = (end < listed.len()).then(|| encode_cursor(state.generation, end));
            (changed, ListPage { tools: page, next_cursor })
        };
        self.announce(changed);
        Ok(page)
    }

    /// The derived view, and whether what the client sees changed since it was last noted.
    /// Compared and recorded under the same lock, so events cannot cross.
    fn view_now(&self, state: &mut State) -> (Arc<Derived>, bool) {
        let derived = self.derived(state);
        if state.tools.is_none() {
            return (derived, false);
        }
        let changed = match &state.visible {
            Some(before) => *before != derived.signature,
            None => false,
        };
        if changed || state.visible.is_none() {
            state.visible = Some(derived.signature.clone());
        }
        if changed {
            state.generation += 1;
        }
        (derived, changed)
    }

    fn announce(&self, changed: bool) {
        if changed {
            // No subscriber is not an error: the transport may not listen.
            let _ = self.events.send(ListChanged);
        }
    }

    /// Whether the session changes nothing: then a call before the first listing can go
    /// upstream as it is. A session that searches answers `search_tools` itself, and one that
    /// quarantines (or may hold a tool back) must see a tool before it lets a call through.
    fn is_passthrough(&self) -> bool {
        self.mediator.transformers().next().is_none()
            && self.source_names.len() <= 1
            && self.policy.disclosure.is_none()
            && !self.policy.search
            && !self.policy.quarantine
            && !self.admission.holds_back()
            && self.policy.groups.is_empty()
            && self.policy.visibility.is_empty()
            && self.policy.enum_filters.is_empty()
    }

    /// Whether the session holds a tool list (taken in or listed) to route calls by. Before it
    /// does, a passthrough session sends every call upstream as it is.
    pub fn has_list(&self) -> bool {
        self.state().tools.is_some()
    }

    /// Where the call `name(arguments)` goes. Category tools and group switches are answered
    /// here; a tool the client cannot see now is [`Route::NotFound`].
    pub async fn route_call(&self, name: &str, arguments: Map<String, Value>) -> Route {
        let local = {
            let mut state = self.state();
            if state.tools.is_none() && self.is_passthrough() {
                // Nothing listed yet, and nothing to change: the source decides.
                return Route::Upstream { source: 0, name: name.to_owned(), arguments };
            }
            let derived = self.derived(&mut state);
            match derived.locals.get(name) {
                Some(local) => local.clone(),
                None => {
                    let tools = state.tools.as_deref().unwrap_or_default();
                    // A tool folded away is still called by its name (the call shows the model
                    // knows it), unless calls must follow disclosure: then it is told how to see it.
                    // A name from an earlier listing reaches the tool it was shown for, if the
                    // client may call that tool under its name now.
                    let reached = match derived.callable.contains_key(name) || derived.folded.contains_key(name) {
                        true => None,
                        false => state.earlier.reach(name, tools, &state.owners, &state.sources),
                    };
                    let now = reached.as_ref().map_or(name, |reached| tools[reached.index].name());
                    let index = match (derived.callable.get(now), derived.folded.get(now)) {
                        (Some(&index), _) => index,
                        (None, Some(&index)) if !self.policy.calls_follow_disclosure => index,
                        (None, Some(&index)) => {
                            return Route::Local(text_result(self.how_to_see(&state, &derived, &tools[index]), true));
                        }
                        (None, None) => return Route::NotFound,
                    };
                    if reached.as_ref().is_some_and(|reached| reached.index != index) {
                        // Another tool of the same name is the one callable under it.
                        return Route::NotFound;
                    }
                    let tool = &tools[index];
                    for (parameter, allowed) in self.filtered_enums(&state, tool) {
                        if let Some(value) = arguments.get(&parameter)
                            && !allowed.contains(value)
                        {
                            return Route::Local(text_result(
                                format!(
                                    "`{parameter}` = {value} is not available now; available: {}",
                                    Value::Array(allowed)
                                ),
                                true,
                            ));
                        }
                    }
                    let arguments = match &reached {
                        Some(reached) => reached.original_arguments(arguments),
                        None => tool.original_arguments(arguments),
                    };
                    return Route::Upstream {
                        source: state.owners.get(index).copied().unwrap_or_default(),
                        name: tool.original_name.clone(),
                        arguments,
                    };
                }
            }
        };
        match local {
            Local::Category(category) => {
                let (result, changed) = {
                    let mut state = self.state();
                    let members: Vec<&EnhancedTool> = state
                        .tools
                        .iter()
                        .flatten()
                        .filter(|tool| self.is_visible(&state, tool) && self.shelf(&state, tool) == category)
                        .collect();
                    let listed = members.into_iter().map(|tool| self.as_listed(&state, tool));
                    let result = disclosure::expansion_result(&category, listed);
                    state.expanded.insert(category);
                    state.derived = None;
                    (result, self.view_now(&mut state).1)
                };
                self.announce(changed);
                Route::Local(result)
            }
            Local::Search => Route::Local(self.search(&arguments).await),
            Local::Switch(group, switch) => {
                let outcome = match switch {
                    Switch::Activate => self.activate_group(&group).await,
                    Switch::Deactivate => self.deactivate_group(&group).await,
                };
                Route::Local(match outcome {
                    Ok(()) => self.switch_result(&group, switch),
                    Err(error) => text_result(error.to_string(), true),
                })
            }
        }
    }
}

/// The closure form, for hosts that only want `tools -> tools`
/// (the seed's `setToolMiddleware(tools => mediator.enhance(tools))`): enhanced, hidden tools
/// left out, provenance under `_meta` for changed tools.
pub fn tool_middleware(
    mediator: Arc<Mediator>,
    context: ToolContext,
) -> impl Fn(Vec<Tool>) -> futures_util::future::BoxFuture<'static, Vec<Tool>> + Send + Sync {
    move |tools| {
        let mediator = mediator.clone();
        let context = context.clone();
        Box::pin(async move {
            mediator
                .enhance(tools, &context)
                .await
                .into_iter()
                .filter(|tool| !tool.hidden)
                .map(|tool| tool.for_consumer(true))
                .collect()
        })
    }
}

/// A `CallToolResult` with one text block.
pub fn text_result(text: impl Into<String>, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": is_error})
}

/// One source's list as the session took it in: enhanced, with the names of the tools the user
/// allowed after reviewing them (the screen lets them through).
struct Taken {
    tools: Vec<EnhancedTool>,
    reviewed: HashSet<String>,
    /// Behind a gateway, what the screen kept of each tool (by the source's name).
    screenings: HashMap<String, screen::Screening>,
}

impl Taken {
    /// No tools at all.
    fn nothing() -> Taken {
        Taken { tools: Vec::new(), reviewed: HashSet::new(), screenings: HashMap::new() }
    }
}
