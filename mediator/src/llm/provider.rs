//! Talking to a model: Anthropic Messages, OpenAI chat completions, and OpenAI-compatible local
//! servers (Ollama, vLLM, llama.cpp), with structured output, timeouts and retries.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::http::{self, BodyError};
use crate::read::Bytes;

/// Which wire format to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    Anthropic,
    #[serde(rename = "openai")]
    OpenAi,
    #[serde(rename = "openai-compatible")]
    OpenAiCompatible,
}

impl Provider {
    pub fn default_base_url(self) -> &'static str {
        match self {
            Provider::Anthropic => "https://api.anthropic.com",
            Provider::OpenAi => "https://api.openai.com",
            Provider::OpenAiCompatible => "http://127.0.0.1:11434",
        }
    }

    /// The environment variable the key is read from.
    pub fn key_variable(self) -> Option<&'static str> {
        match self {
            Provider::Anthropic => Some("ANTHROPIC_API_KEY"),
            Provider::OpenAi => Some("OPENAI_API_KEY"),
            Provider::OpenAiCompatible => None,
        }
    }

    pub fn default_model(self) -> &'static str {
        match self {
            Provider::Anthropic => "claude-haiku-4-5",
            Provider::OpenAi => "gpt-4.1-mini",
            Provider::OpenAiCompatible => "llama3.1",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
            Provider::OpenAiCompatible => "openai-compatible",
        })
    }
}

/// A model call that failed. Messages name the server by its URL (without credentials or query)
/// and never carry the API key.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("{provider} at {url} answered HTTP {status}: {body}{}", hint_for(*.status))]
    Status { provider: Provider, url: String, status: u16, body: String },
    #[error("the request to {provider} at {url} failed: {message}")]
    Transport { provider: Provider, url: String, message: String },
    #[error("{provider}'s answer is not what was asked for: {message}")]
    Malformed { provider: Provider, message: String },
    /// The reply passed `llm_max_response_bytes`; it was not read further.
    #[error("{provider}'s reply was not read: {reason} (llm_max_response_bytes)")]
    TooLarge { provider: Provider, reason: String },
    /// The answer was cut off at the output limit (`finish_reason: length`): a grammar does not
    /// stop a run-away string, and half an answer is no answer.
    #[error("{provider}'s answer was cut off at {max_tokens} output tokens")]
    CutOff { provider: Provider, max_tokens: u32 },
    /// The deadline came before an answer.
    #[error("{provider} did not answer before the deadline")]
    Deadline { provider: Provider },
    /// Asked for its odds, the server gave no log-probabilities (it does not take `logprobs`).
    #[error("{provider} gave no log-probabilities for the answer's first word (does the server take `logprobs`?)")]
    NoOdds { provider: Provider },
}

impl LlmError {
    /// Whether the model was reached and answered (if unusably), rather than not reached at all.
    pub fn is_cut_off(&self) -> bool {
        matches!(self, LlmError::CutOff { .. })
    }
}

/// What to try when a server says the address is wrong.
fn hint_for(status: u16) -> &'static str {
    match status {
        404 => " (is the URL the server's base, such as http://127.0.0.1:11434 or http://127.0.0.1:8080/v1?)",
        _ => "",
    }
}

/// One structured answer and what it cost.
#[derive(Debug, Clone)]
pub struct Completion {
    pub json: Value,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// How many of the likeliest first tokens [`LlmClient::yes_odds`] asks for (OpenAI's most).
const TOP_LOGPROBS: u32 = 20;

/// The most output a request may ask for unless told: far above an answer about a batch of tools.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 8192;

/// How to reach a model.
#[derive(Clone)]
pub struct LlmClient {
    provider: Provider,
    model: String,
    base_url: String,
    /// The base URL as errors name it: no user, password, query or fragment.
    shown_url: String,
    api_key: Option<String>,
    http: reqwest::Client,
    timeout: Duration,
    max_response_bytes: u64,
    max_retries: u32,
    backoff: Duration,
    /// The model's context window in tokens: configured, else asked of the server once.
    context: Arc<tokio::sync::OnceCell<Option<u32>>>,
}

impl fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmClient")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .finish()
    }
}

/// A client that never follows redirects: a redirect would carry the key to another host.
/// Each request sets its own timeout (see [`LlmClient::complete_before`]).
fn http_client() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("a TLS client builds")
}

/// The longest a `Retry-After` is honoured for; a server asking for more is given up on.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The largest reply read by default: far above any answer about a batch of tools.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

impl LlmClient {
    pub fn new(
        provider: Provider,
        model: impl Into<String>,
        base_url: Option<String>,
        api_key: Option<String>,
    ) -> Self {
        let base_url = base(&base_url.unwrap_or_else(|| provider.default_base_url().to_owned()));
        LlmClient {
            provider,
            model: model.into(),
            shown_url: shown(&base_url),
            base_url,
            api_key,
            http: http_client(),
            // A local server on a CPU may take minutes for a batch: the deadline each request is
            // given (per tool) is what bounds it there.
            timeout: Duration::from_secs(if provider == Provider::OpenAiCompatible { 1800 } else { 120 }),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_retries: 3,
            backoff: Duration::from_millis(500),
            context: Arc::default(),
        }
    }

    /// The model's context window, in tokens, when the server is not to be asked.
    pub fn with_context_window(mut self, tokens: u32) -> Self {
        self.context = Arc::new(tokio::sync::OnceCell::new_with(Some(Some(tokens))));
        self
    }

    /// The model's context window in tokens: as configured, else as a local server says (llama.cpp's
    /// `/props`, Ollama's `/api/show`; asked once, within a few seconds), else `None` (a hosted
    /// model's window is far larger than any batch).
    pub async fn context_window(&self) -> Option<u32> {
        // A server that could not be reached is asked again next time (it may not be up yet);
        // one that answered without saying is not.
        self.context.get_or_try_init(|| self.ask_context_window()).await.ok().copied().flatten()
    }

    async fn ask_context_window(&self) -> Result<Option<u32>, Unreached> {
        if self.provider != Provider::OpenAiCompatible {
            return Ok(None);
        }
        const ASKING: Duration = Duration::from_secs(5);
        const MAX_PROPS_BYTES: u64 = 4 * 1024 * 1024;
        let read = |response: reqwest::Response| async move {
            if !response.status().is_success() {
                return None;
            }
            let text = http::text_limited(response, MAX_PROPS_BYTES).await.ok()?;
            serde_json::from_str::<Value>(&text).ok()
        };
        // llama.cpp: the slots' context.
        let props = self.http.get(at(&self.base_url, "/props")).timeout(ASKING).send().await.map_err(|_| Unreached)?;
        if let Some(props) = read(props).await
            && let Some(tokens) = props.pointer("/default_generation_settings/n_ctx").and_then(Value::as_u64)
        {
            return Ok(u32::try_from(tokens).ok().filter(|&tokens| tokens > 0));
        }
        // Ollama: the context it runs the model with (`num_ctx`), else its default (2,048 before
        // 0.6, 4,096 since: the smaller is safe) within the model's own window.
        let shown = self.http.post(at(&self.base_url, "/api/show")).timeout(ASKING).json(&json!({"model": self.model}));
        if let Ok(response) = shown.send().await
            && let Some(show) = read(response).await
        {
            let trained = show.get("model_info").and_then(Value::as_object).and_then(|info| {
                info.iter().find(|(key, _)| key.ends_with(".context_length")).and_then(|(_, value)| value.as_u64())
            });
            let configured = show.get("parameters").and_then(Value::as_str).and_then(|parameters| {
                parameters.lines().find_map(|line| line.trim().strip_prefix("num_ctx")?.trim().parse::<u64>().ok())
            });
            let tokens = configured.unwrap_or(2048).min(trained.unwrap_or(u64::MAX));
            return Ok(u32::try_from(tokens).ok().filter(|&tokens| tokens > 0));
        }
        Ok(None)
    }

    /// The per-request timeout (120 s unless set; 30 minutes for a local server, where the
    /// deadline per tool bounds a request), from connecting to the reply's last byte.
    /// Never longer than what is left before a deadline.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The largest reply read (16 MiB unless set); a larger one fails its batch, unretried.
    pub fn with_max_response_bytes(mut self, max_response_bytes: u64) -> Self {
        self.max_response_bytes = max_response_bytes;
        self
    }

    /// Retries after the first attempt, and the first backoff (doubling, with jitter).
    pub fn with_retries(mut self, max_retries: u32, backoff: Duration) -> Self {
        self.max_retries = max_retries;
        self.backoff = backoff;
        self
    }

    pub fn provider(&self) -> Provider {
        self.provider
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// The server's base URL, without the `/v1` a user may have written.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The request body for a prompt, as it would be sent (for `--dry-run`), asking for at most
    /// [`DEFAULT_MAX_OUTPUT_TOKENS`].
    pub fn request_body(&self, system: &str, prompt: &str, schema: &Value) -> Value {
        self.request_body_within(system, prompt, schema, DEFAULT_MAX_OUTPUT_TOKENS)
    }

    /// The request body asking for at most `max_tokens` of output. A local server is asked for
    /// its most likely answer (temperature 0): the same tools read the same way every run.
    pub fn request_body_within(&self, system: &str, prompt: &str, schema: &Value, max_tokens: u32) -> Value {
        match self.provider {
            Provider::Anthropic => json!({
                "model": self.model,
                "max_tokens": max_tokens,
                "system": system,
                "messages": [{"role": "user", "content": prompt}],
                "tools": [{"name": "submit_tools", "description": "Submit the improved tool definitions.", "input_schema": schema}],
                "tool_choice": {"type": "tool", "name": "submit_tools"}
            }),
            Provider::OpenAi => json!({
                "model": self.model,
                "max_completion_tokens": max_tokens,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "tools", "schema": schema}}
            }),
            Provider::OpenAiCompatible => json!({
                "model": self.model,
                "max_tokens": max_tokens,
                "temperature": 0,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "tools", "schema": schema}}
            }),
        }
    }

    /// The chat endpoint's path.
    fn path(&self) -> &'static str {
        match self.provider {
            Provider::Anthropic => "/v1/messages",
            Provider::OpenAi | Provider::OpenAiCompatible => "/v1/chat/completions",
        }
    }

    /// Sends a prompt and returns the structured answer, retrying on 429, 5xx and connection
    /// errors with exponential backoff and jitter, honouring `Retry-After`.
    pub async fn complete(&self, system: &str, prompt: &str, schema: &Value) -> Result<Completion, LlmError> {
        self.complete_before(system, prompt, schema, None).await
    }

    /// [`complete`](Self::complete), done by `deadline`: no request's timeout runs past it, and
    /// no retry is made that would start after it. A request cut short by the deadline, or
    /// none left time for, is [`LlmError::Deadline`].
    pub async fn complete_before(
        &self,
        system: &str,
        prompt: &str,
        schema: &Value,
        deadline: Option<Instant>,
    ) -> Result<Completion, LlmError> {
        self.complete_within(system, prompt, schema, DEFAULT_MAX_OUTPUT_TOKENS, deadline).await
    }

    /// [`complete_before`](Self::complete_before), asking for at most `max_tokens` of output: an
    /// answer cut off there is [`LlmError::CutOff`], not retried here (a smaller question may fit).
    pub async fn complete_within(
        &self,
        system: &str,
        prompt: &str,
        schema: &Value,
        max_tokens: u32,
        deadline: Option<Instant>,
    ) -> Result<Completion, LlmError> {
        let body = self.request_body_within(system, prompt, schema, max_tokens);
        let response = self.post(self.path(), &body, deadline).await?;
        self.parse(response, max_tokens)
    }

    /// The model's odds of answering "yes" rather than "no" to `prompt`: P(yes) / (P(yes) +
    /// P(no)), read from the log-probabilities of the first token it would say (temperature 0,
    /// one token). `None` where the provider gives no log-probabilities (Anthropic's Messages
    /// API); an answer whose likeliest first tokens hold neither word is
    /// [`LlmError::Malformed`].
    pub async fn yes_odds(
        &self,
        system: &str,
        prompt: &str,
        deadline: Option<Instant>,
    ) -> Option<Result<f64, LlmError>> {
        let limit = match self.provider {
            Provider::Anthropic => return None,
            Provider::OpenAi => "max_completion_tokens",
            Provider::OpenAiCompatible => "max_tokens",
        };
        let body = json!({
            "model": self.model,
            limit: 1,
            "temperature": 0,
            "logprobs": true,
            "top_logprobs": TOP_LOGPROBS,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
        });
        Some(self.post(self.path(), &body, deadline).await.and_then(|response| self.odds(&response)))
    }

    /// The embeddings of `texts`, in their order, each scaled to length 1, from the OpenAI
    /// embeddings endpoint (`/v1/embeddings`: OpenAI, Ollama, llama.cpp's server, vLLM). `None`
    /// where the provider has none (Anthropic's API). An answer with another number of vectors
    /// than texts, vectors of different or absurd lengths, or a number that is not finite is
    /// [`LlmError::Malformed`].
    pub async fn embed(&self, texts: &[&str], deadline: Option<Instant>) -> Option<Result<Vec<Vec<f32>>, LlmError>> {
        if self.provider == Provider::Anthropic {
            return None;
        }
        let body = json!({"model": self.model, "input": texts, "encoding_format": "float"});
        Some(
            self.post("/v1/embeddings", &body, deadline)
                .await
                .and_then(|response| self.vectors(&response, texts.len())),
        )
    }

    /// The vectors of an embeddings answer, by their `index`, each scaled to length 1.
    fn vectors(&self, response: &Value, count: usize) -> Result<Vec<Vec<f32>>, LlmError> {
        /// Far above any embedding model's (3,072 for OpenAI's largest).
        const MAX_DIMENSIONS: usize = 16_384;
        let malformed = |message: String| LlmError::Malformed { provider: self.provider, message };
        let data = response.get("data").and_then(Value::as_array).ok_or_else(|| malformed("no `data` array".into()))?;
        if data.len() != count {
            return Err(malformed(format!("{} vectors for {count} texts", data.len())));
        }
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; count];
        for (at, item) in data.iter().enumerate() {
            let index = item.get("index").and_then(Value::as_u64).map_or(at, |index| index as usize);
            let numbers = item
                .get("embedding")
                .and_then(Value::as_array)
                .filter(|numbers| !numbers.is_empty() && numbers.len() <= MAX_DIMENSIONS)
                .ok_or_else(|| {
                    malformed(format!("data[{at}].embedding is not an array of 1 to {MAX_DIMENSIONS} numbers"))
                })?;
            let mut vector = Vec::with_capacity(numbers.len());
            for number in numbers {
                match number.as_f64().map(|number| number as f32).filter(|number| number.is_finite()) {
                    Some(number) => vector.push(number),
                    None => return Err(malformed(format!("data[{at}].embedding holds {number}, not a finite number"))),
                }
            }
            let length = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
            if !(length > 0.0 && length.is_finite()) {
                return Err(malformed(format!("data[{at}].embedding has no direction (length {length})")));
            }
            vector.iter_mut().for_each(|x| *x /= length);
            match vectors.get_mut(index) {
                Some(slot @ None) => *slot = Some(vector),
                _ => return Err(malformed(format!("data[{at}].index {index} is out of range or repeated"))),
            }
        }
        let vectors: Vec<Vec<f32>> = vectors.into_iter().flatten().collect();
        if vectors.windows(2).any(|pair| pair[0].len() != pair[1].len()) {
            return Err(malformed("vectors of different lengths".into()));
        }
        Ok(vectors)
    }

    /// P(yes) / (P(yes) + P(no)) over the first token's most likely alternatives, each word
    /// counted whatever its case and spacing ("Yes", " yes").
    fn odds(&self, response: &Value) -> Result<f64, LlmError> {
        let malformed = |message: &str| LlmError::Malformed { provider: self.provider, message: message.to_owned() };
        let alternatives = response
            .pointer("/choices/0/logprobs/content/0/top_logprobs")
            .and_then(Value::as_array)
            .ok_or(LlmError::NoOdds { provider: self.provider })?;
        let (mut yes, mut no) = (0.0, 0.0);
        for alternative in alternatives {
            let (Some(token), Some(logprob)) =
                (alternative.get("token").and_then(Value::as_str), alternative.get("logprob").and_then(Value::as_f64))
            else {
                continue;
            };
            match token.trim().to_lowercase().as_str() {
                "yes" => yes += logprob.exp(),
                "no" => no += logprob.exp(),
                _ => {}
            }
        }
        if !(yes + no > 0.0 && (yes + no).is_finite()) {
            return Err(malformed("neither yes nor no is among the likeliest first words"));
        }
        Ok(yes / (yes + no))
    }

    /// Posts `body` to `path` and returns the provider's JSON, retrying on 429, 5xx and
    /// connection errors with exponential backoff and jitter, honouring `Retry-After`, all by
    /// `deadline`.
    async fn post(&self, path: &str, body: &Value, deadline: Option<Instant>) -> Result<Value, LlmError> {
        let mut attempt = 0;
        loop {
            let timeout = match deadline {
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(LlmError::Deadline { provider: self.provider });
                    }
                    self.timeout.min(left)
                }
                None => self.timeout,
            };
            let failure = match self.send(path, body, timeout).await {
                Ok(sent) => return Ok(sent.completion),
                Err(failure) => failure,
            };
            if failure.timed_out && deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Err(LlmError::Deadline { provider: self.provider });
            }
            if !failure.retryable || attempt >= self.max_retries {
                return Err(failure.error);
            }
            let backoff = self.backoff.saturating_mul(1 << attempt.min(16));
            let wait = failure.retry_after.unwrap_or_else(|| backoff.mul_f64(1.0 + fastrand::f64()));
            // A retry that could only start after the deadline is not waited for: the error
            // the server gave says more than the deadline would.
            if wait > MAX_RETRY_AFTER || deadline.is_some_and(|deadline| Instant::now() + wait >= deadline) {
                return Err(failure.error);
            }
            tracing::info!("{} retry {} in {:?}: {}", self.provider, attempt + 1, wait, failure.error);
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    async fn send(&self, path: &str, body: &Value, timeout: Duration) -> Result<Sent, Failure> {
        let shown_endpoint = || at(&self.shown_url, path);
        let mut request = self.http.post(at(&self.base_url, path)).timeout(timeout).json(body);
        request = match (self.provider, &self.api_key) {
            (Provider::Anthropic, Some(key)) => {
                request.header("x-api-key", key).header("anthropic-version", "2023-06-01")
            }
            (Provider::Anthropic, None) => request.header("anthropic-version", "2023-06-01"),
            (_, Some(key)) => request.bearer_auth(key),
            (_, None) => request,
        };
        let response = request.send().await.map_err(|error| Failure {
            retryable: error.is_timeout() || error.is_connect() || error.is_request(),
            timed_out: error.is_timeout(),
            retry_after: None,
            error: LlmError::Transport { provider: self.provider, url: shown_endpoint(), message: without_url(&error) },
        })?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok())
            .map(Duration::from_secs); // The HTTP-date form falls back to our own backoff.
        let text = match http::text_limited(response, self.max_response_bytes).await {
            Ok(text) => text,
            // An error's body is only quoted: its status says what matters.
            Err(BodyError::TooLarge { .. }) if !status.is_success() => {
                format!("(a body over the limit of {})", Bytes(self.max_response_bytes))
            }
            Err(BodyError::TooLarge { limit, declared }) => {
                return Err(Failure {
                    retryable: false,
                    timed_out: false,
                    retry_after: None,
                    error: LlmError::TooLarge {
                        provider: self.provider,
                        reason: BodyError::TooLarge { limit, declared }.to_string(),
                    },
                });
            }
            Err(BodyError::Read(error)) => {
                return Err(Failure {
                    retryable: true,
                    timed_out: error.is_timeout(),
                    retry_after: None,
                    error: LlmError::Transport {
                        provider: self.provider,
                        url: shown_endpoint(),
                        message: without_url(&error),
                    },
                });
            }
        };
        if !status.is_success() {
            let retryable = status.as_u16() == 429 || status.is_server_error();
            return Err(Failure {
                retryable,
                timed_out: false,
                retry_after,
                error: LlmError::Status {
                    provider: self.provider,
                    url: shown_endpoint(),
                    status: status.as_u16(),
                    body: self.redacted(&text),
                },
            });
        }
        let json: Value = serde_json::from_str(&text).map_err(|error| Failure {
            retryable: false,
            timed_out: false,
            retry_after: None,
            error: LlmError::Malformed { provider: self.provider, message: format!("not JSON: {error}") },
        })?;
        Ok(Sent { completion: json })
    }

    /// The start of a response body for an error message, with the key masked should the
    /// server echo it.
    fn redacted(&self, text: &str) -> String {
        let mut text: String = text.chars().take(300).collect();
        if let Some(key) = self.api_key.as_deref().filter(|key| key.len() >= 4) {
            text = text.replace(key, "***");
        }
        text
    }

    /// The structured answer inside a provider's response, and its token counts.
    fn parse(&self, response: Value, max_tokens: u32) -> Result<Completion, LlmError> {
        let cut_off = match self.provider {
            Provider::Anthropic => response.get("stop_reason").and_then(Value::as_str) == Some("max_tokens"),
            Provider::OpenAi | Provider::OpenAiCompatible => {
                response.pointer("/choices/0/finish_reason").and_then(Value::as_str) == Some("length")
            }
        };
        if cut_off {
            return Err(LlmError::CutOff { provider: self.provider, max_tokens });
        }
        let malformed = |message: &str| LlmError::Malformed { provider: self.provider, message: message.to_owned() };
        let tokens = |path: &str| response.pointer(path).and_then(Value::as_u64).unwrap_or(0);
        match self.provider {
            Provider::Anthropic => {
                let input = response
                    .get("content")
                    .and_then(Value::as_array)
                    .and_then(|blocks| blocks.iter().find(|block| block.get("type") == Some(&json!("tool_use"))))
                    .and_then(|block| block.get("input"))
                    .cloned()
                    .ok_or_else(|| malformed("no tool_use block in content"))?;
                Ok(Completion {
                    json: input,
                    input_tokens: tokens("/usage/input_tokens"),
                    output_tokens: tokens("/usage/output_tokens"),
                })
            }
            Provider::OpenAi | Provider::OpenAiCompatible => {
                let content = response
                    .pointer("/choices/0/message/content")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("no choices[0].message.content"))?;
                // A model asked without a schema it honours wraps its JSON in a Markdown fence.
                let json = serde_json::from_str(unfenced(content))
                    .map_err(|error| malformed(&format!("content is not JSON: {error}")))?;
                Ok(Completion {
                    json,
                    input_tokens: tokens("/usage/prompt_tokens"),
                    output_tokens: tokens("/usage/completion_tokens"),
                })
            }
        }
    }
}

struct Sent {
    completion: Value,
}

/// The server could not be reached to ask it its context window.
struct Unreached;

struct Failure {
    retryable: bool,
    /// The request's timeout ran out (perhaps because the deadline was near).
    timed_out: bool,
    retry_after: Option<Duration>,
    error: LlmError,
}

/// A base URL as the client uses it: its path without a trailing `/` or `/v1` (the endpoints
/// add it), so `http://127.0.0.1:11434/v1` and `http://127.0.0.1:11434` reach the same server.
fn base(url: &str) -> String {
    let url = url.trim();
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            let path = parsed.path().trim_end_matches('/');
            let path = path.strip_suffix("/v1").unwrap_or(path).trim_end_matches('/').to_owned();
            parsed.set_path(&path);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => url.trim_end_matches('/').to_owned(),
    }
}

/// `path` under the base URL `base` (its query kept).
fn at(base: &str, path: &str) -> String {
    match reqwest::Url::parse(base) {
        Ok(mut url) => {
            let joined = format!("{}{path}", url.path().trim_end_matches('/'));
            url.set_path(&joined);
            url.to_string()
        }
        Err(_) => format!("{base}{path}"),
    }
}

/// A URL as an error names it: the scheme, host, port and path, never a user, password or query
/// (either may carry a secret).
fn shown(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.as_str().trim_end_matches('/').to_owned()
        }
        Err(_) => "(an address that is not a URL)".to_owned(),
    }
}

/// The JSON inside a Markdown code fence (```json ... ```), or the text as it is.
fn unfenced(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(opened) = trimmed.strip_prefix("```") else { return text };
    // The fence's info string (`json`) runs to the end of its line; a fence on one line has none.
    let body = match opened.split_once('\n') {
        Some((_, body)) => body,
        None => opened.strip_prefix("json").unwrap_or(opened),
    };
    // Up to the closing fence; what a model writes after it is not the answer.
    body.rfind("```").map_or(body, |end| &body[..end])
}

/// reqwest's message without the URL (a local server's URL may carry a token in its query).
fn without_url(error: &reqwest::Error) -> String {
    // The causes say what happened (`Connection refused`); reqwest's own message only that a
    // request failed.
    let mut message = tool_mediator_core::with_causes(error);
    if let Some(url) = error.url() {
        message = message.replace(url.as_str(), "<url>");
    }
    if error.is_timeout() && !message.contains("timed out") {
        message.push_str(" (timed out)");
    }
    message
}
