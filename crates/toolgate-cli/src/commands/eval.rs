//! `toolgate eval`: routing policies side by side on labelled datasets, as a
//! markdown table on stdout, and optionally JSON and an SVG plot; with
//! `--replay`, multi-turn conversations replayed through the agent loop
//! with and without a load budget; with `--live`, played against a real
//! model at an endpoint, each task succeeding or not.
//!
//! The harness and its rendering live in `toolgate-eval`; this command reads
//! the arguments, embeds texts through the `[routing.embeddings]` endpoint
//! when one is configured, shows progress and prints or writes what the
//! harness returns.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use toolgate_core::routing::RoutingConfig;
use toolgate_core::routing::{CosineFloor, Fusion};
use toolgate_core::{LoadedSchemas, TokenCounter};
use toolgate_eval::{
    Conversations, Dataset, LiveOptions, LivePolicy, LiveTask, ReplayMode, SemanticInputs,
    choose_defaults, cost_assumptions, cost_summary, cost_svg, default_modes, evaluate,
    goal_summary, keyword_query, leave_one_out, live, live_markdown, markdown, replay,
    replay_markdown, svg,
};

use super::chat::{ModelOverrides, provider_config};
use super::tool_setup::embeddings_client;
use crate::cli::EvalArgs;
use crate::output::{eprint, print};
use crate::settings::Settings;

pub(crate) fn run(args: &EvalArgs) -> anyhow::Result<()> {
    if !args.live.is_empty() {
        return run_live(args);
    }
    if !args.replay.is_empty() {
        return run_replays(args);
    }
    let config = Settings::load(args.config.as_deref())?.routing;
    let counter = TokenCounter::new(args.encoding).context("loading the tokenizer")?;
    let (mut evaluations, after) = if args.leave_one_out {
        leave_one_out_evaluations(args, &config, &counter)?
    } else {
        own_evaluations(args, &config, &counter)?
    };
    // Each job's default is chosen on the other datasets, so the reports
    // are printed once every dataset is measured.
    choose_defaults(&mut evaluations);
    for (evaluation, after) in evaluations.iter().zip(&after.each) {
        print(&markdown(evaluation, args.encoding.as_str()));
        print(after);
    }
    print(&after.all);
    print(&cost_summary(&evaluations));
    print(&cost_assumptions());
    write_outputs(args, &evaluations)
}

/// Each `--replay` dataset replayed under no budget, each `--budget` (by
/// default one, two and three median groups) and all tools; the markdown
/// on stdout, the JSON to `--json`.
fn run_replays(args: &EvalArgs) -> anyhow::Result<()> {
    let counter = Arc::new(TokenCounter::new(args.encoding).context("loading the tokenizer")?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let loaded_schemas = match args.loaded_schemas.as_str() {
        "tool_list" => LoadedSchemas::ToolList,
        "conversation" => LoadedSchemas::Conversation,
        other => anyhow::bail!("--loaded-schemas is tool_list or conversation, not {other:?}"),
    };
    let mut replays = Vec::new();
    for dir in &args.replay {
        let data = Conversations::load(dir)
            .with_context(|| format!("loading the dataset {}", dir.display()))?;
        let modes = if args.budget.is_empty() {
            default_modes(&data.catalog, &counter)
        } else {
            std::iter::once(ReplayMode::NoBudget)
                .chain(args.budget.iter().map(|&tokens| ReplayMode::Budget(tokens)))
                .chain(std::iter::once(ReplayMode::AllTools))
                .collect()
        };
        let mut bar = ProgressBar::new();
        let replayed = runtime.block_on(replay(
            &data,
            &modes,
            loaded_schemas,
            Arc::clone(&counter),
            &mut |mode, done, total| {
                bar.show(&format!("{} {}", data.name, mode.label()), done, total);
            },
        ))?;
        bar.clear();
        print(&replay_markdown(&replayed));
        replays.push(replayed);
    }
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&replays)?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Each `--live` dataset's tasks played against the model under each
/// `--policy`; the markdown on stdout, the JSON to `--json`.
fn run_live(args: &EvalArgs) -> anyhow::Result<()> {
    let settings = Settings::load(args.config.as_deref())?;
    let provider = provider_config(
        &ModelOverrides {
            provider: &args.provider,
            model: &args.model,
            base_url: &args.base_url,
            tool_calls: &args.tool_calls,
            no_stream: false,
        },
        &settings,
    )?;
    let options = LiveOptions {
        tasks: args.tasks,
        skip: args.skip,
        context_window: provider.context_window,
        compaction: settings.agent.compaction(),
        time_limit: args.time_limit.map(Duration::from_secs),
    };
    let policies: Vec<LivePolicy> = if args.policy.is_empty() {
        LivePolicy::ALL.to_vec()
    } else {
        args.policy
            .iter()
            .map(|name| match name.as_str() {
                "all-tools" => Ok(LivePolicy::AllTools),
                "tool-list" => Ok(LivePolicy::Deferred(LoadedSchemas::ToolList)),
                "conversation" => Ok(LivePolicy::Deferred(LoadedSchemas::Conversation)),
                "search" => Ok(LivePolicy::Search),
                other => Err(anyhow::anyhow!("unknown --policy {other:?}")),
            })
            .collect::<anyhow::Result<_>>()?
    };
    let counter = Arc::new(TokenCounter::new(args.encoding).context("loading the tokenizer")?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mut results = Vec::new();
    eprint(&format!(
        "toolgate eval --live: {} {} at {} ({} tool calls, context window {} tokens)\n",
        provider.kind,
        provider.model,
        provider.base_url,
        provider.tool_calls,
        provider.context_window
    ));
    let model = toolgate_llm::connect(provider)?;
    for dir in &args.live {
        let data = Conversations::load(dir)
            .with_context(|| format!("loading the dataset {}", dir.display()))?;
        let mut bar = ProgressBar::new();
        let played = runtime.block_on(live(
            &data,
            Arc::clone(&model),
            &policies,
            options,
            Arc::clone(&counter),
            &mut |policy, task, done, total| {
                bar.clear();
                eprint(&live_task_line(policy, task, done, total));
                bar.show(&format!("{} {}", data.name, policy.label()), done, total);
            },
        ))?;
        bar.clear();
        print(&live_markdown(&played));
        results.push(played);
    }
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&results)?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// One finished task of `--live`, as stderr shows it while the run goes on:
/// what a run stopped before its end keeps, its bill included.
fn live_task_line(policy: LivePolicy, task: &LiveTask, done: usize, total: usize) -> String {
    let outcome = match (&task.error, task.succeeded) {
        (Some(error), _) => format!("failed: {error}"),
        (None, true) => "succeeded".to_owned(),
        (None, false) => format!(
            "not done (called {}; needed {})",
            if task.called.is_empty() {
                "nothing".to_owned()
            } else {
                task.called.join(", ")
            },
            task.gold.join(", ")
        ),
    };
    let compactions = match task.compactions {
        0 => String::new(),
        1 => " (1 a compaction's summary)".to_owned(),
        n => format!(" ({n} compactions' summaries)"),
    };
    format!(
        "  {} {done}/{total} {}: {outcome}, {} model calls{compactions}, {} tokens in ({} cached), \
         {} out, {:.0} s\n",
        policy.label(),
        task.conversation,
        task.model_calls,
        task.input_tokens,
        task.cached_input_tokens,
        task.output_tokens,
        task.seconds
    )
}

/// What is printed after each dataset's report, and after them all.
struct After {
    each: Vec<String>,
    all: String,
}

/// Every dataset measured with the router fitted on the others, and what
/// follows their reports: the goals and the settings fitted on them all.
fn leave_one_out_evaluations(
    args: &EvalArgs,
    config: &RoutingConfig,
    counter: &TokenCounter,
) -> anyhow::Result<(Vec<toolgate_eval::Evaluation>, After)> {
    let mut embedding = Embedding::open(args, config)?;
    let mut datasets = Vec::new();
    let mut semantic = Vec::new();
    for dir in &args.dataset {
        let dataset =
            Dataset::load(dir).with_context(|| format!("loading the dataset {}", dir.display()))?;
        for skipped in &dataset.skipped {
            eprint(&format!("  skipped: {skipped}\n"));
        }
        for renamed in &dataset.renamed {
            eprint(&format!("  renamed: {renamed}\n"));
        }
        semantic.push(embedding.inputs(&dataset)?);
        datasets.push(dataset);
    }
    let mut bar = ProgressBar::new();
    let left_out = leave_one_out(
        &datasets,
        &semantic,
        counter,
        config,
        args.context_window,
        &mut |name, done, total| {
            bar.show(name, done, total);
        },
    )?;
    bar.clear();
    let names: Vec<&str> = datasets.iter().map(|d| d.name.as_str()).collect();
    let all = goal_summary(&left_out.evaluations)
        + &fitted_settings(
            &left_out.fitted,
            "Fitted on every dataset",
            &names.join(", "),
            true,
        );
    let each = vec![String::new(); left_out.evaluations.len()];
    Ok((left_out.evaluations, After { each, all }))
}

/// `x` rounded to 4 decimals.
fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Knots of a printed calibration, at most.
const PRINTED_KNOTS: usize = 12;

/// The `[routing]` settings each fusion method was fitted to, as TOML a
/// user can paste, under `heading`; `source` says on what, and `several`
/// whether that is more than one dataset.
fn fitted_settings(
    fitted: &[toolgate_eval::FittedFusion],
    heading: &str,
    source: &str,
    several: bool,
) -> String {
    let mut out = format!(
        "## {heading}\n\n[routing] settings for each fusion method, fitted on {source}:\n\n```toml\n"
    );
    for (index, fitted) in fitted.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        let fusion = match fitted.fusion {
            Fusion::Lexical => "{ method = \"lexical\" }".to_owned(),
            Fusion::Semantic => "{ method = \"semantic\" }".to_owned(),
            Fusion::Rrf { k } => format!("{{ method = \"rrf\", k = {k:?} }}"),
            Fusion::Blend {
                weight,
                floor: CosineFloor::Lowest,
            } => format!("{{ method = \"blend\", weight = {weight:?} }}"),
            Fusion::Blend { weight, floor } => format!(
                "{{ method = \"blend\", weight = {weight:?}, floor = \"{}\" }}",
                floor.name()
            ),
        };
        // Rounded as printed, then one knot per raw value, so the map reads
        // back as it validates (raw strictly ascending).
        let mut rounded: Vec<(f64, f64)> = Vec::new();
        for (raw, calibrated) in fitted.calibration.thinned(PRINTED_KNOTS).knots {
            let knot = (round4(raw), round4(calibrated));
            match rounded.last_mut() {
                Some(last) if last.0 == knot.0 => last.1 = last.1.max(knot.1),
                _ => rounded.push(knot),
            }
        }
        let knots: Vec<String> = rounded
            .iter()
            .map(|(raw, calibrated)| format!("[{raw}, {calibrated}]"))
            .collect();
        let figures = if several {
            format!(
                "group recall {:.3} on the hardest of these datasets, {:.3} on average, at {:.1}% of all-tools tokens ({:.1}% on the costliest)",
                fitted.worst_recall,
                fitted.recall,
                fitted.token_fraction * 100.0,
                fitted.most_tokens * 100.0,
            )
        } else {
            format!(
                "group recall {:.3} at {:.1}% of all-tools tokens",
                fitted.recall,
                fitted.token_fraction * 100.0,
            )
        };
        let figures = match fitted.task_cost {
            Some((cached_share, extra_round_trips)) => format!(
                "{figures}; chosen by what a chat task costs among the settings keeping the recall floor: {:.1}% of all-tools' bill with Anthropic's cache, {extra_round_trips:.2} extra round trips",
                cached_share * 100.0
            ),
            None => figures,
        };
        let mut considered = String::new();
        for c in fitted.considered.iter().filter(|c| !c.chosen) {
            considered.push_str(&format!(
                "#   beside it, {} (route_above {}): worst recall {:.3}, {:.1}% of the tokens; short on {}; a chat task {}\n",
                c.tools(),
                c.route_above,
                c.worst_recall,
                c.token_fraction * 100.0,
                c.shortfalls(),
                c.cost(),
            ));
        }
        out.push_str(&format!(
            "# {}: {figures}\n{considered}[routing]\nfusion = {fusion}\nroute_above = {:?}\ntools_per_group = {}\nmax_groups = {}\nid_finders = {}\n{}search_groups = {}\nper_group = {{ weight = {:.3}, rank = {:.3}, bias = {:.3} }}\ncalibration = {{ knots = [{}] }}\n",
            fitted.fusion.label(),
            fitted.route_above,
            fitted.tools_per_group,
            fitted.max_groups,
            fitted.id_finders,
            fitted
                .max_token_share
                .map(|share| format!("max_token_share = {share:?}\n"))
                .unwrap_or_default(),
            fitted.search_groups,
            fitted.model.weight,
            fitted.model.rank,
            fitted.model.bias,
            knots.join(", ")
        ));
    }
    out.push_str("```\n");
    out
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

/// Every dataset measured with the router tuned on its own tuning part,
/// each to be followed by the settings it was tuned to.
fn own_evaluations(
    args: &EvalArgs,
    config: &RoutingConfig,
    counter: &TokenCounter,
) -> anyhow::Result<(Vec<toolgate_eval::Evaluation>, After)> {
    let mut evaluations = Vec::new();
    let mut each = Vec::new();
    let mut embedding = Embedding::open(args, config)?;
    for dir in &args.dataset {
        let dataset =
            Dataset::load(dir).with_context(|| format!("loading the dataset {}", dir.display()))?;
        for skipped in &dataset.skipped {
            eprint(&format!("  skipped: {skipped}\n"));
        }
        for renamed in &dataset.renamed {
            eprint(&format!("  renamed: {renamed}\n"));
        }
        let semantic = embedding.inputs(&dataset)?;
        let mut bar = ProgressBar::new();
        let evaluation = evaluate(
            &dataset,
            counter,
            config,
            args.context_window,
            semantic.as_ref(),
            &mut |done, total| bar.show(&dataset.name, done, total),
        )?;
        bar.clear();
        each.push(fitted_settings(
            &evaluation.fitted,
            &format!("Fitted on {}", dataset.name),
            &format!("{}'s tuning part", dataset.name),
            false,
        ));
        evaluations.push(evaluation);
    }
    let all = String::new();
    Ok((evaluations, After { each, all }))
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
    if let Some(path) = &args.plot {
        std::fs::write(path, cost_svg(evaluations))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// `texts` as string slices.
fn as_str(texts: &[String]) -> Vec<&str> {
    texts.iter().map(String::as_str).collect()
}

/// Turns texts into vectors.
type EmbedFn<'a> = dyn FnMut(&[&str]) -> anyhow::Result<Vec<Vec<f32>>> + 'a;

/// How `toolgate eval` embeds: the local model (with the vector cache),
/// else the `[routing.embeddings]` endpoint, else nothing.
enum Embedding {
    Local {
        embedder: toolgate_embed::Embedder,
        cache: toolgate_embed::VectorCache,
    },
    Endpoint {
        client: toolgate_llm::EmbeddingsClient,
        runtime: tokio::runtime::Runtime,
        model: String,
    },
    Lexical,
}

impl Embedding {
    /// `--embed-model` when given (an error if it does not load), else the
    /// `[routing.embeddings]` endpoint when configured, else the local model
    /// where toolgate looks for it, else lexical (with a note).
    fn open(args: &EvalArgs, config: &RoutingConfig) -> anyhow::Result<Self> {
        let env = |name: &str| std::env::var(name).ok();
        let local = |embedder: toolgate_embed::Embedder| -> anyhow::Result<Self> {
            let cache_dir = match &args.vector_cache {
                Some(dir) => dir.clone(),
                None => toolgate_tools::vector_cache_dir(&env)
                    .context("no --vector-cache, and neither XDG_CACHE_HOME nor HOME is set")?,
            };
            let cache = toolgate_embed::VectorCache::open(&cache_dir, &embedder);
            Ok(Self::Local { embedder, cache })
        };
        if let Some(dir) = &args.embed_model {
            let embedder = toolgate_embed::Embedder::load(dir)
                .with_context(|| format!("loading the embedding model in {}", dir.display()))?;
            return local(embedder);
        }
        if let Some(settings) = &config.embeddings {
            return Ok(Self::Endpoint {
                client: embeddings_client(settings)?,
                runtime: tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("starting the async runtime")?,
                model: settings.model.clone(),
            });
        }
        let found = toolgate_embed::model_dir(config.embed_model.as_deref(), &env)
            .ok_or(toolgate_embed::EmbedError::NowhereToLook)
            .and_then(|dir| toolgate_embed::Embedder::load(&dir));
        match found {
            Ok(embedder) => local(embedder),
            Err(error) => {
                eprint(&format!(
                    "  note: no embedding model ({error}); measuring the lexical policies only\n"
                ));
                Ok(Self::Lexical)
            }
        }
    }

    fn model(&self) -> Option<String> {
        match self {
            Self::Local { .. } => Some(toolgate_embed::MODEL_NAME.to_owned()),
            Self::Endpoint { model, .. } => Some(model.clone()),
            Self::Lexical => None,
        }
    }

    fn embed(&mut self, texts: &[&str]) -> anyhow::Result<Vec<Vec<f32>>> {
        match self {
            Self::Local { embedder, cache } => Ok(cache.embed(embedder, texts)?),
            Self::Endpoint {
                client, runtime, ..
            } => {
                let mut vectors = Vec::with_capacity(texts.len());
                for batch in texts.chunks(EMBEDDING_BATCH) {
                    let batch: Vec<String> = batch.iter().map(|t| (*t).to_owned()).collect();
                    let mut events = |_| {};
                    vectors.extend(runtime.block_on(client.embed(&batch, &mut events))?);
                }
                Ok(vectors)
            }
            Self::Lexical => Ok(Vec::new()),
        }
    }

    fn save(&mut self) {
        if let Self::Local { cache, .. } = self
            && let Err(error) = cache.save()
        {
            eprint(&format!(
                "  note: the vector cache was not saved: {error}\n"
            ));
        }
    }

    /// The dataset's tools and queries embedded, or `None` when lexical.
    fn inputs(&mut self, dataset: &Dataset) -> anyhow::Result<Option<SemanticInputs>> {
        let Some(model) = self.model() else {
            return Ok(None);
        };
        let started = std::time::Instant::now();
        let tool_texts: Vec<String> = toolgate_core::routing::tool_texts(&dataset.catalog)
            .into_iter()
            .map(|(_, text)| text)
            .collect();
        let query_texts: Vec<String> = dataset.queries.iter().map(|q| q.text.clone()).collect();
        let embed: &mut EmbedFn<'_> = &mut |texts| self.embed(texts);
        let tools = embed(&as_str(&tool_texts))
            .with_context(|| format!("{}: embedding the tools with {model}", dataset.name))?;
        let queries = embed(&as_str(&query_texts))
            .with_context(|| format!("{}: embedding the queries with {model}", dataset.name))?;
        // What a model would send `find_tool_groups`, measured beside the request.
        let keyword_texts: Vec<String> = query_texts.iter().map(|q| keyword_query(q)).collect();
        let keywords = embed(&as_str(&keyword_texts)).with_context(|| {
            format!(
                "{}: embedding the queries' keywords with {model}",
                dataset.name
            )
        })?;
        self.save();
        eprint(&format!(
            "  {}: {} tools and {} queries embedded with {model} in {:.1} s\n",
            dataset.name,
            tool_texts.len(),
            query_texts.len(),
            started.elapsed().as_secs_f64()
        ));
        Ok(Some(SemanticInputs {
            tools,
            queries,
            keywords,
            model,
        }))
    }
}

/// Texts per embeddings request.
const EMBEDDING_BATCH: usize = 128;

#[cfg(test)]
mod tests {
    use toolgate_core::LoadedSchemas;
    use toolgate_eval::{LivePolicy, LiveTask};

    use super::live_task_line;

    #[test]
    fn a_live_tasks_line_says_what_it_called_and_what_it_was_billed() {
        let task = LiveTask {
            conversation: "c1".to_owned(),
            turns: 1,
            gold: vec!["weather_forecast".to_owned()],
            called: vec!["load_tool_group".to_owned()],
            succeeded: false,
            model_calls: 2,
            input_tokens: 1200,
            cached_input_tokens: 800,
            output_tokens: 40,
            compactions: 0,
            seconds: 3.4,
            error: None,
        };
        assert_eq!(
            live_task_line(LivePolicy::Deferred(LoadedSchemas::ToolList), &task, 1, 30),
            "  chat, schemas in the tool list 1/30 c1: not done (called load_tool_group; needed \
             weather_forecast), 2 model calls, 1200 tokens in (800 cached), 40 out, 3 s\n"
        );
        let compacted = LiveTask {
            model_calls: 3,
            compactions: 1,
            ..task
        };
        assert!(
            live_task_line(LivePolicy::Search, &compacted, 1, 30)
                .contains(", 3 model calls (1 a compaction's summary), 1200 tokens in"),
        );
    }
}
