use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::group::ToolGroup;
use crate::origin::Origin;
use crate::routing::budget::ToolCosts;
use crate::routing::config::RoutingConfig;
use crate::routing::decision::{Tier, Visible};
use crate::routing::router::Router;
use crate::routing::scorer::ToolScore;
use crate::routing::self_test::{ProbeNeeds, probe_tools};
use crate::tokens::{Encoding, TokenCounter};
use crate::tool::ToolDefinition;

fn group(name: &str) -> GroupId {
    GroupId::new(name).unwrap()
}

fn tool(name: &str) -> ToolName {
    ToolName::new(name).unwrap()
}

/// A tool's name, description and required parameters.
type ToolSpec<'a> = (&'a str, &'a str, &'a [&'a str]);

/// A tool's name, description and input schema.
type ToolSchema<'a> = (&'a str, &'a str, serde_json::Value);

/// A movie catalog where `person_credits` needs a person id that only the
/// search group's `search_person` finds. No description shares a word with
/// another group's but `actor`, the search group's one hint.
fn catalog() -> Catalog {
    let groups: [(&str, &[ToolSpec]); 3] = [
        (
            "search",
            &[
                ("search_person", "Looks people up by name", &["query"]),
                (
                    "search_person_keyword",
                    "Looks people up by tag or actor",
                    &["query"],
                ),
                ("listMovies", "Pages through the catalogue", &[]),
            ],
        ),
        (
            "person",
            &[
                ("person_credits", "Filmography credits", &["person_id"]),
                ("person_images", "Portrait photographs", &["id"]),
                ("person_search", "Biography", &["person_id"]),
            ],
        ),
        (
            "movie",
            &[("movie_details", "Runtime and budget", &["movieId"])],
        ),
    ];
    let groups = groups.map(|(id, tools)| {
        let tools = tools
            .iter()
            .map(|(name, description, required)| {
                let properties: serde_json::Map<String, serde_json::Value> = required
                    .iter()
                    .map(|p| ((*p).to_owned(), json!({"type": "string"})))
                    .collect();
                let schema =
                    json!({"type": "object", "properties": properties, "required": required});
                (*name, *description, schema)
            })
            .collect();
        (id, tools)
    });
    catalog_of("movies", groups)
}

/// A catalog of `groups` in `domain`, each a group id and its tools' names,
/// descriptions and input schemas.
fn catalog_of<const N: usize>(domain: &str, groups: [(&str, Vec<ToolSchema>); N]) -> Catalog {
    let mut catalog = Catalog::new();
    for (id, tools) in groups {
        let tools = tools
            .into_iter()
            .map(|(name, description, schema)| {
                let definition = ToolDefinition::new(tool(name), description, schema).unwrap();
                (definition, Origin::Builtin)
            })
            .collect();
        catalog
            .register_group_with_tools(
                ToolGroup::new(group(id), id, domain),
                Origin::Builtin,
                tools,
            )
            .unwrap();
    }
    catalog
}

#[test]
fn a_required_id_needs_the_most_specific_finder_of_another_group() {
    let finders = IdFinders::new(&catalog());
    let needed = |g: &str| -> Vec<(String, String, String)> {
        finders
            .needed_by(&group(g), None)
            .map(|f| {
                (
                    f.needed_by.to_string(),
                    f.group.to_string(),
                    f.tool.to_string(),
                )
            })
            .collect()
    };
    // `person_search` is in the person group itself, so it does not count;
    // of the search group's two, the shorter name is the more specific. A
    // bare `id` names nothing.
    assert_eq!(
        needed("person"),
        [
            (
                "person_credits".into(),
                "search".into(),
                "search_person".into()
            ),
            (
                "person_search".into(),
                "search".into(),
                "search_person".into()
            ),
        ]
    );
    // `movieId` names movies, which `listMovies` lists.
    assert_eq!(
        needed("movie"),
        [("movie_details".into(), "search".into(), "listMovies".into())]
    );
    assert!(needed("search").is_empty());
    assert_eq!(finders.len(), 3);
    // Shown partly, a group needs its shown tools' finders only.
    let images = [tool("person_images")];
    assert_eq!(
        finders.needed_by(&group("person"), Some(&images)).count(),
        0
    );
}

#[test]
fn parameters_name_what_their_id_finds() {
    assert_eq!(named_entity("person_id").as_deref(), Some("person"));
    assert_eq!(named_entity("movieId").as_deref(), Some("movie"));
    assert_eq!(named_entity("tv_show_id").as_deref(), Some("tvshow"));
    assert_eq!(named_entity("track_ids").as_deref(), Some("track"));
    assert_eq!(named_entity("trackIds").as_deref(), Some("track"));
    assert_eq!(named_entity("id"), None);
    assert_eq!(named_entity("identity"), None);
    // Words too common to name anything.
    assert_eq!(named_entity("is_id"), None);
    assert_eq!(named_entity("from_id"), None);
}

#[test]
fn a_bare_id_names_what_its_title_says() {
    let schema = |title: serde_json::Value| {
        json!({"properties": {"id": {"type": "string", "title": title}}})
            .as_object()
            .cloned()
            .unwrap()
    };
    let entity = |title| parameter_entity(&schema(title), "id");
    assert_eq!(entity(json!("Spotify Album ID")).as_deref(), Some("album"));
    assert_eq!(entity(json!("Spotify Track IDs")).as_deref(), Some("track"));
    assert_eq!(entity(json!("ID")), None);
    assert_eq!(entity(json!("Album")), None);
    assert_eq!(entity(json!("The ID")), None);
    assert_eq!(entity(json!(7)), None);
    // A parameter's own name comes first, and a title only names a bare id.
    assert_eq!(
        parameter_entity(&schema(json!("Album ID")), "person_id").as_deref(),
        Some("person")
    );
    let titled_query = json!({"properties": {"q": {"title": "Album ID"}}});
    assert_eq!(
        parameter_entity(titled_query.as_object().unwrap(), "q"),
        None
    );
}

/// A music catalog in Spotify's shape: `get_album` requires a bare `id`
/// titled "Spotify Album ID"; the search group's `search_all` names nothing
/// but finding, and only its description says what it finds; the maps
/// group's `find_places`, first in catalog order and as short, names what
/// it finds (places) and mentions albums too; the library's
/// `list_saved_albums` names albums but is `get_album`'s own group.
fn music() -> Catalog {
    let groups: [(&str, &[ToolSchema]); 4] = [
        (
            "maps",
            &[(
                "find_places",
                "Places near an address, with their photo albums",
                json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
            )],
        ),
        (
            "search",
            &[(
                "search_all",
                "Catalog information about albums, artists or tracks that match a keyword. \
                 Not shows: see ClinicalTrials.gov for those.",
                json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
            )],
        ),
        (
            "albums",
            &[
                (
                    "get_album",
                    "One album",
                    json!({"type": "object",
                        "properties": {"id": {"type": "string", "title": "Spotify Album ID"}},
                        "required": ["id"]}),
                ),
                (
                    "list_saved_albums",
                    "Albums in the library",
                    json!({"type": "object", "properties": {}}),
                ),
            ],
        ),
        (
            "player",
            &[
                (
                    "play_show",
                    "Plays an episode",
                    json!({"type": "object",
                        "properties": {"id": {"type": "string", "title": "Show ID"}},
                        "required": ["id"]}),
                ),
                (
                    "like_track",
                    "Likes a track",
                    json!({"type": "object",
                        "properties": {"is_id": {"type": "string"}},
                        "required": ["is_id"]}),
                ),
            ],
        ),
    ];
    catalog_of("music", groups.map(|(id, tools)| (id, tools.to_vec())))
}

#[test]
fn a_finder_that_names_only_finding_serves_by_its_first_sentence() {
    let finders = IdFinders::new(&music());
    let needed: Vec<(String, String)> = finders
        .needed_by(&group("albums"), None)
        .map(|f| (f.needed_by.to_string(), f.tool.to_string()))
        .collect();
    // Not `find_places`: a finder whose name says what it finds finds that.
    assert_eq!(needed, [("get_album".into(), "search_all".into())]);
    // Shows are named after the first sentence only, and `is_id` names
    // nothing.
    assert_eq!(finders.needed_by(&group("player"), None).count(), 0);
    assert_eq!(finders.len(), 1);
}

#[test]
fn a_description_says_what_a_tool_does_in_its_first_sentence() {
    assert_eq!(first_sentence("Finds albums. Not shows."), "Finds albums");
    assert_eq!(first_sentence("Finds albums.\nNot shows"), "Finds albums");
    assert_eq!(
        first_sentence("Finds albums.<br />Not shows"),
        "Finds albums"
    );
    assert_eq!(
        first_sentence("Trials from ClinicalTrials.gov and v1.2"),
        "Trials from ClinicalTrials.gov and v1.2"
    );
    assert_eq!(first_sentence("Finds albums."), "Finds albums");
    assert_eq!(first_sentence(""), "");
}

fn router(catalog: &Catalog, share: Option<f64>, finders: bool) -> Router {
    let config = RoutingConfig {
        route_above: Some(0.5),
        tools_per_group: Some(1),
        max_token_share: share,
        ..RoutingConfig::default()
    };
    let router = Router::lexical(catalog, config.validate(catalog).unwrap()).counted(catalog);
    if finders {
        router.with_id_finders(Arc::new(IdFinders::new(catalog)))
    } else {
        router
    }
}

#[test]
fn a_routed_tool_arrives_with_the_finder_of_its_id() {
    let catalog = catalog();
    let turn = "the filmography credits of this actor";
    let without = router(&catalog, None, false).route(turn, &[]);
    let with = router(&catalog, None, true).route(turn, &[]);
    assert_eq!(with.routed, [group("person")]);
    assert_eq!(without.routed, with.routed);
    assert!(without.finders.is_empty());
    assert!(!without.relies_on(&group("search")));

    assert_eq!(
        with.finders,
        [IdFinder {
            group: group("search"),
            tool: tool("search_person"),
            needed_by: tool("person_credits"),
        }]
    );
    assert!(with.relies_on(&group("search")));
    assert_ne!(with.tier, Tier::Low);
    assert_eq!(
        with.visible,
        Visible::Groups(vec![group("person"), group("search")])
    );
    // The search group arrives with its finder only, not its best tools.
    let partial: Vec<(String, Vec<String>)> = with
        .partial
        .iter()
        .map(|p| {
            (
                p.group.to_string(),
                p.tools.iter().map(|t| t.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(
        partial,
        [
            ("person".into(), vec!["person_credits".into()]),
            ("search".into(), vec!["search_person".into()]),
        ]
    );
    // Held, the finder's group raises the chance that nothing is missing.
    assert!(with.confidence > without.confidence, "{with:?}");
}

fn costs(catalog: &Catalog) -> ToolCosts {
    ToolCosts::measure(catalog, &TokenCounter::new(Encoding::O200kBase).unwrap())
}

#[test]
fn a_finder_is_shown_only_while_the_budget_affords_it() {
    let catalog = catalog();
    let costs = costs(&catalog);
    let turn = "the filmography credits of this actor";
    let unbounded = router(&catalog, None, true).route(turn, &[]);
    let shown = costs.shown(&unbounded.routed, &unbounded.partial);
    let finder = costs.tool("search_person");
    let all = costs.all_tools() as f64;
    // The routed tools and the finder fit, with a quarter token to spare:
    // it is shown.
    let room = (shown + finder) as f64 + 0.25;
    let exact = router(&catalog, Some(room / all), true).route(turn, &[]);
    assert_eq!(exact.routed, unbounded.routed);
    assert_eq!(exact.finders.len(), 1, "{exact:?}");
    // Half a token short: it is not, and nothing of its group is shown.
    let short = (shown + finder) as f64 - 0.5;
    let under = router(&catalog, Some(short / all), true).route(turn, &[]);
    assert_eq!(under.routed, unbounded.routed);
    assert!(under.finders.is_empty(), "{under:?}");
    assert!(!under.relies_on(&group("search")));
    assert_eq!(under.visible, Visible::Groups(vec![group("person")]));
}

#[test]
fn a_routed_tools_finder_is_afforded_before_a_group_below_it() {
    let catalog = catalog();
    let costs = costs(&catalog);
    // Both the person and the movie group are routed, the person group first.
    let turn = "filmography credits, then the runtime and budget";
    let unbounded = router(&catalog, None, true).route(turn, &[]);
    assert_eq!(unbounded.routed, [group("person"), group("movie")]);
    // Room for the person group's tool and one more as costly as its finder
    // or the movie group's tool, whichever costs more.
    let (credits, finder, details) = (
        costs.tool("person_credits"),
        costs.tool("search_person"),
        costs.tool("movie_details"),
    );
    let room = (costs.fixed() + credits + finder.max(details)) as f64 + 0.25;
    let share = Some(room / costs.all_tools() as f64);
    // Without finders the movie group fits beside the person group.
    let plain = router(&catalog, share, false).route(turn, &[]);
    assert_eq!(plain.routed, unbounded.routed);
    // With them, the tool that finds the person id the routed tool requires
    // comes first: the movie group, and the finder its tool would need,
    // no longer fit, and it is passed over.
    let bounded = router(&catalog, share, true).route(turn, &[]);
    assert_eq!(bounded.routed, [group("person")], "{bounded:?}");
    assert_eq!(bounded.passed_over, [group("movie")]);
    let shown: Vec<&str> = bounded.finders.iter().map(|f| f.tool.as_str()).collect();
    assert_eq!(shown, ["search_person"]);
    assert!(costs.shown(&[group("person"), group("search")], &bounded.partial) as f64 <= room);
}

#[test]
fn a_finder_is_counted_once_against_the_budget() {
    let catalog = catalog();
    let costs = costs(&catalog);
    let finders = IdFinders::new(&catalog);
    let ranked = [(group("person"), 0.6), (group("search"), 0.3)];
    // The search group's best tool is the finder the person group's needs.
    let tools = [
        ToolScore {
            tool: tool("person_credits"),
            group: group("person"),
            score: 2.0,
        },
        ToolScore {
            tool: tool("search_person"),
            group: group("search"),
            score: 1.0,
        },
    ];
    let exact = costs.fixed() + costs.tool("person_credits") + costs.tool("search_person");
    let share = (exact as f64 + 0.25) / costs.all_tools() as f64;
    // Counted with the person group, the finder costs its own group nothing.
    let partly = costs.affordable(&ranked, share, Some(1), &tools, &[], Some(&finders));
    assert_eq!(partly, [0, 1]);
    // Shown whole, the search group costs its other tools only.
    let whole = costs.affordable(&ranked, share, Some(1), &tools[..1], &[], Some(&finders));
    assert_eq!(whole, [0]);
    let rest = costs.group(&group("search")) - costs.tool("search_person");
    let share = ((exact + rest) as f64 + 0.25) / costs.all_tools() as f64;
    let whole = costs.affordable(&ranked, share, Some(1), &tools[..1], &[], Some(&finders));
    assert_eq!(whole, [0, 1]);
}

#[test]
fn a_probe_from_a_tool_that_requires_an_id_needs_its_finder() {
    let catalog = catalog();
    let names: Vec<ToolName> = catalog.tools().map(|t| t.definition.name.clone()).collect();
    let probes = probe_tools(&catalog, &names, &IdFinders::new(&catalog));
    let needs = |name: &str| {
        probes
            .iter()
            .find(|(index, _, _)| names[*index].as_str() == name)
            .map(|(_, _, needs)| needs.clone())
            .unwrap()
    };
    // The person credits need the search group beside their own; the
    // images require a bare id, which names nothing. The movie group has
    // one tool, so none of its tools is a probe.
    let credits = needs("person_credits");
    assert_eq!(credits.group, group("person"));
    assert_eq!(credits.finders, [group("search")]);
    assert!(needs("person_images").finders.is_empty());
    assert_eq!(probes.len(), 6);

    let turn = "the filmography credits of this actor";
    let without = router(&catalog, None, false).route(turn, &[]);
    let with = router(&catalog, None, true).route(turn, &[]);
    // Routed alone, the person group holds a probe asking for it only.
    assert!(!credits.held_by(&without), "{without:?}");
    assert!(credits.held_by(&with), "{with:?}");
    let alone = ProbeNeeds {
        finders: Vec::new(),
        ..credits
    };
    assert!(alone.held_by(&without));
}
