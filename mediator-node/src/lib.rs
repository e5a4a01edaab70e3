//! The native half of `@tool-mediator/node`: the library behind Node-API.
//!
//! Tools cross the boundary as JSON text, one string each way: V8 writes and reads JSON faster
//! than a walk over the objects through Node-API, and the library reads JSON text straight into
//! its tools (see `tool_mediator::Json`). `index.js` is the JavaScript half (the text, the
//! middleware closure) and `index.d.ts` the types a TypeScript transport sees. Every method that
//! works runs on the Tokio runtime napi keeps, never on Node's event loop; its errors are
//! JavaScript `Error`s carrying the messages the CLI prints.

#[cfg(feature = "bench")]
pub mod benchmark;

/// Reading a list of tools allocates a little for every string and schema; glibc's allocator
/// made a third of the crossing's cost (measured with `perf` on `npm run bench`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::cell::Cell;
use std::fmt::Display;
use std::path::PathBuf;
use std::sync::Arc;

use napi::bindgen_prelude::{Result, spawn};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Error, Status};
use napi_derive::napi;
use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;
use tool_mediator::admission::Admission;
use tool_mediator::llm::Provider;
use tool_mediator::pin::PinsFile;
use tool_mediator::session::{DisclosureMode, Route, SessionPolicy};
use tool_mediator::{ChainOptions, MediatorConfig, NameRules, SourceType, Tool, ToolContext};

/// The settings of a mediator: the CLI's configuration file and flags, as one object.
#[napi(object)]
#[derive(Default)]
pub struct MediatorOptions {
    /// A configuration file (TOML, or JSON by extension), as the CLI's `--config`. None is read
    /// unless named: a library does not look around the working directory.
    pub config: Option<String>,
    /// Override directories, after the file's (`--overrides`), refining the built-in ones.
    pub overrides: Option<Vec<String>>,
    /// The curated override files built into the package (on by default;
    /// `--no-builtin-overrides`).
    pub builtin_overrides: Option<bool>,
    /// Reads the override directories again when they change (looked at every 2 s): sessions
    /// take their last list in again and tell their list-changed callbacks. Off by default.
    pub watch_overrides: Option<bool>,
    /// The rule-based transformer (on by default; `--no-rules`).
    pub rules: Option<bool>,
    /// Dictionary files extending the built-in one (`--dictionary`).
    pub dictionaries: Option<Vec<String>>,
    /// A directory of prompt templates (`--prompts`).
    pub prompts: Option<String>,
    /// `anthropic`, `openai`, `openai-compatible` or `off` (`--llm`).
    pub llm: Option<String>,
    pub model: Option<String>,
    pub llm_url: Option<String>,
    pub llm_deadline_secs: Option<u32>,
    /// Ask the language model in the background (the configuration's `llm_in_background`, on
    /// unless set): `enhance` and sessions answer at once with the cache's answers and the
    /// rules', and sessions take the model's in when they come, telling their list-changed
    /// callbacks. Off: every call that misses the cache waits for the model.
    pub llm_in_background: Option<bool>,
    /// The cache of the language model's answers (on by default; `--no-cache`).
    pub cache: Option<bool>,
    pub cache_dir: Option<String>,
    pub cache_ttl_hours: Option<u32>,
    /// `mcp` (default) or `strict`: which tool names the consumer accepts.
    pub client_profile: Option<String>,
    /// Never use an answer less confident than this, 0 to 1.
    pub min_confidence: Option<f64>,
    /// Ask the language model about the tools the poisoning screen is unsure of (`--judge`).
    pub judge: Option<bool>,
    /// Ask the language model for its odds that each tool the screen did not flag is poisoned,
    /// and flag those over this, 0 to 1 (`--judge-threshold`; calibrated for the model with
    /// `tool-mediator lint --calibrate-judge`). Turns the judge on.
    pub judge_threshold: Option<f64>,
}

/// What a session shows first, over the mediator's settings.
#[napi(object)]
#[derive(Default)]
pub struct SessionOptions {
    /// Fold categories of at least this many tools; 0 lists everything (`--no-disclosure`).
    pub disclosure: Option<u32>,
    /// `both`, `categories`, `search` or `off` (`--disclosure-mode`).
    pub disclosure_mode: Option<String>,
    /// Fewer visible tools than this are listed whole (`--whole-below`).
    pub whole_below: Option<u32>,
    /// Leave out the tools suspected of poisoning (`--quarantine`).
    pub quarantine: Option<bool>,
    /// A lock file written by `tool-mediator pin` (`--locked`): a tool changed since it was
    /// pinned is hidden (or listed with a warning, `onChange: "warn"`), a new one reported.
    pub lock: Option<String>,
    /// `hide` (default) or `warn`: what a lock does with a changed tool (`--on-change`).
    pub on_change: Option<String>,
    /// Trust on first use (`--trust-on-first-use`; the configuration's `trust_on_first_use`
    /// unless told): the source's tools are pinned the first time they are seen, and a changed
    /// or new one is held back until `tool-mediator review` approves it.
    pub trust_on_first_use: Option<bool>,
    /// The pins file of trust on first use (`--pins-file`; turns it on); the configuration's,
    /// else the platform data directory's `tool-mediator/pins.json`.
    pub pins_file: Option<String>,
}

/// A chain of transformers built from settings, shared by every call and session made from it.
#[napi]
pub struct Mediator {
    core: Arc<tool_mediator::Mediator>,
    settings: MediatorConfig,
    /// Kept for what follows the override directories, which lives as long as they do, and for
    /// the embedding model its sessions search by.
    transformers: tool_mediator::Transformers,
}

/// Builds a mediator from `options`: loads and checks the configuration file, the override
/// directories, the dictionaries, the language model and its cache.
#[napi]
pub async fn create_mediator(options: Option<MediatorOptions>) -> Result<Mediator> {
    let options = options.unwrap_or_default();
    let mut settings = match &options.config {
        Some(path) => MediatorConfig::from_file(path.as_ref()).map_err(failed)?,
        None => MediatorConfig::default(),
    };
    let llm = options.llm.as_deref().map(provider).transpose()?;
    settings.choose_llm(llm);
    if options.model.is_some() {
        settings.model = options.model;
    }
    if options.llm_url.is_some() {
        settings.llm_url = options.llm_url;
    }
    if let Some(deadline) = options.llm_deadline_secs {
        settings.llm_deadline_secs = deadline.into();
    }
    if let Some(threshold) = options.judge_threshold {
        if !(0.0..=1.0).contains(&threshold) {
            return Err(failure(format!("judgeThreshold must be between 0 and 1, not {threshold}")));
        }
        settings.judge_threshold = Some(threshold);
    }
    if let Some(background) = options.llm_in_background {
        settings.llm_in_background = background;
    }
    if let Some(dir) = options.cache_dir {
        settings.cache_dir = Some(dir.into());
    }
    if let Some(hours) = options.cache_ttl_hours {
        settings.cache_ttl_hours = u64::from(hours).max(1);
    }
    settings.override_dirs.extend(options.overrides.into_iter().flatten().map(PathBuf::from));
    if let Some(built_in) = options.builtin_overrides {
        settings.builtin_overrides = built_in;
    }
    let names = match options.client_profile.as_deref() {
        None | Some("mcp") => NameRules::MCP,
        Some("strict") => NameRules::STRICT,
        Some(other) => return Err(failure(format!("unknown client profile `{other}` (expected mcp or strict)"))),
    };
    let min_confidence = options.min_confidence.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&min_confidence) {
        return Err(failure(format!("minConfidence must be between 0 and 1, not {min_confidence}")));
    }
    let chain = ChainOptions {
        rules: options.rules.unwrap_or(true),
        dictionaries: options.dictionaries.into_iter().flatten().map(PathBuf::from).collect(),
        prompts: options.prompts.map(PathBuf::from),
        llm_required: llm.flatten().is_some(),
        cache: options.cache.unwrap_or(true),
        judge: options.judge.unwrap_or(false),
        // A host runs for long, and its sessions follow the chain.
        llm_in_background: true,
        ..ChainOptions::default()
    };
    let transformers = settings.build(&chain).await.map_err(failed)?;
    if options.watch_overrides.unwrap_or(false) {
        transformers.follow_overrides();
    }
    let core = Arc::new(transformers.mediator(names, min_confidence));
    Ok(Mediator { core, settings, transformers })
}

#[napi]
impl Mediator {
    /// Enhances `tools` (a JSON array of MCP tools) from `source`: the tools a consumer sees, as
    /// a JSON array, hidden ones left out and provenance under `_meta` for changed ones. A tool
    /// the mediator left as it came is written as its index in `tools`, for the caller to put
    /// back the object it already has: most tools of a real list are well made, and reading
    /// them back would be most of the crossing's cost.
    #[napi]
    pub async fn enhance(&self, tools: String, source: String, source_type: Option<String>) -> Result<String> {
        #[derive(serde::Serialize)]
        #[serde(untagged)]
        enum Consumed {
            Unchanged(usize),
            Changed(Tool),
        }
        let context = context(source, source_type)?;
        let tools = read_tools(&tools)?;
        let enhanced = self.core.enhance(tools, &context).await;
        let consumer: Vec<Consumed> = enhanced
            .into_iter()
            .enumerate()
            .filter(|(_, tool)| !tool.hidden)
            .map(|(index, tool)| match tool.changes.any() {
                true => Consumed::Changed(tool.into_consumer_tool()),
                false => Consumed::Unchanged(index),
            })
            .collect();
        serde_json::to_string(&consumer).map_err(failure)
    }

    /// A session for one client of `source`: what it sees now and where its calls go, with the
    /// policy of the proxy, from the same settings (the configuration file's
    /// `disclosure_mode`, `grouping_threshold` and `whole_below`, `both`, 5 and 20 unless set),
    /// `options` over them.
    #[napi]
    pub fn session(
        &self,
        source: String,
        source_type: Option<String>,
        options: Option<SessionOptions>,
    ) -> Result<Session> {
        let context = context(source, source_type)?;
        let options = options.unwrap_or_default();
        let mut settings = self.settings.clone();
        if let Some(mode) = options.disclosure_mode.as_deref() {
            settings.disclosure_mode = mode.parse().map_err(failure)?;
        }
        match options.disclosure {
            // Fold nothing, search nothing: as the CLI's `--no-disclosure`.
            Some(0) if options.disclosure_mode.is_some() => {
                return Err(failure("disclosure: false lists everything: give it without disclosureMode"));
            }
            Some(0) => settings.disclosure_mode = DisclosureMode::Off,
            Some(threshold) => settings.grouping_threshold = usize::try_from(threshold).unwrap_or(usize::MAX),
            None => {}
        }
        if let Some(whole_below) = options.whole_below {
            settings.whole_below = usize::try_from(whole_below).unwrap_or(usize::MAX);
        }
        settings.quarantine |= options.quarantine.unwrap_or(false);
        let policy = SessionPolicy { embedder: self.transformers.embedder(), ..settings.session_policy() };
        let admission = admission(&settings, &options)?;
        let core = tool_mediator::session::Session::new(self.core.clone(), context, policy).with_admission(admission);
        Ok(Session::new(core))
    }
}

/// One client's view of the tools.
#[napi]
pub struct Session {
    core: Arc<tool_mediator::session::Session>,
    listeners: std::sync::Mutex<Vec<JoinHandle<()>>>,
}

impl Session {
    fn new(core: tool_mediator::session::Session) -> Session {
        let core = Arc::new(core);
        // Over override directories that are followed, the list is taken in again as they change.
        let following = spawn({
            let core = core.clone();
            async move { tool_mediator::session::Session::follow_chain(&core).await }
        });
        // With trust on first use, a review's approval reaches the session.
        let reviews = spawn(tool_mediator::session::Session::follow_reviews(Arc::downgrade(&core)));
        Session { core, listeners: std::sync::Mutex::new(vec![following, reviews]) }
    }
}

#[napi]
impl Session {
    /// What the client sees of `upstream` (a JSON array of tools), from the start or from
    /// `cursor`: `{"tools": [...], "nextCursor": "..."}`. The list is enhanced again only
    /// when it changed.
    #[napi]
    pub async fn list_tools(&self, upstream: String, cursor: Option<String>) -> Result<String> {
        let upstream = read_tools(&upstream)?;
        let page = self.core.list_tools(&upstream, cursor.as_deref()).await.map_err(failed)?;
        let mut answer = json!({"tools": page.tools()});
        if let Some(cursor) = &page.next_cursor {
            answer["nextCursor"] = cursor.as_str().into();
        }
        Ok(answer.to_string())
    }

    /// Where the call `name(arguments)` goes, `arguments` a JSON object:
    /// `{"route": "local", "result": CallToolResult}`, answered here (a category tool);
    /// `{"route": "upstream", "name", "arguments"}`, the source's name and argument names;
    /// `{"route": "notFound"}`, no such tool for this client now.
    #[napi]
    pub async fn route_call(&self, name: String, arguments: Option<String>) -> Result<String> {
        let arguments = match arguments.as_deref() {
            None => Map::new(),
            Some(text) => {
                match tool_mediator::json::from_str(text).map_err(|error| failure(located("arguments", &error)))? {
                    Value::Object(arguments) => arguments,
                    Value::Null => Map::new(),
                    other => return Err(failure(format!("arguments: must be an object, not {other}"))),
                }
            }
        };
        let route = match self.core.route_call(&name, arguments).await {
            Route::Local(result) => json!({"route": "local", "result": result}),
            Route::Upstream { name, arguments, .. } => {
                json!({"route": "upstream", "name": name, "arguments": arguments})
            }
            Route::NotFound => json!({"route": "notFound"}),
        };
        Ok(route.to_string())
    }

    /// Calls `callback` each time the visible tool list changes, until [`Session::close`]. The
    /// callback never keeps Node running by itself (the function is weak), and calls waiting
    /// for Node are one at most: a change while one waits is told by that one.
    #[napi]
    pub fn on_list_changed(&self, callback: ThreadsafeFunction<(), (), (), Status, false, true, 1>) {
        let mut events = self.core.subscribe();
        let listener = spawn(async move {
            loop {
                match events.recv().await {
                    // Missed events are one change as far as a client is concerned.
                    Ok(_) | Err(RecvError::Lagged(_)) => {
                        callback.call((), ThreadsafeFunctionCallMode::NonBlocking);
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        });
        self.listeners.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(listener);
    }

    /// Stops calling the list-changed callbacks (and following the override directories and
    /// reviews).
    #[napi]
    pub fn close(&self) {
        for listener in self.listeners.lock().unwrap_or_else(std::sync::PoisonError::into_inner).drain(..) {
            listener.abort();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

/// The pin lock and trust on first use a session's options and `settings` ask for, their files
/// read once to check them.
fn admission(settings: &MediatorConfig, options: &SessionOptions) -> Result<Admission> {
    let mut admission = Admission::default();
    if let Some(path) = &options.lock {
        let hide_changed = match options.on_change.as_deref() {
            None | Some("hide") => true,
            Some("warn") => false,
            Some(other) => return Err(failure(format!("onChange must be `hide` or `warn`, not `{other}`"))),
        };
        let lock = tool_mediator::pin::Lock::read(path.as_ref()).map_err(failed)?;
        admission = admission.with_lock(Arc::new(lock), hide_changed);
    } else if options.on_change.is_some() {
        return Err(failure("onChange needs a lock"));
    }
    let trusting = options.trust_on_first_use.unwrap_or(settings.trust_on_first_use) || options.pins_file.is_some();
    if trusting {
        let path = options.pins_file.as_ref().map(PathBuf::from).or_else(|| settings.pins_path()).ok_or_else(|| {
            failure(
                "trust on first use: no data directory for the pins file (set XDG_DATA_HOME or HOME, or give pinsFile)",
            )
        })?;
        let file = PinsFile::at(path);
        file.read().map_err(failed)?;
        admission = admission.with_pins(Arc::new(file));
    }
    Ok(admission)
}

fn failure(message: impl Display) -> Error {
    Error::from_reason(message.to_string())
}

/// `error` and its causes as the CLI prints them: `outer: inner: innermost`.
fn failed(error: impl std::error::Error) -> Error {
    failure(tool_mediator::with_causes(&error))
}

fn provider(name: &str) -> Result<Option<Provider>> {
    Ok(Some(match name {
        "off" => return Ok(None),
        "anthropic" => Provider::Anthropic,
        "openai" => Provider::OpenAi,
        "openai-compatible" => Provider::OpenAiCompatible,
        other => {
            return Err(failure(format!(
                "unknown language model provider `{other}` (expected anthropic, openai, openai-compatible or off)"
            )));
        }
    }))
}

fn context(source: String, source_type: Option<String>) -> Result<ToolContext> {
    let source_type = match source_type.as_deref() {
        None => SourceType::Api,
        Some(name) => name.parse().map_err(failure)?,
    };
    Ok(ToolContext::new(source, source_type))
}

/// Reads a JSON array of tools in one pass, counting them, so a bad one is named by its JSON
/// pointer.
fn read_tools(text: &str) -> Result<Vec<Tool>> {
    struct Tools<'a>(&'a Cell<Option<usize>>);

    impl<'de> DeserializeSeed<'de> for Tools<'_> {
        type Value = Vec<Tool>;

        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> std::result::Result<Vec<Tool>, D::Error> {
            deserializer.deserialize_seq(self)
        }
    }

    impl<'de> Visitor<'de> for Tools<'_> {
        type Value = Vec<Tool>;

        fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
            formatter.write_str("an array of tools")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> std::result::Result<Vec<Tool>, A::Error> {
            let mut tools = Vec::with_capacity(items.size_hint().unwrap_or(0));
            self.0.set(Some(0));
            // Each tool is checked as a manifest's are first, so an error says what the CLI says.
            while let Some(item) = items.next_element::<&'de serde_json::value::RawValue>()? {
                if let Some(problem) = tool_mediator::manifest::shape_problem(item) {
                    return Err(serde::de::Error::custom(problem));
                }
                let tool = serde_json::from_str::<Tool>(item.get())
                    .map_err(|error| serde::de::Error::custom(tool_mediator::json::message(&error)))?;
                tools.push(tool);
                self.0.set(Some(tools.len()));
            }
            Ok(tools)
        }
    }

    // The index of the tool being read, once the array has begun.
    let reading = Cell::new(None);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let tools = Tools(&reading).deserialize(&mut deserializer).and_then(|tools| deserializer.end().map(|()| tools));
    tools.map_err(|error| {
        let place = match reading.get() {
            Some(index) => format!("tools: `/{index}`"),
            None => "tools: not an array of tools".to_owned(),
        };
        failure(located(&place, &error))
    })
}

/// `place: message`, without serde_json's line and column: they count in text the caller never
/// saw (the `JSON.stringify` of its objects).
fn located(place: &str, error: &serde_json::Error) -> String {
    format!("{place}: {}", tool_mediator::json::message(error))
}
