//! Visibility that follows the host's state: what the host has captured, and what it means for
//! which tools the model sees.

use super::Session;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};

/// The host's state as the session sees it: counts of captured data and flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateView {
    pub counts: BTreeMap<String, u64>,
    pub flags: BTreeMap<String, bool>,
}

impl StateView {
    pub fn count(&self, name: &str) -> u64 {
        self.counts.get(name).copied().unwrap_or(0)
    }

    pub fn flag(&self, name: &str) -> bool {
        self.flags.get(name).copied().unwrap_or(false)
    }
}

/// Decides from the host's state whether a tool is actionable.
pub type Predicate = Arc<dyn Fn(&StateView) -> bool + Send + Sync>;

/// When a tool is visible.
#[derive(Clone)]
pub enum Visibility {
    /// Always: the implicit root group, which is always active and never listed.
    Always,
    /// While the group is active.
    Group(String),
    /// While the predicate holds; `counts` names the data it depends on, shown as hints.
    When { predicate: Predicate, counts: Vec<String> },
}

impl fmt::Debug for Visibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Visibility::Always => f.write_str("Always"),
            Visibility::Group(group) => f.debug_tuple("Group").field(group).finish(),
            Visibility::When { counts, .. } => f.debug_struct("When").field("counts", counts).finish_non_exhaustive(),
        }
    }
}

/// What the session does with state-dependent tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateStrategy {
    /// The list stays the same; each state-dependent tool carries `_meta` hints (its data
    /// counts, and "no data captured yet" while they are zero). Schemas stay stable for
    /// clients that cache them. The default.
    Annotate,
    /// The visible set follows the state; changes are announced, a burst of them within
    /// `debounce` as one event.
    Hide { debounce: Duration },
}

/// The `_meta` key of state hints.
pub const STATE_KEY: &str = "tool-mediator/state";

/// The hint an annotated tool carries.
pub fn hint(view: &StateView, counts: &[String]) -> Value {
    let values: serde_json::Map<String, Value> =
        counts.iter().map(|name| (name.clone(), json!(view.count(name)))).collect();
    let empty = !counts.is_empty() && counts.iter().all(|name| view.count(name) == 0);
    let mut hint = json!({"counts": values});
    if empty {
        hint["hint"] = json!("no data captured yet; this tool has nothing to work on until some is");
    }
    hint
}

/// Enum values of one parameter that follow the host's state. Applied only with
/// [`StateStrategy::Hide`]: a value shows while its predicate holds; values not named here
/// always show; a tool left with no value is not listed. A change is announced like any other.
#[derive(Clone)]
pub struct EnumFilter {
    /// The tool's exposed or original name.
    pub tool: String,
    pub parameter: String,
    pub values: Vec<(String, Predicate)>,
}

impl fmt::Debug for EnumFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values: Vec<&str> = self.values.iter().map(|(value, _)| value.as_str()).collect();
        f.debug_struct("EnumFilter")
            .field("tool", &self.tool)
            .field("parameter", &self.parameter)
            .field("values", &values)
            .finish()
    }
}

impl EnumFilter {
    /// The enum values that show now, or `None` when the schema has no such enum.
    pub fn allowed(&self, schema: &Value, view: &StateView) -> Option<Vec<Value>> {
        let values = schema
            .pointer(&format!("/properties/{}/enum", tool_mediator_core::schema::escape(&self.parameter)))?
            .as_array()?;
        Some(
            values
                .iter()
                .filter(|value| {
                    self.values
                        .iter()
                        .find(|(name, _)| Some(name.as_str()) == value.as_str())
                        .is_none_or(|(_, predicate)| predicate(view))
                })
                .cloned()
                .collect(),
        )
    }
}

impl Session {
    /// The host's state changed. With [`StateStrategy::Hide`] the visible set follows it, and a
    /// burst of changes within the debounce window is announced once; with
    /// [`StateStrategy::Annotate`] the list stays and its hints follow the new counts.
    pub fn set_state(self: &Arc<Self>, view: StateView) {
        {
            let mut state = self.state();
            state.view = view;
            state.derived = None;
        }
        let StateStrategy::Hide { debounce } = self.policy.state_strategy else { return };
        if self.debounce_pending.swap(true, Ordering::AcqRel) {
            return; // the pending check will see this change too
        }
        let session = Arc::clone(self);
        let check = async move {
            tokio::time::sleep(debounce).await;
            session.debounce_pending.store(false, Ordering::Release);
            let changed = session.view_now(&mut session.state()).1;
            session.announce(changed);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(check);
            }
            // Called from outside a runtime: no timer to wait on, so check at once.
            Err(_) => {
                self.debounce_pending.store(false, Ordering::Release);
                let changed = self.view_now(&mut self.state()).1;
                self.announce(changed);
            }
        }
    }
}
