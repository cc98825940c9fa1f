use std::collections::HashSet;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_core::routing::ToolCosts;
use toolgate_core::{Catalog, Encoding, TokenCounter, import_jsonl};

use super::*;

/// Three groups: `calendar` (one tool), `mail` (two), `weather` (one), with
/// listing lines that say what they hold.
fn catalog() -> Catalog {
    let dir = tempfile::tempdir().unwrap();
    let tools = [
        ("calendar_add", "calendar", "Add an event"),
        ("mail_send", "mail", "Send an email"),
        ("mail_search", "mail", "Search emails"),
        ("weather_forecast", "weather", "The forecast for a city"),
    ]
    .map(|(name, group, description)| {
        json!({"name": name, "description": description, "group": group,
               "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}})
        .to_string()
    });
    std::fs::write(dir.path().join("tools.jsonl"), tools.join("\n")).unwrap();
    let groups = [
        ("calendar", "Events and meetings"),
        ("mail", "Send and search email"),
        ("weather", "Forecasts and temperatures"),
    ]
    .map(|(group, description)| json!({"group": group, "description": description}).to_string());
    std::fs::write(dir.path().join("groups.jsonl"), groups.join("\n")).unwrap();
    let mut catalog = Catalog::new();
    import_jsonl(&mut catalog, &dir.path().join("tools.jsonl")).unwrap();
    catalog
}

/// The catalog of [`catalog`], its counter and its costs, for a [`Stage`].
struct Fixture {
    catalog: Catalog,
    counter: TokenCounter,
    costs: ToolCosts,
}

impl Fixture {
    fn new() -> Self {
        let catalog = catalog();
        let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
        let costs = ToolCosts::measure(&catalog, &counter);
        Self {
            catalog,
            counter,
            costs,
        }
    }

    fn stage(&self) -> Stage<'_> {
        Stage::new(
            &self.catalog,
            &self.counter,
            &self.costs,
            ListingForm::Lines,
        )
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|n| (*n).to_owned()).collect()
}

/// Loading whole groups only (as before a load could name tools), the
/// oracle loads the groups of the missing tools.
#[test]
fn the_oracle_loads_the_groups_of_the_missing_tools_in_one_round_trip() {
    let fixture = Fixture::new();
    let (stage, costs) = (fixture.stage(), &fixture.costs);
    let needed = names(&["mail_send", "weather_forecast"]);
    let listed = stage.load_groups(
        "mail Oslo's forecast to Bob",
        &needed,
        Start::default(),
        Agent::Oracle,
        Placement::ToolList,
        Loads::Groups,
    );
    assert!(listed.done);
    assert_eq!(listed.rounds.len(), 1);
    assert_eq!(listed.using_calls, 3);
    let schemas = costs.group(&GroupId::new("mail").unwrap())
        + costs.group(&GroupId::new("weather").unwrap());
    assert_eq!(listed.rounds[0].listed, schemas);
    assert_eq!(listed.system, stage.listing);

    let in_conversation = stage.load_groups(
        "mail Oslo's forecast to Bob",
        &needed,
        Start::default(),
        Agent::Oracle,
        Placement::Conversation,
        Loads::Groups,
    );
    assert_eq!(in_conversation.rounds[0].listed, 0);
    assert_eq!(
        in_conversation.rounds[0].messages,
        listed.rounds[0].messages + schemas
    );
}

#[test]
fn a_tool_shown_on_the_first_call_needs_no_round_trip() {
    let fixture = Fixture::new();
    let (stage, costs) = (fixture.stage(), &fixture.costs);
    let start = Start {
        visible: HashSet::from(["mail_send".to_owned()]),
        tokens: costs.tool("mail_send"),
        ..Start::default()
    };
    for agent in Agent::ALL {
        let episode = stage.load_groups(
            "send a mail",
            &names(&["mail_send"]),
            start.clone(),
            agent,
            Placement::ToolList,
            Loads::Tools,
        );
        assert!(episode.done);
        assert!(episode.rounds.is_empty());
        assert_eq!(episode.task_tools, costs.tool("mail_send"));
    }
}

/// The listing agent finds a group its listing line names at once, and
/// pays a round trip per guess where the request shares no word with it.
#[test]
fn the_listing_agent_pays_for_a_line_that_does_not_match() {
    let fixture = Fixture::new();
    let stage = fixture.stage();
    let play = |request: &str, needed: &[&str]| {
        stage.load_groups(
            request,
            &names(needed),
            Start::default(),
            Agent::Listing,
            Placement::ToolList,
            Loads::Tools,
        )
    };
    let named = play("send an email to Bob", &["mail_send"]);
    assert!(named.done);
    assert_eq!(named.rounds.len(), 1);
    // No word in common: two groups a round trip in catalog order, so the
    // third group comes in the second round trip.
    let unnamed = play("will it rain tomorrow", &["weather_forecast"]);
    assert!(unnamed.done);
    assert_eq!(unnamed.rounds.len(), 2);
}

/// What a search named is loaded first, in the search's order.
#[test]
fn the_listing_agent_loads_what_a_search_named_first() {
    let fixture = Fixture::new();
    let stage = fixture.stage();
    let start = Start {
        named: vec![GroupId::new("weather").unwrap()],
        ..Start::default()
    };
    let episode = stage.load_groups(
        "will it rain tomorrow",
        &names(&["weather_forecast"]),
        start,
        Agent::Listing,
        Placement::ToolList,
        Loads::Tools,
    );
    assert_eq!(episode.rounds.len(), 1);
    assert!(episode.done);
}

/// The oracle asks a tool search by name for what the first page missed;
/// the listing agent reads the next page, and gives up after three.
#[test]
fn a_tool_search_pages_or_asks_by_name() {
    let fixture = Fixture::new();
    let (stage, costs) = (fixture.stage(), &fixture.costs);
    let ranked = [
        "mail_send",
        "mail_search",
        "calendar_add",
        "weather_forecast",
    ];
    let needed = names(&["weather_forecast"]);
    let play =
        |agent, placement| stage.search_tools("forecast", &needed, &ranked, 1, agent, placement);
    let oracle = play(Agent::Oracle, Placement::Conversation);
    assert!(oracle.done);
    assert_eq!(oracle.rounds.len(), 2);
    assert_eq!(oracle.system, 0, "no listing");
    let listing = play(Agent::Listing, Placement::Conversation);
    assert!(!listing.done, "the fourth page is never read");
    assert_eq!(listing.rounds.len(), MAX_ROUNDS);
    let listed = play(Agent::Oracle, Placement::ToolList);
    assert_eq!(listed.rounds[1].listed, costs.tool("weather_forecast"));
    assert!(oracle.rounds[1].messages > listed.rounds[1].messages);
}

/// What a router showed goes in the tool list, or in a message after the
/// request when the routed schemas go in the conversation too.
#[test]
fn a_routed_showing_goes_where_the_placement_says() {
    let fixture = Fixture::new();
    let stage = fixture.stage();
    let start = Start {
        visible: HashSet::from(["mail_send".to_owned()]),
        tokens: 40,
        ..Start::default()
    };
    let play = |placement| {
        stage.load_groups(
            "send a mail",
            &names(&["mail_send"]),
            start.clone(),
            Agent::Oracle,
            placement,
            Loads::Tools,
        )
    };
    for placement in [Placement::ToolList, Placement::Conversation] {
        let episode = play(placement);
        assert_eq!((episode.task_tools, episode.routed_message), (40, 0));
    }
    let episode = play(Placement::ConversationRouted);
    assert_eq!((episode.task_tools, episode.routed_message), (0, 40));
}

/// The listing agent reads what the listing's form shows: a description's
/// words in the lines, the names alone in the names form, and in the search
/// form only the largest groups' names.
#[test]
fn the_listing_agent_reads_only_what_the_form_shows() {
    let fixture = Fixture::new();
    let needed = names(&["weather_forecast"]);
    let play = |form: ListingForm| {
        let stage = fixture.stage().in_form(form);
        let episode = stage.load_groups(
            "temperatures in Oslo",
            &needed,
            Start::default(),
            Agent::Listing,
            Placement::Conversation,
            Loads::Tools,
        );
        (stage.listing, episode.rounds.len(), episode.done)
    };
    let (lines, lines_rounds, lines_done) = play(ListingForm::Lines);
    let (names_tokens, names_rounds, names_done) = play(ListingForm::Names);
    // "temperatures" is in weather's line: found in one round trip.
    assert_eq!((lines_rounds, lines_done), (1, true));
    // The names say nothing of it: the agent tries calendar and mail first.
    assert_eq!((names_rounds, names_done), (2, true));
    assert!(names_tokens < lines, "{names_tokens} < {lines}");
    let stage = fixture.stage().in_form(ListingForm::Search);
    assert!(stage.listing > 0);
}

/// The oracle names the missing tools: a group's others stay out, and a
/// group whose every tool is named loads whole.
#[test]
fn the_oracle_loads_exactly_the_missing_tools_by_name() {
    let fixture = Fixture::new();
    let (stage, costs) = (fixture.stage(), &fixture.costs);
    let needed = names(&["mail_send", "weather_forecast"]);
    let play = |placement, loads| {
        stage.load_groups(
            "mail Oslo's forecast to Bob",
            &needed,
            Start::default(),
            Agent::Oracle,
            placement,
            loads,
        )
    };
    let named = play(Placement::ToolList, Loads::Tools);
    assert!(named.done);
    assert_eq!(named.rounds.len(), 1);
    let schemas = costs.tool("mail_send") + costs.tool("weather_forecast");
    assert_eq!(named.rounds[0].listed, schemas);
    let whole = play(Placement::ToolList, Loads::Groups);
    assert!(named.rounds[0].listed < whole.rounds[0].listed);
    // The call names the tools and the answer lists one of mail's two.
    let partial = "Loaded 1 of 2 tools from group 'mail' (load_tool_group 'mail' loads the other 1):\n- mail_send: Send an email";
    let call = r#"{"group_name":"mail","tools":["mail_send"]}"#;
    let weather = stage.load_tokens[2];
    let count = |text: &str| fixture.counter.count(text);
    assert_eq!(
        named.rounds[0].messages,
        count("load_tool_group") + count(call) + count(partial) + weather
    );
    let in_conversation = play(Placement::Conversation, Loads::Tools);
    assert_eq!(in_conversation.rounds[0].listed, 0);
    assert_eq!(
        in_conversation.rounds[0].messages,
        named.rounds[0].messages + schemas
    );
}

/// Tools a search named and did not load are loaded by name first; the
/// rest of their group only when they were not the ones needed.
#[test]
fn the_listing_agent_loads_the_tools_it_has_read_before_their_group() {
    let fixture = Fixture::new();
    let (stage, costs) = (fixture.stage(), &fixture.costs);
    let start = Start {
        named: vec![GroupId::new("mail").unwrap()],
        read: names(&["mail_search"]),
        ..Start::default()
    };
    let play = |needed: &[&str], loads| {
        stage.load_groups(
            "look through my inbox",
            &names(needed),
            start.clone(),
            Agent::Listing,
            Placement::ToolList,
            loads,
        )
    };
    let found = play(&["mail_search"], Loads::Tools);
    assert!(found.done);
    assert_eq!(found.rounds.len(), 1);
    assert_eq!(found.rounds[0].listed, costs.tool("mail_search"));
    // The tool read was not the one: the rest of mail comes next (beside
    // the best other group, two groups a round trip), mail_search not
    // listed again.
    let missed = play(&["mail_send"], Loads::Tools);
    assert!(missed.done);
    assert_eq!(missed.rounds.len(), 2);
    let other = missed.rounds[1].listed - costs.tool("mail_send");
    assert!(
        [costs.tool("calendar_add"), costs.tool("weather_forecast")].contains(&other),
        "{other}"
    );
    // Loading whole groups only, the group comes at once (with the best
    // other).
    let whole = play(&["mail_send"], Loads::Groups);
    assert_eq!(whole.rounds.len(), 1);
    let mail = costs.group(&GroupId::new("mail").unwrap());
    assert!(whole.rounds[0].listed > mail, "{:?}", whole.rounds);
}

/// A search that ranks tools across groups is asked again (its next page)
/// before a group is loaded whole.
#[test]
fn the_listing_agent_asks_a_search_again_before_loading_a_group() {
    let fixture = Fixture::new();
    let (stage, costs) = (fixture.stage(), &fixture.costs);
    let start = Start {
        visible: HashSet::from(["mail_send".to_owned()]),
        read: names(&["mail_send"]),
        named: vec![GroupId::new("mail").unwrap()],
        pages: vec![Page {
            tools: names(&["weather_forecast"]),
            groups: vec![GroupId::new("weather").unwrap()],
            tokens: 30,
        }],
        ..Start::default()
    };
    let play = |loads| {
        stage.load_groups(
            "send the forecast",
            &names(&["weather_forecast"]),
            start.clone(),
            Agent::Listing,
            Placement::ToolList,
            loads,
        )
    };
    let paged = play(Loads::Tools);
    assert!(paged.done);
    assert_eq!(paged.rounds.len(), 1);
    assert_eq!(
        (paged.rounds[0].listed, paged.rounds[0].messages),
        (costs.tool("weather_forecast"), 30)
    );
    let whole = play(Loads::Groups);
    assert_ne!(whole.rounds[0].messages, 30, "a load, not the page");
}

/// A search made before the agent chooses counts against its round trips,
/// as a tool search's pages do.
#[test]
fn a_search_counts_against_the_listing_agents_round_trips() {
    let fixture = Fixture::new();
    let stage = fixture.stage();
    let searched = |rounds: usize| Start {
        rounds: vec![Round::default(); rounds],
        ..Start::default()
    };
    let play = |start: Start| {
        stage.load_groups(
            "nothing in common",
            &names(&["weather_forecast"]),
            start,
            Agent::Listing,
            Placement::ToolList,
            Loads::Tools,
        )
    };
    // Two groups a round trip in catalog order: weather comes in the second.
    assert!(play(searched(1)).done);
    let late = play(searched(2));
    assert!(!late.done, "{:?}", late.rounds);
    assert_eq!(late.rounds.len(), MAX_ROUNDS);
}

/// The oracle skips the search a policy begins with where it may load by
/// name: it knows the names, so one load is its cheapest step. Loading
/// whole groups only, it plays the search as the policy begins it.
#[test]
fn the_oracle_loads_by_name_without_the_search_a_policy_begins_with() {
    let fixture = Fixture::new();
    let (stage, costs) = (fixture.stage(), &fixture.costs);
    let searched = Start {
        visible: HashSet::from(["mail_search".to_owned()]),
        read: names(&["mail_search"]),
        named: vec![GroupId::new("mail").unwrap()],
        rounds: vec![Round {
            listed: costs.tool("mail_search"),
            messages: 40,
        }],
        ..Start::default()
    };
    let play = |loads| {
        stage.load_groups(
            "send the forecast",
            &names(&["weather_forecast"]),
            searched.clone(),
            Agent::Oracle,
            Placement::ToolList,
            loads,
        )
    };
    let named = play(Loads::Tools);
    assert!(named.done);
    assert_eq!(named.rounds.len(), 1, "{:?}", named.rounds);
    assert_eq!(named.rounds[0].listed, costs.tool("weather_forecast"));
    let whole = play(Loads::Groups);
    assert_eq!(whole.rounds.len(), 2, "the search, then the group");
    assert_eq!(whole.rounds[0].messages, 40);
}
