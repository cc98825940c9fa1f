//! `toolgate eval`: routing policies side by side on labelled datasets, as a
//! markdown table on stdout, and optionally JSON and an SVG plot.

use std::fmt::Write as _;
use std::io::IsTerminal;

use anyhow::Context;
use toolgate_core::TokenCounter;
use toolgate_core::routing::RoutingConfig;
use toolgate_core::routing::eval::{Dataset, Evaluation, SemanticInputs, evaluate};

use super::tools::{eprint, print, routing_config};
use crate::cli::EvalArgs;

pub(crate) fn run(args: &EvalArgs) -> anyhow::Result<()> {
    let config = routing_config(args.config.as_deref())?;
    let counter = TokenCounter::new(args.encoding).context("loading the tokenizer")?;
    let terminal = std::io::stderr().is_terminal();
    let mut evaluations = Vec::new();
    for dir in &args.dataset {
        let dataset =
            Dataset::load(dir).with_context(|| format!("loading the dataset {}", dir.display()))?;
        for skipped in &dataset.skipped {
            eprint(&format!("  skipped: {skipped}\n"));
        }
        let semantic = semantic_inputs(&config, &dataset)?;
        let mut last = usize::MAX;
        let evaluation = evaluate(
            &dataset,
            &counter,
            &config,
            semantic.as_ref(),
            &mut |done, total| {
                let percent = done * 100 / total.max(1);
                if terminal && percent != last {
                    last = percent;
                    let filled = percent / 5;
                    eprint(&format!(
                        "\r  {} [{}{}] {done}/{total}",
                        dataset.name,
                        "#".repeat(filled),
                        " ".repeat(20 - filled)
                    ));
                }
            },
        )?;
        if terminal {
            eprint("\r\x1b[2K");
        }
        print(&markdown(&evaluation, args.encoding.as_str()));
        evaluations.push(evaluation);
    }
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&evaluations)?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.svg {
        std::fs::write(path, svg(&evaluations))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
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
    let client = super::tools::embeddings_client(settings)?;
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

fn markdown(e: &Evaluation, encoding: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## {}\n\n{} tools in {} groups, {} schema tokens ({encoding}). {} queries reported, {} for tuning: {}. Router settings from the tuning part: confidence {}, at most {} groups.\n",
        e.dataset,
        e.tools,
        e.groups,
        e.all_tools_tokens,
        e.report_queries,
        e.tune_queries,
        e.split_rule,
        e.confidence_model,
        e.max_groups
    );
    let _ = writeln!(
        out,
        "| policy | group recall | tool recall | visible tokens | of all-tools | p50 decision |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
    for p in &e.policies {
        let _ = writeln!(
            out,
            "| {} | {:.3} | {:.3} | {:.0} | {:.1}% | {:.0} µs |",
            p.policy,
            p.group_recall,
            p.tool_recall,
            p.mean_visible_tokens,
            p.token_fraction * 100.0,
            p.p50_decision_us
        );
    }
    if let Some(router) = e.policies.iter().find(|p| p.policy == "tiered_router")
        && let (Some(tiers), Some(escalation), Some(high)) =
            (router.tiers, router.escalation_rate, router.high_tier)
    {
        let _ = writeln!(
            out,
            "\nTiers: high {:.1}%, medium {:.1}%, low {:.1}%. Escalation rate (restricted decisions missing a gold group): {:.1}%.\nHigh tier: {} queries, gold-group recall {:.3}, {:.1}% of all-tools tokens.",
            tiers.high * 100.0,
            tiers.medium * 100.0,
            tiers.low * 100.0,
            escalation * 100.0,
            high.queries,
            high.group_recall,
            high.token_fraction * 100.0
        );
    }
    if let Some(high) = e
        .policies
        .iter()
        .find(|p| p.policy == "tiered_router(polymorphic)")
        .and_then(|p| p.high_tier)
    {
        let _ = writeln!(
            out,
            "With the groups as polymorphic tools, the high tier sends {:.1}% of all-tools tokens.",
            high.token_fraction * 100.0
        );
    }
    let _ = writeln!(
        out,
        "\nCalibration (reported queries): confidence band, decisions, mean confidence, observed share whose routed groups held every gold group.\n"
    );
    let _ = writeln!(out, "| band | decisions | mean confidence | observed |");
    let _ = writeln!(out, "|---|---:|---:|---:|");
    for band in e.calibration.iter().filter(|b| b.queries > 0) {
        let _ = writeln!(
            out,
            "| {:.2}-{:.2} | {} | {:.3} | {:.3} |",
            band.from, band.to, band.queries, band.mean_confidence, band.observed
        );
    }
    out.push('\n');
    out
}

/// Gold-group recall (y) against the share of all-tools tokens (x, log
/// scale), one panel per dataset: the policies as points, the BM25 top-k
/// curves as lines.
fn svg(evaluations: &[Evaluation]) -> String {
    const W: f64 = 360.0;
    const H: f64 = 300.0;
    const PAD: f64 = 48.0;
    let x_of = |fraction: f64| {
        let f = fraction.clamp(1e-4, 1.0).log10();
        PAD + (f + 4.0) / 4.0 * (W - 2.0 * PAD)
    };
    let y_of = |recall: f64| H - PAD - recall.clamp(0.0, 1.0) * (H - 2.0 * PAD);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"10\">\n",
        W * evaluations.len().max(1) as f64
    );
    for (panel, e) in evaluations.iter().enumerate() {
        let _ = writeln!(out, "<g transform=\"translate({},0)\">", panel as f64 * W);
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"16\" text-anchor=\"middle\" font-size=\"12\">{}</text>",
            W / 2.0,
            e.dataset
        );
        let _ = writeln!(
            out,
            "<rect x=\"{PAD}\" y=\"{PAD}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>",
            W - 2.0 * PAD,
            H - 2.0 * PAD
        );
        for (fraction, label) in [
            (1e-4, "0.01%"),
            (1e-3, "0.1%"),
            (1e-2, "1%"),
            (1e-1, "10%"),
            (1.0, "100%"),
        ] {
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{label}</text>",
                x_of(fraction),
                H - PAD + 14.0
            );
        }
        for recall in [0.0, 0.5, 1.0] {
            let _ = writeln!(
                out,
                "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{recall}</text>",
                PAD - 4.0,
                y_of(recall) + 3.0
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">share of all-tools schema tokens</text>",
            W / 2.0,
            H - 8.0
        );
        let _ = writeln!(
            out,
            "<text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">gold-group recall</text>",
            H / 2.0,
            H / 2.0
        );
        for (curve, colour) in [
            (&e.bm25_tools_curve, "#d62728"),
            (&e.bm25_groups_curve, "#2ca02c"),
        ] {
            let points: Vec<String> = curve
                .iter()
                .map(|p| format!("{:.1},{:.1}", x_of(p.token_fraction), y_of(p.group_recall)))
                .collect();
            let _ = writeln!(
                out,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-dasharray=\"3,2\"/>",
                points.join(" ")
            );
        }
        for (index, p) in e.policies.iter().enumerate() {
            let colour = match p.policy.as_str() {
                "tiered_router" => "#1f77b4",
                "tiered_router(polymorphic)" => "#17becf",
                name if name.starts_with("bm25_tools") => "#d62728",
                name if name.starts_with("bm25_groups") => "#2ca02c",
                _ => "#555",
            };
            let (x, y) = (x_of(p.token_fraction), y_of(p.group_recall));
            let _ = writeln!(
                out,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{colour}\"/>"
            );
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x + 6.0,
                y - 4.0 + (index % 2) as f64 * 10.0,
                p.policy
            );
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    out
}
