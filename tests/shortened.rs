//! Real MCP tool names shortened the way developers shorten words, read back by the rules:
//!
//! ```sh
//! cargo test -p tool-mediator-tests --test shortened -- --nocapture
//! ```
//!
//! Each name of `mcp_tool_names_toolsdk.jsonl` that has a word some published list abbreviates
//! (`get_account_balance`) is shortened at that word (`get_acct_balance`), in its own listing,
//! keeping its description and its siblings' names as context, and the rules are asked to name
//! it: a name is recovered when they name it back exactly. The headline is the issue's measure:
//! one name shortened at a time, its description and its siblings' names as they are. A stricter
//! figure is printed and kept too: every name of a listing shortened at once, as a developer who
//! shortens a word does in every name, so siblings no longer spell it out. The pairs come
//! from lists written by others, not from the SCANL data nor from the rules' own dictionary
//! (`tests/data/eval/README.md` says where each comes from).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::Instant;

use tool_mediator::llm::{LlmClient, LlmTransformer, Prompts, Provider};
use tool_mediator::{
    Answer, Mediator, RuleTransformer, SourceType, Tool, ToolContext, ToolPatch, ToolTransformer, TransformError,
    schema,
};
use tool_mediator_tests::shortening::{Pairs, SOURCES, Shortening, shorten};
use tool_mediator_tests::{eval_dir, json_lines, percent, root, spread};

/// A third list, measured alone and in neither figure: Microsoft's abbreviations for AL code
/// (Business Central), business words (`Qty`, `Pmt`, `Inv`) and some of that platform's own:
/// `Lt` for "list" is more than a quarter of the names it shortens.
const BUSINESS: (&str, &str) = ("microsoft/alguidelines", "abbrev_pairs_alguidelines.jsonl");

/// Every shortenable name of a listing shortened at once, as a developer who writes `coll` writes
/// it in every name: stricter than the issue's measure. Measured when this was written: 75.6%
/// (799 of 1,057) before the rules read context, then 79.0% (835).
const RECOVERED_FLOOR: f64 = 77.0;

/// The headline, the issue's measure with its target of 80%: the same names shortened one at a
/// time, their siblings as they are (a sibling that spells the word out helps). Measured when
/// this was written: 85.1% (899 of 1,057) before the rules read context, then 90.8% (960).
const ONE_AT_A_TIME_FLOOR: f64 = 88.0;

/// The short forms the rules keep in names by design (the dictionary's `read`, `keep` and
/// `acronyms`: repo, config, max, dir): a name shortened to one of them is not a miss.
fn conventional_short_forms() -> HashSet<String> {
    let path = root().join("mediator/src/rules/abbreviations.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let dictionary: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut forms: HashSet<String> = dictionary["read"].as_object().unwrap().keys().cloned().collect();
    for section in ["keep", "acronyms"] {
        forms.extend(dictionary[section].as_array().unwrap().iter().map(|word| word.as_str().unwrap().to_owned()));
    }
    forms
}

/// What the rules rename each tool of one listing to (`None`: they keep its name).
fn renames(rules: &RuleTransformer, tools: &[Tool]) -> Vec<Option<String>> {
    let mut names = vec![None; tools.len()];
    for answer in rules.answers(tools) {
        names[answer.index] = answer.patch.name;
    }
    names
}

/// The toolsdk tools, one listing per package, each with its description and an empty object
/// schema, as `toolsdk_names_harm_survey` reads them.
fn listings(path: &Path) -> Vec<Vec<Tool>> {
    let mut by_package: BTreeMap<String, Vec<Tool>> = BTreeMap::new();
    for row in json_lines(path) {
        let mut tool = Tool::new(row["name"].as_str().unwrap()).with_input_schema(schema::empty_object());
        tool.description = row["description"].as_str().map(str::to_owned);
        by_package.entry(row["package"].as_str().unwrap_or("").to_owned()).or_default().push(tool);
    }
    by_package.into_values().collect()
}

#[derive(Default)]
struct Outcome {
    /// Names with a word some list abbreviates.
    shortenable: usize,
    /// ...that the rules rename already, unshortened: not round-trippable, not counted.
    renamed_unshortened: usize,
    /// ...shortened to a form the dictionary keeps in names by design: not counted.
    conventional: usize,
    conventional_forms: BTreeMap<String, usize>,
    /// ...whose shortened name another tool of the listing already has: not counted.
    collisions: usize,
    shortened: usize,
    recovered: usize,
    /// ...renamed, but not to the original: worse than a miss that leaves the short name.
    renamed_wrong: usize,
    /// `shortened -> got (expected original)` of those.
    wrong: Vec<String>,
    /// (abbreviation, expansion) -> (shortened, recovered).
    per_pair: BTreeMap<(String, String), (usize, usize)>,
    /// `shortened -> got (expected original)`, in listing order.
    misses: Vec<String>,
    /// (listing, index in it) of each miss.
    missed_at: HashSet<(usize, usize)>,
}

impl Outcome {
    fn score(&mut self, at: (usize, usize), shortening: &Shortening, original: &str, got: Option<&str>) {
        self.shortened += 1;
        let entry = self.per_pair.entry((shortening.abbreviation.clone(), shortening.expansion.clone())).or_default();
        entry.0 += 1;
        if got == Some(original) {
            self.recovered += 1;
            entry.1 += 1;
        } else {
            if let Some(got) = got {
                self.renamed_wrong += 1;
                self.wrong.push(format!("{} -> {got} ({original})", shortening.shortened));
            }
            self.missed_at.insert(at);
            self.misses.push(format!(
                "{} -> {} ({original})",
                shortening.shortened,
                got.unwrap_or(&shortening.shortened)
            ));
        }
    }

    fn figure(&self) -> String {
        format!(
            "{} of {} recovered exactly ({:.1}%), {} renamed to another name",
            self.recovered,
            self.shortened,
            percent(self.recovered, self.shortened),
            self.renamed_wrong
        )
    }
}

/// The names of each listing that the measure shortens: index in the listing -> shortening.
/// Skipped (and counted in `outcome`): names the rules rename unshortened, shortenings to a
/// conventional short form, and shortened names that another tool of the listing has.
fn candidates(
    rules: &RuleTransformer,
    listing: &[Tool],
    pairs: &Pairs,
    conventional: &HashSet<String>,
    outcome: &mut Outcome,
) -> Vec<(usize, Shortening)> {
    let unshortened = renames(rules, listing);
    let mut taken: HashSet<String> = listing.iter().map(|tool| tool.name.clone()).collect();
    let mut chosen = Vec::new();
    for (index, tool) in listing.iter().enumerate() {
        let Some(shortening) = shorten(&tool.name, pairs) else { continue };
        outcome.shortenable += 1;
        if unshortened[index].is_some() {
            outcome.renamed_unshortened += 1;
        } else if conventional.contains(&shortening.abbreviation) {
            outcome.conventional += 1;
            *outcome.conventional_forms.entry(shortening.abbreviation.clone()).or_default() += 1;
        } else if !taken.insert(shortening.shortened.clone()) {
            outcome.collisions += 1;
        } else {
            chosen.push((index, shortening));
        }
    }
    chosen
}

fn with_names(listing: &[Tool], shortenings: &[(usize, Shortening)]) -> Vec<Tool> {
    let mut tools = listing.to_vec();
    for (index, shortening) in shortenings {
        tools[*index].name = shortening.shortened.clone();
    }
    tools
}

/// Every shortenable name of each listing shortened at once, one run of the rules per listing:
/// a shortened name's siblings are shortened too.
fn all_at_once(listings: &[Vec<Tool>], pairs: &Pairs, conventional: &HashSet<String>) -> Outcome {
    let rules = RuleTransformer::new();
    let mut outcome = Outcome::default();
    for (at, listing) in listings.iter().enumerate() {
        let chosen = candidates(&rules, listing, pairs, conventional, &mut outcome);
        if chosen.is_empty() {
            continue;
        }
        let got = renames(&rules, &with_names(listing, &chosen));
        for (index, shortening) in &chosen {
            outcome.score((at, *index), shortening, &listing[*index].name, got[*index].as_deref());
        }
    }
    outcome
}

/// One shortened name at a time, its siblings as they are: one run of the rules per name.
fn one_at_a_time(listings: &[Vec<Tool>], pairs: &Pairs, conventional: &HashSet<String>) -> Outcome {
    let rules = RuleTransformer::new();
    let mut outcome = Outcome::default();
    for (at, listing) in listings.iter().enumerate() {
        for (index, shortening) in candidates(&rules, listing, pairs, conventional, &mut outcome) {
            let got = renames(&rules, &with_names(listing, std::slice::from_ref(&(index, shortening.clone()))));
            outcome.score((at, index), &shortening, &listing[index].name, got[index].as_deref());
        }
    }
    outcome
}

#[test]
fn shortened_toolsdk_names_are_recovered() {
    let listings = listings(&eval_dir().join("mcp_tool_names_toolsdk.jsonl"));
    let names: usize = listings.iter().map(Vec::len).sum();
    let conventional = conventional_short_forms();
    let files: Vec<&str> = SOURCES.iter().map(|(_, file)| *file).collect();
    let pairs = Pairs::read(&files);

    let started = Instant::now();
    let batch = all_at_once(&listings, &pairs, &conventional);
    let batch_time = started.elapsed();
    let started = Instant::now();
    let single = one_at_a_time(&listings, &pairs, &conventional);
    let single_time = started.elapsed();

    let mut report = format!(
        "shortened toolsdk names: {} pairs from {} ({} words to shorten); {names} names in {} listings\n",
        pairs.rows,
        SOURCES.iter().map(|(source, _)| *source).collect::<Vec<_>>().join(" + "),
        pairs.by_expansion.len(),
        listings.len(),
    );
    report += &format!(
        "  {} names have a word to shorten; not counted: {} the rules rename already, {} shortened to a \
         form the dictionary keeps ({}), {} that would take a sibling's name\n",
        batch.shortenable,
        batch.renamed_unshortened,
        batch.conventional,
        top(&batch.conventional_forms, 12),
        batch.collisions,
    );
    report += &format!(
        "  all of a listing's names shortened at once (stricter): {} [{:.1}s]\n",
        batch.figure(),
        batch_time.as_secs_f64()
    );
    report += &format!(
        "  one name at a time, siblings as they are (headline): {} [{:.1}s]; of the misses above, {} are recovered \
         this way and {} are missed this way only\n",
        single.figure(),
        single_time.as_secs_f64(),
        batch.missed_at.difference(&single.missed_at).count(),
        single.missed_at.difference(&batch.missed_at).count(),
    );
    report += "  each list alone (all at once):\n";
    for (source, file) in SOURCES.iter().chain([&BUSINESS]) {
        let alone = Pairs::read(&[file]);
        let outcome = all_at_once(&listings, &alone, &conventional);
        report += &format!(
            "    {source} ({} pairs): {}, {} kept by the dictionary{}\n",
            alone.rows,
            outcome.figure(),
            outcome.conventional,
            if *source == BUSINESS.0 { "; in neither figure" } else { "" },
        );
    }
    let mut by_misses: Vec<_> = batch.per_pair.iter().collect();
    by_misses.sort_by_key(|((abbreviation, _), (shortened, recovered))| {
        (std::cmp::Reverse(shortened - recovered), abbreviation.clone())
    });
    report += "  recovered per abbreviation, most missed first:\n";
    for ((abbreviation, expansion), (shortened, recovered)) in by_misses.iter().take(25) {
        report += &format!("    {abbreviation} -> {expansion}: {recovered} of {shortened}\n");
    }
    report += &format!("  renamed to another name, one at a time: {}\n", single.wrong.join(", "));
    report += &format!("  {} misses; a sample, shortened -> got (expected original):\n", batch.misses.len());
    for miss in spread(&batch.misses, 25) {
        report += &format!("    {miss}\n");
    }
    println!("{report}");

    assert!(batch.shortened > 0, "no name was shortened");
    let recovered = percent(batch.recovered, batch.shortened);
    assert!(recovered >= RECOVERED_FLOOR, "shortened names recovered (all at once) fell to {recovered:.1}%");
    let recovered = percent(single.recovered, single.shortened);
    assert!(recovered >= ONE_AT_A_TIME_FLOOR, "shortened names recovered (one at a time) fell to {recovered:.1}%");
}

/// Answers what it was given: a transformer's answers, recorded, replayed in a chain, so that
/// the chain's choice between them is measured without asking again.
struct Replay {
    name: &'static str,
    priority: i32,
    answers: Vec<Answer>,
}

#[async_trait::async_trait]
impl ToolTransformer for Replay {
    fn name(&self) -> &str {
        self.name
    }

    fn priority(&self) -> i32 {
        self.priority
    }

    async fn transform(&self, _: &[Tool], _: &ToolContext) -> Result<Vec<Answer>, TransformError> {
        Ok(self.answers.clone())
    }
}

/// The name the chain gives one tool, from the rules' answer and a model's, each for that tool
/// alone (index 0), as the chain runs them: the rules first, the model after.
async fn chained(tool: &Tool, rules: Option<Answer>, model: Option<Answer>) -> String {
    let replay =
        |name, priority, answer: Option<Answer>| Replay { name, priority, answers: answer.into_iter().collect() };
    let mediator = Mediator::builder()
        .transformer(replay("rules", RuleTransformer::PRIORITY, rules))
        .transformer(replay("llm", LlmTransformer::PRIORITY, model))
        .build();
    let out = mediator.enhance(vec![tool.clone()], &ToolContext::new("toolsdk", SourceType::Api)).await;
    out[0].tool.name.clone()
}

/// The rules' answer for the tool at `index` of `listing`, re-indexed as the tool alone.
fn rules_answer(rules: &RuleTransformer, listing: &[Tool], index: usize) -> Option<Answer> {
    rules.answers(listing).into_iter().find(|answer| answer.index == index).map(|mut answer| {
        answer.index = 0;
        answer
    })
}

/// A model that writes a description for every tool and never names one keeps the rules'
/// renames: the chain takes the model's answer (a description makes a weak tool stronger) and
/// the name of the rules'. Before the two were merged, such a model took the rules' renames
/// on these names from 987 to 435 (the issue's figure, on 2,000 tools).
#[tokio::test]
async fn a_model_that_keeps_the_name_keeps_the_rules_rename() {
    let listings = listings(&eval_dir().join("mcp_tool_names_toolsdk.jsonl"));
    let conventional = conventional_short_forms();
    let files: Vec<&str> = SOURCES.iter().map(|(_, file)| *file).collect();
    let pairs = Pairs::read(&files);
    let rules = RuleTransformer::new();
    let (mut renamed_by_rules, mut kept, mut recovered_by_rules, mut recovered_by_chain) = (0, 0, 0, 0);
    let mut outcome = Outcome::default();
    for listing in &listings {
        for (index, shortening) in candidates(&rules, listing, &pairs, &conventional, &mut outcome) {
            let shortened = with_names(listing, std::slice::from_ref(&(index, shortening.clone())));
            let tool = &shortened[index];
            let by_rules = rules_answer(&rules, &shortened, index);
            let rules_name = by_rules.as_ref().and_then(|answer| answer.patch.name.clone());
            let mut describing = Answer::new(0, ToolPatch::default(), 0.9);
            describing.patch.description = Some(Some(format!("Described by a model: {}.", tool.name)));
            describing.model = Some("describer".into());
            let chain_name = chained(tool, by_rules, Some(describing)).await;
            renamed_by_rules += usize::from(rules_name.is_some());
            kept += usize::from(rules_name.as_deref() == Some(chain_name.as_str()));
            recovered_by_rules += usize::from(rules_name.as_deref() == Some(listing[index].name.as_str()));
            recovered_by_chain += usize::from(chain_name == listing[index].name);
        }
    }
    println!(
        "a model that never names: the rules' renames kept {kept} of {renamed_by_rules}; recovered {recovered_by_chain} \
         (the rules alone {recovered_by_rules})"
    );
    assert!(renamed_by_rules > 500, "the measure has names to rename: {renamed_by_rules}");
    assert_eq!(kept, renamed_by_rules, "a model that keeps the name loses none of the rules' renames");
    assert_eq!(recovered_by_chain, recovered_by_rules);
}

/// The shortened names read back by the real language model (`TOOL_MEDIATOR_MODEL=1`; on demand,
/// about ten minutes on two cores):
///
/// ```sh
/// TOOL_MEDIATOR_MODEL=1 cargo test -p tool-mediator-tests --test shortened -- --ignored --nocapture
/// ```
///
/// A sample of the one-at-a-time names, spread over the listings: each named back by the rules
/// (in its listing, as above), by the model alone (the tool with its description, eight tools to
/// a request), and by the chain (both answers, the chain choosing as it does).
#[test]
#[ignore = "asks the real model: TOOL_MEDIATOR_MODEL=1, --ignored"]
fn shortened_names_read_back_by_the_real_model() {
    let Some(model) = tool_mediator_tests::real_model() else { return };
    // Held for the whole test, outside the runtime: one test asks the model at a time.
    let _turn = model.turn();
    tokio::runtime::Runtime::new().unwrap().block_on(read_back_by(model));
}

async fn read_back_by(model: &tool_mediator_tests::RealModel) {
    const SAMPLE: usize = 48;
    let listings = listings(&eval_dir().join("mcp_tool_names_toolsdk.jsonl"));
    let conventional = conventional_short_forms();
    let files: Vec<&str> = SOURCES.iter().map(|(_, file)| *file).collect();
    let pairs = Pairs::read(&files);
    let rules = RuleTransformer::new();
    let mut outcome = Outcome::default();
    let mut all = Vec::new();
    for listing in &listings {
        for (index, shortening) in candidates(&rules, listing, &pairs, &conventional, &mut outcome) {
            let shortened = with_names(listing, std::slice::from_ref(&(index, shortening)));
            all.push((listing[index].name.clone(), shortened[index].clone(), rules_answer(&rules, &shortened, index)));
        }
    }
    let sample = spread(&all, SAMPLE);
    let client = LlmClient::new(Provider::OpenAiCompatible, model.name, Some(model.url.clone()), None);
    let llm = std::sync::Arc::new(
        LlmTransformer::new(client, Prompts::default()).batching(8, 1).deadline(std::time::Duration::from_secs(120)),
    );
    let (kept, cache) = tool_mediator_tests::kept_answers("tool-mediator-model-eval");
    let asking = tool_mediator::cache::CachedTransformer::new(llm.clone(), cache);
    let tools: Vec<Tool> = sample.iter().map(|(_, tool, _)| tool.clone()).collect();
    let started = Instant::now();
    let answers = asking.transform(&tools, &ToolContext::new("toolsdk", SourceType::Api)).await.unwrap();
    let seconds = started.elapsed().as_secs_f64();
    let (mut by_rules, mut by_model, mut by_chain, mut model_wrong, mut chain_wrong) = (0, 0, 0, 0, 0);
    let mut lines = Vec::new();
    for (position, (original, tool, rules_said)) in sample.iter().enumerate() {
        let model_said = answers.iter().find(|answer| answer.index == position).cloned().map(|mut answer| {
            answer.index = 0;
            answer
        });
        let rules_name = rules_said.as_ref().and_then(|answer| answer.patch.name.clone()).unwrap_or(tool.name.clone());
        let model_name = model_said.as_ref().and_then(|answer| answer.patch.name.clone()).unwrap_or(tool.name.clone());
        let chain_name = chained(tool, rules_said.clone(), model_said).await;
        by_rules += usize::from(rules_name == *original);
        by_model += usize::from(model_name == *original);
        by_chain += usize::from(chain_name == *original);
        model_wrong += usize::from(model_name != *original && model_name != tool.name);
        chain_wrong += usize::from(chain_name != *original && chain_name != tool.name);
        lines.push(format!(
            "    {} -> rules {rules_name}, model {model_name}, chain {chain_name} ({original})",
            tool.name
        ));
    }
    let usage = llm.usage();
    println!(
        "shortened names read back, a sample of {} ({}):\n  the rules alone: {by_rules} recovered exactly\n  \
         the model alone: {by_model} recovered exactly, {model_wrong} renamed to another name\n  the chain: \
         {by_chain} recovered exactly, {chain_wrong} renamed to another name\n  the model: {} requests ({} failed), {} \
         input and {} output tokens, {seconds:.0} s ({:.1} s a tool; none when kept from an earlier run in {})\n{}",
        sample.len(),
        model.name,
        usage.requests,
        usage.failed_requests,
        usage.input_tokens,
        usage.output_tokens,
        seconds / sample.len() as f64,
        kept.display(),
        lines.join("\n")
    );
    assert!(by_chain >= by_rules, "the model costs the chain names the rules recover: {by_chain} < {by_rules}");
}

/// The most frequent keys of `counts`, `key count` each.
fn top(counts: &BTreeMap<String, usize>, n: usize) -> String {
    let mut sorted: Vec<_> = counts.iter().collect();
    sorted.sort_by_key(|(key, count)| (std::cmp::Reverse(**count), (*key).clone()));
    let shown: Vec<String> = sorted.iter().take(n).map(|(key, count)| format!("{key} {count}")).collect();
    format!("{}{}", shown.join(", "), if sorted.len() > n { ", ..." } else { "" })
}

#[test]
fn a_name_is_shortened_at_its_first_listed_word_in_its_own_case() {
    let pairs = Pairs {
        rows: 2,
        by_expansion: [("account", "acct"), ("balance", "bal")]
            .into_iter()
            .map(|(word, abbreviation)| (word.to_owned(), abbreviation.to_owned()))
            .collect(),
    };
    let shortened = |name: &str| shorten(name, &pairs).map(|shortening| shortening.shortened);
    assert_eq!(shortened("get_account_balance").as_deref(), Some("get_acct_balance"));
    assert_eq!(shortened("getAccountBalance").as_deref(), Some("getAcctBalance"));
    assert_eq!(shortened("get-balance-of-account").as_deref(), Some("get-bal-of-account"));
    assert_eq!(shortened("GET_ACCOUNT").as_deref(), Some("GET_ACCT"));
    assert_eq!(shortened("HTTPAccountV2").as_deref(), Some("HTTPAcctV2"));
    assert_eq!(shortened("list_users"), None);
}
