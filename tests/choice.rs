//! Does enhancing a listing make a model choose the right tool? Measured with the real model
//! (Qwen2.5-Coder-1.5B-Instruct on llama.cpp, `tests/peers/model`) on RestBench's real user
//! queries (`tests/data/eval`), each with the API to call first:
//!
//! ```sh
//! # the smoke version (runs in CI): a dozen tasks over sixteen tools
//! TOOL_MEDIATOR_MODEL=1 cargo test -p tool-mediator-tests --test choice -- --nocapture
//! # the whole benchmark: 157 tasks, TMDB and Spotify (an hour or more on two cores)
//! TOOL_MEDIATOR_MODEL=1 cargo test -p tool-mediator-tests --test choice -- --ignored --nocapture
//! ```
//!
//! Each service's APIs are listed the way servers publish them: as documented (`published`),
//! with every word an abbreviation list written by others shortens shortened (`shortened`), and
//! shortened with the descriptions cut to three words or left out and the schemas emptied
//! (`bare`). Each listing reaches the model raw, after the rules, and after the rules and the
//! model (`tool-mediator enhance`, as a user runs it), as an MCP client shows it: names,
//! descriptions and schemas in the `tools` array of a chat request, in the model's own
//! tool-calling template. The model calls one tool (or answers in words: wrong). Reported: the
//! share of tasks where it calls the right one, with a 95% Wilson interval, and the prompt
//! tokens of the listing; and the same through a session with the default disclosure (category
//! tools and `search_tools`, the model expanding and searching as it likes, four calls at most).
//! `CHOICE_LISTINGS=DIR` writes each listing as the model was shown it into `DIR`;
//! `CHOICE_SERVICE=TMDB` measures one service, `CHOICE_ROWS=bare/raw,bare/rules` some rows;
//! `CHOICE_TRACE=1` shows each call a session answers.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tool_mediator::session::{DisclosureMode, Route, Session, SessionPolicy};
use tool_mediator::{Mediator, MediatorConfig, RuleTransformer, SourceType, Tool, ToolContext};
use tool_mediator_tests::restbench;
use tool_mediator_tests::shortening::{Pairs, SOURCES, shorten_every};
use tool_mediator_tests::{RealModel, real_model, run_with, spread, stderr};

/// What the client says before the user's request: an assistant with tools, nothing more.
const SYSTEM: &str = "You are a helpful assistant. Use the tools to answer the user's request: call the tool the \
                      request needs first.";

/// The tasks asked through a session with disclosure, spread evenly over a service's.
const DISCLOSED_TASKS: usize = 20;

/// Calls the model may make in a session before it must have called a tool of the source:
/// expanding a category, searching, then calling.
const TURNS: usize = 4;

/// How a listing is degraded before it reaches the mediator.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Listing {
    /// As the documentation publishes it.
    Published,
    /// Every word an abbreviation list shortens, shortened.
    Shortened,
    /// Shortened names; descriptions cut to their first three words (even tools) or left out
    /// (odd ones); schemas emptied.
    Bare,
}

impl Listing {
    fn name(self) -> &'static str {
        match self {
            Listing::Published => "published",
            Listing::Shortened => "shortened",
            Listing::Bare => "bare",
        }
    }

    fn degrade(self, tools: &[Value], pairs: &Pairs) -> Vec<Value> {
        tools
            .iter()
            .enumerate()
            .map(|(index, tool)| {
                let mut tool = tool.clone();
                if self == Listing::Published {
                    return tool;
                }
                tool["name"] = json!(shorten_every(tool["name"].as_str().unwrap(), pairs));
                if self == Listing::Bare {
                    let description = tool["description"].as_str().unwrap_or_default();
                    let terse = description.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
                    let object = tool.as_object_mut().unwrap();
                    if index % 2 == 0 {
                        object.insert("description".into(), json!(terse));
                    } else {
                        object.remove("description");
                    }
                    object.insert("inputSchema".into(), json!({"type": "object"}));
                }
                tool
            })
            .collect()
    }
}

/// What reaches the model.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stage {
    Raw,
    Rules,
    /// The rules and the model, the model's answers through the gates.
    Model,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Raw => "raw",
            Stage::Rules => "rules",
            Stage::Model => "rules + model",
        }
    }
}

/// A request and the source's names of the tools it needs, the one to call first first.
#[derive(Clone)]
struct Task {
    query: String,
    needed: Vec<String>,
}

/// A service's tasks, in RestBench's order.
fn tasks_of(service: &str) -> Vec<Task> {
    restbench::queries(service).into_iter().map(|query| Task { query: query.text, needed: query.relevant }).collect()
}

/// A listing as the model is shown it: MCP tools, and the source's name of each.
struct Shown {
    tools: Vec<Value>,
    sources: Vec<String>,
}

/// `tools` after `stage`: as they are, or through `tool-mediator enhance` (the rules; the rules
/// and the real model, its answers kept in a cache between runs as a user's are).
fn staged(stage: Stage, tools: &[Value], service: &str, model: &RealModel, dir: &Path) -> Shown {
    if stage == Stage::Raw {
        let sources = tools.iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect();
        return Shown { tools: tools.to_vec(), sources };
    }
    let file = dir.join(format!("{service}.json"));
    std::fs::write(&file, json!({"tools": tools}).to_string()).unwrap();
    let url = format!("{}/v1", model.url);
    let cache = std::env::temp_dir().join("tool-mediator-choice-cache");
    let cache = cache.to_str().unwrap();
    let mut args = vec!["enhance", file.to_str().unwrap(), "--cache-dir", cache];
    if stage == Stage::Model {
        // A loaded machine may take minutes a batch; no figure here depends on the time.
        args.extend(["--llm", "openai-compatible", "--llm-url", &url, "--model", model.name, "--llm-deadline", "600s"]);
    }
    let output = run_with(dir, &args, None, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let out: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut shown = Shown { tools: Vec::new(), sources: Vec::new() };
    for tool in out["tools"].as_array().unwrap() {
        let source = tool["_meta"]["tool-mediator/provenance"]["originalName"].as_str().or(tool["name"].as_str());
        shown.sources.push(source.unwrap().to_owned());
        shown.tools.push(tool.clone());
    }
    shown
}

/// A tool in a chat request's `tools`, as an MCP client passes it: name, description, schema.
fn function(tool: &Value) -> Value {
    let mut function = json!({"name": tool["name"], "parameters": tool["inputSchema"]});
    if let Some(description) = tool["description"].as_str() {
        function["description"] = json!(description);
    }
    json!({"type": "function", "function": function})
}

/// The tool a model's reply calls, and its arguments.
#[derive(Debug, Default)]
struct Call {
    name: Option<String>,
    arguments: Value,
}

/// The first tool call in what the model has written so far: a parsed `tool_calls` entry, or
/// (the 1.5B model often writes the call as JSON in its text) a `"name": "..."` in the text.
fn call_in(content: &str, streamed: &Option<String>) -> Option<String> {
    if streamed.is_some() {
        return streamed.clone();
    }
    let at = content.find("\"name\"")?;
    let rest = content[at + 6..].trim_start().strip_prefix(':')?.trim_start().strip_prefix('"')?;
    let end = rest.find('"')?;
    Some(rest[..end].to_owned())
}

/// The JSON object of arguments in a call written as text, if it is whole.
fn arguments_in(content: &str) -> Value {
    let Some(at) = content.find("\"arguments\"") else { return json!({}) };
    let rest = &content[at..];
    let Some(open) = rest.find('{') else { return json!({}) };
    let mut depth = 0;
    for (offset, c) in rest[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return serde_json::from_str(&rest[open..=open + offset]).unwrap_or(json!({}));
                }
            }
            _ => {}
        }
    }
    json!({})
}

/// A chat client of the real model, as an MCP host is one.
struct Chat {
    http: reqwest::Client,
    url: String,
    model: &'static str,
}

/// A request the model server refused (a listing its tool-calling template cannot take).
#[derive(Debug)]
struct Refused(String);

impl Chat {
    fn new(model: &RealModel) -> Chat {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(1800)).build().unwrap();
        Chat { http, url: format!("{}/v1/chat/completions", model.url), model: model.name }
    }

    /// The tool the model calls given `tools` and `messages`, and the request's prompt tokens.
    /// Streamed, and let go of as soon as the call's name is written unless `whole` says its
    /// arguments are wanted too (the first request of a listing is read whole for its usage).
    async fn call(
        &self,
        tools: &[Value],
        messages: &[Value],
        whole: impl Fn(&str) -> bool,
    ) -> Result<(Call, u64), Refused> {
        let body = json!({
            "model": self.model,
            "messages": messages,
            "tools": tools.iter().map(function).collect::<Vec<_>>(),
            "tool_choice": "auto",
            "temperature": 0,
            "max_tokens": 128,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        let mut response = match self.http.post(&self.url).json(&body).send().await {
            Ok(response) => response,
            // A request the server drops is a task without a call, not the end of the run.
            Err(error) => {
                eprintln!("the model server dropped a request: {error}");
                return Ok((Call::default(), 0));
            }
        };
        if !response.status().is_success() {
            let text = response.text().await.unwrap_or_default();
            return Err(Refused(text.chars().take(300).collect()));
        }
        let (mut content, mut streamed, mut arguments, mut tokens) = (String::new(), None, String::new(), 0);
        let mut pending = Vec::new();
        // A stream the server breaks off (it does, at times, on a half-written tool call) is
        // read as far as it got.
        'read: while let Ok(Some(chunk)) = response.chunk().await {
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let Some(data) = std::str::from_utf8(&line).unwrap_or("").trim().strip_prefix("data: ") else {
                    continue;
                };
                if data == "[DONE]" {
                    break 'read;
                }
                let Ok(event) = serde_json::from_str::<Value>(data) else { continue };
                if let Some(prompt) = event["usage"]["prompt_tokens"].as_u64() {
                    tokens = prompt;
                }
                let delta = &event["choices"][0]["delta"];
                content.push_str(delta["content"].as_str().unwrap_or_default());
                if let Some(call) = delta["tool_calls"].get(0) {
                    if let Some(name) = call["function"]["name"].as_str() {
                        streamed.get_or_insert_with(String::new).push_str(name);
                    }
                    arguments.push_str(call["function"]["arguments"].as_str().unwrap_or_default());
                }
                let named = call_in(&content, &streamed);
                if named.is_some_and(|name| !whole(&name)) && event["choices"][0]["finish_reason"].is_null() {
                    // Dropping the response closes the connection; the server stops generating.
                    break 'read;
                }
            }
        }
        let name = call_in(&content, &streamed);
        let arguments = if streamed.is_some() {
            serde_json::from_str(&arguments).unwrap_or(json!({}))
        } else {
            arguments_in(&content)
        };
        Ok((Call { name, arguments }, tokens))
    }
}

/// How one listing at one stage did.
#[derive(Default)]
struct Score {
    /// Tasks where the model called a tool the request needs.
    right: usize,
    /// ...the one to call first.
    first: usize,
    asked: usize,
    /// The model server refused the listing (every task counts wrong).
    refused: Option<String>,
    /// The prompt tokens of the first request (the listing, the system text, one request).
    tokens: u64,
    seconds: f64,
    /// `request -> called (needed)` of the wrong ones.
    wrong: Vec<String>,
    /// Whether each task was answered right, in the tasks' order.
    hits: Vec<bool>,
}

impl Score {
    /// `task` answered with a call of the source's tool `called` (`None`: no call of a tool of
    /// the source), `shown` the name the model called.
    fn tally(&mut self, task: &Task, called: Option<&str>, shown: Option<&str>) {
        let called = called.unwrap_or_default();
        self.first += usize::from(called == task.needed[0]);
        let right = task.needed.iter().any(|needed| needed == called);
        self.hits.push(right);
        if right {
            self.right += 1;
        } else {
            let shown = shown.unwrap_or("(no call)");
            self.wrong.push(format!("{} -> {shown} ({})", task.query, task.needed.join(", ")));
        }
    }

    fn row(&self, service: &str, listing: &str, stage: &str) -> String {
        let share = |part: usize| {
            let (low, high) = tool_mediator_tests::wilson(part, self.asked);
            let share = tool_mediator_tests::percent(part, self.asked);
            format!("{part}/{} {share:.1}% [{:.1}, {:.1}]", self.asked, 100.0 * low, 100.0 * high)
        };
        let refused =
            self.refused.as_ref().map_or(String::new(), |why| format!(" (the server refused the listing: {why})"));
        format!(
            "| {service} | {listing} | {stage} | {} | {} | {} | {:.0} s |{refused}",
            share(self.right),
            share(self.first),
            self.tokens,
            self.seconds
        )
    }
}

fn messages(task: &Task) -> Vec<Value> {
    vec![json!({"role": "system", "content": SYSTEM}), json!({"role": "user", "content": task.query})]
}

/// Each task asked of `shown`, whole.
async fn measure(chat: &Chat, shown: &Shown, tasks: &[Task]) -> Score {
    let started = Instant::now();
    let mut score = Score { asked: tasks.len(), ..Score::default() };
    for task in tasks {
        // The first request is read to its end, for its usage: the listing's tokens.
        let first = score.tokens == 0;
        let (call, tokens) = match chat.call(&shown.tools, &messages(task), |_| first).await {
            Ok(answer) => answer,
            Err(Refused(why)) => {
                score.refused = Some(why);
                break;
            }
        };
        if score.tokens == 0 {
            score.tokens = tokens;
        }
        let source = call.name.as_ref().and_then(|name| {
            shown.tools.iter().position(|tool| tool["name"] == name.as_str()).map(|at| shown.sources[at].as_str())
        });
        score.tally(task, source, call.name.as_deref());
    }
    score.seconds = started.elapsed().as_secs_f64();
    score
}

/// Each task asked through a session of its own with the default disclosure over `tools` (the
/// rules enhancing them, as the proxy does): a call to a category tool or `search_tools` is
/// answered by the session and the model asked again with what it now lists.
async fn measure_disclosed(
    chat: &Chat,
    tools: &[Value],
    documented: &HashMap<&str, &str>,
    service: &str,
    tasks: &[Task],
    policy: &SessionPolicy,
) -> Score {
    let started = Instant::now();
    let tools: Vec<Tool> = serde_json::from_value(Value::Array(tools.to_vec())).unwrap();
    let mediator = Arc::new(Mediator::builder().transformer(RuleTransformer::new()).build());
    let mut score = Score { asked: tasks.len(), ..Score::default() };
    let context = ToolContext::new(service, SourceType::Api);
    // The source's tools as the session names them: any other listed tool is the session's own
    // (a category tool, `search_tools`), whose call needs its arguments.
    let whole = DisclosureMode::Off.apply(SessionPolicy { page_size: None, ..SessionPolicy::mediated(5) }, 5, 0);
    let everything = Session::new(mediator.clone(), context.clone(), whole);
    let upstream: HashSet<String> =
        everything.list_tools(&tools, None).await.unwrap().into_tools().into_iter().map(|tool| tool.name).collect();
    let trace = std::env::var_os("CHOICE_TRACE").is_some();
    if policy.embedder.is_some() {
        // The embedding model reads the tools once, before the first task (kept in its cache).
        let warm = Session::new(mediator.clone(), context.clone(), policy.clone());
        warm.list_tools(&tools, None).await.unwrap();
        let arguments = json!({"query": "warm up"}).as_object().cloned().unwrap();
        for _ in 0..600 {
            match warm.route_call("search_tools", arguments.clone()).await {
                Route::Local(found) if found["structuredContent"]["rankedBy"] == "words and meaning" => break,
                _ => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
    }
    'tasks: for task in tasks {
        if trace {
            eprintln!("{} ({})", task.query, task.needed.join(", "));
        }
        let session = Session::new(mediator.clone(), context.clone(), policy.clone());
        let mut messages = messages(task);
        // What the model called last, and the source's tool it reached.
        let (mut called, mut source) = (None, None);
        for turn in 0..TURNS {
            let listed = session.list_tools(&tools, None).await.unwrap().into_tools();
            let listed: Vec<Value> = listed.iter().map(|tool| serde_json::to_value(tool).unwrap()).collect();
            let first = score.tokens == 0;
            let (call, tokens) = match chat.call(&listed, &messages, |name| first || !upstream.contains(name)).await {
                Ok(answer) => answer,
                Err(Refused(why)) => {
                    score.refused = Some(why);
                    break 'tasks;
                }
            };
            if score.tokens == 0 {
                score.tokens = tokens;
            }
            let Some(name) = call.name.clone() else {
                if trace {
                    eprintln!("  turn {turn}: no call among {} tools", listed.len());
                }
                break;
            };
            let arguments = call.arguments.as_object().cloned().unwrap_or_default();
            match session.route_call(&name, arguments.clone()).await {
                Route::Upstream { name: reached, .. } => {
                    source = Some(documented.get(reached.as_str()).map_or(reached.clone(), |name| (*name).to_owned()));
                    called = Some(name);
                    break;
                }
                // As a client does: the error goes back to the model, which may call again.
                Route::NotFound => {
                    called = Some(format!("{name} (not listed)"));
                    answered(&mut messages, turn, &name, &arguments, &format!("Unknown tool: {name}"));
                }
                Route::Local(result) => {
                    let text: Vec<&str> = result["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|part| part["text"].as_str())
                        .collect();
                    answered(&mut messages, turn, &name, &arguments, &text.join("\n"));
                }
            }
            if trace {
                eprintln!(
                    "  turn {turn}: {name} {} -> {}",
                    Value::Object(arguments),
                    messages.last().unwrap()["content"]
                );
            }
        }
        score.tally(task, source.as_deref(), called.as_deref());
    }
    score.seconds = started.elapsed().as_secs_f64();
    score
}

/// `messages` with the model's call of `name` and the session's `answer` to it.
fn answered(messages: &mut Vec<Value>, turn: usize, name: &str, arguments: &Map<String, Value>, answer: &str) {
    let id = format!("call_{turn}");
    let arguments = Value::Object(arguments.clone()).to_string();
    messages.push(json!({"role": "assistant", "content": "", "tool_calls": [
        {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
    ]}));
    messages.push(json!({"role": "tool", "tool_call_id": id, "content": answer}));
}

/// One row of the benchmark.
struct Row {
    service: String,
    listing: Listing,
    stage: &'static str,
    score: Score,
}

/// The real embedding model, as `search_tools` asks it (its answers kept in memory).
fn real_embedding_model() -> Arc<tool_mediator::search::meaning::Embedder> {
    use tool_mediator::cache::{Cache, MemoryStore};
    use tool_mediator::llm::{LlmClient, Provider};
    let model = tool_mediator_tests::real_embedder().expect("the real embedding model (TOOL_MEDIATOR_MODEL=1)");
    let client = LlmClient::new(Provider::OpenAiCompatible, model.name, Some(model.url.clone()), None);
    let cache = Arc::new(Cache::new(MemoryStore::default(), Duration::from_secs(24 * 3600)));
    Arc::new(tool_mediator::search::meaning::Embedder::new(client, Some(cache)))
}

/// Every listing of `plan` at every stage of it, over `tools` and `tasks` of `service`; with
/// `disclosed`, the raw listing through a session with the default disclosure too.
async fn benchmark(
    model: &RealModel,
    service: &str,
    tools: &[Value],
    tasks: &[Task],
    plan: &[(Listing, &[Stage], bool)],
) -> Vec<Row> {
    let chat = Chat::new(model);
    let pairs = Pairs::read(&SOURCES.map(|(_, file)| file));
    let dir = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();
    // `CHOICE_ROWS=bare/raw,bare/disclosure`: only these rows.
    let only: Option<Vec<String>> =
        std::env::var("CHOICE_ROWS").ok().map(|rows| rows.split(',').map(|row| row.trim().to_owned()).collect());
    let wanted = |listing: Listing, stage: &str| {
        only.as_ref().is_none_or(|only| only.iter().any(|row| *row == format!("{}/{stage}", listing.name())))
    };
    for &(listing, stages, disclosed) in plan {
        let degraded = listing.degrade(tools, &pairs);
        // The source's names are the degraded ones: scored by the documented name.
        let documented: HashMap<&str, &str> = degraded
            .iter()
            .zip(tools)
            .map(|(degraded, tool)| (degraded["name"].as_str().unwrap(), tool["name"].as_str().unwrap()))
            .collect();
        assert_eq!(documented.len(), tools.len(), "{}: two tools shortened to one name", listing.name());
        for &stage in stages.iter().filter(|stage| wanted(listing, stage.name())) {
            let mut shown = staged(stage, &degraded, service, model, dir.path());
            for source in &mut shown.sources {
                *source = documented[source.as_str()].to_owned();
            }
            if let Some(dir) = std::env::var_os("CHOICE_LISTINGS") {
                let file = Path::new(&dir).join(format!("{service}-{}-{}.json", listing.name(), stage.name()));
                std::fs::write(file, serde_json::to_string_pretty(&json!({"tools": shown.tools})).unwrap()).unwrap();
            }
            let score = measure(&chat, &shown, tasks).await;
            let row = Row { service: service.to_owned(), listing, stage: stage.name(), score };
            println!("{}", row.score.row(service, listing.name(), row.stage));
            wrong(&row);
            rows.push(row);
        }
        // The default disclosure (category tools and search), and search alone, by words and by
        // words and meaning (the real embedding model).
        let search = DisclosureMode::Search.apply(SessionPolicy::mediated(5), 5, 0);
        let by_meaning = || SessionPolicy { embedder: Some(real_embedding_model()), ..search.clone() };
        for (stage, policy) in [
            ("disclosure", Box::new(|| MediatorConfig::default().session_policy()) as Box<dyn Fn() -> SessionPolicy>),
            ("search", Box::new(|| search.clone())),
            ("search+meaning", Box::new(by_meaning)),
        ] {
            if !disclosed || !wanted(listing, stage) {
                continue;
            }
            // Each expansion is a listing of its own for the server to read (about 25 s a task on
            // two cores): a sample of the tasks, spread evenly.
            let sample = spread(tasks, DISCLOSED_TASKS);
            let score = measure_disclosed(&chat, &degraded, &documented, service, &sample, &policy()).await;
            let row = Row { service: service.to_owned(), listing, stage, score };
            println!("{}", row.score.row(service, listing.name(), row.stage));
            wrong(&row);
            rows.push(row);
        }
    }
    rows
}

fn header() {
    println!(
        "| service | listing | stage | a tool it needs [95% CI] | the one to call first [95% CI] | prompt tokens | time |"
    );
    println!("|---|---|---|---|---|---|---|");
}

/// The tasks `row` got wrong, on the standard error (the tables stay whole on the output).
fn wrong(row: &Row) {
    eprintln!("wrong, {} {} {}:", row.service, row.listing.name(), row.stage);
    for line in &row.score.wrong {
        eprintln!("  {line}");
    }
}

/// The tasks `stage` lost and won against the raw listing, task by task, in `rows` of `listing`.
fn against_raw(rows: &[Row], listing: Listing, stage: Stage) -> (usize, usize) {
    let hits = |stage: Stage| {
        rows.iter().find(|row| row.listing == listing && row.stage == stage.name()).map(|row| row.score.hits.clone())
    };
    let (raw, enhanced) = (hits(Stage::Raw).unwrap_or_default(), hits(stage).unwrap_or_default());
    let lost = raw.iter().zip(&enhanced).filter(|(raw, enhanced)| **raw && !**enhanced).count();
    let won = raw.iter().zip(&enhanced).filter(|(raw, enhanced)| !**raw && **enhanced).count();
    (lost, won)
}

/// The one-sided sign test's p-value of `lost` losses against `won` wins: the chance of at least
/// `lost` losses among the `lost + won` tasks that differ, were either side as likely to win each.
fn sign_test(lost: usize, won: usize) -> f64 {
    let n = lost + won;
    let choose = |k: usize| (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64);
    (lost..=n).map(choose).sum::<f64>() / 2f64.powi(n as i32)
}

#[test]
fn the_sign_test_tells_a_worse_stage_from_noise() {
    assert!(sign_test(3, 1) > 0.05, "three lost, one won: chance");
    assert!(sign_test(6, 0) < 0.05, "six lost, none won: worse");
    assert!(sign_test(9, 2) < 0.05, "nine lost, two won: worse");
    assert!((sign_test(0, 0) - 1.0).abs() < 1e-9, "no difference at all");
}

/// The smoke version, in CI: TMDB's first thirty tasks, over the tools they need and the next
/// ones up to twenty-four, the bare listing raw, after the rules and after the rules and the
/// model. An enhanced listing that picks worse than the raw one fails it: task by task, it loses
/// more tasks the raw listing wins than chance explains (a one-sided sign test at 5%; the
/// model answers at temperature 0, and a task or two moves either way with any wording, as the
/// whole benchmark shows: the rules won 45 to 43 there and lost 20 to 22 here, 3 tasks to 1).
#[test]
#[cfg_attr(no_model, ignore = "asks the real model: TOOL_MEDIATOR_MODEL=1 (tests/peers/model/install)")]
fn enhanced_listings_pick_no_worse_than_raw_ones() {
    let Some(model) = real_model() else { return };
    let _turn = model.turn();
    let all = restbench::tools("TMDB");
    let tasks: Vec<Task> = tasks_of("TMDB").into_iter().take(SMOKE_TASKS).collect();
    let needed = |tool: &Value| tasks.iter().any(|task| task.needed.iter().any(|name| tool["name"] == name.as_str()));
    let mut tools: Vec<Value> = all.iter().filter(|tool| needed(tool)).cloned().collect();
    for tool in &all {
        if tools.len() < SMOKE_TOOLS && !tools.contains(tool) {
            tools.push(tool.clone());
        }
    }
    let plan: &[(Listing, &[Stage], bool)] = &[(Listing::Bare, &[Stage::Raw, Stage::Rules, Stage::Model], false)];
    header();
    let rows = tokio::runtime::Runtime::new().unwrap().block_on(benchmark(model, "TMDB", &tools, &tasks, plan));
    for stage in [Stage::Rules, Stage::Model] {
        let (lost, won) = against_raw(&rows, Listing::Bare, stage);
        let p = sign_test(lost, won);
        println!("{}: lost {lost} tasks the raw listing won, won {won} it lost (p = {p:.3})", stage.name());
        assert!(
            p > 0.05,
            "{}: picks worse than the raw listing, {lost} tasks lost to {won} won (p = {p:.3})",
            stage.name()
        );
    }
}

/// The smoke version's size: about two seconds a task and stage on two cores.
const SMOKE_TASKS: usize = 30;
const SMOKE_TOOLS: usize = 24;

/// The whole benchmark: both services, every listing, every stage, and the default disclosure.
#[test]
#[ignore = "asks the real model for an hour or more: TOOL_MEDIATOR_MODEL=1, --ignored"]
fn tool_choice_benchmark() {
    let Some(model) = real_model() else { return };
    let _turn = model.turn();
    let every: &[Stage] = &[Stage::Raw, Stage::Rules, Stage::Model];
    let plan: &[(Listing, &[Stage], bool)] = &[
        (Listing::Published, &[Stage::Raw, Stage::Rules], true),
        (Listing::Shortened, &[Stage::Raw, Stage::Rules], false),
        (Listing::Bare, every, true),
    ];
    let only: Option<String> = std::env::var("CHOICE_SERVICE").ok();
    header();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut rows = Vec::new();
    for service in restbench::SERVICES.iter().filter(|service| only.as_deref().is_none_or(|only| only == **service)) {
        rows.extend(runtime.block_on(benchmark(model, service, &restbench::tools(service), &tasks_of(service), plan)));
    }
    for listing in [Listing::Published, Listing::Shortened, Listing::Bare] {
        for stage in [Stage::Rules, Stage::Model] {
            let (lost, won) = against_raw(&rows, listing, stage);
            let p = sign_test(lost, won);
            assert!(p > 0.05, "{} {}: {lost} tasks lost to {won} won (p = {p:.3})", listing.name(), stage.name());
        }
    }
}
