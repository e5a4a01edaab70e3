//! Checked settings built from the command line: everything the commands need, loaded and
//! validated before any file is written.

use anyhow::{Context as _, Result};
use tool_mediator::{
    Dictionary, Mediator, NameRules, OverrideSet, OverrideTransformer, RuleTransformer, SourceType, ToolContext,
};

use crate::cli::{ChainArgs, ClientProfileArg, SourceTypeArg};
use crate::manifest::{Dialect, Origin};

/// The transformer chain and where tools come from.
pub struct Chain {
    source: Option<String>,
    source_type: SourceType,
    overrides: Option<OverrideSet>,
    rules: Option<RuleTransformer>,
    names: Option<NameRules>,
}

impl Chain {
    pub fn from_args(args: &ChainArgs) -> Result<Chain> {
        let overrides = if args.overrides.is_empty() {
            None
        } else {
            let mut set = OverrideSet::new();
            for dir in &args.overrides {
                set.load_dir(dir)?;
            }
            Some(set)
        };
        let rules =
            if args.no_rules { None } else { Some(RuleTransformer::with_dictionary(dictionary(&args.dictionaries)?)) };
        Ok(Chain {
            source: args.source.clone(),
            source_type: source_type(args.source_type),
            overrides,
            rules,
            names: args.client_profile.map(name_rules),
        })
    }

    /// The chain for output in `dialect`: names follow `--client-profile`, else what the
    /// dialect's consumers accept.
    pub fn mediator(&self, min_confidence: f64, dialect: Dialect) -> Mediator {
        let names = self.names.unwrap_or(if dialect == Dialect::Mcp { NameRules::MCP } else { NameRules::STRICT });
        let mut builder = Mediator::builder().name_rules(names).min_confidence(min_confidence);
        if let Some(overrides) = &self.overrides {
            builder = builder.transformer(OverrideTransformer::new(overrides.clone()));
        }
        if let Some(rules) = &self.rules {
            builder = builder.transformer(rules.clone());
        }
        builder.build()
    }

    /// The context for a manifest: `--source`, else the file's name without extension.
    pub fn context(&self, origin: &Origin) -> ToolContext {
        let source = self.source.clone().unwrap_or_else(|| origin.default_source());
        ToolContext::new(source, self.source_type)
    }
}

/// The built-in dictionary extended by the given files.
pub fn dictionary(files: &[std::path::PathBuf]) -> Result<Dictionary> {
    let mut dictionary = Dictionary::built_in();
    for file in files {
        dictionary.merge_file(file).context("cannot use the dictionary")?;
    }
    Ok(dictionary)
}

pub fn name_rules(profile: ClientProfileArg) -> NameRules {
    match profile {
        ClientProfileArg::Mcp => NameRules::MCP,
        ClientProfileArg::Strict => NameRules::STRICT,
    }
}

fn source_type(arg: SourceTypeArg) -> SourceType {
    match arg {
        SourceTypeArg::Web => SourceType::Web,
        SourceTypeArg::Api => SourceType::Api,
        SourceTypeArg::File => SourceType::File,
        SourceTypeArg::Manual => SourceType::Manual,
    }
}
