use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::group::ToolGroup;
use crate::origin::Origin;
use crate::routing::config::RoutingConfig;
use crate::routing::router::Router;
use crate::tool::ToolDefinition;

/// Topics, each with words no other shares.
const TOPICS: [(&str, [&str; 4]); 4] = [
    (
        "weather",
        ["forecast", "rainfall", "humidity", "temperature"],
    ),
    ("music", ["playlist", "album", "song", "artist"]),
    ("finance", ["invoice", "payment", "currency", "ledger"]),
    ("travel", ["flight", "hotel", "passport", "itinerary"]),
];

/// Eight tools a topic, each described by two of its words: four groups,
/// one a topic; or, `dealt`, eight groups, tool `i` of every topic in group
/// `i`, so that no tool has a sibling of its own topic.
fn catalog(dealt: bool) -> Catalog {
    let mut groups: Vec<Vec<(ToolDefinition, Origin)>> = vec![Vec::new(); 8];
    for (t, (topic, words)) in TOPICS.iter().enumerate() {
        for i in 0..8 {
            let (a, b) = (words[i % 4], words[(i + 1 + i / 4) % 4]);
            let definition = ToolDefinition::new(
                ToolName::new(format!("{topic}_tool_{i}")).unwrap(),
                format!("Looks up the {a} and the {b}"),
                json!({"type": "object"}),
            )
            .unwrap();
            let group = if dealt { i } else { t };
            groups[group].push((definition, Origin::Builtin));
        }
    }
    let mut catalog = Catalog::new();
    for (index, tools) in groups
        .into_iter()
        .enumerate()
        .filter(|(_, t)| !t.is_empty())
    {
        let id = format!("group_{index}");
        catalog
            .register_group_with_tools(
                ToolGroup::new(GroupId::new(id.as_str()).unwrap(), &id, "tools"),
                Origin::Builtin,
                tools,
            )
            .unwrap();
    }
    catalog
}

fn router(catalog: &Catalog) -> Router {
    let taxonomy = RoutingConfig::default().validate(catalog).unwrap();
    Router::hybrid(catalog, taxonomy, None)
}

#[test]
fn probes_are_described_tools_with_a_sibling_spread_over_the_catalog() {
    let mut catalog = catalog(false);
    let lone = ToolDefinition::new(
        ToolName::new("lone_tool").unwrap(),
        "The only tool of its group",
        json!({"type": "object"}),
    )
    .unwrap();
    let group = ToolGroup::new(GroupId::new("lone").unwrap(), "lone", "one tool");
    catalog
        .register_group_with_tools(group, Origin::Builtin, vec![(lone, Origin::Builtin)])
        .unwrap();
    let names: Vec<ToolName> = catalog
        .groups()
        .flat_map(|g| catalog.group_tools(g.id.as_str()))
        .map(|t| t.name.clone())
        .collect();
    let probes = probe_tools(&catalog, &names, &IdFinders::new(&catalog));
    // The lone tool has no sibling to carry its group once left out.
    assert_eq!(probes.len(), 32);
    assert!(
        probes
            .iter()
            .all(|(_, _, needs)| needs.group.as_str() != "lone")
    );
    let (index, text, needs) = &probes[9];
    assert_eq!(names[*index].as_str(), "music_tool_1");
    assert_eq!(needs.group.as_str(), "group_1");
    assert!(needs.finders.is_empty());
    assert_eq!(text, "Looks up the album and the song");

    // Past MAX_PROBES, every few tools from first to last.
    let many: Vec<ToolName> = names.iter().cycle().take(32 * 20).cloned().collect();
    let probes = probe_tools(&catalog, &many, &IdFinders::default());
    assert!(probes.len() <= MAX_PROBES && probes.len() > MAX_PROBES / 2);
    assert_eq!(probes[0].0, 0);
    assert!(probes.last().unwrap().0 > many.len() - 10);
}

#[test]
fn a_catalog_whose_groups_are_told_apart_is_stated_more_confidently() {
    let apart = router(&catalog(false));
    let dealt = router(&catalog(true));
    let (apart, dealt) = (apart.self_test().unwrap(), dealt.self_test().unwrap());
    assert_eq!((apart.probes, dealt.probes), (32, 32));
    // A probe's siblings share its words where groups hold one topic.
    assert_eq!(apart.held, 32);
    assert!(dealt.held < apart.held, "{dealt:?}");
    assert_eq!(dealt.held, 0);
    for fitted in [0.6, 0.8, 0.9] {
        let (a, d) = (
            apart.recalibration.apply(fitted),
            dealt.recalibration.apply(fitted),
        );
        assert!(
            a > fitted && d < fitted,
            "at {fitted}: apart {a}, dealt {d}"
        );
    }
    // Stated low, not backwards.
    assert!(dealt.recalibration.slope >= 0.0, "{dealt:?}");
}

#[test]
fn the_router_states_decisions_through_its_self_test() {
    let catalog = catalog(false);
    let router = router(&catalog);
    let test = router.self_test().unwrap();
    let decision = router.route("what is the rainfall forecast", &[]);
    assert_eq!(decision.routed[0].as_str(), "group_0");
    assert!(decision.fitted_confidence > 0.0);
    assert_eq!(
        decision.confidence,
        test.recalibration.apply(decision.fitted_confidence)
    );
    // Learning online starts from it, not from "no change".
    let router = router.with_online_calibration(OnlineCalibration::default());
    assert_eq!(router.online_calibration(), Some((test.recalibration, 0)));
    // A scorer without evidence per tool gives no probes.
    let taxonomy = RoutingConfig::default().validate(&catalog).unwrap();
    let lexical = Router::lexical(&catalog, taxonomy).self_tested(&catalog);
    assert_eq!(lexical.self_test(), None);
}

#[test]
fn a_configured_calibration_is_taken_as_it_is() {
    let catalog = catalog(false);
    let config = RoutingConfig {
        calibration: Some(crate::routing::Isotonic {
            knots: vec![(0.0, 0.0), (1.0, 1.0)],
        }),
        ..RoutingConfig::default()
    };
    let router = Router::hybrid(&catalog, config.validate(&catalog).unwrap(), None);
    assert_eq!(router.self_test(), None);
    let decision = router.route("what is the rainfall forecast", &[]);
    assert_eq!(decision.confidence, decision.fitted_confidence);
}
