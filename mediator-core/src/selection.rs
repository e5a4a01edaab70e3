//! What a consumer sees of enhanced tools ([`consumer_tools`]), and choosing and grouping them:
//! [`filter`] and [`categorize`].

use std::collections::BTreeMap;

use regex::Regex;

use crate::tool::{EnhancedTool, Tool};

/// The tools a consumer sees, each with its position among `tools`: hidden ones left out, each
/// as [`EnhancedTool::for_consumer`] gives it.
pub fn consumer_tools(tools: Vec<EnhancedTool>, provenance: bool) -> impl Iterator<Item = (usize, Tool)> {
    tools
        .into_iter()
        .enumerate()
        .filter(|(_, tool)| !tool.hidden)
        .map(move |(index, tool)| (index, tool.for_consumer(provenance)))
}

/// Which tools to keep. Every criterion that is set must hold; the default keeps every tool
/// that is not hidden.
#[derive(Debug, Clone, Default)]
pub struct FilterCriteria {
    /// Keep tools in these categories. A tool without a category is in [`UNCATEGORIZED`](crate::tool::UNCATEGORIZED), so a
    /// category filter drops it unless the list names `uncategorized`.
    pub categories: Option<Vec<String>>,
    /// Keep tools at least this confident. `Some(0.0)` is a real threshold (it keeps every
    /// tool, unenhanced ones included, whose confidence is 0); `None` is no threshold.
    pub min_confidence: Option<f64>,
    /// Keep tools whose exposed name matches (anywhere in it; anchor with `^...$`).
    pub name_pattern: Option<Regex>,
    /// Keep only these tools, by exposed or original name.
    pub include: Option<Vec<String>>,
    /// Drop these tools, by exposed or original name. Wins over `include`.
    pub exclude: Vec<String>,
    /// Keep tools an override hid.
    pub include_hidden: bool,
}

impl FilterCriteria {
    pub fn matches(&self, tool: &EnhancedTool) -> bool {
        let named = |names: &[String]| names.iter().any(|name| name == tool.name() || *name == tool.original_name);
        if tool.hidden && !self.include_hidden {
            return false;
        }
        if let Some(categories) = &self.categories {
            let category = tool.category_name();
            if !categories.iter().any(|wanted| wanted == category) {
                return false;
            }
        }
        if self.min_confidence.is_some_and(|min| tool.confidence < min) {
            return false;
        }
        if self.name_pattern.as_ref().is_some_and(|pattern| !pattern.is_match(tool.name())) {
            return false;
        }
        if self.include.as_deref().is_some_and(|include| !named(include)) {
            return false;
        }
        !named(&self.exclude)
    }
}

/// The tools that meet `criteria`, in their order.
pub fn filter(tools: Vec<EnhancedTool>, criteria: &FilterCriteria) -> Vec<EnhancedTool> {
    tools.into_iter().filter(|tool| criteria.matches(tool)).collect()
}

/// Tools by category: categories in name order, tools in their order within each.
/// Tools without a category are under [`UNCATEGORIZED`](crate::tool::UNCATEGORIZED).
pub fn categorize(tools: &[EnhancedTool]) -> BTreeMap<String, Vec<&EnhancedTool>> {
    let mut categories: BTreeMap<String, Vec<&EnhancedTool>> = BTreeMap::new();
    for tool in tools {
        let category = tool.category_name();
        match categories.get_mut(category) {
            Some(members) => members.push(tool),
            None => {
                categories.insert(category.to_owned(), vec![tool]);
            }
        }
    }
    categories
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Tool;

    fn tool(name: &str, category: Option<&str>, confidence: f64) -> EnhancedTool {
        let mut tool = EnhancedTool::unchanged(Tool::new(name));
        tool.category = category.map(str::to_owned);
        tool.confidence = confidence;
        tool
    }

    fn names(tools: &[EnhancedTool]) -> Vec<&str> {
        tools.iter().map(EnhancedTool::name).collect()
    }

    fn sample() -> Vec<EnhancedTool> {
        vec![tool("get_user", Some("user"), 0.9), tool("echo", None, 0.0), tool("list_repos", Some("repo"), 0.5)]
    }

    #[test]
    fn default_criteria_keep_everything_visible() {
        let mut tools = sample();
        tools[1].hidden = true;
        assert_eq!(names(&filter(tools.clone(), &FilterCriteria::default())), ["get_user", "list_repos"]);
        let all = FilterCriteria { include_hidden: true, ..Default::default() };
        assert_eq!(filter(tools, &all).len(), 3);
    }

    #[test]
    fn category_filter_treats_no_category_as_uncategorized() {
        let users = FilterCriteria { categories: Some(vec!["user".into()]), ..Default::default() };
        assert_eq!(names(&filter(sample(), &users)), ["get_user"]);
        let loose = FilterCriteria {
            categories: Some(vec!["user".into(), crate::tool::UNCATEGORIZED.into()]),
            ..Default::default()
        };
        assert_eq!(names(&filter(sample(), &loose)), ["get_user", "echo"]);
    }

    #[test]
    fn min_confidence_zero_keeps_unenhanced_tools() {
        let zero = FilterCriteria { min_confidence: Some(0.0), ..Default::default() };
        assert_eq!(filter(sample(), &zero).len(), 3);
        let half = FilterCriteria { min_confidence: Some(0.5), ..Default::default() };
        assert_eq!(names(&filter(sample(), &half)), ["get_user", "list_repos"]);
    }

    #[test]
    fn pattern_include_and_exclude() {
        let criteria = FilterCriteria {
            name_pattern: Some(Regex::new("^(get|list)_").unwrap()),
            exclude: vec!["list_repos".into()],
            ..Default::default()
        };
        assert_eq!(names(&filter(sample(), &criteria)), ["get_user"]);
        let mut renamed = sample();
        renamed[0].original_name = "gt_usr".into();
        let include = FilterCriteria { include: Some(vec!["gt_usr".into(), "echo".into()]), ..Default::default() };
        assert_eq!(names(&filter(renamed, &include)), ["get_user", "echo"]);
    }

    #[test]
    fn categorize_orders_categories_by_name_and_keeps_tool_order() {
        let mut tools = sample();
        tools.push(tool("get_repo", Some("repo"), 0.9));
        let categories = categorize(&tools);
        let keys: Vec<&str> = categories.keys().map(String::as_str).collect();
        assert_eq!(keys, ["repo", "uncategorized", "user"]);
        let repo: Vec<&str> = categories["repo"].iter().map(|t| t.name()).collect();
        assert_eq!(repo, ["list_repos", "get_repo"]);
    }
}
