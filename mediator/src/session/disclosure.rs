//! Category tools: one listed tool standing for a category of tools until it is called.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::SessionPolicy;
use tool_mediator_core::NameRules;
use tool_mediator_core::UNCATEGORIZED;
use tool_mediator_core::json::Json;
use tool_mediator_core::{EnhancedTool, Tool};

/// What the model sees first of a large tool set; in a configuration file, `disclosure_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DisclosureMode {
    /// Everything, as it is.
    Off,
    /// Categories folded into category tools that expand on a call.
    Categories,
    /// `search_tools` alone (and tools always visible): the model searches, then calls.
    Search,
    /// Category tools and `search_tools`.
    #[default]
    Both,
}

impl DisclosureMode {
    pub const ALL: [DisclosureMode; 4] =
        [DisclosureMode::Off, DisclosureMode::Categories, DisclosureMode::Search, DisclosureMode::Both];

    pub fn name(self) -> &'static str {
        match self {
            DisclosureMode::Off => "off",
            DisclosureMode::Categories => "categories",
            DisclosureMode::Search => "search",
            DisclosureMode::Both => "both",
        }
    }

    /// `policy` in this mode: categories of at least `threshold` tools folded, a search tool,
    /// both or neither; a set of fewer than `whole_below` tools is listed whole.
    pub fn apply(self, policy: SessionPolicy, threshold: usize, whole_below: usize) -> SessionPolicy {
        let categories = matches!(self, DisclosureMode::Categories | DisclosureMode::Both);
        SessionPolicy {
            disclosure: categories.then_some(threshold.max(2)),
            search: matches!(self, DisclosureMode::Search | DisclosureMode::Both),
            whole_below,
            ..policy
        }
    }
}

impl std::str::FromStr for DisclosureMode {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        DisclosureMode::ALL
            .into_iter()
            .find(|mode| mode.name() == name)
            .ok_or_else(|| format!("unknown disclosure mode `{name}` (expected both, categories, search or off)"))
    }
}

/// Fewer tools than this are listed whole unless set otherwise: nobody should pay a search for
/// five tools.
pub const WHOLE_BELOW: usize = 20;

/// How many member names a category tool's description lists before "...".
const NAMES_SHOWN: usize = 8;

/// At most this many shelves fold into category tools: more, and the model reads a long list
/// again.
const MAX_SHELVES: usize = 8;

/// The shelf of the tools no larger shelf takes.
pub const OTHER: &str = "other";

/// Categories put on shelves coarse enough to browse, category -> shelf: a category whose
/// words include all of a larger one's goes on that one's shelf (`sub_issue` on `issue`,
/// `pending_pull_request_review` on `pull_request`); the largest shelves of at least
/// `threshold` tools, up to [`MAX_SHELVES`] with `other`, stay; every other tool, the
/// uncategorized too, goes on `other`. `tools` are the tools the client may see: a hidden tool
/// neither names a shelf nor takes a place on one. A shelf named `reserved` (whose category tool
/// would take the name of `search_tools`) does not stay either.
pub(super) fn shelves<'a>(
    tools: impl IntoIterator<Item = &'a EnhancedTool>,
    threshold: usize,
    reserved: Option<&str>,
) -> HashMap<String, String> {
    fn words(category: &str) -> BTreeSet<&str> {
        category.split(['_', '-']).collect()
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    let mut total = 0;
    for tool in tools {
        *counts.entry(tool.category_name()).or_default() += 1;
        total += 1;
    }
    // Largest first; a category goes into the largest larger one whose words it has.
    let mut order: Vec<&str> = counts.keys().copied().filter(|category| *category != UNCATEGORIZED).collect();
    order.sort_by(|a, b| counts[b].cmp(&counts[a]).then(a.cmp(b)));
    let mut root: HashMap<&str, &str> = HashMap::new();
    for (position, &category) in order.iter().enumerate() {
        let own = words(category);
        let larger = order[..position].iter().find(|larger| words(larger).is_subset(&own));
        let target = larger.map_or(category, |larger| root.get(larger).copied().unwrap_or(larger));
        root.insert(category, target);
    }
    let mut sizes: HashMap<&str, usize> = HashMap::new();
    for (&category, &target) in &root {
        *sizes.entry(target).or_default() += counts[category];
    }
    let mut kept: Vec<(&str, usize)> =
        sizes.into_iter().filter(|(shelf, size)| *size >= threshold && Some(*shelf) != reserved).collect();
    kept.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let every_tool_kept = kept.iter().map(|(_, size)| size).sum::<usize>() == total;
    kept.truncate(if every_tool_kept && kept.len() <= MAX_SHELVES { MAX_SHELVES } else { MAX_SHELVES - 1 });
    let kept: HashSet<&str> = kept.into_iter().map(|(shelf, _)| shelf).collect();
    counts
        .keys()
        .map(|&category| {
            let shelf = root.get(category).copied().filter(|target| kept.contains(target)).unwrap_or(OTHER);
            (category.to_owned(), shelf.to_owned())
        })
        .collect()
}

/// `<category>_tools`, if the client accepts that name.
pub fn category_tool_name(category: &str, names: NameRules) -> Option<String> {
    let name = format!("{category}_tools");
    names.is_valid(&name).then_some(name)
}

/// The tool listed in place of a folded category.
pub fn category_tool(name: &str, category: &str, members: &[&EnhancedTool]) -> Tool {
    let mut shown: Vec<&str> = members.iter().take(NAMES_SHOWN).map(|tool| tool.name()).collect();
    if members.len() > NAMES_SHOWN {
        shown.push("...");
    }
    let topic = match category {
        OTHER => "more tools".to_owned(),
        category => category.replace(['_', '-'], " "),
    };
    let description = format!(
        "Work with {topic} ({}: {}). Call this to see them; they can then be called by name.",
        tool_mediator_core::counted(members.len(), "tool", "tools"),
        shown.join(", ")
    );
    let mut tool =
        Tool::new(name).with_description(description).with_input_schema(json!({"type": "object", "properties": {}}));
    // Not idempotent: once expanded, the category tool is gone from the list.
    tool.annotations = Some(Json::from(json!({"readOnlyHint": true, "idempotentHint": false, "openWorldHint": false})));
    tool
}

/// How many tools one expansion describes at most, and about how many bytes of text (a search
/// answer too); the rest are named in a note (they are listed and callable all the same).
const EXPANDED_TOOLS: usize = 50;
pub(super) const EXPANDED_BYTES: usize = 256 * 1024;

/// Tools described for a model that may never list again: each one's name, title, description,
/// input schema and annotations (`destructiveHint` and the like), as text and as structured
/// entries. At most `max_tools`, and about [`EXPANDED_BYTES`] of text: the first tool is always
/// described, the others while they fit.
pub(super) struct Described {
    pub(super) text: String,
    pub(super) tools: Vec<Value>,
}

pub(super) fn describe(tools: impl Iterator<Item = Tool>, max_tools: usize) -> Described {
    let mut described = Described { text: String::new(), tools: Vec::new() };
    for tool in tools {
        let schema = tool.input_schema.as_ref().map_or("{}", Json::as_str);
        let title = tool.title.as_deref().map(|title| format!(" ({title})")).unwrap_or_default();
        let mut entry = format!(
            "\n- {}{title}: {}\n  input schema: {schema}\n",
            tool.name,
            tool.description.as_deref().unwrap_or("(no description)"),
        );
        if let Some(annotations) = &tool.annotations {
            entry.push_str(&format!("  annotations: {}\n", annotations.as_str()));
        }
        let full = described.tools.len() == max_tools || described.text.len() + entry.len() > EXPANDED_BYTES;
        if !described.tools.is_empty() && full {
            break;
        }
        described.text.push_str(&entry);
        let mut structured = Map::new();
        structured.insert("name".into(), json!(tool.name));
        if let Some(title) = &tool.title {
            structured.insert("title".into(), json!(title));
        }
        structured.insert("description".into(), json!(tool.description));
        structured.insert("inputSchema".into(), json!(tool.input_schema));
        if let Some(annotations) = &tool.annotations {
            structured.insert("annotations".into(), json!(annotations));
        }
        described.tools.push(Value::Object(structured));
    }
    described
}

/// The answer to calling a category tool: its tools with their descriptions and input schemas,
/// as text for every client and as `structuredContent` for those that read it. A large
/// category is described in part, with a note saying that every member is now in `tools/list`.
pub fn expansion_result(category: &str, members: impl ExactSizeIterator<Item = Tool>) -> Value {
    let total = members.len();
    let topic = category.replace(['_', '-'], " ");
    let Described { text: entries, tools } = describe(members, EXPANDED_TOOLS);
    let text =
        format!("{} for {topic}; call them by name:\n{entries}", tool_mediator_core::counted(total, "tool", "tools"));
    let note = (tools.len() < total).then(|| {
        format!(
            "Described here: {} of {total}. All {total} are now in tools/list and can be called by name; \
             list the tools to see the rest.",
            tools.len()
        )
    });
    described_result(text, json!({"category": category, "tools": tools}), total, note)
}

/// A tool result that describes tools: `text` for every client, `structured` for those that read
/// `structuredContent`, and, when not all `total` could be described, a `note` saying so in both.
pub(super) fn described_result(mut text: String, mut structured: Value, total: usize, note: Option<String>) -> Value {
    if let Some(note) = note {
        text.push_str(&format!("\n{note}\n"));
        structured["total"] = json!(total);
        structured["note"] = json!(note);
    }
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(categories: &[(&str, usize)]) -> Vec<EnhancedTool> {
        let mut tools = Vec::new();
        for (category, count) in categories {
            for n in 0..*count {
                let mut tool = EnhancedTool::unchanged(Tool::new(format!("{category}_{n}")));
                tool.category = (*category != UNCATEGORIZED).then(|| category.to_string());
                tools.push(tool);
            }
        }
        tools
    }

    #[test]
    fn small_categories_go_on_a_larger_ones_shelf_or_on_other() {
        let tools = tools(&[
            ("issue", 20),
            ("sub_issue", 4),
            ("pull_request", 16),
            ("pending_pull_request_review", 2),
            ("gist", 4),
            ("user", 1),
            (UNCATEGORIZED, 3),
        ]);
        let shelves = shelves(&tools, 5, None);
        assert_eq!(shelves["sub_issue"], "issue");
        assert_eq!(shelves["pending_pull_request_review"], "pull_request");
        assert_eq!(shelves["gist"], OTHER, "too small for a shelf of its own");
        assert_eq!(shelves[UNCATEGORIZED], OTHER);
        assert_eq!(shelves["issue"], "issue");
    }

    #[test]
    fn at_most_eight_shelves() {
        let many: Vec<(String, usize)> = (0..12).map(|n| (format!("topic{n}"), 10 + n)).collect();
        let many: Vec<(&str, usize)> = many.iter().map(|(name, count)| (name.as_str(), *count)).collect();
        let shelves = shelves(&tools(&many), 5, None);
        let distinct: HashSet<&String> = shelves.values().collect();
        assert_eq!(distinct.len(), MAX_SHELVES);
        assert_eq!(shelves["topic11"], "topic11", "the largest keep their own");
        assert_eq!(shelves["topic0"], OTHER);
    }
}
