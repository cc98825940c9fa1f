//! `toolgate eval`: routing policies side by side on labelled datasets, as a
//! markdown table on stdout, and optionally JSON and an SVG plot.
//!
//! The harness and its rendering live in `toolgate-eval`; this command reads
//! the arguments, embeds texts through the `[routing.embeddings]` endpoint
//! when one is configured, shows progress and prints or writes what the
//! harness returns.

use std::io::IsTerminal;

use anyhow::Context;
use toolgate_core::TokenCounter;
use toolgate_core::routing::RoutingConfig;
use toolgate_eval::{Dataset, SemanticInputs, evaluate, leave_one_out, markdown, svg};

use super::tool_setup::embeddings_client;
use crate::cli::EvalArgs;
use crate::output::{eprint, print};
use crate::settings::Settings;

pub(crate) fn run(args: &EvalArgs) -> anyhow::Result<()> {
    let config = Settings::load(args.config.as_deref())?.routing;
    let counter = TokenCounter::new(args.encoding).context("loading the tokenizer")?;
    let evaluations = if args.leave_one_out {
        leave_one_out_evaluations(args, &config, &counter)?
    } else {
        own_evaluations(args, &config, &counter)?
    };
    write_outputs(args, &evaluations)
}

/// Every dataset measured with the router fitted on the others.
fn leave_one_out_evaluations(
    args: &EvalArgs,
    config: &RoutingConfig,
    counter: &TokenCounter,
) -> anyhow::Result<Vec<toolgate_eval::Evaluation>> {
    if config.embeddings.is_some() {
        eprint(
            "  note: --leave-one-out measures the lexical router; [routing.embeddings] is not used\n",
        );
    }
    let mut datasets = Vec::new();
    for dir in &args.dataset {
        let dataset =
            Dataset::load(dir).with_context(|| format!("loading the dataset {}", dir.display()))?;
        for skipped in &dataset.skipped {
            eprint(&format!("  skipped: {skipped}\n"));
        }
        datasets.push(dataset);
    }
    let mut bar = ProgressBar::new();
    let evaluations = leave_one_out(&datasets, counter, config, &mut |name, done, total| {
        bar.show(name, done, total);
    })?;
    bar.clear();
    for evaluation in &evaluations {
        print(&markdown(evaluation, args.encoding.as_str()));
    }
    Ok(evaluations)
}

/// Progress on stderr when it is a terminal: one line, redrawn.
struct ProgressBar {
    terminal: bool,
    last: usize,
}

impl ProgressBar {
    fn new() -> Self {
        Self {
            terminal: std::io::stderr().is_terminal(),
            last: usize::MAX,
        }
    }

    fn show(&mut self, name: &str, done: usize, total: usize) {
        let percent = done * 100 / total.max(1);
        if self.terminal && percent != self.last {
            self.last = percent;
            let filled = percent / 5;
            eprint(&format!(
                "\r  {name} [{}{}] {done}/{total}",
                "#".repeat(filled),
                " ".repeat(20 - filled)
            ));
        }
    }

    fn clear(&mut self) {
        if self.terminal {
            eprint("\r\x1b[2K");
        }
        self.last = usize::MAX;
    }
}

/// Every dataset measured with the router tuned on its own tuning part.
fn own_evaluations(
    args: &EvalArgs,
    config: &RoutingConfig,
    counter: &TokenCounter,
) -> anyhow::Result<Vec<toolgate_eval::Evaluation>> {
    let mut evaluations = Vec::new();
    for dir in &args.dataset {
        let dataset =
            Dataset::load(dir).with_context(|| format!("loading the dataset {}", dir.display()))?;
        for skipped in &dataset.skipped {
            eprint(&format!("  skipped: {skipped}\n"));
        }
        let semantic = match &args.embed_model {
            Some(dir) => Some(local_semantic_inputs(dir, config, &dataset)?),
            None => semantic_inputs(config, &dataset)?,
        };
        let mut bar = ProgressBar::new();
        let evaluation = evaluate(
            &dataset,
            counter,
            config,
            semantic.as_ref(),
            &mut |done, total| bar.show(&dataset.name, done, total),
        )?;
        bar.clear();
        print(&markdown(&evaluation, args.encoding.as_str()));
        evaluations.push(evaluation);
    }
    Ok(evaluations)
}

fn write_outputs(args: &EvalArgs, evaluations: &[toolgate_eval::Evaluation]) -> anyhow::Result<()> {
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&evaluations)?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.svg {
        std::fs::write(path, svg(evaluations))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// `texts` as string slices.
fn as_str(texts: &[String]) -> Vec<&str> {
    texts.iter().map(String::as_str).collect()
}

/// The dataset's groups and queries embedded by the local model in `dir`.
fn local_semantic_inputs(
    dir: &std::path::Path,
    config: &RoutingConfig,
    dataset: &Dataset,
) -> anyhow::Result<SemanticInputs> {
    let embedder = toolgate_embed::Embedder::load(dir)
        .with_context(|| format!("loading the embedding model in {}", dir.display()))?;
    let groups: Vec<toolgate_core::GroupId> =
        dataset.catalog.groups().map(|g| g.id.clone()).collect();
    let group_texts = toolgate_core::routing::semantic::group_texts(&dataset.catalog, &groups);
    let started = std::time::Instant::now();
    let group_vectors = embedder
        .embed(&as_str(&group_texts))
        .with_context(|| format!("{}: embedding the groups", dataset.name))?;
    let query_texts: Vec<String> = dataset.queries.iter().map(|q| q.text.clone()).collect();
    let query_vectors = embedder
        .embed(&as_str(&query_texts))
        .with_context(|| format!("{}: embedding the queries", dataset.name))?;
    eprint(&format!(
        "  {}: embedded {} groups and {} queries with the local model in {:.1} s\n",
        dataset.name,
        groups.len(),
        query_texts.len(),
        started.elapsed().as_secs_f64()
    ));
    Ok(SemanticInputs {
        groups: group_vectors,
        queries: query_vectors,
        weight: config
            .embeddings
            .as_ref()
            .and_then(|e| e.weight)
            .unwrap_or(0.5),
        model: toolgate_embed::MODEL_NAME.to_owned(),
    })
}

/// Texts per embeddings request.
const EMBEDDING_BATCH: usize = 128;

/// The dataset's groups and queries embedded by the `[routing.embeddings]`
/// endpoint, when the configuration names one: the blended router is then
/// evaluated beside the lexical one.
fn semantic_inputs(
    config: &RoutingConfig,
    dataset: &Dataset,
) -> anyhow::Result<Option<SemanticInputs>> {
    let Some(settings) = &config.embeddings else {
        return Ok(None);
    };
    let client = embeddings_client(settings)?;
    let groups: Vec<toolgate_core::GroupId> =
        dataset.catalog.groups().map(|g| g.id.clone()).collect();
    let group_texts = toolgate_core::routing::semantic::group_texts(&dataset.catalog, &groups);
    let query_texts: Vec<String> = dataset.queries.iter().map(|q| q.text.clone()).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let started = std::time::Instant::now();
    let embed = |texts: &[String]| -> anyhow::Result<Vec<Vec<f32>>> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(EMBEDDING_BATCH) {
            let mut events = |_| {};
            vectors.extend(runtime.block_on(client.embed(batch, &mut events))?);
        }
        Ok(vectors)
    };
    let group_vectors = embed(&group_texts).with_context(|| {
        format!(
            "{}: embedding the groups ([routing.embeddings])",
            dataset.name
        )
    })?;
    let query_vectors = embed(&query_texts).with_context(|| {
        format!(
            "{}: embedding the queries ([routing.embeddings])",
            dataset.name
        )
    })?;
    eprint(&format!(
        "  {}: embedded {} groups and {} queries with {} in {:.1} s\n",
        dataset.name,
        groups.len(),
        query_texts.len(),
        settings.model,
        started.elapsed().as_secs_f64()
    ));
    Ok(Some(SemanticInputs {
        groups: group_vectors,
        queries: query_vectors,
        weight: settings.weight.unwrap_or(0.5),
        model: settings.model.clone(),
    }))
}
