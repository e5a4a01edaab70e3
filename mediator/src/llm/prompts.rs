//! The prompt templates: embedded from `prompts/`, overridable from a directory at run time.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

const ENHANCE: &str = include_str!("../../prompts/enhance.md");
const CATEGORIZE: &str = include_str!("../../prompts/categorize.md");
const JUDGE: &str = include_str!("../../prompts/judge.md");
const JUDGE_ODDS: &str = include_str!("../../prompts/judge-odds.md");
const INFER: &str = include_str!("../../prompts/infer.md");

/// Which template a transformer sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// Names, descriptions, categories, parameter descriptions.
    Enhance,
    /// Categories only.
    Categorize,
    /// Whether a tool the screen is unsure of is poisoned, and why.
    Judge,
    /// Whether a tool is poisoned, yes or no: its odds are read from the answer's first word.
    JudgeOdds,
    /// The parameters of a tool that published none though its name says it takes some.
    InferSchema,
}

/// The templates in use.
#[derive(Debug, Clone)]
pub struct Prompts {
    enhance: String,
    categorize: String,
    judge: String,
    judge_odds: String,
    infer: String,
}

/// A prompt directory that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("cannot read prompt template {path}")]
pub struct PromptError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl Default for Prompts {
    fn default() -> Self {
        Prompts {
            enhance: ENHANCE.to_owned(),
            categorize: CATEGORIZE.to_owned(),
            judge: JUDGE.to_owned(),
            judge_odds: JUDGE_ODDS.to_owned(),
            infer: INFER.to_owned(),
        }
    }
}

impl Prompts {
    /// The embedded templates, each replaced by `dir/<name>.md` where that file exists.
    pub fn from_dir(dir: &Path) -> Result<Prompts, PromptError> {
        let mut prompts = Prompts::default();
        let slots = [
            ("enhance.md", &mut prompts.enhance),
            ("categorize.md", &mut prompts.categorize),
            ("judge.md", &mut prompts.judge),
            ("judge-odds.md", &mut prompts.judge_odds),
            ("infer.md", &mut prompts.infer),
        ];
        for (name, slot) in slots {
            let path = dir.join(name);
            match crate::read::read_settings(&path) {
                Ok(text) => *slot = text,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(PromptError { path, source }),
            }
        }
        Ok(prompts)
    }

    pub fn template(&self, task: Task) -> &str {
        match task {
            Task::Enhance => &self.enhance,
            Task::Categorize => &self.categorize,
            Task::Judge => &self.judge,
            Task::JudgeOdds => &self.judge_odds,
            Task::InferSchema => &self.infer,
        }
    }

    /// The SHA-256 of a template, hex: part of every cache key.
    pub fn hash(&self, task: Task) -> String {
        Sha256::digest(self.template(task).as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// The template with its placeholders filled. Tool text is inserted once, as JSON.
    pub fn render(&self, task: Task, source: &str, source_type: &str, tools_json: &str) -> String {
        // Fill the tools last, so text inside them is never taken for a placeholder.
        self.template(task)
            .replace("{{source}}", source)
            .replace("{{source_type}}", source_type)
            .replace("{{tools}}", tools_json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_overrides_templates_and_changes_the_hash() {
        let dir = tempfile::tempdir().unwrap();
        let default = Prompts::default();
        std::fs::write(dir.path().join("enhance.md"), "Only {{tools}}").unwrap();
        let custom = Prompts::from_dir(dir.path()).unwrap();
        assert_ne!(default.hash(Task::Enhance), custom.hash(Task::Enhance));
        assert_eq!(default.hash(Task::Categorize), custom.hash(Task::Categorize));
        assert_eq!(
            custom.render(Task::Enhance, "s", "web", "[{\"name\": \"{{source}}\"}]"),
            "Only [{\"name\": \"{{source}}\"}]"
        );
    }
}
