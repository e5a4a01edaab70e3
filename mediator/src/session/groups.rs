//! Tool groups in a single tool set: activation, hierarchy, mutual exclusion, hooks.

use super::state::Visibility;
use super::{Session, text_result};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use tool_mediator_core::NameRules;

/// Runs before a group's state changes; an error leaves the state as it was.
pub type GroupHook = Arc<dyn Fn(&str) -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// A group of tools the model turns on and off through activator tools.
#[derive(Clone)]
pub struct GroupConfig {
    pub name: String,
    pub description: String,
    /// Activatable only while the parent is active; deactivated with it.
    pub parent: Option<String>,
    /// List a deactivator while the group is active.
    pub show_deactivator: bool,
    pub on_activate: Option<GroupHook>,
    pub on_deactivate: Option<GroupHook>,
}

impl GroupConfig {
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        GroupConfig {
            name: name.into(),
            description: description.into(),
            parent: None,
            show_deactivator: true,
            on_activate: None,
            on_deactivate: None,
        }
    }

    pub fn child_of(mut self, parent: impl Into<String>) -> Self {
        self.parent = Some(parent.into());
        self
    }
}

impl fmt::Debug for GroupConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupConfig")
            .field("name", &self.name)
            .field("parent", &self.parent)
            .field("show_deactivator", &self.show_deactivator)
            .finish_non_exhaustive()
    }
}

/// A group as `list_groups` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    pub name: String,
    pub description: String,
    pub parent: Option<String>,
    pub active: bool,
}

/// Why a group's state did not change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    #[error("no group `{0}`")]
    Unknown(String),
    #[error("group `{group}` needs `{parent}` to be active first")]
    ParentInactive { group: String, parent: String },
    #[error("group `{group}` excludes its own ancestor `{ancestor}`")]
    ExcludesAncestor { group: String, ancestor: String },
    #[error("the hook of group `{group}` refused: {message}")]
    Hook { group: String, message: String },
}

/// Which way a tool changes a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch {
    Activate,
    Deactivate,
}

/// The activator or deactivator name of a group, in the client's naming: `<group>.activate`,
/// or `<group>_activate` where dots are not allowed.
pub fn switch_name(group: &str, switch: Switch, names: NameRules) -> Option<String> {
    let verb = match switch {
        Switch::Activate => "activate",
        Switch::Deactivate => "deactivate",
    };
    let name =
        if names.allow_dots() { format!("{group}.{verb}") } else { format!("{}_{verb}", group.replace('.', "_")) };
    names.is_valid(&name).then_some(name)
}

/// The groups' configuration and which are active.
#[derive(Debug, Clone, Default)]
pub struct Groups {
    configs: Vec<GroupConfig>,
    exclusions: Vec<Vec<String>>,
    active: BTreeSet<String>,
}

impl Groups {
    pub fn new(configs: Vec<GroupConfig>, exclusions: Vec<Vec<String>>) -> Self {
        Groups { configs, exclusions, active: BTreeSet::new() }
    }

    pub fn config(&self, name: &str) -> Option<&GroupConfig> {
        self.configs.iter().find(|config| config.name == name)
    }

    pub fn configs(&self) -> &[GroupConfig] {
        &self.configs
    }

    /// Active, and every ancestor active. A parent cycle counts as inactive.
    pub fn is_active(&self, name: &str) -> bool {
        self.ancestors(name).is_some_and(|ancestors| {
            self.active.contains(name) && ancestors.iter().all(|ancestor| self.active.contains(ancestor))
        })
    }

    /// The group's ancestors, nearest first; `None` for a parent cycle.
    fn ancestors(&self, name: &str) -> Option<Vec<String>> {
        let mut ancestors: Vec<String> = Vec::new();
        let mut current = self.config(name).and_then(|config| config.parent.clone());
        while let Some(parent) = current {
            if parent == name || ancestors.contains(&parent) {
                return None;
            }
            current = self.config(&parent).and_then(|config| config.parent.clone());
            ancestors.push(parent);
        }
        Some(ancestors)
    }

    /// Can be activated now: not active, and its parent (if any) is.
    pub fn is_activatable(&self, name: &str) -> bool {
        !self.active.contains(name)
            && self
                .config(name)
                .is_some_and(|config| config.parent.as_deref().is_none_or(|parent| self.is_active(parent)))
    }

    pub fn infos(&self) -> Vec<GroupInfo> {
        self.configs
            .iter()
            .map(|config| GroupInfo {
                name: config.name.clone(),
                description: config.description.clone(),
                parent: config.parent.clone(),
                active: self.is_active(&config.name),
            })
            .collect()
    }

    /// What activating `name` would deactivate (exclusion partners and their descendants).
    pub fn plan_activation(&self, name: &str) -> Result<Vec<String>, GroupError> {
        let config = self.config(name).ok_or_else(|| GroupError::Unknown(name.to_owned()))?;
        if let Some(parent) = &config.parent
            && !self.is_active(parent)
        {
            return Err(GroupError::ParentInactive { group: name.to_owned(), parent: parent.clone() });
        }
        let partners: BTreeSet<&str> = self
            .exclusions
            .iter()
            .filter(|set| set.iter().any(|member| member == name))
            .flatten()
            .map(String::as_str)
            .filter(|member| *member != name && self.active.contains(*member))
            .collect();
        let ancestors = self.ancestors(name).unwrap_or_default();
        if let Some(ancestor) = partners.iter().find(|partner| ancestors.iter().any(|a| a == *partner)) {
            return Err(GroupError::ExcludesAncestor { group: name.to_owned(), ancestor: (*ancestor).to_owned() });
        }
        Ok(partners.into_iter().flat_map(|partner| self.with_descendants(partner)).collect())
    }

    /// `name` and every active group below it, deepest first. A parent cycle ends the walk.
    pub fn with_descendants(&self, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_descendants(name, &mut BTreeSet::new(), &mut out);
        out
    }

    fn collect_descendants(&self, name: &str, seen: &mut BTreeSet<String>, out: &mut Vec<String>) {
        if !seen.insert(name.to_owned()) {
            return;
        }
        for child in self.configs.iter().filter(|config| config.parent.as_deref() == Some(name)) {
            self.collect_descendants(&child.name, seen, out);
        }
        if self.active.contains(name) {
            out.push(name.to_owned());
        }
    }

    pub fn set_active(&mut self, name: &str, active: bool) {
        if active {
            self.active.insert(name.to_owned());
        } else {
            self.active.remove(name);
        }
    }
}

impl Session {
    /// Turns a group on: its parent must be active; its hook runs first and may refuse;
    /// groups it excludes go off (their hooks run too, first).
    pub async fn activate_group(&self, name: &str) -> Result<(), GroupError> {
        let _switching = self.switching.lock().await;
        let (plan, hooks) = {
            let state = self.state();
            if state.groups.is_active(name) {
                return Ok(());
            }
            let plan = state.groups.plan_activation(name)?;
            // The group's own hook first: the likeliest to refuse, before anything has run.
            let mut hooks = Vec::new();
            if let Some(hook) = state.groups.config(name).and_then(|config| config.on_activate.clone()) {
                hooks.push((name.to_owned(), hook));
            }
            for off in &plan {
                if let Some(hook) = state.groups.config(off).and_then(|config| config.on_deactivate.clone()) {
                    hooks.push((off.clone(), hook));
                }
            }
            (plan, hooks)
        };
        for (group, hook) in hooks {
            hook(&group).await.map_err(|message| GroupError::Hook { group, message })?;
        }
        let listed = {
            let mut state = self.state();
            for off in &plan {
                state.groups.set_active(off, false);
            }
            state.groups.set_active(name, true);
            state.derived = None;
            self.view_now(&mut state).1
        };
        self.announce(listed);
        Ok(())
    }

    /// Turns a group off, and every group below it; hooks run first and may refuse.
    pub async fn deactivate_group(&self, name: &str) -> Result<(), GroupError> {
        let _switching = self.switching.lock().await;
        let (off, hooks) = {
            let state = self.state();
            if state.groups.config(name).is_none() {
                return Err(GroupError::Unknown(name.to_owned()));
            }
            let off = state.groups.with_descendants(name);
            let hooks: Vec<(String, GroupHook)> = off
                .iter()
                .filter_map(|group| {
                    state
                        .groups
                        .config(group)
                        .and_then(|config| config.on_deactivate.clone())
                        .map(|hook| (group.clone(), hook))
                })
                .collect();
            (off, hooks)
        };
        for (group, hook) in hooks {
            hook(&group).await.map_err(|message| GroupError::Hook { group, message })?;
        }
        let listed = {
            let mut state = self.state();
            for group in &off {
                state.groups.set_active(group, false);
            }
            state.derived = None;
            self.view_now(&mut state).1
        };
        self.announce(listed);
        Ok(())
    }

    pub fn list_groups(&self) -> Vec<GroupInfo> {
        self.state().groups.infos()
    }

    pub fn is_group_active(&self, name: &str) -> bool {
        self.state().groups.is_active(name)
    }

    pub(super) fn switch_result(&self, group: &str, switch: Switch) -> Value {
        let mut state = self.state();
        let derived = self.derived(&mut state);
        let tools = state.tools.as_deref().unwrap_or_default();
        let mut members: Vec<String> = derived
            .callable
            .iter()
            .filter(
                |(_, index)| matches!(self.visibility_of(&tools[**index]), Some(Visibility::Group(g)) if g == group),
            )
            .map(|(name, _)| name.clone())
            .collect();
        members.sort();
        let verb = if switch == Switch::Activate { "activated" } else { "deactivated" };
        let mut result = text_result(format!("Group `{group}` {verb}; its tools: {}.", members.join(", ")), false);
        result["structuredContent"] =
            json!({"group": group, "active": state.groups.is_active(group), "tools": members});
        result
    }
}
