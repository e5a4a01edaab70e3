//! What a client is shown: the listing (upstream tools visible now, categories folded into
//! category tools, group switches, state annotations) and the routing table, worked out from the
//! session's state and policy and kept until something changes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::{Value, json};

use super::disclosure::category_tool_name;
use super::groups::{Switch, switch_name};
use super::state::{self, STATE_KEY, Visibility};
use super::{Session, State, StateStrategy, disclosure, search};
use tool_mediator_core::UNCATEGORIZED;
use tool_mediator_core::json::Json;
use tool_mediator_core::{EnhancedTool, Tool};

/// A digest of what a client reads of a tool's definition: its title, description, schemas and
/// annotations (not its `_meta`, which says where it came from).
fn definition(tool: &Tool) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::hash::DefaultHasher::new();
    (&tool.title, &tool.description).hash(&mut hasher);
    for part in [&tool.input_schema, &tool.output_schema, &tool.annotations] {
        part.as_ref().map(Json::as_str).hash(&mut hasher);
    }
    hasher.finish()
}

/// The listing and the routing table, derived from the state.
pub(super) struct Derived {
    /// What is listed, in order; a page is written from it when asked for.
    pub(super) listed: Vec<Listed>,
    /// Names and a digest of each definition (with the schemas whose enums follow the state):
    /// what the client sees.
    pub(super) signature: Vec<String>,
    pub(super) locals: BTreeMap<String, Local>,
    /// Exposed name -> index into the enhanced tools, for the tools listed now.
    pub(super) callable: HashMap<String, usize>,
    /// The same, for the tools the client may see but that are not listed now: folded into a
    /// category tool, or (search alone) not found yet. A call by name still reaches them unless
    /// [`SessionPolicy::calls_follow_disclosure`](super::SessionPolicy::calls_follow_disclosure).
    pub(super) folded: HashMap<String, usize>,
    /// Each enhanced tool as listed, made on its first listing and kept while the view stands,
    /// for the tools whose listing does not follow the state.
    pub(super) consumers: Vec<std::sync::OnceLock<Tool>>,
}

/// One entry of the listing: an enhanced tool, by its index, or one the session made.
pub(super) enum Listed {
    Enhanced(usize),
    Local(Box<Tool>),
}

/// What is listed beside the upstream tools.
#[derive(Clone)]
pub(super) enum Local {
    Category(String),
    Switch(String, Switch),
    /// `search_tools`.
    Search,
}

impl Session {
    /// The listing and routing table, worked out again only after a change.
    pub(super) fn derived(&self, state: &mut State) -> Arc<Derived> {
        if let Some(derived) = &state.derived {
            return derived.clone();
        }
        if let Some(threshold) = self.policy.disclosure {
            // Over the tools the client may see: a hidden tool neither names a shelf nor fills one.
            let tools = state.tools.as_deref().unwrap_or_default();
            let visible = tools.iter().filter(|tool| self.is_visible(state, tool));
            let reserved = self.policy.search.then(|| search::SEARCH_TOOL.strip_suffix("_tools")).flatten();
            state.shelves = disclosure::shelves(visible, threshold, reserved);
        }
        let locals = self.locals(state);
        let folded: BTreeSet<String> = locals
            .values()
            .filter_map(|local| match local {
                Local::Category(category) => Some(category.clone()),
                Local::Switch(..) | Local::Search => None,
            })
            .collect();
        let tools = state.tools.as_deref().unwrap_or_default();
        // Search alone: only what was found, and tools always shown, are listed.
        let search_only = self.policy.search && self.policy.disclosure.is_none() && !self.is_small(state);
        let mut callable = HashMap::with_capacity(tools.len());
        let mut unlisted = HashMap::new();
        for (index, tool) in tools.iter().enumerate().filter(|(_, tool)| self.is_visible(state, tool)) {
            let listed = state.found.contains(tool.name())
                || (!folded.contains(self.shelf(state, tool))
                    && (!search_only || matches!(self.visibility_of(tool), Some(Visibility::Always))));
            let names = if listed { &mut callable } else { &mut unlisted };
            names.entry(tool.name().to_owned()).or_insert(index);
        }
        let listed = self.listing(state, &locals, &callable);
        let mut signature: Vec<String> = listed
            .iter()
            .map(|entry| match entry {
                Listed::Local(tool) => tool.name.clone(),
                // The definition is what the client sees, not the name alone: a language model's
                // description arriving in the background is a change to announce. A schema whose
                // enum values follow the state is part of it.
                Listed::Enhanced(index) => match self.filtered_enums(state, &tools[*index]).is_empty() {
                    true => format!("{}#{:016x}", tools[*index].name(), definition(&tools[*index].tool)),
                    false => {
                        let listed = self.as_listed(state, &tools[*index]);
                        format!("{}#{:016x}", listed.name, definition(&listed))
                    }
                },
            })
            .collect();
        signature.sort();
        let consumers = std::iter::repeat_with(std::sync::OnceLock::new).take(tools.len()).collect();
        let derived = Arc::new(Derived { listed, signature, locals, callable, folded: unlisted, consumers });
        state.derived = Some(derived.clone());
        derived
    }

    pub(super) fn visibility_of<'p>(&'p self, tool: &EnhancedTool) -> Option<&'p Visibility> {
        self.policy.visibility.get(tool.name()).or_else(|| self.policy.visibility.get(&tool.original_name))
    }

    /// What a client that calls `tool` while it is folded away is told, to see it first: the
    /// category tool to call, or to search.
    pub(super) fn how_to_see(&self, state: &State, derived: &Derived, tool: &EnhancedTool) -> String {
        let shelf = self.shelf(state, tool);
        let category_tool = derived.locals.iter().find_map(|(name, local)| match local {
            Local::Category(category) if category == shelf => Some(name),
            _ => None,
        });
        match category_tool {
            Some(category_tool) => format!(
                "`{}` is in the category `{shelf}`, not listed yet: call `{category_tool}` to see its tools, then call it",
                tool.name()
            ),
            None => format!(
                "`{}` is not listed yet: find it with `{}` first, then call it",
                tool.name(),
                search::SEARCH_TOOL
            ),
        }
    }

    pub(super) fn is_visible(&self, state: &State, tool: &EnhancedTool) -> bool {
        if tool.hidden {
            return false;
        }
        if self.filtered_enums(state, tool).iter().any(|(_, allowed)| allowed.is_empty()) {
            return false; // no value of its mode is actionable now
        }
        match self.visibility_of(tool) {
            None | Some(Visibility::Always) => true,
            Some(Visibility::Group(group)) => state.groups.is_active(group),
            Some(Visibility::When { predicate, .. }) => match self.policy.state_strategy {
                StateStrategy::Annotate => true,
                StateStrategy::Hide { .. } => predicate(&state.view),
            },
        }
    }

    /// The shelf `tool` folds on: its category's, or its category.
    pub(super) fn shelf<'a>(&self, state: &'a State, tool: &'a EnhancedTool) -> &'a str {
        state.shelves.get(tool.category_name()).map_or(tool.category_name(), String::as_str)
    }

    /// Whether so few tools are visible that they are listed whole: nothing folded, no search.
    pub(super) fn is_small(&self, state: &State) -> bool {
        let tools = state.tools.as_deref().unwrap_or_default();
        self.policy.whole_below > 0
            && tools.iter().filter(|tool| self.is_visible(state, tool)).take(self.policy.whole_below).count()
                < self.policy.whole_below
    }

    /// Category tool name -> category, for the categories folded now.
    pub(super) fn folded_categories(&self, state: &State) -> HashMap<String, String> {
        let Some(threshold) = self.policy.disclosure else { return HashMap::new() };
        if self.is_small(state) {
            return HashMap::new();
        }
        let tools = state.tools.as_deref().unwrap_or_default();
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for tool in tools.iter().filter(|tool| self.is_visible(state, tool)) {
            *counts.entry(self.shelf(state, tool)).or_default() += 1;
        }
        let mut taken: BTreeSet<&str> = tools.iter().map(EnhancedTool::name).collect();
        if self.policy.search {
            taken.insert(search::SEARCH_TOOL);
        }
        counts
            .into_iter()
            .filter(|(category, count)| {
                *count >= threshold && *category != UNCATEGORIZED && !state.expanded.contains(*category)
            })
            .filter_map(|(category, _)| {
                let name = category_tool_name(category, self.mediator.name_rules())?;
                (!taken.contains(name.as_str())).then(|| (name, category.to_owned()))
            })
            .collect()
    }

    /// The tools the session answers itself, by name.
    pub(super) fn locals(&self, state: &State) -> BTreeMap<String, Local> {
        let mut locals: BTreeMap<String, Local> = self
            .folded_categories(state)
            .into_iter()
            .map(|(name, category)| (name, Local::Category(category)))
            .collect();
        let taken: BTreeSet<&str> = state.tools.iter().flatten().map(EnhancedTool::name).collect();
        if self.policy.search && !taken.contains(search::SEARCH_TOOL) && !self.is_small(state) {
            locals.insert(search::SEARCH_TOOL.to_owned(), Local::Search);
        }
        let names = self.mediator.name_rules();
        for config in state.groups.configs() {
            let switches = [
                (Switch::Activate, state.groups.is_activatable(&config.name)),
                (Switch::Deactivate, config.show_deactivator && state.groups.is_active(&config.name)),
            ];
            for (switch, shown) in switches {
                // A name an upstream tool or another switch already has is not taken over.
                if shown
                    && let Some(name) = switch_name(&config.name, switch, names)
                    && !taken.contains(name.as_str())
                    && !locals.contains_key(&name)
                {
                    locals.insert(name, Local::Switch(config.name.clone(), switch));
                }
            }
        }
        locals
    }

    pub(super) fn listing(
        &self,
        state: &State,
        locals: &BTreeMap<String, Local>,
        callable: &HashMap<String, usize>,
    ) -> Vec<Listed> {
        let tools = state.tools.as_deref().unwrap_or_default();
        let mut listed: Vec<Listed> = tools
            .iter()
            .enumerate()
            .filter(|(index, tool)| callable.get(tool.name()) == Some(index))
            .map(|(index, _)| Listed::Enhanced(index))
            .collect();
        for (name, local) in locals {
            listed.push(Listed::Local(Box::new(match local {
                Local::Category(category) => {
                    let members: Vec<&EnhancedTool> = tools
                        .iter()
                        .filter(|tool| self.is_visible(state, tool) && self.shelf(state, tool) == category.as_str())
                        .collect();
                    disclosure::category_tool(name, category, &members)
                }
                Local::Switch(group, switch) => switch_tool(name, group, *switch, state),
                Local::Search => search::search_tool(tools.iter().filter(|tool| self.is_visible(state, tool)).count()),
            })));
        }
        if self.policy.sort_by_name {
            let name = |entry: &Listed| match entry {
                Listed::Enhanced(index) => tools[*index].name().to_owned(),
                Listed::Local(tool) => tool.name.clone(),
            };
            listed.sort_by_cached_key(name);
        }
        listed
    }

    /// Parameter -> the enum values that show now, for the filters on `tool` (Hide only).
    pub(super) fn filtered_enums(&self, state: &State, tool: &EnhancedTool) -> Vec<(String, Vec<Value>)> {
        if !matches!(self.policy.state_strategy, StateStrategy::Hide { .. }) {
            return Vec::new();
        }
        let mut filters = self
            .policy
            .enum_filters
            .iter()
            .filter(|filter| filter.tool == tool.name() || filter.tool == tool.original_name)
            .peekable();
        if filters.peek().is_none() {
            return Vec::new();
        }
        let Some(schema) = tool.tool.input_schema_value() else { return Vec::new() };
        filters
            .filter_map(|filter| {
                filter.allowed(&schema, &state.view).map(|allowed| (filter.parameter.clone(), allowed))
            })
            .collect()
    }

    /// `tools[index]` as listed: made once per view unless its listing follows the state.
    pub(super) fn listed_tool(&self, state: &State, derived: &Derived, tools: &[EnhancedTool], index: usize) -> Tool {
        let tool = &tools[index];
        match self.follows_state(tool) {
            true => self.as_listed(state, tool),
            false => derived.consumers[index].get_or_init(|| self.as_listed(state, tool)).clone(),
        }
    }

    /// Whether what the client sees of `tool` changes with the state (its `_meta` hint, the
    /// enum values it offers).
    fn follows_state(&self, tool: &EnhancedTool) -> bool {
        let hidden_enums = matches!(self.policy.state_strategy, StateStrategy::Hide { .. })
            && self
                .policy
                .enum_filters
                .iter()
                .any(|filter| filter.tool == tool.name() || filter.tool == tool.original_name);
        hidden_enums || matches!(self.visibility_of(tool), Some(Visibility::When { .. }))
    }

    pub(super) fn as_listed(&self, state: &State, tool: &EnhancedTool) -> Tool {
        let mut listed = tool.clone().for_consumer(self.policy.provenance);
        let filtered = self.filtered_enums(state, tool);
        // The schema is read only for a tool whose enums follow the state.
        if !filtered.is_empty()
            && let Some(mut schema) = listed.input_schema_value()
        {
            for (parameter, allowed) in filtered {
                if let Some(Value::Object(property)) =
                    schema.get_mut("properties").and_then(|properties| properties.get_mut(&parameter))
                {
                    property.insert("enum".into(), Value::Array(allowed));
                }
            }
            listed.input_schema = Some(Json::from(schema));
        }
        if let (Some(Visibility::When { counts, .. }), StateStrategy::Annotate) =
            (self.visibility_of(tool), self.policy.state_strategy)
        {
            listed.set_meta(STATE_KEY, state::hint(&state.view, counts));
        }
        listed
    }
}

pub(super) fn switch_tool(name: &str, group: &str, switch: Switch, state: &State) -> Tool {
    let description = state.groups.config(group).map(|config| config.description.as_str()).unwrap_or_default();
    let text = match switch {
        Switch::Activate => format!("Show the tools of `{group}`: {description}"),
        Switch::Deactivate => format!("Hide the tools of `{group}` again."),
    };
    let mut tool =
        Tool::new(name).with_description(text).with_input_schema(json!({"type": "object", "properties": {}}));
    // Not idempotent: once switched, the switch is gone from the list and answers as unknown.
    tool.annotations =
        Some(Json::from(json!({"readOnlyHint": false, "idempotentHint": false, "openWorldHint": false})));
    tool
}
