//! What `npm run bench` compares the binding with: the enhance benchmark's tools, and the same
//! call made in Rust, timed in the same process. Built only with the `bench` feature.

use std::time::Instant;

use napi::bindgen_prelude::Result;
use napi_derive::napi;
use tool_mediator::{ChainOptions, MediatorConfig, NameRules, SourceType, ToolContext};

#[path = "../../mediator/benches/data/github.rs"]
mod github;

/// The enhance benchmark's manifest of `tools` tools, as JSON text.
#[napi]
pub fn benchmark_manifest(tools: u32) -> String {
    github::manifest(tools as usize)
}

/// Enhances `tools` (a JSON array) in Rust `iterations` times with the mediator
/// `Mediator.create({source: 'bench'})` makes (a new one each time when `fresh`); returns each
/// call's milliseconds: the tools already read, as a Rust transport holds them, and the
/// enhanced tools not written.
#[napi]
pub async fn benchmark_enhance_in_rust(tools: String, iterations: u32, fresh: bool) -> Result<Vec<f64>> {
    let failed = |error: &dyn std::fmt::Display| napi::Error::from_reason(error.to_string());
    let tools: Vec<tool_mediator::Tool> = serde_json::from_str(&tools).map_err(|error| failed(&error))?;
    let context = ToolContext::new("bench", SourceType::Api);
    let settings = MediatorConfig::default();
    let transformers = settings.build(&ChainOptions::default()).await.map_err(|error| failed(&error))?;
    let mut mediator = transformers.mediator(NameRules::MCP, 0.0);
    let mut times = Vec::with_capacity(iterations as usize);
    for _ in 0..iterations {
        if fresh {
            mediator = transformers.mediator(NameRules::MCP, 0.0);
        }
        let input = tools.clone();
        let start = Instant::now();
        let enhanced = mediator.enhance(input, &context).await;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        drop(enhanced);
    }
    Ok(times)
}
