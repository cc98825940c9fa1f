use pretty_assertions::assert_eq;

use super::*;
use crate::fixtures::evaluation;

#[test]
fn no_evaluation_is_an_empty_plot_one_panel_wide() {
    assert_eq!(
        svg(&[]),
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"360\" height=\"300\" font-family=\"sans-serif\" font-size=\"10\">\n</svg>\n"
    );
}

#[test]
fn an_evaluation_is_one_panel_of_points_and_curves() {
    let plot = svg(&[evaluation(), evaluation()]);
    let lines: Vec<&str> = plot.lines().collect();
    assert_eq!(
        lines[0],
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"300\" font-family=\"sans-serif\" font-size=\"10\">"
    );
    let second = lines
        .iter()
        .position(|l| *l == "<g transform=\"translate(360,0)\">")
        .unwrap();
    assert_eq!(
        lines[1..second].join("\n"),
        r##"<g transform="translate(0,0)">
<text x="180" y="16" text-anchor="middle" font-size="12">tiny</text>
<rect x="48" y="48" width="264" height="204" fill="none" stroke="#999"/>
<text x="48.0" y="266" text-anchor="middle">0.01%</text>
<text x="114.0" y="266" text-anchor="middle">0.1%</text>
<text x="180.0" y="266" text-anchor="middle">1%</text>
<text x="246.0" y="266" text-anchor="middle">10%</text>
<text x="312.0" y="266" text-anchor="middle">100%</text>
<text x="44" y="255.0" text-anchor="end">0</text>
<text x="44" y="153.0" text-anchor="end">0.5</text>
<text x="44" y="51.0" text-anchor="end">1</text>
<text x="180" y="292" text-anchor="middle">share of all-tools schema tokens</text>
<text x="12" y="150" transform="rotate(-90 12 150)" text-anchor="middle">gold-group recall</text>
<polyline points="114.0,201.0 180.0,150.0" fill="none" stroke="#d62728" stroke-dasharray="3,2"/>
<text x="52.0" y="60.0" fill="#d62728">search: bm25</text>
<polyline points="246.0,150.0" fill="none" stroke="#2ca02c" stroke-dasharray="3,2"/>
<text x="52.0" y="71.0" fill="#2ca02c">best whole groups</text>
<circle cx="312.0" cy="48.0" r="4" fill="#555"/>
<text x="318.0" y="60.0">all_tools</text>
<circle cx="226.1" cy="48.0" r="4" fill="#1f77b4"/>
<text x="232.1" y="70.0">tiered_router</text>
<circle cx="206.3" cy="48.0" r="2" fill="#bbb"/>
<circle cx="180.0" cy="150.0" r="2" fill="#bbb"/>
</g>"##
    );
    assert_eq!(plot.lines().last(), Some("</svg>"));
}
