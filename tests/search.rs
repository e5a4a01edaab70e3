//! Tool search and disclosure, measured: retrieval on real queries written by others (RestBench,
//! `tests/data/eval`) side by side with FastMCP's BM25SearchTransform over the same tools in
//! one run; every tool of every real manifest reachable in at most two calls; and what the first
//! listing costs in each mode.
//!
//! `cargo test -p tool-mediator-tests --test search -- --nocapture` prints the figures the README
//! reports.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tool_mediator::search::{Document, ToolIndex};
use tool_mediator::session::{DisclosureMode, Route, Session, SessionPolicy, WHOLE_BELOW};
use tool_mediator::{Mediator, RuleTransformer, SourceType, Tool, ToolContext};
use tool_mediator_tests::restbench::{self, Query};
use tool_mediator_tests::{fastmcp_venv, real_manifest, root, run, stderr};

/// `search_tools`'s default limit, and the most it returns.
const LIMIT: usize = 5;
const MAX_LIMIT: usize = 50;

/// Recall at the limit (the share of a query's relevant tools found, averaged) and MRR (the
/// reciprocal rank of the first relevant tool found, 0 when none is, averaged).
fn score(queries: &[Query], found: &[Vec<String>]) -> (f64, f64) {
    let (mut recall, mut reciprocal) = (0.0, 0.0);
    for (query, found) in queries.iter().zip(found) {
        let hits = query.relevant.iter().filter(|name| found.contains(name)).count();
        recall += hits as f64 / query.relevant.len() as f64;
        if let Some(rank) = found.iter().position(|name| query.relevant.contains(name)) {
            reciprocal += 1.0 / (rank + 1) as f64;
        }
    }
    (recall / queries.len() as f64, reciprocal / queries.len() as f64)
}

fn rules() -> Arc<Mediator> {
    Arc::new(Mediator::builder().transformer(RuleTransformer::new()).build())
}

/// tool-mediator's search: the tools through the chain (the rules), indexed, searched; the names
/// found are the source's, as the gold data has them.
fn ours(tools: &[Value], queries: &[Query], service: &str) -> Vec<Vec<String>> {
    let tools: Vec<Tool> = serde_json::from_value(Value::Array(tools.to_vec())).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let enhanced = runtime.block_on(rules().enhance(tools, &ToolContext::new(service, SourceType::Api)));
    let index = ToolIndex::new(enhanced.iter().map(|tool| Document { tool, server: None }));
    queries
        .iter()
        .map(|query| {
            index
                .search(&query.text, LIMIT)
                .into_iter()
                .map(|(position, _)| enhanced[position].original_name.clone())
                .collect()
        })
        .collect()
}

/// FastMCP's BM25SearchTransform over the same tools (`tests/peers/fastmcp_search.py`).
fn theirs(tools: &[Value], queries: &[Query]) -> Vec<Vec<String>> {
    let input = tempfile::NamedTempFile::new().unwrap();
    let texts: Vec<&str> = queries.iter().map(|query| query.text.as_str()).collect();
    std::fs::write(input.path(), json!({"tools": tools, "queries": texts, "limit": LIMIT}).to_string()).unwrap();
    let output = Command::new(fastmcp_venv().join("bin/python"))
        .arg(root().join("tests/peers/fastmcp_search.py"))
        .arg(input.path())
        .output()
        .expect("python runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("a JSON array of names per query")
}

#[test]
fn search_finds_restbench_apis_better_than_fastmcps_bm25() {
    println!("| service | queries | tools | tool-mediator recall@5 | MRR | FastMCP BM25 recall@5 | MRR |");
    println!("|---|---|---|---|---|---|---|");
    let mut totals = [(0.0, 0.0), (0.0, 0.0)];
    let mut count = 0;
    for service in restbench::SERVICES {
        let tools = restbench::tools(service);
        let queries = restbench::queries(service);
        let (ours, theirs) =
            (score(&queries, &ours(&tools, &queries, service)), score(&queries, &theirs(&tools, &queries)));
        println!(
            "| {service} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} |",
            queries.len(),
            tools.len(),
            ours.0,
            ours.1,
            theirs.0,
            theirs.1
        );
        for (total, (recall, mrr)) in totals.iter_mut().zip([ours, theirs]) {
            total.0 += recall * queries.len() as f64;
            total.1 += mrr * queries.len() as f64;
        }
        count += queries.len();
    }
    let [ours, theirs] = totals.map(|(recall, mrr)| (recall / count as f64, mrr / count as f64));
    println!("| all | {count} | | {:.3} | {:.3} | {:.3} | {:.3} |", ours.0, ours.1, theirs.0, theirs.1);
    assert_eq!(count, 157, "every RestBench query");
    assert!(ours.0 > theirs.0 && ours.1 > theirs.1, "ours {ours:?}, FastMCP's {theirs:?}");
}

/// The tools of every real manifest, and all of them in one list.
fn manifests() -> Vec<(String, Vec<Tool>)> {
    let mut all = Vec::new();
    let mut each = Vec::new();
    for entry in std::fs::read_dir(real_manifest("")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|extension| extension != "json") {
            continue; // its README
        }
        let manifest: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let tools: Vec<Tool> = serde_json::from_value(manifest["tools"].clone()).unwrap();
        all.extend(tools.clone());
        each.push((path.file_stem().unwrap().to_string_lossy().into_owned(), tools));
    }
    each.sort_by(|a, b| a.0.cmp(&b.0));
    each.push(("all seven".to_owned(), all));
    each
}

fn names(tools: &[Tool]) -> Vec<String> {
    tools.iter().map(|tool| tool.name.clone()).collect()
}

/// Every tool callable after at most one call (a category expansion, or a search for what its
/// name says asking for up to 50 results) in each mode; and with the default limit of five, how
/// many come out of a search by their names in search mode (asserted: no fewer than the README
/// reports).
#[test]
fn every_tool_of_every_real_manifest_is_reachable_in_two_calls() {
    // Found in the top five by their names, in search mode, at least; the README's figures.
    let top_five = BTreeMap::from([("github", 116), ("all seven", 166)]);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        for (manifest, tools) in manifests() {
            let session = |mode: DisclosureMode| {
                let policy = SessionPolicy { page_size: None, ..SessionPolicy::mediated(5) };
                Session::new(rules(), ToolContext::new(&manifest, SourceType::Api), mode.apply(policy, 5, WHOLE_BELOW))
            };
            let everything = names(&session(DisclosureMode::Off).list_tools(&tools, None).await.unwrap().into_tools());
            let mut top = 0;
            let mut missed: Vec<String> = Vec::new();
            for mode in [DisclosureMode::Categories, DisclosureMode::Search, DisclosureMode::Both] {
                let first = names(&session(mode).list_tools(&tools, None).await.unwrap().into_tools());
                let unlisted: Vec<&String> = everything.iter().filter(|name| !first.contains(name)).collect();
                let mut reached: Vec<&String> = Vec::new();
                // Each category tool expanded, in a session of its own: what it makes callable.
                for category in first.iter().filter(|entry| entry.ends_with("_tools") && *entry != "search_tools") {
                    let fresh = session(mode);
                    fresh.list_tools(&tools, None).await.unwrap();
                    fresh.route_call(category, Map::new()).await;
                    for name in &unlisted {
                        if matches!(fresh.route_call(name, Map::new()).await, Route::Upstream { .. }) {
                            reached.push(name);
                        }
                    }
                }
                // A search for what its name says.
                if first.iter().any(|entry| entry == "search_tools") {
                    let searching = session(mode);
                    searching.list_tools(&tools, None).await.unwrap();
                    for name in &unlisted {
                        let query = json!({"query": name.replace(['_', '-', '.'], " "), "limit": MAX_LIMIT});
                        let Route::Local(found) =
                            searching.route_call("search_tools", query.as_object().unwrap().clone()).await
                        else {
                            panic!("search_tools is the session's own")
                        };
                        let hits = found["structuredContent"]["tools"].as_array().unwrap();
                        let rank = hits.iter().position(|tool| tool["name"] == name.as_str());
                        // The default limit returns the first five of the same ranking.
                        if mode == DisclosureMode::Search {
                            match rank {
                                Some(rank) if rank < LIMIT => top += 1,
                                _ => missed.push(format!("{name} (rank {})", rank.map_or(0, |rank| rank + 1))),
                            }
                        }
                        if rank.is_some() && matches!(searching.route_call(name, Map::new()).await, Route::Upstream { .. }) {
                            reached.push(name);
                        }
                    }
                }
                for name in unlisted {
                    assert!(reached.contains(&name), "{manifest}, {}: `{name}` cannot be reached in two calls", mode.name());
                }
            }
            println!(
                "{manifest}: {} tools, all reachable in every mode; in search mode, {top} of the unlisted found in the top {LIMIT} by their names; not: {missed:?}",
                everything.len()
            );
            if let Some(&expected) = top_five.get(manifest.as_str()) {
                assert!(top >= expected, "{manifest}: {top} in the top {LIMIT}, fewer than {expected}: {missed:?}");
            }
        }
    });
}

/// `tool-mediator tokens --json` for a manifest: the first listing's tokens in each mode.
fn tokens(path: &std::path::Path) -> Value {
    let output = run(&["tokens", path.to_str().unwrap(), "--json"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_default_first_listing_costs_at_least_ninety_percent_less() {
    let merged = tempfile::NamedTempFile::new().unwrap();
    let all: Vec<Tool> = manifests().pop().unwrap().1;
    std::fs::write(merged.path(), json!({"tools": all}).to_string()).unwrap();
    println!("| manifest | tools | off | categories | search | both (default) |");
    println!("|---|---|---|---|---|---|");
    for (name, path) in [("github", real_manifest("github.json")), ("all seven merged", merged.path().to_owned())] {
        let report = tokens(&path);
        let modes = &report["modes"];
        let cell = |mode: &str| {
            format!(
                "{} tokens, {} entries ({}% fewer)",
                modes[mode]["total"], modes[mode]["tools"], modes[mode]["saved_percent"]
            )
        };
        println!(
            "| {name} | {} | {} | {} | {} | {} |",
            modes["off"]["tools"],
            modes["off"]["total"],
            cell("categories"),
            cell("search"),
            cell("both")
        );
        assert_eq!(report["with_disclosure"]["mode"], "both", "the default mode");
        assert!(report["saved_percent"].as_f64().unwrap() >= 90.0, "{name}: {report}");
    }
}

/// The best share of `query` any tool of `tools` matches (0 when none matches at all), by the
/// index `search_tools` builds: it refuses when that is below its threshold.
fn best_share(tools: &[tool_mediator::EnhancedTool], query: &str) -> f32 {
    let index = ToolIndex::new(tools.iter().map(|tool| Document { tool, server: None }));
    let weighed = index.weigh(query);
    index.search(query, usize::MAX).into_iter().map(|(position, _)| weighed.share(position)).fold(0.0, f32::max)
}

/// Abstention, measured on RestBench: the best match's share for every answerable query (its
/// own service's tools), for every query against the other service's tools (a request from
/// another domain), and for every query against its service without the tools that answer it
/// (the right tool removed). Printed for a range of thresholds: the share of each refused.
#[test]
fn search_refuses_requests_no_tool_serves() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let enhanced: BTreeMap<&str, Vec<tool_mediator::EnhancedTool>> = restbench::SERVICES
        .iter()
        .map(|&service| {
            let tools: Vec<Tool> = serde_json::from_value(Value::Array(restbench::tools(service))).unwrap();
            (service, runtime.block_on(rules().enhance(tools, &ToolContext::new(service, SourceType::Api))))
        })
        .collect();
    let (mut answerable, mut elsewhere, mut removed) = (Vec::new(), Vec::new(), Vec::new());
    for service in restbench::SERVICES {
        let other = restbench::SERVICES.iter().find(|&&other| other != service).unwrap();
        for query in restbench::queries(service) {
            let own = &enhanced[service];
            answerable.push((service, best_share(own, &query.text)));
            elsewhere.push((service, best_share(&enhanced[other], &query.text)));
            let without: Vec<_> =
                own.iter().filter(|tool| !query.relevant.contains(&tool.original_name)).cloned().collect();
            removed.push((service, best_share(&without, &query.text)));
        }
    }
    let refused = |shares: &[(&str, f32)], service: Option<&str>, threshold: f32| {
        let of: Vec<f32> = shares
            .iter()
            .filter(|(from, _)| service.is_none_or(|service| *from == service))
            .map(|(_, share)| *share)
            .collect();
        of.iter().filter(|&&share| share < threshold).count() as f64 / of.len() as f64
    };
    let row = |label: &str, service: Option<&str>, threshold: f32| {
        println!(
            "| {label} | {threshold:.2} | {:.1}% | {:.1}% | {:.1}% |",
            100.0 * refused(&answerable, service, threshold),
            100.0 * refused(&elsewhere, service, threshold),
            100.0 * refused(&removed, service, threshold)
        );
    };
    // The highest threshold that refuses at most 5% of the answerable queries of `service`.
    let calibrated = |service: Option<&str>| {
        (0..=100)
            .map(|step| step as f32 / 100.0)
            .take_while(|&t| refused(&answerable, service, t) <= 0.05)
            .last()
            .unwrap()
    };
    println!("| queries | threshold | answerable refused | another domain refused | right tool removed refused |");
    println!("|---|---|---|---|---|");
    for step in [0, 5, 10, 15, 20, 25, 30, 40, 50] {
        row("all", None, step as f32 / 100.0);
    }
    // Calibrated on one service's queries, measured on the other's.
    for (on, measured) in [("TMDB", "Spotify"), ("Spotify", "TMDB")] {
        row(&format!("{measured}, calibrated on {on}"), Some(measured), calibrated(Some(on)));
    }
    let default = tool_mediator::search::MATCH_THRESHOLD;
    row("all, the default", None, default);
    assert_eq!(default, calibrated(None), "the default is calibrated on every query: update it");
    assert!(refused(&elsewhere, None, default) >= 0.4, "requests from another domain are refused");
}

/// Hit@1, hit@5 and recall@10 of rankings (each best first), averaged over `queries`.
fn hits(queries: &[Query], rankings: &[Vec<String>]) -> (f64, f64, f64) {
    let (mut first, mut five, mut recall) = (0.0, 0.0, 0.0);
    for (query, ranking) in queries.iter().zip(rankings) {
        let relevant = |name: &String| query.relevant.contains(name);
        first += f64::from(ranking.first().is_some_and(relevant));
        five += f64::from(ranking.iter().take(5).any(relevant));
        recall += ranking.iter().take(10).filter(|name| relevant(name)).count() as f64 / query.relevant.len() as f64;
    }
    let count = queries.len() as f64;
    (first / count, five / count, recall / count)
}

/// Each RestBench service's tools, and the vector of each as the embedding model read it.
type Read = BTreeMap<&'static str, (Vec<tool_mediator::EnhancedTool>, Vec<Vec<f32>>)>;

/// RestBench's tools of each service through `mediator`, each with its vector as `embedder` reads
/// it; and the seconds the reading took.
fn read_restbench(
    runtime: &tokio::runtime::Runtime,
    mediator: &Mediator,
    embedder: &tool_mediator::search::meaning::Embedder,
) -> (Read, f64) {
    let (mut by_service, mut seconds) = (BTreeMap::new(), 0.0);
    for service in restbench::SERVICES {
        let tools: Vec<Tool> = serde_json::from_value(Value::Array(restbench::tools(service))).unwrap();
        let tools = runtime.block_on(mediator.enhance(tools, &ToolContext::new(service, SourceType::Api)));
        let reading =
            tool_mediator::search::meaning::Reading::new(tools.iter().map(|tool| Document { tool, server: None }));
        let began = std::time::Instant::now();
        let vectors = runtime.block_on(embedder.documents(reading.texts())).expect("the model reads the tools");
        seconds += began.elapsed().as_secs_f64();
        by_service.insert(service, (tools, vectors));
    }
    (by_service, seconds)
}

/// Ranking by meaning, measured on RestBench with the real embedding model (nomic-embed-text-v1.5
/// on llama.cpp's server): hit@1, hit@5 and recall@10 of BM25 alone and of both fused, each as
/// `search_tools` answers (nothing for a query it refuses), and of the model alone, over the
/// tools as published (raw) and after the rules (enhanced); and abstention with the model vouching for what it finds close
/// ([`ModelHabits::vouches_from`]), calibrated here: the lowest similarity at which no request
/// is answered by the other service's tools. What it costs: seconds per tool read.
#[test]
fn search_by_meaning_on_restbench() {
    use tool_mediator::llm::{LlmClient, Provider};
    use tool_mediator::search::meaning::{Embedder, NOMIC_VOUCHES_FROM, fuse};
    let Some(model) = tool_mediator_tests::real_embedder() else { return };
    let _turn = model.turn();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let embedder = Arc::new(Embedder::new(
        LlmClient::new(Provider::OpenAiCompatible, model.name, Some(model.url.clone()), None),
        None,
    ));
    let raw = Arc::new(Mediator::builder().build());
    println!("| listing | ranking | hit@1 | hit@5 | recall@10 |");
    println!("|---|---|---|---|---|");
    let mut shares: BTreeMap<&str, Vec<(f32, f32)>> = BTreeMap::new();
    let (mut read_seconds, mut read_tools) = (0.0, 0);
    for (listing, mediator) in [("raw", raw), ("enhanced", rules())] {
        let (mut words, mut meaning, mut both, mut queries) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (by_service, seconds) = read_restbench(&runtime, &mediator, &embedder);
        read_seconds += seconds;
        read_tools += by_service.values().map(|(tools, _)| tools.len()).sum::<usize>();
        for service in restbench::SERVICES {
            let other = restbench::SERVICES.iter().find(|&&other| other != service).unwrap();
            let (tools, vectors) = &by_service[service];
            let index = ToolIndex::new(tools.iter().map(|tool| Document { tool, server: None }));
            for query in restbench::queries(service) {
                let asked = runtime.block_on(embedder.query(&query.text)).expect("the model reads the query");
                let similarity = |vector: &Vec<f32>| vector.iter().zip(&asked).map(|(a, b)| a * b).sum::<f32>();
                let by_words: Vec<usize> =
                    index.search(&query.text, usize::MAX).into_iter().map(|(position, _)| position).collect();
                let mut by_meaning: Vec<usize> = (0..tools.len()).collect();
                by_meaning.sort_by(|&a, &b| similarity(&vectors[b]).total_cmp(&similarity(&vectors[a])));
                let named = |positions: &[usize]| -> Vec<String> {
                    positions.iter().map(|&position| tools[position].original_name.clone()).collect()
                };
                // As `search_tools` answers: nothing when no tool matches enough of the query's
                // words (and, ranking by meaning too, the model vouches for none).
                let weighed = index.weigh(&query.text);
                let answers = by_words.iter().any(|&p| weighed.share(p) >= tool_mediator::search::MATCH_THRESHOLD);
                let vouched = vectors.iter().any(|vector| similarity(vector) >= NOMIC_VOUCHES_FROM);
                words.push(if answers { named(&by_words) } else { Vec::new() });
                meaning.push(named(&by_meaning));
                both.push(if answers || vouched { named(&fuse(&by_words, &by_meaning, 10)) } else { Vec::new() });
                if listing == "enhanced" {
                    // The best word share and similarity: of its own tools, the other service's,
                    // and its own without the tools that answer it.
                    let best = |among: &dyn Fn(usize) -> bool,
                                tools: &[tool_mediator::EnhancedTool],
                                vectors: &[Vec<f32>],
                                weighed: &tool_mediator::search::Weighed| {
                        let share =
                            (0..tools.len()).filter(|&p| among(p)).map(|p| weighed.share(p)).fold(0.0, f32::max);
                        let close = (0..tools.len())
                            .filter(|&p| among(p))
                            .map(|p| similarity(&vectors[p]))
                            .fold(-1.0, f32::max);
                        (share, close)
                    };
                    shares.entry("answerable").or_default().push(best(&|_| true, tools, vectors, &weighed));
                    let removed = |p: usize| !query.relevant.contains(&tools[p].original_name);
                    shares.entry("right tool removed").or_default().push(best(&removed, tools, vectors, &weighed));
                    let (other_tools, other_vectors) = &by_service[other];
                    let other_index = ToolIndex::new(other_tools.iter().map(|tool| Document { tool, server: None }));
                    let other_weighed = other_index.weigh(&query.text);
                    shares.entry("another domain").or_default().push(best(
                        &|_| true,
                        other_tools,
                        other_vectors,
                        &other_weighed,
                    ));
                }
                queries.push(query);
            }
        }
        for (ranking, found) in
            [("BM25", &words), ("meaning alone (not a mode)", &meaning), ("BM25 + meaning (fused)", &both)]
        {
            let (first, five, ten) = hits(&queries, found);
            println!("| {listing} | {ranking} | {first:.3} | {five:.3} | {ten:.3} |");
        }
    }
    println!("\nread: {read_tools} tools in {read_seconds:.1} s ({:.3} s a tool)\n", read_seconds / read_tools as f64);
    let words_threshold = tool_mediator::search::MATCH_THRESHOLD;
    let refused = |kind: &str, vouches_from: f32| {
        let of = &shares[kind];
        of.iter().filter(|&&(share, close)| share < words_threshold && close < vouches_from).count() as f64
            / of.len() as f64
    };
    println!("| vouches from | answerable refused | another domain refused | right tool removed refused |");
    println!("|---|---|---|---|");
    for vouches_from in [2.0, 0.60, 0.62, 0.64, 0.66, 0.68, 0.70, 0.75] {
        println!(
            "| {vouches_from:.2} | {:.1}% | {:.1}% | {:.1}% |",
            100.0 * refused("answerable", vouches_from),
            100.0 * refused("another domain", vouches_from),
            100.0 * refused("right tool removed", vouches_from)
        );
    }
    let closest_elsewhere = shares["another domain"].iter().map(|&(_, close)| close).fold(-1.0, f32::max);
    let calibrated = (closest_elsewhere * 100.0).floor() / 100.0 + 0.01;
    println!("\nthe closest tool of another domain: {closest_elsewhere:.3}; vouching from {calibrated:.2}");
    assert!(
        (NOMIC_VOUCHES_FROM - calibrated).abs() < 0.005,
        "calibrated at {calibrated:.2}: update NOMIC_VOUCHES_FROM"
    );
    assert!(refused("answerable", NOMIC_VOUCHES_FROM) <= refused("answerable", 2.0), "vouching never refuses more");
}

/// `search_tools` with the real embedding model, through a session as every front door makes
/// it: once the model has read TMDB's tools, a request TMDB serves is answered by words and
/// meaning, and one from another domain is still refused.
#[test]
fn a_session_searching_by_meaning_answers_its_domain_and_refuses_another() {
    use tool_mediator::cache::{Cache, MemoryStore};
    use tool_mediator::llm::{LlmClient, Provider};
    use tool_mediator::search::meaning::Embedder;
    let Some(model) = tool_mediator_tests::real_embedder() else { return };
    // The model reads for one test at a time: a query waits behind no other test's tools.
    let _turn = model.turn();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let client = LlmClient::new(Provider::OpenAiCompatible, model.name, Some(model.url.clone()), None);
    let cache = Arc::new(Cache::new(MemoryStore::default(), std::time::Duration::from_secs(3600)));
    let policy = DisclosureMode::Search.apply(SessionPolicy::mediated(5), 5, 0);
    let policy = SessionPolicy { embedder: Some(Arc::new(Embedder::new(client, Some(cache)))), ..policy };
    let session = Session::new(rules(), ToolContext::new("TMDB", SourceType::Api), policy);
    let tools: Vec<Tool> = serde_json::from_value(Value::Array(restbench::tools("TMDB"))).unwrap();
    runtime.block_on(session.list_tools(&tools, None)).unwrap();
    let search = |query: &str| {
        let arguments: Map<String, Value> = json!({"query": query}).as_object().cloned().unwrap();
        match runtime.block_on(session.route_call("search_tools", arguments)) {
            Route::Local(found) => found["structuredContent"].clone(),
            other => panic!("search_tools is the session's own, not {other:?}"),
        }
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let mut found = search("Who was the lead actor in the movie The Dark Knight?");
    while found["rankedBy"] != "words and meaning" && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(500));
        found = search("Who was the lead actor in the movie The Dark Knight?");
    }
    assert_eq!(found["rankedBy"], "words and meaning", "the model read the tools: {found}");
    let names: Vec<&str> =
        found["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    assert!(names.iter().any(|name| name.contains("search_movie") || name.contains("credits")), "{names:?}");
    let refused = search("Skip to the next song in my playlist");
    assert_eq!((&refused["rankedBy"], &refused["tools"]), (&json!("words and meaning"), &json!([])), "{refused}");
}

/// The area under the ROC curve: the chance that a score of `higher` beats one of `lower` (ties
/// count half). 0.5 is a coin.
fn separation(higher: &[f64], lower: &[f64]) -> f64 {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let wins: f64 = higher
        .iter()
        .flat_map(|a| {
            lower.iter().map(move |b| match a.total_cmp(b) {
                Greater => 1.0,
                Equal => 0.5,
                Less => 0.0,
            })
        })
        .sum();
    wins / (higher.len() * lower.len()) as f64
}

/// Whether the chat model can tell a search that found the right tools from one that did not,
/// where words and meaning cannot (`TOOL_MEDIATOR_MODEL=1 cargo test -p tool-mediator-tests
/// --test search a_chat_model -- --ignored --nocapture`, about 6 minutes on 2 cores). On every
/// third RestBench query, in three catalogs (its own service's tools; its own without the tools
/// that answer it; the other service's), the best five tools as words and meaning rank them are
/// shown to the local chat model, which is asked whether they can do the task; its odds of "yes"
/// are read from its first word. Printed: how well each signal (the best word share, the best
/// similarity, the model's odds) tells an answerable query from each kind of unanswerable one,
/// and what each refuses at the threshold that refuses 5% of answerable queries.
#[test]
#[ignore = "a measurement with both real models: minutes"]
fn a_chat_model_asked_whether_the_tools_found_fit_the_task() {
    use tool_mediator::llm::{LlmClient, Provider};
    use tool_mediator::search::meaning::{Embedder, fuse};
    const SYSTEM: &str = "You decide whether a set of tools can do a user's task. You answer with one word: yes or no.";
    let (Some(chat), Some(reader)) = (tool_mediator_tests::real_model(), tool_mediator_tests::real_embedder()) else {
        return;
    };
    let (_chat_turn, _reader_turn) = (chat.turn(), reader.turn());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let embedder =
        Embedder::new(LlmClient::new(Provider::OpenAiCompatible, reader.name, Some(reader.url.clone()), None), None);
    let judge = LlmClient::new(Provider::OpenAiCompatible, chat.name, Some(chat.url.clone()), None);
    let (by_service, _) = read_restbench(&runtime, &rules(), &embedder);
    // Per kind of catalog: (the best word share, the best similarity, the model's odds).
    let mut signals: BTreeMap<&str, Vec<[f64; 3]>> = BTreeMap::new();
    let (mut asked, mut seconds) = (0, 0.0);
    for service in restbench::SERVICES {
        let other = restbench::SERVICES.iter().find(|&&other| other != service).unwrap();
        for query in restbench::queries(service).into_iter().step_by(3) {
            let vector = runtime.block_on(embedder.query(&query.text)).expect("the model reads the query");
            for (kind, of, all) in
                [("answerable", service, true), ("right tool removed", service, false), ("another domain", other, true)]
            {
                let (tools, vectors) = &by_service[of];
                let kept: Vec<usize> =
                    (0..tools.len()).filter(|&p| all || !query.relevant.contains(&tools[p].original_name)).collect();
                let index = ToolIndex::new(kept.iter().map(|&p| Document { tool: &tools[p], server: None }));
                let weighed = index.weigh(&query.text);
                let by_words: Vec<usize> =
                    index.search(&query.text, usize::MAX).into_iter().map(|(position, _)| position).collect();
                let similarity = |at: usize| vectors[kept[at]].iter().zip(&vector).map(|(a, b)| a * b).sum::<f32>();
                let mut by_meaning: Vec<usize> = (0..kept.len()).collect();
                by_meaning.sort_by(|&a, &b| similarity(b).total_cmp(&similarity(a)));
                let share = by_words.iter().map(|&at| weighed.share(at)).fold(0.0, f32::max);
                let close = (0..kept.len()).map(similarity).fold(-1.0, f32::max);
                let found: Vec<String> = fuse(&by_words, &by_meaning, LIMIT)
                    .into_iter()
                    .map(|at| {
                        let tool = &tools[kept[at]].tool;
                        let description = tool.description.as_deref().unwrap_or_default();
                        let first = description.lines().next().unwrap_or_default();
                        let sentence = first.split_inclusive(['.', '!', '?']).next().unwrap_or(first);
                        format!("- {}: {}", tool.name, sentence.chars().take(160).collect::<String>())
                    })
                    .collect();
                let prompt = format!(
                    "Task: {}\n\nTools:\n{}\n\nCan these tools, called one after another if needed, do this task? Answer yes or no.",
                    query.text,
                    found.join("\n")
                );
                let began = std::time::Instant::now();
                let odds = runtime.block_on(judge.yes_odds(SYSTEM, &prompt, None)).unwrap().expect("the model's odds");
                (asked, seconds) = (asked + 1, seconds + began.elapsed().as_secs_f64());
                signals.entry(kind).or_default().push([f64::from(share), f64::from(close), odds]);
            }
        }
    }
    println!("asked {asked} questions in {seconds:.0} s ({:.1} s each)\n", seconds / asked as f64);
    println!(
        "| signal | answerable over another domain (AUC) | answerable over right tool removed (AUC) | refused at 5% of answerable: another domain | right tool removed |"
    );
    println!("|---|---|---|---|---|");
    for (at, signal) in
        ["the best word share", "the best similarity", "the chat model's odds of yes"].iter().enumerate()
    {
        let of = |kind: &str| -> Vec<f64> { signals[kind].iter().map(|signals| signals[at]).collect() };
        let answerable = of("answerable");
        let mut sorted = answerable.clone();
        sorted.sort_by(f64::total_cmp);
        let threshold = sorted[sorted.len() / 20];
        let refused = |kind: &str| {
            let of = of(kind);
            100.0 * of.iter().filter(|&&x| x < threshold).count() as f64 / of.len() as f64
        };
        println!(
            "| {signal} | {:.3} | {:.3} | {:.1}% | {:.1}% |",
            separation(&answerable, &of("another domain")),
            separation(&answerable, &of("right tool removed")),
            refused("another domain"),
            refused("right tool removed"),
        );
    }
    assert_eq!(asked, 3 * signals["answerable"].len(), "every question answered");
}
