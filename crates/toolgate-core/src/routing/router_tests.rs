use pretty_assertions::assert_eq;

use super::{Confidence, Router};
use crate::name::{GroupId, ToolName};
use crate::routing::calibration::PerGroup;
use crate::routing::config::RoutingConfig;
use crate::routing::decision::{PartialGroup, Tier, Visible};
use crate::routing::test_catalogs::{catalog, catalog_of, ids};

#[test]
fn a_clear_query_routes_high_to_its_group() {
    let catalog = catalog();
    let router = Router::lexical(
        &catalog,
        RoutingConfig::default().validate(&catalog).unwrap(),
    );
    let decision = router.route("search my inbox for emails from Anna", &[]);
    assert_eq!(decision.routed[0], GroupId::new("gmail").unwrap());
    assert_eq!(decision.tier, Tier::High, "{decision:?}");
    assert_eq!(decision.visible, Visible::Groups(decision.routed.clone()));
    assert_eq!(decision.intent.as_deref(), Some("gmail"));
}

#[test]
fn a_catalog_and_turn_in_chinese_route_by_their_words() {
    // Neither the descriptions nor the turn space their words: matched by
    // pairs of characters, "天气预报" in the turn meets the weather tool's.
    let catalog = catalog_of([
        (
            "mail",
            "收发电子邮件",
            vec![
                ("send_mail", "发送一封电子邮件给联系人"),
                ("search_mail", "在收件箱中搜索邮件"),
            ],
        ),
        (
            "calendar",
            "日程和会议",
            vec![("create_event", "在日历中创建会议")],
        ),
        (
            "weather",
            "天气",
            vec![("forecast", "查询城市未来几天的天气预报")],
        ),
    ]);
    let router = Router::lexical(
        &catalog,
        RoutingConfig::default().validate(&catalog).unwrap(),
    );
    let decision = router.route("明天北京的天气预报怎么样？", &[]);
    assert_eq!(
        decision.routed[0],
        GroupId::new("weather").unwrap(),
        "{decision:?}"
    );
    let decision = router.route("帮我在收件箱里搜索张三的邮件", &[]);
    assert_eq!(
        decision.routed[0],
        GroupId::new("mail").unwrap(),
        "{decision:?}"
    );
}

#[test]
fn nothing_matching_fails_open_or_to_recovery() {
    let catalog = catalog();
    let router = Router::lexical(
        &catalog,
        RoutingConfig::default().validate(&catalog).unwrap(),
    );
    let decision = router.route("zzz qqq", &[]);
    assert_eq!(
        (decision.tier, decision.visible, decision.intent),
        (Tier::Low, Visible::Catalog, None)
    );

    let config: RoutingConfig =
        toml::from_str("recovery_groups = [\"calendar\"]\nunknown_intent = \"recovery\"\n")
            .unwrap();
    let router = Router::lexical(&catalog, config.validate(&catalog).unwrap());
    let decision = router.route("zzz qqq", &[]);
    assert_eq!(decision.tier, Tier::Medium);
    assert_eq!(decision.visible, Visible::Groups(ids(&["calendar"])));
}

#[test]
fn an_ambiguous_query_adds_the_recovery_groups_or_opens_the_catalog() {
    let catalog = catalog();
    let config: RoutingConfig = toml::from_str(
        "confidence = \"softmax\"\nrecovery_groups = [\"weather\"]\nthresholds = { high = 0.99, medium = 0.3 }\n",
    )
    .unwrap();
    let router = Router::lexical(&catalog, config.validate(&catalog).unwrap());
    let decision = router.route("send an email about the meeting event", &[]);
    assert_eq!(decision.tier, Tier::Medium, "{decision:?}");
    let Visible::Groups(visible) = &decision.visible else {
        panic!("{decision:?}")
    };
    assert_eq!(visible, &ids(&["gmail", "weather"]));
}

#[test]
fn earlier_turns_help_a_follow_up() {
    let catalog = catalog();
    let router = Router::lexical(
        &catalog,
        RoutingConfig::default().validate(&catalog).unwrap(),
    );
    let alone = router.route("and tomorrow?", &[]);
    assert_eq!(alone.tier, Tier::Low);
    let followed = router.route("and tomorrow?", &["what is the weather forecast in Paris"]);
    assert_eq!(followed.routed[0], GroupId::new("weather").unwrap());
}

#[test]
fn intents_and_examples_steer_the_route() {
    let catalog = catalog();
    let config: RoutingConfig = toml::from_str(
        "[[intent]]\nname = \"scheduling\"\ngroups = [\"calendar\"]\nexamples = [\"book a slot with the dentist\"]\n",
    )
    .unwrap();
    let router = Router::lexical(&catalog, config.validate(&catalog).unwrap());
    let decision = router.route("book a dentist slot", &[]);
    assert_eq!(decision.routed[0], GroupId::new("calendar").unwrap());
    assert_eq!(decision.intent.as_deref(), Some("scheduling"));
}

#[test]
fn the_per_group_model_routes_each_group_a_turn_needs() {
    let catalog = catalog();
    let router = Router::lexical(
        &catalog,
        RoutingConfig::default().validate(&catalog).unwrap(),
    );
    assert!(matches!(router.confidence(), Confidence::PerGroup(_)));
    let both = router.route("send an email about the meeting event", &[]);
    assert_eq!(both.routed, ids(&["gmail", "calendar"]), "{both:?}");
    assert_eq!(both.tier, Tier::High, "{both:?}");
    let one = router.route("weather forecast for Paris", &[]);
    assert_eq!(one.routed, ids(&["weather"]), "{one:?}");
    // The confidence is the chance that no needed group is left out.
    let outside: f64 = one.ranked[1..].iter().map(|(_, p)| 1.0 - p).product();
    assert!((one.confidence - outside).abs() < 1e-9, "{one:?}");
}

#[test]
fn configured_per_group_parameters_are_used_and_checked() {
    let catalog = catalog();
    let config: RoutingConfig =
        toml::from_str("per_group = { weight = 2.0, bias = -1.0 }\n").unwrap();
    let router = Router::lexical(&catalog, config.validate(&catalog).unwrap());
    assert_eq!(
        router.confidence(),
        Confidence::PerGroup(PerGroup {
            weight: 2.0,
            bias: -1.0,
            rank: 0.0,
        })
    );
    let ranked: RoutingConfig =
        toml::from_str("per_group = { weight = 2.0, rank = -0.5, bias = -1.0 }\n").unwrap();
    assert_eq!(ranked.per_group.map(|m| m.rank), Some(-0.5));
    for bad in [
        "per_group = { weight = nan, bias = 0.0 }\n",
        "per_group = { weight = 1.0, rank = 0.5, bias = 0.0 }\n",
    ] {
        let bad: RoutingConfig = toml::from_str(bad).unwrap();
        assert_eq!(
            bad.validate(&catalog).unwrap_err().to_string(),
            "[routing]: per_group weight, rank and bias must be finite numbers, and rank at most 0"
        );
    }
}

#[test]
fn with_tools_per_group_a_routed_group_arrives_with_its_best_tools() {
    let catalog = catalog();
    let whole = Router::lexical(
        &catalog,
        RoutingConfig::default().validate(&catalog).unwrap(),
    );
    assert_eq!(whole.route("send an email to Bob", &[]).partial, []);

    let config = RoutingConfig {
        tools_per_group: Some(1),
        ..RoutingConfig::default()
    };
    let router = Router::lexical(&catalog, config.validate(&catalog).unwrap());
    let decision = router.route("send an email to Bob", &[]);
    assert_eq!(decision.routed, ids(&["gmail"]));
    assert_eq!(
        decision.partial,
        [PartialGroup {
            group: GroupId::new("gmail").unwrap(),
            tools: vec![ToolName::new("gmail_send").unwrap()],
        }]
    );

    let zero = RoutingConfig {
        tools_per_group: Some(0),
        ..RoutingConfig::default()
    };
    let whole = Router::lexical(&catalog, zero.validate(&catalog).unwrap());
    assert_eq!(whole.route("send an email to Bob", &[]).partial, []);
    let eleven = RoutingConfig {
        tools_per_group: Some(11),
        ..RoutingConfig::default()
    };
    assert_eq!(
        eleven.validate(&catalog).unwrap_err().to_string(),
        "[routing]: tools_per_group must be at most 10, not 11 (0 loads whole groups)"
    );
}

#[test]
fn scores_given_from_elsewhere_route_and_the_turns_words_pick_the_tools() {
    let catalog = catalog();
    let config = RoutingConfig {
        tools_per_group: Some(1),
        ..RoutingConfig::default()
    };
    let router = Router::lexical(&catalog, config.validate(&catalog).unwrap());
    let query = "list my upcoming meetings";
    assert_eq!(
        router.route_scored(&router.scores(query, &[]), query, &[]),
        router.route(query, &[])
    );

    // Blended scores (say, from embeddings) that point at calendar alone.
    let scores: Vec<f64> = router
        .groups()
        .iter()
        .map(|group| {
            if group.as_str() == "calendar" {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    let decision = router.route_scored(&scores, "anything upcoming tomorrow?", &[]);
    assert_eq!(decision.routed, ids(&["calendar"]));
    assert_eq!(decision.tier, Tier::High);
    assert_eq!(
        decision.partial,
        [PartialGroup {
            group: GroupId::new("calendar").unwrap(),
            tools: vec![ToolName::new("calendar_list").unwrap()],
        }]
    );
}

#[test]
fn outcomes_recorded_online_restate_the_confidence_and_the_tier_follows() {
    let catalog = catalog();
    let config = RoutingConfig::default().validate(&catalog).unwrap();
    let query = "search my inbox for emails from Anna";
    let plain = Router::lexical(&catalog, config.clone()).route(query, &[]);
    let router = Router::lexical(&catalog, config)
        .with_online_calibration(crate::routing::OnlineCalibration::new(1.0));
    let first = router.route(query, &[]);
    assert_eq!(
        first, plain,
        "no outcomes yet: the fitted confidence stands"
    );
    assert_eq!(first.confidence, first.fitted_confidence);
    assert_eq!(first.tier, Tier::High);
    // Turns stated this confident kept needing a group that was not routed.
    for _ in 0..40 {
        router.record_outcome(first.fitted_confidence, false);
    }
    let later = router.route(query, &[]);
    assert_eq!(later.fitted_confidence, first.fitted_confidence);
    assert!(later.confidence < 0.2, "{later:?}");
    assert_eq!(later.tier, Tier::Low);
    assert_eq!(later.visible, Visible::Catalog);
    assert_eq!(router.online_calibration().map(|(_, n)| n), Some(40));
    // A router without one ignores outcomes.
    let plain_router = Router::lexical(
        &catalog,
        RoutingConfig::default().validate(&catalog).unwrap(),
    );
    plain_router.record_outcome(0.9, false);
    assert_eq!(plain_router.online_calibration(), None);
}

#[test]
fn a_group_turns_keep_needing_unnamed_is_shown_on_later_restricted_turns() {
    use crate::routing::LearnedRecovery;
    let catalog = catalog();
    let router = Router::lexical(
        &catalog,
        RoutingConfig::default().validate(&catalog).unwrap(),
    )
    .with_learned_recovery(LearnedRecovery::default());
    let query = "search my inbox for emails from Anna";
    let before = router.route(query, &[]);
    assert_eq!(before.tier, Tier::High, "{before:?}");
    assert!(!before.routed.contains(&GroupId::new("weather").unwrap()));
    assert_eq!(before.visible, Visible::Groups(before.routed.clone()));

    // Two turns like it turned out to need the weather too.
    for _ in 0..2 {
        router.record_misses(&ids(&["weather"]));
    }
    let after = router.route(query, &[]);
    assert_eq!(after.routed, before.routed, "the ranking is unchanged");
    assert_eq!(after.learned, ids(&["weather"]));
    assert!(after.relies_on(&GroupId::new("weather").unwrap()));
    assert!(!before.relies_on(&GroupId::new("weather").unwrap()));
    let mut expected = before.routed.clone();
    expected.extend(ids(&["weather"]));
    assert_eq!(after.visible, Visible::Groups(expected));
    assert_eq!(router.learned_recovery(), Some((ids(&["weather"]), 2)));

    // A learned group the router does not route over is left out.
    for _ in 0..3 {
        router.record_misses(&ids(&["gone"]));
    }
    assert_eq!(
        router.learned_recovery().unwrap().0,
        ids(&["gone", "weather"])
    );
    assert_eq!(router.route(query, &[]).visible, after.visible);

    // A router without a learned recovery records nothing.
    let plain = Router::lexical(
        &catalog,
        RoutingConfig::default().validate(&catalog).unwrap(),
    );
    plain.record_misses(&ids(&["weather"]));
    plain.record_misses(&ids(&["weather"]));
    assert_eq!(plain.learned_recovery(), None);
    assert_eq!(plain.route(query, &[]).visible, before.visible);
}

/// With `route_tools` a turn arrives with the best tools across groups,
/// as many of one group as rank among them (no cap of 10 a group), each
/// group partly loaded with its own, at every tier.
#[test]
fn with_route_tools_a_turn_arrives_with_the_best_tools_across_groups() {
    let names: Vec<String> = (0..14).map(|i| format!("weather_{i:02}")).collect();
    let weather: Vec<(&str, &str)> = names
        .iter()
        .map(|name| (name.as_str(), "weather forecast for a city"))
        .collect();
    let catalog = catalog_of([
        ("weather", "Weather forecasts", weather),
        (
            "alerts",
            "Severe weather alerts",
            vec![("alerts_weather", "severe weather alerts for a city")],
        ),
        ("mail", "Email", vec![("mail_send", "send an email")]),
    ]);
    let config = RoutingConfig {
        route_tools: Some(12),
        ..RoutingConfig::default()
    };
    let router = Router::lexical(&catalog, config.validate(&catalog).unwrap());
    let decision = router.route("weather forecast for Oslo", &[]);
    let shown: usize = decision.partial.iter().map(|p| p.tools.len()).sum();
    assert_eq!(shown, 12, "{:?}", decision.partial);
    assert_eq!(decision.partial[0].group, GroupId::new("weather").unwrap());
    assert!(
        decision.partial[0].tools.len() > 10,
        "{:?}",
        decision.partial
    );
    assert_eq!(
        decision.visible,
        Visible::Groups(decision.routed.clone()),
        "the groups of those tools, whatever the tier ({:?})",
        decision.tier
    );
    assert!(!decision.routed.contains(&GroupId::new("mail").unwrap()));
    // 0 routes groups; more than 50 is refused.
    let groups = RoutingConfig {
        route_tools: Some(0),
        ..RoutingConfig::default()
    };
    assert_eq!(groups.validate(&catalog).unwrap().route_tools, None);
    let too_many = RoutingConfig {
        route_tools: Some(51),
        ..RoutingConfig::default()
    };
    assert_eq!(
        too_many.validate(&catalog).unwrap_err().to_string(),
        "[routing]: route_tools must be at most 50, not 51 (0 routes groups)"
    );
}
