//! The `toolgate eval --plot` plot: what a task costs against its extra
//! round trips, one panel per dataset, as the listing agent plays it.
//!
//! Hand-written SVG with fixed one-decimal coordinates, as [`crate::svg`].

use std::fmt::Write as _;

use crate::cost_choice::best;
use crate::report::Evaluation;
use crate::report::{Job, TaskCost};

/// Most extra round trips the x axis shows.
const MAX_ROUND_TRIPS: f64 = 3.0;

/// Billed tokens as a share of all-tools' (y, log scale from 1% to 300%)
/// against mean extra round trips per task (x): each policy played by the
/// listing agent, filled under Anthropic's cache, hollow uncached; the best
/// policy of each job and all-tools labelled.
pub fn cost_svg(evaluations: &[Evaluation]) -> String {
    const W: f64 = 360.0;
    const H: f64 = 300.0;
    const PAD: f64 = 48.0;
    let x_of =
        |trips: f64| PAD + trips.clamp(0.0, MAX_ROUND_TRIPS) / MAX_ROUND_TRIPS * (W - 2.0 * PAD);
    let (low, high) = (0.01_f64.log10(), 3.0_f64.log10());
    let y_of = |share: f64| {
        let s = share.clamp(0.01, 3.0).log10();
        H - PAD - (s - low) / (high - low) * (H - 2.0 * PAD)
    };
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"10\">\n",
        W * evaluations.len().max(1) as f64
    );
    for (panel, e) in evaluations.iter().enumerate() {
        let _ = writeln!(out, "<g transform=\"translate({},0)\">", panel as f64 * W);
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"16\" text-anchor=\"middle\" font-size=\"12\">{}</text>\n<rect x=\"{PAD}\" y=\"{PAD}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>",
            W / 2.0,
            e.dataset,
            W - 2.0 * PAD,
            H - 2.0 * PAD
        );
        for trips in [0.0, 1.0, 2.0, 3.0] {
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{trips}</text>",
                x_of(trips),
                H - PAD + 14.0
            );
        }
        for (share, label) in [(0.01, "1%"), (0.1, "10%"), (1.0, "100%")] {
            let _ = writeln!(
                out,
                "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>",
                PAD - 4.0,
                y_of(share) + 3.0
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">extra round trips per task</text>\n<text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">billed tokens, share of all-tools</text>",
            W / 2.0,
            H - 8.0,
            H / 2.0,
            H / 2.0
        );
        let labelled: Vec<&TaskCost> = [Job::Chat, Job::Serve, Job::Peer]
            .into_iter()
            .filter_map(|job| best(e, job, "listing"))
            .collect();
        // The policies as the hosts run them: rows in another listing form or
        // with another query are the tables' comparisons.
        for row in e
            .task_costs
            .iter()
            .filter(|r| r.agent.is_none_or(|a| a == "listing") && r.variant.is_none())
        {
            let colour = match row.job {
                Job::Baseline => "#555",
                Job::Chat => "#1f77b4",
                Job::Serve => "#2ca02c",
                Job::Peer => "#d62728",
            };
            let x = x_of(row.extra_round_trips);
            let cached = row.cached_share.first().copied().unwrap_or(0.0);
            let _ = writeln!(
                out,
                "<circle cx=\"{x:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"none\" stroke=\"{colour}\"/>\n<circle cx=\"{x:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"/>",
                y_of(row.uncached_share),
                y_of(cached)
            );
            let named = row.job == Job::Baseline || labelled.iter().any(|b| std::ptr::eq(*b, row));
            if named {
                let _ = writeln!(
                    out,
                    "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{colour}\">{}</text>",
                    x + 5.0,
                    y_of(cached) - 5.0,
                    row.policy
                );
            }
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
#[path = "cost_svg_tests.rs"]
mod tests;
