//! The mediator: the transformer chain, and the invariants no transformer can break.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use tokio::sync::watch;

use crate::cache::LateAnswers;
use crate::weakness;
use serde_json::Value;
use tool_mediator_core::NameRules;
use tool_mediator_core::json::Json;
use tool_mediator_core::schema::{self, Repair};
use tool_mediator_core::{Answer, Refused, ToolTransformer};
use tool_mediator_core::{EnhancedTool, Tool, ToolContext};

/// Runs tools through a chain of transformers and enforces the invariants on what comes out.
///
/// # Order
///
/// Transformers run highest [`priority`](ToolTransformer::priority) first; equal priorities run
/// in the order they were registered. The built-in ones: overrides (200), rules (100).
///
/// The chain decides per tool. Each transformer sees the tools no earlier transformer answered
/// with at least the acceptance confidence (0.5 unless set). When the chain ends, a tool takes
/// its accepted answer, else the most confident answer it got (the earlier one on a tie), else
/// it comes out as it came with `enhanced_by: "none"` and confidence 0. Answers below the
/// minimum confidence (0 unless set) are never used.
///
/// # Invariants
///
/// Whatever the transformers answer, [`Mediator::enhance`] returns one tool per input tool in
/// input order; output names are unique and valid under the [`NameRules`] (a rename that would
/// collide or be invalid is refused and the tool keeps its name); every input schema is valid
/// JSON Schema with an object root; `outputSchema`, `_meta`, unknown fields and the schema's
/// `$schema` and `$defs` pass through unchanged; a failing transformer's tools fall through.
/// Everything refused or repaired is reported as a [`ChainEvent`].
pub struct Mediator {
    chain: Box<[Arc<dyn ToolTransformer>]>,
    judge: Option<Arc<dyn crate::screen::SecondLook>>,
    names: NameRules,
    acceptance: f64,
    min_confidence: f64,
    known_valid: schema::KnownValid,
    changes: Option<ChainChanges>,
}

/// Hears when what a chain does changes under it: its override directories were read again, or
/// answers it asked for in the background arrived (see [`LateAnswers`]). A list it enhanced
/// before may read otherwise now.
#[derive(Debug, Clone)]
pub struct ChainChanges {
    overrides: Option<watch::Receiver<Arc<crate::overrides::OverrideSet>>>,
    answers: Option<watch::Receiver<u64>>,
}

impl ChainChanges {
    /// Waits for the next change; false when none can come any more.
    pub async fn changed(&mut self) -> bool {
        /// The next change `receiver` hears: false when it cannot hear one any more.
        async fn next<T>(receiver: &mut Option<watch::Receiver<T>>) -> bool {
            match receiver {
                Some(receiver) => receiver.changed().await.is_ok(),
                None => std::future::pending().await,
            }
        }
        while self.overrides.is_some() || self.answers.is_some() {
            tokio::select! {
                heard = next(&mut self.overrides) => match heard {
                    true => return true,
                    false => self.overrides = None,
                },
                heard = next(&mut self.answers) => match heard {
                    true => return true,
                    false => self.answers = None,
                },
            }
        }
        false
    }

    /// From now on: what changed before is in the chain already.
    fn mark_unchanged(&mut self) {
        if let Some(overrides) = &mut self.overrides {
            overrides.mark_unchanged();
        }
        if let Some(answers) = &mut self.answers {
            answers.mark_unchanged();
        }
    }

    fn is_empty(&self) -> bool {
        self.overrides.is_none() && self.answers.is_none()
    }
}

/// What a chain does at one moment, to tell later whether it changed since: the override set
/// it applies (equal only to itself: it holds it, so it is never mistaken for a later one) and
/// how many times answers arrived late.
#[derive(Debug, Clone)]
pub struct ChainVersion {
    overrides: Option<Arc<crate::overrides::OverrideSet>>,
    answers: u64,
}

impl PartialEq for ChainVersion {
    fn eq(&self, other: &ChainVersion) -> bool {
        let same_overrides = match (&self.overrides, &other.overrides) {
            (Some(these), Some(those)) => Arc::ptr_eq(these, those),
            (None, None) => true,
            _ => false,
        };
        same_overrides && self.answers == other.answers
    }
}

/// Builds a [`Mediator`]; register transformers in any order.
pub struct MediatorBuilder {
    transformers: Vec<Arc<dyn ToolTransformer>>,
    judge: Option<Arc<dyn crate::screen::SecondLook>>,
    names: NameRules,
    acceptance: f64,
    min_confidence: f64,
    changes: ChainChanges,
}

impl Default for MediatorBuilder {
    fn default() -> Self {
        MediatorBuilder {
            transformers: Vec::new(),
            judge: None,
            names: NameRules::MCP,
            acceptance: 0.5,
            min_confidence: 0.0,
            changes: ChainChanges { overrides: None, answers: None },
        }
    }
}

impl MediatorBuilder {
    pub fn transformer(mut self, transformer: impl ToolTransformer + 'static) -> Self {
        self.transformers.push(Arc::new(transformer));
        self
    }

    /// The curated overrides `live` read last, as a transformer; the mediator's
    /// [`Mediator::changes`] hears each set it reads.
    pub fn live_overrides(mut self, live: &crate::overrides::LiveOverrides) -> Self {
        self.changes.overrides = Some(live.subscribe());
        self.transformer(crate::overrides::OverrideTransformer::following(live))
    }

    /// The mediator's [`Mediator::changes`] hear each time `late` says that answers arrived
    /// (those of a transformer asked in the background, which is given `late` too).
    pub fn late_answers(mut self, late: &LateAnswers) -> Self {
        self.changes.answers = Some(late.heard());
        self
    }

    /// A second look (a language model's) at the tools the poisoning screen is unsure of.
    pub fn judge(mut self, judge: Arc<dyn crate::screen::SecondLook>) -> Self {
        self.judge = Some(judge);
        self
    }

    /// The names the consumer accepts. [`NameRules::MCP`] unless set.
    pub fn name_rules(mut self, names: NameRules) -> Self {
        self.names = names;
        self
    }

    /// An answer at least this confident ends the chain for its tool.
    pub fn acceptance(mut self, confidence: f64) -> Self {
        self.acceptance = confidence.clamp(0.0, 1.0);
        self
    }

    /// Answers below this confidence are never used. 0 (the default) uses every answer.
    pub fn min_confidence(mut self, confidence: f64) -> Self {
        self.min_confidence = confidence.clamp(0.0, 1.0);
        self
    }

    pub fn build(mut self) -> Mediator {
        // Stable: equal priorities keep registration order.
        self.transformers.sort_by_key(|transformer| std::cmp::Reverse(transformer.priority()));
        Mediator {
            chain: self.transformers.into_boxed_slice(),
            judge: self.judge,
            names: self.names,
            acceptance: self.acceptance,
            min_confidence: self.min_confidence,
            known_valid: schema::KnownValid::default(),
            changes: (!self.changes.is_empty()).then_some(self.changes),
        }
    }
}

/// What the chain refused, repaired or saw fail. None of these fails a run.
#[derive(Debug, Clone, PartialEq)]
pub enum ChainEvent {
    TransformerFailed {
        transformer: String,
        error: String,
    },
    AnswerRefused {
        transformer: String,
        tool: String,
        reason: String,
    },
    RenameRefused {
        transformer: String,
        tool: String,
        name: String,
        reason: String,
    },
    /// The source's own name was invalid or a duplicate, so the tool is exposed under `name`.
    NameRepaired {
        tool: String,
        name: String,
    },
    SchemaRepaired {
        tool: String,
        repairs: Vec<Repair>,
    },
}

impl fmt::Display for ChainEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainEvent::TransformerFailed { transformer, error } => {
                write!(f, "transformer `{transformer}` failed, its tools fall through: {error}")
            }
            ChainEvent::AnswerRefused { transformer, tool, reason } => {
                write!(f, "refused `{transformer}`'s answer for `{tool}`: {reason}")
            }
            ChainEvent::RenameRefused { transformer, tool, name, reason } => {
                write!(f, "refused `{transformer}`'s rename of `{tool}` to `{name}`: {reason}")
            }
            ChainEvent::NameRepaired { tool, name } => {
                write!(f, "source name `{tool}` exposed as `{name}`")
            }
            ChainEvent::SchemaRepaired { tool, repairs } => {
                write!(f, "repaired the input schema of `{tool}`:")?;
                for repair in repairs {
                    write!(f, " {} at `{}`;", repair.what, repair.pointer)?;
                }
                Ok(())
            }
        }
    }
}

/// The chain's output and what happened on the way.
#[derive(Debug, Clone)]
pub struct Enhancement {
    pub tools: Vec<EnhancedTool>,
    pub events: Vec<ChainEvent>,
}

/// An answer for one tool, in chain order among the tool's others.
struct Candidate {
    transformer: usize,
    answer: Answer,
    /// As confident as the chain accepts.
    acceptable: bool,
    /// Acceptable, and the tool it makes is not weak.
    strong: bool,
}

impl Mediator {
    pub fn builder() -> MediatorBuilder {
        MediatorBuilder::default()
    }

    /// The transformers in the order they run.
    pub fn transformers(&self) -> impl Iterator<Item = &dyn ToolTransformer> {
        self.chain.iter().map(|transformer| transformer.as_ref())
    }

    pub fn name_rules(&self) -> NameRules {
        self.names
    }

    /// Hears when what the chain does changes, if it can: a list enhanced before should be
    /// enhanced again.
    pub fn changes(&self) -> Option<ChainChanges> {
        // From now on: a change before is in the chain already.
        let mut changes = self.changes.clone()?;
        changes.mark_unchanged();
        Some(changes)
    }

    /// What the chain does now, when it can change (its override directories are followed, or
    /// answers it asked for in the background may arrive).
    pub fn version(&self) -> Option<ChainVersion> {
        self.changes.as_ref().map(|changes| ChainVersion {
            overrides: changes.overrides.as_ref().map(|overrides| overrides.borrow().clone()),
            answers: changes.answers.as_ref().map_or(0, |answers| *answers.borrow()),
        })
    }

    /// The second look at the tools the poisoning screen is unsure of, if any.
    pub fn judge(&self) -> Option<&dyn crate::screen::SecondLook> {
        self.judge.as_deref()
    }

    /// Runs `tools` through the chain; events go to `tracing`.
    pub async fn enhance(&self, tools: Vec<Tool>, context: &ToolContext) -> Vec<EnhancedTool> {
        let enhancement = self.enhance_with_report(tools, context).await;
        for event in &enhancement.events {
            tracing::warn!(source = %context.source, "{event}");
        }
        enhancement.tools
    }

    /// Runs `tools` through the chain and returns what happened beside the result.
    pub async fn enhance_with_report(&self, mut tools: Vec<Tool>, context: &ToolContext) -> Enhancement {
        let mut events = Vec::new();
        let mut candidates: Vec<Vec<Candidate>> = (0..tools.len()).map(|_| Vec::new()).collect();
        let mut refused: Vec<Vec<Refused>> = (0..tools.len()).map(|_| Vec::new()).collect();
        let mut pending: Vec<usize> = (0..tools.len()).collect();

        for (position, transformer) in self.chain.iter().enumerate() {
            if pending.is_empty() {
                break;
            }
            // A later transformer sees only the pending tools; they are moved out for its turn
            // and back after it, never copied.
            let whole = pending.len() == tools.len();
            let batch: Vec<Tool> = if whole {
                std::mem::take(&mut tools)
            } else {
                pending.iter().map(|&index| std::mem::replace(&mut tools[index], Tool::new(String::new()))).collect()
            };
            let outcome = transformer.transform(&batch, context).await;
            let mut accepted = vec![false; pending.len()];
            match outcome {
                Ok(answers) => {
                    let mut answered = vec![false; pending.len()];
                    for mut answer in answers {
                        let slot = answer.index;
                        // What the transformer's own gates refused goes into the tool's
                        // provenance; an answer that is only that is a refusal, not a candidate.
                        if let Some(tool) = batch.get(slot) {
                            let refusal = answer.is_refusal();
                            for why in std::mem::take(&mut answer.refused) {
                                let why = bounded(&why);
                                events.push(ChainEvent::AnswerRefused {
                                    transformer: transformer.name().to_owned(),
                                    tool: tool.name.clone(),
                                    reason: why.clone(),
                                });
                                refused[pending[slot]].push(Refused { by: transformer.name().to_owned(), why });
                            }
                            if refusal {
                                continue;
                            }
                        }
                        match self.check(answer, &batch, &mut answered, transformer.name()) {
                            Ok(answer) => {
                                // A weak definition is not finished by an answer that leaves
                                // it weak (one that only files it under a category): it goes
                                // on to the transformers after this one (a language model),
                                // and an answer there that makes it strong is taken instead.
                                let acceptable = answer.confidence >= self.acceptance;
                                // Whether it leaves the tool weak matters only when a later
                                // transformer could do better, or an earlier answer competes.
                                let competes = position + 1 < self.chain.len() || !candidates[pending[slot]].is_empty();
                                let strong = acceptable && !(competes && leaves_weak(&batch[slot], &answer));
                                accepted[slot] = strong || (acceptable && position + 1 == self.chain.len());
                                // Most tools get one answer or none: room for exactly one, where
                                // a first push would make room for four.
                                let answers = &mut candidates[pending[slot]];
                                answers.reserve_exact(1);
                                answers.push(Candidate { transformer: position, answer, acceptable, strong });
                            }
                            Err(Some(event)) => events.push(event),
                            Err(None) => {}
                        }
                    }
                }
                Err(error) => events.push(ChainEvent::TransformerFailed {
                    transformer: transformer.name().to_owned(),
                    error: error.to_string(),
                }),
            }
            if whole {
                tools = batch;
            } else {
                for (&index, tool) in pending.iter().zip(batch) {
                    tools[index] = tool;
                }
            }
            let mut slot = 0;
            pending.retain(|_| {
                let keep = !accepted[slot];
                slot += 1;
                keep
            });
        }

        // Each tool settled, with the place in the chain of the transformer whose answer it took.
        let (mut enhanced, ranks): (Vec<EnhancedTool>, Vec<usize>) = tools
            .into_iter()
            .zip(candidates)
            .zip(refused)
            .map(|((tool, candidates), refused)| {
                let (mut enhanced, rank) = self.settle(tool, candidates);
                enhanced.refused = refused;
                (enhanced, rank)
            })
            .unzip();
        self.enforce_names(&mut enhanced, &ranks, &mut events);
        for tool in &mut enhanced {
            enforce_schema(tool, &mut events, &self.known_valid);
        }
        Enhancement { tools: enhanced, events }
    }

    /// An answer the chain can use, or why not (`Err(None)`: below the minimum, not reported).
    fn check(
        &self,
        mut answer: Answer,
        batch: &[Tool],
        answered: &mut [bool],
        transformer: &str,
    ) -> Result<Answer, Option<ChainEvent>> {
        let Some(original) = batch.get(answer.index) else {
            return Err(Some(ChainEvent::AnswerRefused {
                transformer: transformer.to_owned(),
                tool: format!("#{}", answer.index),
                reason: format!("no tool at position {} of a batch of {}", answer.index, batch.len()),
            }));
        };
        let refuse = |reason: String| {
            Some(ChainEvent::AnswerRefused { transformer: transformer.to_owned(), tool: original.name.clone(), reason })
        };
        if std::mem::replace(&mut answered[answer.index], true) {
            return Err(refuse("a second answer for the same tool".into()));
        }
        if !answer.confidence.is_finite() {
            return Err(refuse(format!("confidence {} is not a number", answer.confidence)));
        }
        answer.confidence = answer.confidence.clamp(0.0, 1.0);
        if answer.confidence < self.min_confidence {
            return Err(None);
        }
        if let Some(schema) = &mut answer.patch.input_schema {
            keep_untouched_schema_keywords(original, schema);
            if let Some(reason) = broken_schema(original, schema, &self.known_valid) {
                return Err(refuse(reason));
            }
        }
        Ok(answer)
    }

    /// The first answer in chain order that is acceptable and leaves the tool strong, else the
    /// acceptable one that leaves the fewest weaknesses (the first in chain order on a tie: a
    /// curated override before the rules), else the most confident, else the tool as it came.
    fn settle(&self, tool: Tool, mut candidates: Vec<Candidate>) -> (EnhancedTool, usize) {
        // Of acceptable answers that all leave it weak, the one that leaves the fewest
        // weaknesses (a model's inferred parameters over the rules' bare repair); the earlier
        // in chain order on a tie.
        let least_weak = || {
            let acceptable = candidates.iter().enumerate().filter(|(_, candidate)| candidate.acceptable);
            acceptable
                .map(|(position, candidate)| {
                    (weakness::weaknesses(&candidate.answer.patch.applied_to(&tool)).len(), position)
                })
                .min()
                .map(|(_, position)| position)
        };
        // An answer given with full confidence (a curated override) is taken before any that
        // only leaves fewer weaknesses: its aliases and category are the curator's.
        let certain =
            || candidates.iter().position(|candidate| candidate.acceptable && candidate.answer.confidence >= 1.0);
        let first = candidates.iter().position(|candidate| candidate.strong).or_else(certain).or_else(least_weak);
        let most_confident = || {
            (0..candidates.len()).reduce(|best, next| {
                if candidates[next].answer.confidence > candidates[best].answer.confidence { next } else { best }
            })
        };
        let chosen = first.or_else(most_confident).map(|position| candidates.swap_remove(position));
        let Some(Candidate { transformer, mut answer, .. }) = chosen else {
            return (EnhancedTool::unchanged(tool), usize::MAX);
        };
        // The name comes from the first transformer in chain order that renames with
        // confidence, whichever answer is taken for the rest, else from the answer taken, else
        // from the first that renames at all: an answer that keeps the name (a model that wrote
        // a description) does not undo the rules' rename, and a model's own name does not
        // replace a confident one of theirs. Measured on real shortened names, the rules named 43
        // of 48 back exactly and a 1.5B model 14 (it changes the style, drops and invents
        // words): the model names what the rules leave or only guess at.
        let renaming =
            || candidates.iter().filter(|other| other.answer.patch.name.is_some() && other.transformer < transformer);
        let confident = renaming().filter(|other| other.acceptable).min_by_key(|other| other.transformer);
        let named_by = confident.or_else(|| {
            if answer.patch.name.is_some() { None } else { renaming().min_by_key(|other| other.transformer) }
        });
        if let Some(renamed) = named_by {
            answer.patch.name.clone_from(&renamed.answer.patch.name);
            answer.expansions.clone_from(&renamed.answer.expansions);
        }
        let original_name = tool.name.clone();
        let original_description = match &answer.patch.description {
            Some(description) if *description != tool.description => tool.description.clone(),
            _ => None,
        };
        let mut tool = tool;
        let changes = answer.patch.apply(&mut tool);
        let enhanced = EnhancedTool {
            changes,
            original_name,
            original_description,
            tool,
            category: answer.category,
            confidence: answer.confidence,
            enhanced_by: self.chain[transformer].name().to_owned(),
            argument_aliases: answer.argument_aliases,
            inferred: answer.inferred,
            hidden: answer.hidden,
            expansions: answer.expansions,
            model: answer.model,
            refused: Vec::new(),
        };
        (enhanced, transformer)
    }

    /// Every output name valid and unique: source names first (repaired if they must be),
    /// then renames in input order, each refused if it is invalid or taken.
    fn enforce_names(&self, tools: &mut [EnhancedTool], ranks: &[usize], events: &mut Vec<ChainEvent>) {
        // Valid source names first, each to its first holder, so a repaired or duplicate name
        // never takes a name a tool already has (`x`, `x`, `x_2`: the second `x` is `x_3`).
        let mut taken: HashSet<String> = HashSet::with_capacity(tools.len() * 2);
        let mut exposed: Vec<Option<String>> = tools
            .iter()
            .map(|tool| {
                (self.names.is_valid(&tool.original_name) && taken.insert(tool.original_name.clone()))
                    .then(|| tool.original_name.clone())
            })
            .collect();
        for (tool, slot) in tools.iter().zip(exposed.iter_mut()) {
            if slot.is_some() {
                continue;
            }
            let mut name = self.names.sanitize(&tool.original_name);
            if taken.contains(&name) {
                name = self.names.unique_variant(&name, |candidate| taken.contains(candidate));
            }
            events.push(ChainEvent::NameRepaired { tool: tool.original_name.clone(), name: name.clone() });
            taken.insert(name.clone());
            *slot = Some(name);
        }
        let exposed = exposed.into_iter().map(|name| name.expect("every tool got a name above"));
        // Renames are granted in chain order (a curated override before a model), then by
        // confidence, then by position: a weaker answer cannot take a name a stronger one gives.
        let mut order: Vec<usize> = (0..tools.len()).collect();
        order.sort_by(|&a, &b| {
            ranks[a].cmp(&ranks[b]).then(tools[b].confidence.total_cmp(&tools[a].confidence)).then(a.cmp(&b))
        });
        let mut exposed: Vec<Option<String>> = exposed.map(Some).collect();
        for index in order {
            let tool = &mut tools[index];
            let own = exposed[index].take().expect("each tool is visited once");
            let wanted = std::mem::take(&mut tool.tool.name);
            if wanted == tool.original_name || wanted == own {
                tool.changes.name = own != tool.original_name;
                tool.tool.name = own;
                // What the answer spelled out is not what the name says.
                tool.expansions.clear();
                continue;
            }
            let reason = if !self.names.is_valid(&wanted) {
                Some("not a valid tool name for this client")
            } else if taken.contains(&wanted) {
                Some("another tool has that name")
            } else {
                None
            };
            match reason {
                Some(reason) => {
                    events.push(ChainEvent::RenameRefused {
                        transformer: tool.enhanced_by.clone(),
                        tool: tool.original_name.clone(),
                        name: wanted,
                        reason: reason.into(),
                    });
                    tool.changes.name = own != tool.original_name;
                    tool.tool.name = own;
                    tool.expansions.clear();
                }
                None => {
                    taken.insert(wanted.clone());
                    tool.changes.name = true;
                    tool.tool.name = wanted;
                }
            }
        }
    }
}

/// Whether `tool`'s definition is weak and stays weak with `answer` taken.
/// A refusal's reason as a tool's provenance keeps it: it may quote what a model wrote, so it is
/// kept short and free of control characters.
fn bounded(why: &str) -> String {
    const MAX_CHARS: usize = 240;
    let mut kept: String = why.chars().filter(|c| !c.is_control()).take(MAX_CHARS).collect();
    if why.chars().filter(|c| !c.is_control()).nth(MAX_CHARS).is_some() {
        kept.push('…');
    }
    kept
}

fn leaves_weak(tool: &Tool, answer: &Answer) -> bool {
    if answer.hidden || !weakness::is_weak(tool) {
        return false;
    }
    if answer.patch.is_empty() {
        return true;
    }
    let mut patched = tool.clone();
    answer.patch.clone().apply(&mut patched);
    weakness::is_weak(&patched)
}

/// An answer may not replace a schema with an invalid one; it may leave the source's as it was.
fn broken_schema(original: &Tool, proposed: &Option<Json>, known: &schema::KnownValid) -> Option<String> {
    if *proposed == original.input_schema {
        return None;
    }
    match proposed {
        None => Some("it removed the input schema".into()),
        Some(schema) => known.check(schema).err().map(|error| format!("its input schema is invalid: {error}")),
    }
}

/// A replacement schema keeps the source's `$schema` and `$defs`.
fn keep_untouched_schema_keywords(original: &Tool, proposed: &mut Option<Json>) {
    // Neither key is in the text: nothing to keep, and nothing to read.
    let mentions = |text: &str| text.contains("\"$schema\":") || text.contains("\"$defs\":");
    if !original.input_schema.as_ref().is_some_and(|schema| mentions(schema.as_str())) {
        return;
    }
    let (Some(Value::Object(source)), Some(Value::Object(mut replacement))) =
        (original.input_schema_value(), proposed.as_ref().map(Json::to_value))
    else {
        return;
    };
    let mut kept = false;
    for key in ["$schema", "$defs"] {
        match source.get(key) {
            Some(value) if replacement.get(key) != Some(value) => {
                replacement.insert(key.to_owned(), value.clone());
                kept = true;
            }
            _ => {}
        }
    }
    if kept {
        *proposed = Some(Json::from(Value::Object(replacement)));
    }
}

/// The last guard: a schema that is missing or invalid here is repaired (see
/// [`schema::make_valid`]).
fn enforce_schema(tool: &mut EnhancedTool, events: &mut Vec<ChainEvent>, known: &schema::KnownValid) {
    if tool.tool.input_schema.as_ref().is_some_and(|schema| known.check(schema).is_ok()) {
        return;
    }
    let repairs = match tool.tool.input_schema_value() {
        None => {
            tool.tool.input_schema = Some(Json::from(schema::empty_object()));
            vec![Repair { pointer: String::new(), what: "added the empty object schema".into() }]
        }
        Some(mut schema) => {
            let repairs = schema::make_valid(&mut schema);
            tool.tool.input_schema = Some(Json::from(schema));
            repairs
        }
    };
    tool.changes.input_schema = true;
    events.push(ChainEvent::SchemaRepaired { tool: tool.original_name.clone(), repairs });
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use serde_json::json;
    use tool_mediator_core::SourceType;
    use tool_mediator_core::TransformError;

    /// Answers with a fixed function of each tool, for testing the chain.
    struct Scripted<F> {
        name: &'static str,
        priority: i32,
        answer: F,
    }

    #[async_trait]
    impl<F> ToolTransformer for Scripted<F>
    where
        F: Fn(usize, &Tool) -> Option<Answer> + Send + Sync,
    {
        fn name(&self) -> &str {
            self.name
        }
        fn priority(&self) -> i32 {
            self.priority
        }
        async fn transform(&self, tools: &[Tool], _: &ToolContext) -> Result<Vec<Answer>, TransformError> {
            Ok(tools.iter().enumerate().filter_map(|(index, tool)| (self.answer)(index, tool)).collect())
        }
    }

    struct Failing;

    #[async_trait]
    impl ToolTransformer for Failing {
        fn name(&self) -> &str {
            "failing"
        }
        fn priority(&self) -> i32 {
            1000
        }
        async fn transform(&self, _: &[Tool], _: &ToolContext) -> Result<Vec<Answer>, TransformError> {
            Err("the model is down".into())
        }
    }

    fn tools(names: &[&str]) -> Vec<Tool> {
        names.iter().map(|name| Tool::new(*name).with_input_schema(json!({"type": "object"}))).collect()
    }

    fn context() -> ToolContext {
        ToolContext::new("test", SourceType::Manual)
    }

    fn run(mediator: &Mediator, input: Vec<Tool>) -> Enhancement {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(mediator.enhance_with_report(input, &context()))
    }

    fn describe(
        name: &'static str,
        priority: i32,
        confidence: f64,
    ) -> Scripted<impl Fn(usize, &Tool) -> Option<Answer>> {
        Scripted {
            name,
            priority,
            answer: move |index, tool: &Tool| {
                Some(Answer::proposing(
                    index,
                    tool,
                    &tool.clone().with_description(format!("Described by the {name} transformer.")),
                    confidence,
                ))
            },
        }
    }

    #[test]
    fn empty_chain_passes_tools_through() {
        let out = run(&Mediator::builder().build(), tools(&["a", "b"]));
        assert_eq!(out.tools.len(), 2);
        assert_eq!(out.tools[0].enhanced_by, "none");
        assert_eq!(out.tools[0].confidence, 0.0);
        assert_eq!(out.tools[1].tool, tools(&["b"])[0]);
        assert!(out.events.is_empty());
    }

    #[test]
    fn higher_priority_runs_first_and_ties_keep_registration_order() {
        let mediator = Mediator::builder()
            .transformer(describe("low", 10, 0.9))
            .transformer(describe("tie-first", 50, 0.9))
            .transformer(describe("tie-second", 50, 0.9))
            .build();
        let order: Vec<&str> = mediator.transformers().map(|t| t.name()).collect();
        assert_eq!(order, ["tie-first", "tie-second", "low"]);
        assert_eq!(run(&mediator, tools(&["a"])).tools[0].enhanced_by, "tie-first");
    }

    #[test]
    fn a_weak_tool_takes_the_first_answer_that_makes_it_strong_else_the_first_acceptable() {
        // A curated answer that leaves the tool weak (a description still too short) is kept
        // over a later one that only files it under a category...
        let curated = Scripted {
            name: "curated",
            priority: 200,
            answer: |index, tool: &Tool| {
                Some(Answer::proposing(index, tool, &tool.clone().with_description("Adds."), 1.0))
            },
        };
        let category = |name: &'static str, priority: i32| Scripted {
            name,
            priority,
            answer: |index, _: &Tool| {
                let mut answer = Answer::new(index, tool_mediator_core::ToolPatch::default(), 1.0);
                answer.category = Some("math".into());
                Some(answer)
            },
        };
        let mediator = Mediator::builder().transformer(curated).transformer(category("filing", 100)).build();
        assert_eq!(run(&mediator, tools(&["add"])).tools[0].enhanced_by, "curated");
        // ...and a later answer that makes it strong (a model's) is taken over both.
        let mediator =
            Mediator::builder().transformer(category("filing", 100)).transformer(describe("model", 50, 0.9)).build();
        let out = run(&mediator, tools(&["add"]));
        assert_eq!(out.tools[0].enhanced_by, "model");
    }

    #[test]
    fn declined_tools_go_on_down_the_chain() {
        let only_a = Scripted {
            name: "only-a",
            priority: 200,
            answer: |index, tool: &Tool| {
                (tool.name == "a").then(|| {
                    Answer::proposing(index, tool, &tool.clone().with_description("Tool a, described by only-a."), 1.0)
                })
            },
        };
        let mediator = Mediator::builder().transformer(only_a).transformer(describe("rest", 100, 0.9)).build();
        let out = run(&mediator, tools(&["a", "b", "c"]));
        let by: Vec<&str> = out.tools.iter().map(|t| t.enhanced_by.as_str()).collect();
        assert_eq!(by, ["only-a", "rest", "rest"]);
    }

    #[test]
    fn unconfident_answers_go_on_and_the_most_confident_wins() {
        let mediator = Mediator::builder()
            .transformer(describe("first", 200, 0.3))
            .transformer(describe("second", 100, 0.4))
            .transformer(describe("third", 50, 0.2))
            .build();
        let out = run(&mediator, tools(&["a"]));
        assert_eq!(out.tools[0].enhanced_by, "second");
        assert_eq!(out.tools[0].tool.description.as_deref(), Some("Described by the second transformer."));
    }

    #[test]
    fn min_confidence_zero_is_a_value_and_higher_drops_weak_answers() {
        let mediator = Mediator::builder().transformer(describe("weak", 1, 0.0)).build();
        assert_eq!(run(&mediator, tools(&["a"])).tools[0].enhanced_by, "weak");
        let mediator = Mediator::builder().transformer(describe("weak", 1, 0.2)).min_confidence(0.5).build();
        assert_eq!(run(&mediator, tools(&["a"])).tools[0].enhanced_by, "none");
    }

    #[test]
    fn failing_transformer_falls_through_and_is_reported() {
        let mediator = Mediator::builder().transformer(Failing).transformer(describe("rules", 100, 0.9)).build();
        let out = run(&mediator, tools(&["a"]));
        assert_eq!(out.tools[0].enhanced_by, "rules");
        assert!(
            matches!(&out.events[0], ChainEvent::TransformerFailed { transformer, .. } if transformer == "failing")
        );
    }

    #[test]
    fn renames_into_collisions_or_invalid_names_are_refused() {
        let renamer = Scripted {
            name: "renamer",
            priority: 1,
            answer: |index, tool: &Tool| {
                let name = match tool.name.as_str() {
                    "a" => "b",         // another tool's name
                    "c" => "has space", // invalid
                    "d" => "e_new",
                    "f" => "e_new", // the same as d's new name
                    _ => return None,
                };
                let mut renamed = tool.clone();
                renamed.name = name.into();
                Some(Answer::proposing(index, tool, &renamed, 0.9))
            },
        };
        let mediator = Mediator::builder().transformer(renamer).build();
        let out = run(&mediator, tools(&["a", "b", "c", "d", "f"]));
        let names: Vec<&str> = out.tools.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["a", "b", "c", "e_new", "f"]);
        assert_eq!(out.events.iter().filter(|e| matches!(e, ChainEvent::RenameRefused { .. })).count(), 3);
        assert_eq!(out.tools[3].original_name, "d");
    }

    #[test]
    fn a_stronger_answer_gets_the_name_both_want() {
        let weak = Scripted {
            name: "weak",
            priority: 50,
            answer: |index, tool: &Tool| {
                (tool.name == "a").then(|| {
                    let mut renamed = tool.clone();
                    renamed.name = "wanted".into();
                    Answer::proposing(index, tool, &renamed, 0.6)
                })
            },
        };
        let curated = Scripted {
            name: "curated",
            priority: 200,
            answer: |index, tool: &Tool| {
                (tool.name == "b").then(|| {
                    let mut renamed = tool.clone();
                    renamed.name = "wanted".into();
                    Answer::proposing(index, tool, &renamed, 1.0)
                })
            },
        };
        // Both answers are accepted; the weak one is for the earlier tool, but the chain order
        // decides who gets the name.
        let out = run(&Mediator::builder().transformer(curated).transformer(weak).build(), tools(&["a", "b"]));
        let names: Vec<&str> = out.tools.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["a", "wanted"], "{:?}", out.events);
    }

    #[test]
    fn invalid_and_duplicate_source_names_are_repaired() {
        let out = run(&Mediator::builder().build(), tools(&["x", "x", "get user", "naïve", "x_2"]));
        let names: Vec<&str> = out.tools.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["x", "x_3", "get_user", "na_ve", "x_2"]);
        assert_eq!(out.tools[1].original_name, "x");
    }

    #[test]
    fn strict_profile_applies_to_renames_and_source_names() {
        let out = run(&Mediator::builder().name_rules(NameRules::STRICT).build(), tools(&["math.sum"]));
        assert_eq!(out.tools[0].name(), "math_sum");
    }

    #[test]
    fn answers_that_break_the_schema_are_refused() {
        let breaker = Scripted {
            name: "breaker",
            priority: 1,
            answer: |index, tool: &Tool| {
                Some(Answer::proposing(index, tool, &tool.clone().with_input_schema(json!({"type": "float"})), 0.9))
            },
        };
        let out = run(&Mediator::builder().transformer(breaker).build(), tools(&["a"]));
        assert_eq!(out.tools[0].enhanced_by, "none");
        assert!(matches!(&out.events[0], ChainEvent::AnswerRefused { .. }));
    }

    #[test]
    fn missing_and_invalid_source_schemas_leave_valid() {
        let input = vec![
            Tool::new("none"),
            Tool::new("dict").with_input_schema(json!({"type": "dict", "properties": {"x": {"type": "float"}}})),
            Tool::new("hopeless").with_input_schema(json!({"type": "object", "properties": 7})),
        ];
        let out = run(&Mediator::builder().build(), input);
        for tool in &out.tools {
            assert!(schema::is_valid(&tool.tool.input_schema_value().unwrap()), "{:?}", tool.tool);
        }
        assert_eq!(out.tools[1].tool.input_schema_value().unwrap()["properties"]["x"]["type"], "number");
        assert_eq!(out.tools[2].tool.input_schema, Some(Json::from(schema::empty_object())));
    }

    #[test]
    fn untouched_fields_survive_a_transformer_that_drops_them() {
        let dropper = Scripted {
            name: "dropper",
            priority: 1,
            answer: |index, tool: &Tool| {
                let mut bare = Tool::new(tool.name.clone()).with_description("new");
                bare.input_schema = Some(Json::from(json!({"type": "object", "properties": {}})));
                Some(Answer::proposing(index, tool, &bare, 1.0))
            },
        };
        let mut tool: Tool = serde_json::from_value(json!({
            "name": "t",
            "inputSchema": {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {"a": {}}, "type": "object"},
            "outputSchema": {"type": "object"},
            "_meta": {"k/v": 1},
            "execution": {"taskSupport": "optional"}
        }))
        .unwrap();
        tool.extra.push(("x-unknown".into(), Json::from(json!([1]))));
        let out = run(&Mediator::builder().transformer(dropper).build(), vec![tool.clone()]);
        let result = &out.tools[0].tool;
        assert_eq!(result.description.as_deref(), Some("new"));
        assert_eq!(result.output_schema, tool.output_schema);
        assert_eq!(result.meta, tool.meta);
        assert_eq!(result.extra, tool.extra);
        let schema = result.input_schema_value().unwrap();
        assert_eq!(schema["$defs"], json!({"a": {}}));
        assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    }

    #[test]
    fn out_of_range_duplicate_and_nan_answers_are_refused() {
        let wild = Scripted {
            name: "wild",
            priority: 1,
            answer: |index, tool: &Tool| {
                let confidence = if tool.name == "nan" { f64::NAN } else { 0.9 };
                Some(Answer::proposing(if tool.name == "far" { 99 } else { index }, tool, tool, confidence))
            },
        };
        let out = run(&Mediator::builder().transformer(wild).build(), tools(&["far", "nan", "ok"]));
        assert_eq!(out.tools.len(), 3);
        assert_eq!(out.tools[0].enhanced_by, "none");
        assert_eq!(out.tools[1].enhanced_by, "none");
        assert_eq!(out.tools[2].enhanced_by, "wild");
    }
}
