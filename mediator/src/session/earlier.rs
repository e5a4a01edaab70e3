//! Names a client was shown before: a tool renamed since (the overrides read again, a language
//! model's answer arriving after the rules') is still reached under the name an earlier listing
//! gave it, for a model that read that listing.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value};
use tool_mediator_core::EnhancedTool;

use super::sources::Part;

/// The tool an earlier name was shown for, as it was shown.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Shown {
    source: usize,
    /// The source's name of the tool.
    original: String,
    /// The arguments' names as that listing showed them -> the source's.
    aliases: BTreeMap<String, String>,
}

/// Earlier names -> the tool each was shown for. A name is kept while its tool's source lists
/// it (or is down) and no tool has the name now.
#[derive(Default)]
pub(super) struct EarlierNames(HashMap<String, Shown>);

/// A tool an earlier name reaches: its index in the session's tools, and the arguments' names
/// as that name's listing showed them.
pub(super) struct Reached<'a> {
    pub(super) index: usize,
    aliases: &'a BTreeMap<String, String>,
}

impl Reached<'_> {
    /// `arguments` in the source's names.
    pub(super) fn original_arguments(&self, arguments: Map<String, Value>) -> Map<String, Value> {
        if self.aliases.is_empty() {
            return arguments;
        }
        arguments.into_iter().map(|(name, value)| (self.aliases.get(&name).cloned().unwrap_or(name), value)).collect()
    }
}

/// What the session's tools were named before a change: each exposed name, with its tool.
pub(super) fn names_of(tools: Option<&[EnhancedTool]>, owners: &[usize]) -> Vec<(String, Shown)> {
    let tools = tools.unwrap_or_default();
    tools
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            let shown = Shown {
                source: owners.get(index).copied().unwrap_or_default(),
                original: tool.original_name.clone(),
                aliases: tool.argument_aliases.clone(),
            };
            (tool.name().to_owned(), shown)
        })
        .collect()
}

impl EarlierNames {
    /// The session's tools changed from `before` to `tools` (of `owners`; none while its one
    /// source is down): a name that no longer names the same tool is kept as an earlier name of
    /// the tool it named; a name in use again is no earlier name, nor one whose tool its source
    /// (up, with a list) no longer has.
    pub(super) fn note(
        &mut self,
        before: Vec<(String, Shown)>,
        tools: Option<&[EnhancedTool]>,
        owners: &[usize],
        sources: &[Part],
    ) {
        let Some(tools) = tools else {
            // Down: its names are kept for when it comes back, as they were.
            self.0.extend(before);
            return;
        };
        let now: HashMap<&str, usize> = tools.iter().enumerate().map(|(index, tool)| (tool.name(), index)).collect();
        let same = |name: &str, shown: &Shown| {
            now.get(name).is_some_and(|&index| {
                tools[index].original_name == shown.original && owners.get(index) == Some(&shown.source)
            })
        };
        for (name, shown) in before {
            if !same(&name, &shown) {
                self.0.insert(name, shown);
            }
        }
        let present: HashSet<(usize, &str)> =
            tools.iter().zip(owners).map(|(tool, &source)| (source, tool.original_name.as_str())).collect();
        // A source that is down keeps its tools' earlier names, as it keeps their places.
        let down = |source: usize| sources.get(source).is_some_and(|part| part.down);
        self.0.retain(|name, shown| {
            !now.contains_key(name.as_str())
                && (down(shown.source) || present.contains(&(shown.source, shown.original.as_str())))
        });
    }

    /// The tool `name` was shown for, when it is an earlier name and no source has a tool of that
    /// name now (listed or not, prefixed in the merged list or not: then whose it is would be a
    /// guess).
    pub(super) fn reach<'a>(
        &'a self,
        name: &str,
        tools: &[EnhancedTool],
        owners: &[usize],
        sources: &[Part],
    ) -> Option<Reached<'a>> {
        let shown = self.0.get(name)?;
        let named_so = |tool: &EnhancedTool| tool.name() == name;
        if tools.iter().any(named_so) || sources.iter().filter_map(|part| part.tools.as_ref()).flatten().any(named_so) {
            return None;
        }
        let index = tools
            .iter()
            .zip(owners)
            .position(|(tool, &source)| source == shown.source && tool.original_name == shown.original)?;
        Some(Reached { index, aliases: &shown.aliases })
    }
}
