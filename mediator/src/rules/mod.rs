//! The rule-based transformer: fast, offline, conservative. It spells out cryptic
//! abbreviations, writes a description where there is none, repairs schemas and suggests a
//! category, and it declines a tool it cannot improve.

use std::collections::HashMap;

mod compound;
mod context;
pub(crate) mod describe;
mod dictionary;
pub(crate) mod identifier;
mod lexicon;
mod reading;

use async_trait::async_trait;

use tool_mediator_core::json::Json;
use tool_mediator_core::schema;
use tool_mediator_core::{Answer, Expansion, ToolPatch, ToolTransformer, TransformError};
use tool_mediator_core::{Tool, ToolContext};

use context::{Agreed, Context, Evidence, SiblingWords};
pub(crate) use dictionary::is_english;
pub use dictionary::{Dictionary, DictionaryError};
pub use reading::NameReading;

/// Confidence of an answer whose description was inferred from the name alone.
const INFERRED_DESCRIPTION: f64 = 0.4;
/// Confidence of an answer whose schema was inferred from the name alone.
const INFERRED_SCHEMA: f64 = 0.3;
/// Confidence of a schema repair: mapping `dict` to `object` is near-certain.
const REPAIRED_SCHEMA: f64 = 0.9;

/// Enhances tools by rules: priority 100, name `rules`.
///
/// Confidence is how much of the name the rules understood (every word an English word, a
/// known term or an abbreviation they could spell out), lowered to 0.4 when the description is
/// inferred and 0.3 when the schema is, so a smarter transformer after it gets a turn.
#[derive(Debug, Clone, Default)]
pub struct RuleTransformer {
    dictionary: Dictionary,
}

impl RuleTransformer {
    pub const NAME: &'static str = "rules";
    pub const PRIORITY: i32 = 100;

    /// Rules with the built-in dictionary.
    pub fn new() -> Self {
        RuleTransformer { dictionary: Dictionary::built_in() }
    }

    pub fn with_dictionary(dictionary: Dictionary) -> Self {
        RuleTransformer { dictionary }
    }

    /// How the rules read `name` with no context: what the `names` command prints.
    pub fn read_name(&self, name: &str) -> NameReading {
        NameReading::read(name, &self.dictionary, &Context::default())
    }

    /// How the rules read each of `tools`' names in its list: with the tool's own text and its
    /// siblings' names as context, agreeing on one spelling out per abbreviation. What
    /// `enhance` renames a tool to, `lint` says its name reads as.
    pub fn read_names(&self, tools: &[Tool]) -> Vec<NameReading> {
        self.read_names_from(tools, "")
    }

    /// [`RuleTransformer::read_names`], with the name of the source the tools came from as
    /// context too (`stripe`, `google-calendar`).
    pub fn read_names_from(&self, tools: &[Tool], source: &str) -> Vec<NameReading> {
        let mut siblings = SiblingWords::default();
        siblings.add_source(source);
        for tool in tools {
            siblings.add_name(&tool.name, &identifier::words(&tool.name));
        }
        let mut readings: Vec<NameReading> = tools
            .iter()
            .map(|tool| NameReading::read(&tool.name, &self.dictionary, &Context::of(tool, &siblings)))
            .collect();
        // One abbreviation, one spelling out, in one list: where tools read the same word
        // differently (`gen` as "generate" here, "generation" there), the list agrees on the
        // reading most of them chose (the first, on a tie) and those tools are read again.
        let agreed = agreed_expansions(&readings);
        if !agreed.is_empty() {
            for (tool, reading) in tools.iter().zip(readings.iter_mut()) {
                let disagrees = reading.words.iter().enumerate().any(|(index, word)| {
                    agreed
                        .get(word)
                        .is_some_and(|(expansion, _)| reading.expansion_of(index) != Some(expansion.as_str()))
                });
                if disagrees {
                    let context = Context::of(tool, &siblings).agreeing(&agreed);
                    *reading = NameReading::read(&tool.name, &self.dictionary, &context);
                }
            }
        }
        readings
    }

    /// Answers for each tool the rules can improve.
    pub fn answers(&self, tools: &[Tool]) -> Vec<Answer> {
        self.answers_from(tools, "")
    }

    /// [`RuleTransformer::answers`] for tools from the source named `source`.
    pub fn answers_from(&self, tools: &[Tool], source: &str) -> Vec<Answer> {
        let readings = self.read_names_from(tools, source);
        // What answering needs of each reading is kept while the categories are counted; the
        // rest of it (words, senses, a sentence the tool does not need) goes at once.
        let gists: Vec<Gist> = tools.iter().zip(readings).map(|(tool, reading)| Gist::of(tool, reading)).collect();
        let mut categories = describe::CategoryIndex::default();
        for gist in &gists {
            categories.add(&gist.expanded_words);
        }
        // Room for an answer per tool up front: a list grown by doubling can hold twice that.
        let mut answers = Vec::with_capacity(tools.len());
        answers.extend(
            tools
                .iter()
                .zip(gists)
                .enumerate()
                .filter_map(|(index, (tool, gist))| self.answer(index, tool, gist, &categories)),
        );
        answers
    }

    fn answer(&self, index: usize, tool: &Tool, gist: Gist, categories: &describe::CategoryIndex) -> Option<Answer> {
        let mut confidence = gist.confidence;
        let mut inferred = Vec::new();
        if gist.description.is_some() {
            inferred.push("description".to_owned());
            confidence = confidence.min(INFERRED_DESCRIPTION);
        }

        let input_schema = match &tool.input_schema {
            None => {
                inferred.push("inputSchema".to_owned());
                confidence = confidence.min(INFERRED_SCHEMA);
                Some(describe::infer_schema(&gist.expanded_words).unwrap_or_else(schema::empty_object))
            }
            Some(input_schema) if schema::needs_repair(input_schema) => {
                let mut repaired = input_schema.to_value();
                if schema::is_schema(&repaired) {
                    confidence = confidence.min(REPAIRED_SCHEMA);
                } else {
                    // Nothing of it can be kept: what replaces it is a guess.
                    inferred.push("inputSchema".to_owned());
                    confidence = confidence.min(INFERRED_SCHEMA);
                }
                schema::repair(&mut repaired);
                Some(repaired)
            }
            Some(_) => None,
        };

        let category = categories.category(&gist.expanded_words);
        let patch = ToolPatch {
            name: gist.name,
            description: gist.description.map(Some),
            input_schema: input_schema.map(|schema| Some(Json::from(schema))),
            ..ToolPatch::default()
        };
        if patch.is_empty() && category.is_none() {
            return None;
        }
        let mut answer = Answer::new(index, patch, confidence);
        answer.category = category;
        answer.inferred = inferred;
        answer.expansions = gist.expansions;
        Some(answer)
    }
}

/// The words a list of readings spells out in more than one way, each with the reading most of
/// them chose (the first met, on a tie) and the first tool whose own words read it so. A reading
/// from general knowledge alone (the lexicon) counts only where no tool's own words and no
/// dictionary entry read the word: `get_inv` guessing "inverse" does not outvote `void_inv`
/// described as voiding an invoice.
fn agreed_expansions(readings: &[NameReading]) -> Agreed {
    struct Votes<'r> {
        expansion: &'r str,
        strong: usize,
        weak: usize,
        voucher: Option<&'r str>,
    }
    let mut seen: HashMap<&str, Vec<Votes>> = HashMap::new();
    for reading in readings {
        for (index, word) in reading.words.iter().enumerate() {
            let Some((expansion, evidence)) = reading.reading_of(index) else { continue };
            let votes = seen.entry(word.as_str()).or_default();
            let position = match votes.iter().position(|votes| votes.expansion == expansion) {
                Some(position) => position,
                None => {
                    votes.push(Votes { expansion, strong: 0, weak: 0, voucher: None });
                    votes.len() - 1
                }
            };
            let vote = &mut votes[position];
            if *evidence == Evidence::Lexicon {
                vote.weak += 1;
            } else {
                vote.strong += 1;
                vote.voucher.get_or_insert(&reading.input);
            }
        }
    }
    seen.into_iter()
        .filter(|(_, votes)| votes.len() > 1)
        .map(|(word, votes)| {
            // max_by_key keeps the last of equals: reversed, the first met wins a tie.
            let chosen = votes.iter().rev().max_by_key(|votes| (votes.strong, votes.weak)).expect("two or more");
            let voucher = chosen.voucher.unwrap_or_default();
            (word.to_owned(), (chosen.expansion.to_owned(), voucher.to_owned()))
        })
        .collect()
}

/// What the rules' answer for a tool needs of its name's reading.
struct Gist {
    /// The name with its abbreviations spelled out, when that differs from the name.
    name: Option<String>,
    /// A sentence made from the name, when the tool's own description says less.
    description: Option<String>,
    confidence: f64,
    expanded_words: Vec<String>,
    /// The words spelled out in the name, with their evidence.
    expansions: Vec<Expansion>,
}

impl Gist {
    fn of(tool: &Tool, reading: NameReading) -> Gist {
        // A description that only repeats a cryptic name is rewritten with the name; one that
        // repeats a good name is as good as a sentence made from it, and stays.
        let needs_description = match tool.description.as_deref() {
            None => true,
            Some(blank) if blank.trim().is_empty() => true,
            Some(description) => reading.renames() && describe::repeats_name(description, &reading.expanded_words),
        };
        let renames = reading.renames();
        let expansions = if renames { reading.expansions() } else { Vec::new() };
        let description = reading
            .description
            .filter(|description| needs_description && tool.description.as_ref() != Some(description));
        Gist {
            expansions,
            name: renames.then_some(reading.name),
            description,
            confidence: reading.confidence,
            expanded_words: reading.expanded_words,
        }
    }
}

#[async_trait]
impl ToolTransformer for RuleTransformer {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn priority(&self) -> i32 {
        Self::PRIORITY
    }

    async fn transform(&self, tools: &[Tool], context: &ToolContext) -> Result<Vec<Answer>, TransformError> {
        Ok(self.answers_from(tools, &context.source))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer_for(tool: Tool) -> Option<Answer> {
        RuleTransformer::new().answers(&[tool]).pop()
    }

    #[test]
    fn seed_example_is_enhanced() {
        let answer =
            answer_for(Tool::new("gt_usr").with_description("gets user").with_input_schema(json!({"type": "object"})))
                .unwrap();
        let tool = answer.patch.applied_to(&Tool::new("gt_usr"));
        assert_eq!(tool.name, "get_user");
        assert_eq!(tool.description.as_deref(), Some("Get a user."));
        assert_eq!(answer.inferred, ["description"]);
        assert_eq!(answer.confidence, INFERRED_DESCRIPTION);
        assert_eq!(answer.category.as_deref(), Some("user"));
    }

    #[test]
    fn good_tool_keeps_its_definition() {
        let tool = Tool::new("get_user")
            .with_description("Retrieve a user by their ID or email address")
            .with_input_schema(json!({"type": "object", "properties": {"id": {"type": "string"}}}));
        let answer = answer_for(tool.clone()).unwrap();
        assert!(answer.patch.is_empty(), "a good tool is only categorized");
        assert_eq!(answer.confidence, 1.0);
    }

    #[test]
    fn one_abbreviation_is_spelled_out_one_way_in_one_list() {
        // Alone, `gen_docs` reads `gen` from its own description, as "generation".
        let tools: Vec<Tool> = [
            ("gen_report", "Generate a report for the team."),
            ("gen_docs", "Documentation generation for the project."),
            ("gen_tests", "Generate tests for a module."),
        ]
        .into_iter()
        .map(|(name, description)| {
            Tool::new(name).with_description(description).with_input_schema(json!({"type": "object", "properties": {}}))
        })
        .collect();
        let names: Vec<String> = RuleTransformer::new()
            .answers(&tools)
            .into_iter()
            .map(|answer| answer.patch.name.unwrap_or_default())
            .collect();
        assert_eq!(names, ["generate_report", "generate_docs", "generate_tests"]);
    }

    #[test]
    fn compounds_people_read_as_one_word_keep_their_names() {
        let rules = RuleTransformer::new();
        let tools: Vec<Tool> = ["start_codegen_session", "get_codegen_session", "readme_update", "list_webhooks"]
            .into_iter()
            .map(|name| Tool::new(name).with_input_schema(json!({"type": "object", "properties": {}})))
            .collect();
        for answer in rules.answers(&tools) {
            assert_eq!(answer.patch.name, None, "{} is renamed", tools[answer.index].name);
        }
    }

    fn renames(tools: &[(&str, &str)]) -> Vec<Option<String>> {
        let tools: Vec<Tool> = tools
            .iter()
            .map(|(name, description)| {
                Tool::new(*name)
                    .with_description(*description)
                    .with_input_schema(json!({"type": "object", "properties": {}}))
            })
            .collect();
        let mut names = vec![None; tools.len()];
        for answer in RuleTransformer::new().answers(&tools) {
            names[answer.index] = answer.patch.name;
        }
        names
    }

    #[test]
    fn a_word_the_list_uses_throughout_is_its_own_and_stays() {
        // Alone, `open_sim` reads `sim` from its description, as "simulator".
        assert_eq!(renames(&[("open_sim", "Opens the iOS Simulator app.")]), [Some("open_simulator".to_owned())]);
        let plots = [
            ("pl_pca", "Scatter plot in PCA coordinates."),
            ("pl_umap", "UMAP scatter plot of the cells."),
            ("pl_violin", "Plot a violin plot of one or more variables."),
        ];
        assert_eq!(renames(&plots), [None, None, None]);
        // What the dictionary calls cryptic is spelled out however many names use it.
        let users = [("gt_usr", "gets user"), ("del_usr", "deletes user"), ("upd_usr", "updates user")];
        assert_eq!(
            renames(&users),
            [Some("get_user".to_owned()), Some("delete_user".to_owned()), Some("update_user".to_owned())]
        );
    }

    #[test]
    fn a_short_form_people_read_well_is_not_spelled_out() {
        // The example: `npmDeps` is read as it is written.
        let tools = [
            ("npmDeps", "List the npm dependencies of a package."),
            ("list_dependencies", "List the dependencies of the project."),
        ];
        assert_eq!(renames(&tools), [None, None]);
    }

    fn answers_for(tools: &[Tool], source: &str) -> Vec<Answer> {
        RuleTransformer::new().answers_from(tools, source)
    }

    fn expansion(word: &str, expansion: &str, evidence: &str) -> Expansion {
        Expansion { word: word.into(), expansion: expansion.into(), evidence: evidence.into() }
    }

    #[test]
    fn the_tools_own_words_spell_out_its_name_and_say_so() {
        let tool = Tool::new("get_acct_txns")
            .with_description("Lists the transactions of an account between two dates.")
            .with_input_schema(json!({"type": "object", "properties": {}}));
        let answer = answers_for(&[tool], "").pop().unwrap();
        assert_eq!(answer.patch.name.as_deref(), Some("get_account_transactions"));
        assert_eq!(
            answer.expansions,
            [expansion("acct", "account", "the description"), expansion("txns", "transactions", "the description")]
        );
    }

    fn tool(name: &str, description: &str, properties: serde_json::Value) -> Tool {
        let tool = Tool::new(name).with_input_schema(json!({"type": "object", "properties": properties}));
        if description.is_empty() { tool } else { tool.with_description(description) }
    }

    fn renamed(tools: &[Tool], source: &str) -> Vec<(Option<String>, Vec<Expansion>)> {
        let mut out = vec![(None, Vec::new()); tools.len()];
        for answer in answers_for(tools, source) {
            out[answer.index] = (answer.patch.name, answer.expansions);
        }
        out
    }

    #[test]
    fn parameters_and_siblings_are_context_too() {
        let listing = [tool("get_inv", "", json!({"invoice_id": {"type": "string"}}))];
        assert_eq!(
            renamed(&listing, ""),
            [(Some("get_invoice".into()), vec![expansion("inv", "invoice", "parameter invoice_id")])]
        );
        let listing = [tool("cancel_subscr", "", json!({})), tool("create_subscription", "", json!({}))];
        assert_eq!(
            renamed(&listing, "")[0],
            (
                Some("cancel_subscription".into()),
                vec![expansion("subscr", "subscription", "sibling create_subscription")]
            )
        );
    }

    #[test]
    fn what_general_knowledge_or_chance_says_does_not_rename() {
        // A sibling's word a token only skeletons is no evidence: `btc` is not "batch".
        let listing = [tool("get_btc_price", "", json!({})), tool("batch_transfer", "", json!({}))];
        assert_eq!(renamed(&listing, "")[0].0, None);
        // The source's name reads a word but does not rename: `lint` does not know it.
        let listing = [tool("list_cal_events", "", json!({}))];
        assert_eq!(renamed(&listing, "google-calendar")[0].0, None);
        let reading = RuleTransformer::new().read_names_from(&listing, "google-calendar").pop().unwrap();
        assert_eq!(reading.readings, [expansion("cal", "calendar", "the source's name")]);
        // Only the few contractions code writes with an `x` stand for "trans...".
        let listing = [
            tool("export_xl", "Exports a sheet; translates the headers.", json!({})),
            tool("send_txn", "Sends a signed transaction.", json!({})),
        ];
        let names: Vec<_> = renamed(&listing, "").into_iter().map(|(name, _)| name).collect();
        assert_eq!(names, [None, Some("send_transaction".into())]);
        // A brand name cut at a chance word stays whole.
        for name in ["delphi_query", "colbert_search", "gensim_train"] {
            assert_eq!(renamed(&[tool(name, "", json!({}))], "")[0].0, None, "{name}");
        }
    }

    #[test]
    fn the_tools_own_words_beat_the_dictionary() {
        let listing = [tool("get_cnt", "Returns the contents of a file.", json!({}))];
        assert_eq!(renamed(&listing, "")[0].0.as_deref(), Some("get_content"));
    }

    #[test]
    fn a_guess_from_general_knowledge_does_not_outvote_a_tools_own_words() {
        let listing = [tool("get_inv", "", json!({})), tool("void_inv", "Voids an invoice.", json!({}))];
        let out = renamed(&listing, "");
        assert_eq!(out[1], (Some("void_invoice".into()), vec![expansion("inv", "invoice", "the description")]));
        assert_eq!(
            out[0],
            (Some("get_invoice".into()), vec![expansion("inv", "invoice", "the listing, as void_inv reads it")])
        );
    }

    #[test]
    fn an_english_word_is_spelled_out_only_when_its_tool_and_real_code_agree() {
        // `add` in "Adds an item" is the word itself, whatever a sibling says.
        let listing = [
            tool("add_item", "Adds an item to the cart.", json!({})),
            tool("update_address", "Updates the address.", json!({})),
        ];
        assert_eq!(renamed(&listing, "")[0].0, None);
    }

    #[test]
    fn an_acronym_the_description_spells_out_stays_and_is_read() {
        let tool = Tool::new("get_ttl").with_description("Returns the time to live of a key.");
        let reading = RuleTransformer::new().read_names(&[tool]).pop().unwrap();
        assert_eq!(reading.name, "get_ttl");
        assert_eq!(reading.expanded_words, ["get", "time", "to", "live"]);
    }

    /// Acronyms name things: initials are not read off the sentence's verb ("Gets a ticket" is
    /// no spelling out of `gt`), which wrote "Gets ticket ticket." for `gt_tkt`.
    #[test]
    fn initials_are_not_read_off_the_verb_of_the_description() {
        let tool = Tool::new("gt_tkt").with_description("Gets a ticket.");
        let reading = RuleTransformer::new().read_names(&[tool]).pop().unwrap();
        assert_eq!(reading.name, "get_ticket");
        assert_eq!(reading.expanded_words, ["get", "ticket"]);
        let tool = Tool::new("gt_usr").with_description("Gets a ticket.");
        let reading = RuleTransformer::new().read_names(&[tool]).pop().unwrap();
        assert_eq!(reading.expanded_words, ["get", "user"], "not \"gets ticket\" either");
        // Words that are verbs as well name things past the sentence's verb.
        for (name, description, read) in [
            ("get_rps", "Returns requests per second served.", &["get", "requests", "per", "second"][..]),
            ("lb_state", "Load balancer state of a pool.", &["load", "balancer", "state"]),
        ] {
            let tool = Tool::new(name).with_description(description);
            let reading = RuleTransformer::new().read_names(&[tool]).pop().unwrap();
            assert_eq!(&reading.expanded_words[..read.len()], read, "{name}");
        }
    }

    #[test]
    fn hostile_names_and_contexts_are_read_within_bounds() {
        let long = "a".repeat(300);
        let huge_description = "account ".repeat(100_000);
        let many_parameters: serde_json::Map<String, serde_json::Value> =
            (0..10_000).map(|i| (format!("p{i}_acct"), json!({"type": "string", "description": "account"}))).collect();
        let tools = [
            Tool::new(long.as_str()),
            Tool::new("get_acct").with_description(huge_description),
            Tool::new("üsr_ñame_☃").with_input_schema(json!({"type": "object", "properties": many_parameters})),
            Tool::new("x".repeat(32) + "_" + &"q".repeat(31)),
        ];
        let readings = RuleTransformer::new().read_names(&tools);
        assert_eq!(readings[0].name, long, "a name over the limit is not read");
        // Initials are looked for greedily: a description of little words costs a pass, not
        // a search of every way to skip them.
        let little = format!("ax{}", " a".repeat(400));
        let spaced = [Tool::new("get_Aaaaaaab").with_description(little)];
        assert_eq!(RuleTransformer::new().read_names(&spaced)[0].name, "get_Aaaaaaab");
        assert_eq!(readings[1].name, "get_account");
        assert_eq!(readings[2].name, "üsr_ñame_☃");
        assert_eq!(readings[3].name, tools[3].name);
    }

    #[test]
    fn tool_with_nothing_to_improve_is_declined() {
        let tool = Tool::new("echo")
            .with_description("Echoes back the input")
            .with_input_schema(json!({"type": "object", "properties": {}}));
        assert_eq!(answer_for(tool), None);
    }

    #[test]
    fn missing_schema_is_inferred_only_where_near_certain() {
        let answer = answer_for(Tool::new("get_user_by_email").with_description("Look a user up")).unwrap();
        assert_eq!(answer.patch.input_schema.unwrap().unwrap().to_value()["required"], json!(["email"]));
        assert_eq!(answer.confidence, INFERRED_SCHEMA);
        let answer = answer_for(Tool::new("ping").with_description("Check the server answers")).unwrap();
        assert_eq!(answer.patch.input_schema, Some(Some(Json::from(schema::empty_object()))));
    }

    #[test]
    fn nonstandard_schema_is_repaired() {
        let tool =
            Tool::new("math.sum").with_description("Compute the sum of all numbers in a list.").with_input_schema(
                json!({"type": "dict", "properties": {"numbers": {"type": "array", "items": {"type": "float"}}}}),
            );
        let answer = answer_for(tool).unwrap();
        let schema = answer.patch.input_schema.unwrap().unwrap().to_value();
        assert!(schema::is_valid(&schema));
        assert_eq!(schema["properties"]["numbers"]["items"]["type"], "number");
    }

    /// Regression (probe): `"inputSchema": false` accepts no arguments at all; it became the
    /// accept-anything object schema at confidence 0.9, not marked inferred.
    #[test]
    fn a_false_schema_stays_a_schema_that_accepts_nothing() {
        let tool = Tool::new("get_user").with_description("Look a user up by id").with_input_schema(json!(false));
        let answer = answer_for(tool).unwrap();
        let schema = answer.patch.input_schema.unwrap().unwrap().to_value();
        assert!(schema::is_valid(&schema), "{schema}");
        assert_eq!(schema["type"], "object");
        let validator = jsonschema::validator_for(&schema).unwrap();
        for arguments in [json!({}), json!({"id": "1"})] {
            assert!(!validator.is_valid(&arguments), "{schema} accepts {arguments}");
        }
        assert!(answer.inferred.is_empty(), "the meaning is kept, nothing is guessed");
    }

    /// A root that is no schema at all (`"inputSchema": "string"`) is replaced by a guess, and
    /// the answer says so: inferred, at the confidence of an inferred schema.
    #[test]
    fn a_root_that_is_no_schema_is_replaced_as_a_guess() {
        for junk in [json!("string"), json!(42), json!(["a"]), json!(null)] {
            let tool = Tool::new("get_user").with_description("Look a user up by id").with_input_schema(junk.clone());
            let answer = answer_for(tool).unwrap();
            let schema = answer.patch.input_schema.unwrap().unwrap().to_value();
            assert!(schema::is_valid(&schema), "{junk}: {schema}");
            assert_eq!(answer.inferred, ["inputSchema"], "{junk}");
            assert!(answer.confidence <= INFERRED_SCHEMA, "{junk}: {}", answer.confidence);
        }
    }
}
