//! Several sources in one session (a gateway's servers): their lists, each enhanced with its
//! own context, listed as one set in which every name is unique.

use std::collections::HashSet;

use crate::naming::{NameRules, SharedNames};
use crate::tool::EnhancedTool;

/// One source's last list, and whether it is listed now: a source that went down keeps its
/// place in the naming, so the names of the others do not change under the client meanwhile.
#[derive(Clone, Default)]
pub(super) struct Part {
    pub(super) tools: Option<Vec<EnhancedTool>>,
    pub(super) down: bool,
}

/// The tools a part lists now.
fn listed(part: &Part) -> Option<&Vec<EnhancedTool>> {
    if part.down { None } else { part.tools.as_ref() }
}

/// The sources' lists as one: in source order, a name that more than one source exposes (or,
/// with `prefix_all`, every name) becomes `<source>_<name>`, made valid for `rules` and unique
/// among all the others. A tool whose text names another source's tool (shadowing it) is
/// reported, and with `quarantine` left out. Returns the merged tools and the source of each.
pub(super) fn merge(
    sources: &[Part],
    source_names: &[String],
    prefix_all: bool,
    quarantine: bool,
    rules: NameRules,
) -> (Vec<EnhancedTool>, Vec<usize>) {
    // The chain already made each source's names unique.
    let every_name = sources.iter().filter_map(|part| part.tools.as_ref()).flatten().map(EnhancedTool::name);
    let mut names = SharedNames::new(every_name, prefix_all, rules);
    let count = sources.iter().filter_map(listed).map(Vec::len).sum();
    let (mut merged, mut owners) = (Vec::with_capacity(count), Vec::with_capacity(count));
    for (source, part) in sources.iter().enumerate() {
        let Some(tools) = listed(part) else { continue };
        let prefix = source_names.get(source).map_or("", String::as_str);
        let others: HashSet<&str> = sources
            .iter()
            .enumerate()
            .filter(|(other, _)| *other != source)
            .filter_map(|(_, part)| listed(part))
            .flatten()
            .map(|tool| tool.original_name.as_str())
            .collect();
        for tool in tools {
            if let Some(why) = crate::lint::names_other_tool(&tool.tool, &others) {
                let action = if quarantine { "left out (--quarantine)" } else { "listed; --quarantine leaves it out" };
                tracing::warn!(
                    "`{prefix}`'s tool `{}` may shadow another server's, {action}: {why}",
                    tool.original_name
                );
                if quarantine {
                    continue;
                }
            }
            let mut tool = tool.clone();
            if names.is_shared(tool.name()) {
                let name = names.expose(prefix, tool.name());
                tool.changes.name = name != tool.original_name;
                tool.tool.name = name;
            }
            merged.push(tool);
            owners.push(source);
        }
    }
    (merged, owners)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Tool;

    fn tools(names: &[&str]) -> Part {
        Part { tools: Some(names.iter().map(|name| EnhancedTool::unchanged(Tool::new(*name))).collect()), down: false }
    }

    fn names(merged: &[EnhancedTool]) -> Vec<&str> {
        merged.iter().map(EnhancedTool::name).collect()
    }

    #[test]
    fn only_shared_names_are_prefixed_and_each_keeps_its_source() {
        let sources = [tools(&["whoami", "echo"]), tools(&["whoami", "time"])];
        let (merged, owners) = merge(&sources, &["a".into(), "b".into()], false, false, NameRules::MCP);
        assert_eq!(names(&merged), ["a_whoami", "echo", "b_whoami", "time"]);
        assert_eq!(owners, [0, 0, 1, 1]);
        assert_eq!(merged[2].original_name, "whoami", "calls go upstream under the source's name");
        assert!(merged[0].changes.name && !merged[1].changes.name);
    }

    #[test]
    fn a_prefixed_name_never_takes_another_tools_name() {
        let sources = [tools(&["x"]), tools(&["x", "a_x"])];
        let (merged, _) = merge(&sources, &["a".into(), "b".into()], false, false, NameRules::MCP);
        assert_eq!(names(&merged), ["a_x_2", "b_x", "a_x"]);
    }

    #[test]
    fn prefix_all_prefixes_every_name_valid_for_the_profile() {
        let sources = [tools(&["get"]), Part::default(), tools(&["put"])];
        let (merged, owners) =
            merge(&sources, &["git hub".into(), "gone".into(), "c".into()], true, false, NameRules::STRICT);
        assert_eq!(names(&merged), ["git_hub_get", "c_put"]);
        assert_eq!(owners, [0, 2], "a source without tools takes no place");
    }

    #[test]
    fn a_source_that_went_down_keeps_the_others_names_as_they_were() {
        let mut sources = [tools(&["whoami"]), tools(&["whoami", "time"])];
        sources[0].down = true;
        let (merged, owners) = merge(&sources, &["a".into(), "b".into()], false, false, NameRules::MCP);
        assert_eq!(names(&merged), ["b_whoami", "time"]);
        assert_eq!(owners, [1, 1]);
    }
}
