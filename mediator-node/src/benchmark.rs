//! What `npm run bench` compares the binding with: the enhance benchmark's tools, and the same
//! call made in Rust, timed in the same process. Built only with the `bench` feature.

use std::time::Instant;

use napi::bindgen_prelude::Result;
use napi_derive::napi;
use tool_mediator::{SourceType, ToolContext};

use crate::Mediator;

#[path = "../../mediator/benches/data/github.rs"]
mod github;

/// The enhance benchmark's manifest of `tools` tools, as JSON text.
#[napi]
pub fn benchmark_manifest(tools: u32) -> String {
    github::manifest(tools as usize)
}

#[napi]
impl Mediator {
    /// Enhances `tools` (a JSON array) in Rust with this mediator `iterations` times; returns
    /// each call's milliseconds: the tools already read, as a Rust transport holds them, and
    /// the enhanced tools not written.
    #[napi]
    pub async fn benchmark_enhance_in_rust(&self, tools: String, iterations: u32) -> Result<Vec<f64>> {
        let tools: Vec<tool_mediator::Tool> =
            serde_json::from_str(&tools).map_err(|error| napi::Error::from_reason(error.to_string()))?;
        let context = ToolContext::new("bench", SourceType::Api);
        let mut times = Vec::with_capacity(iterations as usize);
        for _ in 0..iterations {
            let input = tools.clone();
            let start = Instant::now();
            let enhanced = self.core.enhance(input, &context).await;
            times.push(start.elapsed().as_secs_f64() * 1000.0);
            drop(enhanced);
        }
        Ok(times)
    }

    /// The milliseconds of one enhance of `tools` (a JSON array) in Rust from its text to the
    /// text of what a consumer sees, as the CLI and the proxy have tools: read, enhanced, written.
    #[napi]
    pub async fn benchmark_enhance_text_in_rust(&self, tools: String) -> Result<f64> {
        let context = ToolContext::new("bench", SourceType::Api);
        let start = Instant::now();
        let read: Vec<tool_mediator::Tool> =
            serde_json::from_str(&tools).map_err(|error| napi::Error::from_reason(error.to_string()))?;
        let enhanced = self.core.enhance(read, &context).await;
        let consumer: Vec<_> = tool_mediator::consumer_tools(enhanced, true).map(|(_, tool)| tool).collect();
        let written = serde_json::to_string(&consumer).map_err(|error| napi::Error::from_reason(error.to_string()))?;
        let elapsed = start.elapsed().as_secs_f64() * 1000.0;
        drop(written);
        Ok(elapsed)
    }
}
