//! The `toolgate eval --svg` plot: gold-group recall against the share of
//! all-tools schema tokens, one panel per dataset.
//!
//! Hand-written SVG with fixed one-decimal coordinates, so the same figures
//! always give the same bytes and the file diffs cleanly in review.

use std::fmt::Write as _;

use crate::report::Evaluation;

/// Colours of the tool-search curves, one per fusion method.
const SEARCH_COLOURS: [&str; 4] = ["#d62728", "#9467bd", "#ff7f0e", "#8c564b"];

/// Width and height of a panel, and the padding around its plot.
const W: f64 = 360.0;
const H: f64 = 300.0;
const PAD: f64 = 48.0;

/// The x of a share of all-tools tokens (log scale, 0.01% to 100%).
fn x_of(fraction: f64) -> f64 {
    let f = fraction.clamp(1e-4, 1.0).log10();
    PAD + (f + 4.0) / 4.0 * (W - 2.0 * PAD)
}

/// The y of a recall.
fn y_of(recall: f64) -> f64 {
    H - PAD - recall.clamp(0.0, 1.0) * (H - 2.0 * PAD)
}

/// Gold-group recall (y) against the share of all-tools tokens (x, log
/// scale), one panel per dataset: the policies as points (the routers and
/// the two ends labelled), the tool-search and best-groups curves as lines.
pub fn svg(evaluations: &[Evaluation]) -> String {
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"10\">\n",
        W * evaluations.len().max(1) as f64
    );
    for (panel, e) in evaluations.iter().enumerate() {
        let _ = writeln!(out, "<g transform=\"translate({},0)\">", panel as f64 * W);
        axes(&mut out, e);
        curves(&mut out, e);
        points(&mut out, e);
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    out
}

/// A panel's title, frame, ticks and axis labels.
fn axes(out: &mut String, e: &Evaluation) {
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
}

/// Tool search by each method, and the best whole groups, as lines with a
/// legend.
fn curves(out: &mut String, e: &Evaluation) {
    // Tool search by each method, and the best whole groups, as lines
    // with a legend; the labelled points are the routers and the two
    // ends (every tool, the listing alone), the other policies dots.
    let mut lines: Vec<(String, &[crate::report::CurvePoint], &str)> = Vec::new();
    for (curve, colour) in e.search_curves.iter().zip(SEARCH_COLOURS.iter().cycle()) {
        lines.push((format!("search: {}", curve.method), &curve.points, colour));
    }
    if e.search_curves.is_empty() {
        lines.push(("search: bm25".to_owned(), &e.bm25_tools_curve, "#d62728"));
    }
    lines.push((
        "best whole groups".to_owned(),
        &e.bm25_groups_curve,
        "#2ca02c",
    ));
    for (row, (label, curve, colour)) in lines.iter().enumerate() {
        let points: Vec<String> = curve
            .iter()
            .map(|p| format!("{:.1},{:.1}", x_of(p.token_fraction), y_of(p.group_recall)))
            .collect();
        let _ = writeln!(
            out,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-dasharray=\"3,2\"/>",
            points.join(" ")
        );
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{colour}\">{label}</text>",
            PAD + 4.0,
            PAD + 12.0 + row as f64 * 11.0
        );
    }
}

/// The policies as points: the routers and the two ends labelled.
fn points(out: &mut String, e: &Evaluation) {
    let mut labelled = 0;
    for p in &e.policies {
        let (colour, label) = match p.policy.as_str() {
            "tool_router" => ("#000", true),
            "tiered_router" => ("#1f77b4", true),
            "all_tools" | "core_listing" => ("#555", true),
            _ => ("#bbb", false),
        };
        let (x, y) = (x_of(p.token_fraction), y_of(p.group_recall));
        let radius = if label { 4 } else { 2 };
        let _ = writeln!(
            out,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{radius}\" fill=\"{colour}\"/>"
        );
        if label {
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x + 6.0,
                y + 12.0 + (labelled % 2) as f64 * 10.0,
                p.policy
            );
            labelled += 1;
        }
    }
}

#[cfg(test)]
#[path = "svg_tests.rs"]
mod tests;
