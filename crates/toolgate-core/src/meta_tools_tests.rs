use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::active_set::GroupSelection;
use crate::group::ToolGroup;
use crate::loaded_schemas::LoadedSchemas;
use crate::name::{GroupId, ToolName};
use crate::origin::Origin;
use crate::routing::{DEFAULT_SEARCH_RESULTS, RoutingConfig};

fn catalog() -> Catalog {
    let mut catalog = Catalog::new();
    for (id, display, tools) in [
        ("time", "Time", ["get_current_time", "convert_time"]),
        ("files", "Files", ["files_read", "files_list"]),
    ] {
        let tools = tools
            .iter()
            .map(|name| {
                let tool = ToolDefinition::new(
                    ToolName::new(*name).unwrap(),
                    format!("{name} does it"),
                    json!({}),
                )
                .unwrap();
                (tool, Origin::Builtin)
            })
            .collect();
        let group = ToolGroup::new(
            GroupId::new(id).unwrap(),
            display,
            format!("{display} tools"),
        );
        catalog
            .register_group_with_tools(group, Origin::Builtin, tools)
            .unwrap();
    }
    catalog
}

fn all() -> MetaTools {
    MetaTools::new(MetaTool::ALL).with_taxonomy(Taxonomy::default())
}

/// The taxonomy of a search that ranks groups (`[routing] search = "groups"`).
fn ranking_groups() -> RoutingConfig {
    RoutingConfig {
        search: Some(SearchRanks::Groups),
        ..RoutingConfig::default()
    }
}

fn answer_text(
    meta: &MetaTools,
    name: &str,
    arguments: Value,
    active: &mut ActiveToolSet,
) -> String {
    let catalog = catalog();
    let answer = meta
        .parse(name, &arguments)
        .expect("a meta-tool")
        .and_then(|call| meta.answer(&call, Some(active), &catalog));
    match answer {
        Ok(MetaAnswer::Loaded(loaded)) => loaded.to_string(),
        Ok(MetaAnswer::PartlyLoaded(loaded)) => loaded.to_string(),
        Ok(MetaAnswer::LoadedInstead { loaded, unknown }) => format!(
            "{}\n{loaded}",
            crate::NotInGroup {
                group: &loaded.group.display_name,
                unknown: &unknown,
            }
        ),
        Ok(MetaAnswer::Unloaded(unloaded)) => unloaded.to_string(),
        Ok(MetaAnswer::Found(found)) => found.to_string(),
        Ok(MetaAnswer::Call { tool, arguments }) => format!("call {tool} {arguments}"),
        Err(error) => format!("error {}: {error}", error.kind()),
    }
}

#[test]
fn only_offered_meta_tools_are_recognized() {
    let meta = MetaTools::new([MetaTool::UnloadToolGroup]);
    assert_eq!(
        meta.recognize("load_tool_group"),
        Some(MetaTool::LoadToolGroup)
    );
    assert_eq!(
        meta.recognize("unload_tool_group"),
        Some(MetaTool::UnloadToolGroup)
    );
    assert_eq!(meta.recognize("call_tool"), None);
    assert_eq!(meta.recognize("get_current_time"), None);
    let names: Vec<String> = meta
        .extra_definitions()
        .iter()
        .map(|d| d.name.to_string())
        .collect();
    assert_eq!(names, ["unload_tool_group"]);
}

#[test]
fn find_tool_groups_needs_a_taxonomy() {
    let without = MetaTools::new(MetaTool::ALL);
    assert_eq!(without.recognize("find_tool_groups"), None);
    assert_eq!(
        all().recognize("find_tool_groups"),
        Some(MetaTool::FindToolGroups)
    );
}

#[test]
fn load_then_unload_answers_the_contract_texts() {
    let meta = all();
    let mut active = ActiveToolSet::new();
    assert_eq!(
        answer_text(
            &meta,
            "load_tool_group",
            json!({"group_name": "time"}),
            &mut active
        ),
        "Loaded 2 tools from group 'Time':\n- get_current_time: get_current_time does it\n- convert_time: convert_time does it"
    );
    assert_eq!(active.loaded_groups(), [GroupId::new("time").unwrap()]);
    assert_eq!(
        answer_text(
            &meta,
            "unload_tool_group",
            json!({"group_name": "time"}),
            &mut active
        ),
        "Unloaded tool group 'Time'."
    );
    assert_eq!(
        answer_text(
            &meta,
            "unload_tool_group",
            json!({"group_name": "time"}),
            &mut active
        ),
        "error not_loaded: Tool group 'time' is not loaded. Loaded groups: none"
    );
    assert_eq!(
        answer_text(
            &meta,
            "load_tool_group",
            json!({"group_name": "tme"}),
            &mut active
        ),
        "error not_found: Tool group 'tme' not found. Available groups: time, files. Did you mean 'time'?"
    );
}

#[test]
fn a_caller_without_a_session_loads_nothing_that_lasts_and_unloads_nothing() {
    let meta = all();
    let catalog = catalog();
    let load = MetaCall::Load {
        group: "files".to_owned(),
        tools: None,
    };
    let Ok(MetaAnswer::Loaded(loaded)) = meta.answer(&load, None, &catalog) else {
        panic!("a stateless load answers with the group");
    };
    assert!(loaded.newly_loaded);
    let unload = MetaCall::Unload {
        group: "files".to_owned(),
    };
    assert_eq!(
        meta.answer(&unload, None, &catalog)
            .unwrap_err()
            .to_string(),
        "Tool group 'files' is not loaded: requests without a session load nothing."
    );
}

#[test]
fn call_tool_hands_back_the_tool_and_its_arguments() {
    let meta = all();
    let mut active = ActiveToolSet::new();
    assert_eq!(
        answer_text(
            &meta,
            "call_tool",
            json!({"name": "files_read", "arguments": {"path": "a"}}),
            &mut active
        ),
        r#"call files_read {"path":"a"}"#
    );
}

#[test]
fn find_tool_groups_ranks_the_groups_for_a_request() {
    let meta =
        MetaTools::new(MetaTool::ALL).with_taxonomy(ranking_groups().validate(&catalog()).unwrap());
    let mut active = ActiveToolSet::new();
    let text = answer_text(
        &meta,
        "find_tool_groups",
        json!({"query": "what is the current time"}),
        &mut active,
    );
    assert!(
        text.starts_with("Groups for this request, most likely first (high confidence"),
        "{text}"
    );
    assert!(text.contains("\n- time ("), "{text}");
    assert_eq!(
        answer_text(
            &meta,
            "find_tool_groups",
            json!({"query": "zzz qqq"}),
            &mut active
        ),
        "No group matches this request: search again in other words, or see \
         load_tool_group's list."
    );
    assert_eq!(
        answer_text(&meta, "find_tool_groups", json!({}), &mut active),
        "error missing_parameter: Required parameter 'query' is missing."
    );
}

/// The groups a `find_tool_groups` answer under `taxonomy` lists for
/// `query`, each with the tools it lists.
fn found(taxonomy: Taxonomy, query: &str) -> Vec<(String, Vec<String>)> {
    let catalog = catalog();
    let meta = MetaTools::new([MetaTool::FindToolGroups]).with_taxonomy(taxonomy);
    let call = meta
        .parse("find_tool_groups", &json!({ "query": query }))
        .expect("offered")
        .expect("a query");
    let Ok(MetaAnswer::Found(found)) = meta.answer(&call, None, &catalog) else {
        panic!("find_tool_groups answers a ranking");
    };
    found
        .groups
        .iter()
        .map(|g| {
            let tools = g.tools.iter().map(|t| t.name.to_string()).collect();
            (g.group.id.to_string(), tools)
        })
        .collect()
}

#[test]
fn find_tool_groups_lists_as_many_groups_and_tools_as_configured() {
    let query = "read the files, list the files, convert the current time";
    let shipped = found(ranking_groups().validate(&catalog()).unwrap(), query);
    assert_eq!(shipped.len(), 2, "{shipped:?}");
    assert!(
        shipped.iter().all(|(_, tools)| tools.len() == 2),
        "{shipped:?}"
    );

    let narrow = RoutingConfig {
        search_groups: Some(1),
        search_tools: Some(1),
        ..ranking_groups()
    };
    let narrow = found(narrow.validate(&catalog()).unwrap(), query);
    assert_eq!(narrow.len(), 1, "{narrow:?}");
    assert_eq!(narrow[0].1.len(), 1, "{narrow:?}");
    assert_eq!(
        narrow[0].1[0], shipped[0].1[0],
        "the best tool of the best group"
    );

    let groups_alone = RoutingConfig {
        search_tools: Some(0),
        ..ranking_groups()
    };
    let groups_alone = found(groups_alone.validate(&catalog()).unwrap(), query);
    assert_eq!(groups_alone.len(), 2);
    assert!(groups_alone.iter().all(|(_, tools)| tools.is_empty()));
}

#[test]
fn search_settings_out_of_range_name_the_setting() {
    for (config, expected) in [
        (
            RoutingConfig {
                search_groups: Some(0),
                ..RoutingConfig::default()
            },
            "[routing]: search_groups must be at least 1",
        ),
        (
            RoutingConfig {
                search_tools: Some(11),
                ..RoutingConfig::default()
            },
            "[routing]: search_tools must be at most 10, not 11 (0 lists the groups alone)",
        ),
        (
            RoutingConfig {
                search_results: Some(0),
                ..RoutingConfig::default()
            },
            "[routing]: search_results must be 1 to 50, not 0",
        ),
        (
            RoutingConfig {
                search_results: Some(51),
                ..RoutingConfig::default()
            },
            "[routing]: search_results must be 1 to 50, not 51",
        ),
    ] {
        let error = config.validate(&catalog()).unwrap_err();
        assert_eq!(error.to_string(), expected);
    }
}

#[test]
fn find_reuses_its_router_until_the_catalog_changes() {
    let mut catalog = catalog();
    let meta = MetaTools::new([MetaTool::FindToolGroups]).with_taxonomy(Taxonomy::default());
    let first = meta.router(&catalog);
    assert!(Arc::ptr_eq(&first, &meta.router(&catalog)));
    let copy = meta.clone();
    assert!(
        Arc::ptr_eq(&first, &copy.router(&catalog)),
        "clones share it"
    );
    let extra = ToolGroup::new(GroupId::new("extra").unwrap(), "Extra", "More");
    catalog.register_group(extra, Origin::Builtin).unwrap();
    assert!(!Arc::ptr_eq(&first, &meta.router(&catalog)));
}

/// A model that has the tools' vectors only from the second time it is
/// asked, as one embedding them in the background does.
#[derive(Debug, Default)]
struct Warming {
    asked: Mutex<usize>,
}

impl crate::routing::Embeddings for Warming {
    fn embed_texts(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        let mut asked = self.asked.lock().unwrap();
        *asked += 1;
        (*asked > 1).then(|| texts.iter().map(|_| vec![1.0, 0.0]).collect())
    }

    fn embed_query(&self, _text: &str) -> Option<Vec<f32>> {
        Some(vec![1.0, 0.0])
    }
}

#[test]
fn find_routes_lexically_until_the_tools_vectors_are_ready_then_semantically() {
    let catalog = catalog();
    let warming = Arc::new(Warming::default());
    let meta = MetaTools::new([MetaTool::FindToolGroups])
        .with_taxonomy(Taxonomy::default())
        .with_embeddings(warming.clone());
    let first = meta.router(&catalog);
    assert!(!first.is_semantic(), "no vectors yet: lexical, not blocked");
    let second = meta.router(&catalog);
    assert!(second.is_semantic());
    assert!(
        Arc::ptr_eq(&second, &meta.router(&catalog)),
        "kept once ready"
    );
    assert_eq!(*warming.asked.lock().unwrap(), 2);
}

#[test]
fn find_tool_groups_lists_the_tool_that_finds_a_listed_tools_id() {
    let mut catalog = Catalog::new();
    for (id, name, description, required) in [
        (
            "person",
            "person_credits",
            "Filmography credits",
            "person_id",
        ),
        (
            "search",
            "search_person",
            "Looks people up by name",
            "query",
        ),
    ] {
        let schema = json!({"type": "object", "properties": {required: {"type": "string"}},
                            "required": [required]});
        let tool = ToolDefinition::new(ToolName::new(name).unwrap(), description, schema).unwrap();
        catalog
            .register_group_with_tools(
                ToolGroup::new(GroupId::new(id).unwrap(), id, format!("{id} tools")),
                Origin::Builtin,
                vec![(tool, Origin::Builtin)],
            )
            .unwrap();
    }
    let found = |id_finders: Option<bool>| {
        let config = crate::routing::RoutingConfig {
            id_finders,
            ..Default::default()
        };
        let meta = MetaTools::new([MetaTool::FindToolGroups])
            .with_taxonomy(config.validate(&catalog).unwrap());
        let call = meta
            .parse(
                "find_tool_groups",
                &json!({"query": "the filmography credits"}),
            )
            .unwrap()
            .unwrap();
        match meta.answer(&call, None, &catalog).unwrap() {
            MetaAnswer::Found(found) => (found.to_string(), found.to_json()),
            other => panic!("{other:?}"),
        }
    };
    let line =
        "\n  - search_person: Looks people up by name (finds the id person_credits requires)";
    let (text, json) = found(None);
    assert!(text.contains("\n- person ("), "{text}");
    assert!(text.ends_with(line), "{text}");
    let groups = json["groups"].as_array().unwrap();
    assert_eq!(groups.last().unwrap()["group"], "search", "{json}");
    assert_eq!(
        groups.last().unwrap()["finders"],
        json!([{"name": "search_person", "description": "Looks people up by name",
                "needed_by": "person_credits"}])
    );
    let (text, _) = found(Some(false));
    assert!(!text.contains("finds the id"), "{text}");
}

#[test]
fn find_tool_groups_lists_the_groups_the_router_routes() {
    // Both groups match; the files group scores well below the time group.
    let query = "convert the current time zone of a time and read the files";
    let listed = |route_above: f64| {
        let config = RoutingConfig {
            route_above: Some(route_above),
            ..ranking_groups()
        };
        found(config.validate(&catalog()).unwrap(), query)
            .into_iter()
            .map(|(group, _)| group)
            .collect::<Vec<_>>()
    };
    assert_eq!(listed(0.05), ["time", "files"]);
    assert_eq!(listed(0.95), ["time"], "a group scoring under route_above");
}

/// With [`FoundTools::Loaded`] the search loads the tools it lists, each
/// group's as a partial load, and its answer says so: callable by name in
/// the tool list, or through call_tool with their schemas in the answer.
#[test]
fn a_search_that_loads_makes_the_tools_it_lists_callable_and_says_so() {
    let catalog = catalog();
    let query = json!({"query": "what is the current time"});
    let call = all().parse("find_tool_groups", &query).unwrap().unwrap();
    // Naming them (the default) loads nothing.
    let mut active = ActiveToolSet::new();
    let Ok(MetaAnswer::Found(named)) = all().answer(&call, Some(&mut active), &catalog) else {
        panic!("a ranking");
    };
    assert!(named.loaded.is_empty());
    assert!(active.loaded_groups().is_empty());
    assert_eq!(
        named.answer(LoadedSchemas::ToolList).to_string(),
        named.to_string()
    );

    let meta = all().with_found_tools(FoundTools::Loaded);
    let Ok(MetaAnswer::Found(found)) = meta.answer(&call, Some(&mut active), &catalog) else {
        panic!("a ranking");
    };
    assert_eq!(found.groups[0].group.id.as_str(), "time");
    let listed: Vec<&str> = found
        .groups
        .iter()
        .flat_map(|group| group.listed_tools())
        .map(|tool| tool.name.as_str())
        .collect();
    assert!(listed.contains(&"get_current_time"), "{listed:?}");
    for name in &listed {
        assert!(active.check_available(&catalog, name).is_ok(), "{name}");
    }
    assert!(found.loaded.iter().all(|load| load.newly_loaded));
    let in_list = found.answer(LoadedSchemas::ToolList).to_string();
    // The ranking's heading says they are loaded; the tools are named
    // without descriptions (their schemas carry them), and so are their
    // groups, the search ranking tools.
    let heading = found.to_string().lines().next().unwrap().replacen(
        "load the tools you need with load_tool_group (its group_name and tools):",
        "the tools listed are loaded:",
        1,
    );
    let mut expected = vec![heading];
    for group in &found.groups {
        expected.push(format!(
            "- {} ({:.2}, {})",
            group.group.id,
            group.probability,
            match group.tool_count {
                1 => "1 tool".to_owned(),
                n => format!("{n} tools"),
            }
        ));
        expected.extend(
            group
                .listed_tools()
                .map(|tool| format!("  - {}", tool.name)),
        );
    }
    let expected = format!(
        "{}\n\nThe {} listed under the groups are loaded: call them by name. \
         load_tool_group loads other tools of a group by name, or the rest of it.",
        expected.join("\n"),
        if listed.len() == 1 {
            "1 tool".to_owned()
        } else {
            format!("{} tools", listed.len())
        }
    );
    assert_eq!(in_list, expected);
    let in_conversation = found.answer(LoadedSchemas::Conversation).to_string();
    assert!(
        in_conversation.contains(
            "are loaded, but not added to your tool list: call one with call_tool, as \
             {\"name\": \"<tool name>\", \"arguments\": {<its arguments>}}."
        ),
        "{in_conversation}"
    );
    assert!(
        in_conversation.contains(
            "\n{\"name\":\"get_current_time\",\"description\":\"get_current_time does it\",\
             \"input_schema\":{\"type\":\"object\"}}"
        ),
        "{in_conversation}"
    );
    // Asked again, nothing new is loaded.
    let Ok(MetaAnswer::Found(again)) = meta.answer(&call, Some(&mut active), &catalog) else {
        panic!("a ranking");
    };
    assert!(again.loaded.iter().all(|load| !load.newly_loaded));
    // Without a session there is nothing to load into.
    let Ok(MetaAnswer::Found(sessionless)) = meta.answer(&call, None, &catalog) else {
        panic!("a ranking");
    };
    assert!(sessionless.loaded.is_empty());
}

#[test]
fn a_load_may_name_the_tools_it_needs() {
    let meta = all();
    let mut active = ActiveToolSet::new();
    let load = |tools: Value| json!({"group_name": "files", "tools": tools});
    assert_eq!(
        answer_text(
            &meta,
            "load_tool_group",
            load(json!(["files_read"])),
            &mut active
        ),
        "Loaded 1 of 2 tools from group 'Files' (load_tool_group 'files' loads the other 1):\n\
         - files_read: files_read does it"
    );
    assert_eq!(
        active.selection("files"),
        Some(GroupSelection::Tools(vec![
            &ToolName::new("files_read").unwrap()
        ]))
    );
    // Naming the rest of it loads the whole group.
    let whole = answer_text(
        &meta,
        "load_tool_group",
        load(json!(["files_list"])),
        &mut active,
    );
    assert!(
        whole.starts_with("Loaded 2 tools from group 'Files':"),
        "{whole}"
    );
    assert_eq!(active.selection("files"), Some(GroupSelection::Whole));
    for bad in [json!([]), json!("files_read"), json!([" "]), json!([3])] {
        assert_eq!(
            answer_text(
                &meta,
                "load_tool_group",
                load(bad),
                &mut ActiveToolSet::new()
            ),
            "error invalid_parameter: Parameter 'tools' must be a list of tool names, or left \
             out to load the whole group."
        );
    }
    // The group's own errors come first.
    assert!(
        answer_text(
            &meta,
            "load_tool_group",
            json!({"group_name": "nope", "tools": ["x"]}),
            &mut ActiveToolSet::new()
        )
        .starts_with("error not_found: ")
    );
}

#[test]
fn a_named_tools_load_records_exactly_what_it_added() {
    let meta = all();
    let catalog = catalog();
    let mut active = ActiveToolSet::new();
    let call = meta
        .parse(
            "load_tool_group",
            &json!({"group_name": "time", "tools": ["convert_time"]}),
        )
        .unwrap()
        .unwrap();
    let answer = meta.answer(&call, Some(&mut active), &catalog).unwrap();
    assert_eq!(
        answer.events(),
        [HostEvent::ToolsLoaded(
            GroupId::new("time").unwrap(),
            vec![ToolName::new("convert_time").unwrap()]
        )]
    );
}

/// A load naming a tool the group does not have loads the whole group, and
/// says which names were not there: a model that guesses names does not
/// know them, and loading nothing left a small model answering the user
/// with the error.
#[test]
fn a_load_naming_a_tool_the_group_lacks_loads_the_whole_group() {
    let meta = all();
    let mut active = ActiveToolSet::new();
    let answer = answer_text(
        &meta,
        "load_tool_group",
        json!({ "group_name": "files", "tools": ["files_list", "files_write", "convert_time"] }),
        &mut active,
    );
    assert_eq!(
        answer.lines().next(),
        Some(
            "Tool group 'Files' has no tool named 'files_write', 'convert_time', so the whole \
             group is loaded."
        )
    );
    assert!(
        answer
            .lines()
            .nth(1)
            .is_some_and(|line| line.starts_with("Loaded 2 tools from group 'Files':")),
        "{answer}"
    );
    assert_eq!(active.selection("files"), Some(GroupSelection::Whole));
}

/// A catalog of a large group of `many` tools that all match "weather",
/// and a small one whose one tool does.
fn large_group(many: usize) -> Catalog {
    let mut catalog = Catalog::new();
    let tool = |name: String, description: &str| {
        let tool =
            ToolDefinition::new(ToolName::new(name).unwrap(), description, json!({})).unwrap();
        (tool, Origin::Builtin)
    };
    let big = (0..many)
        .map(|i| tool(format!("weather_{i:02}"), "weather forecast for a city"))
        .collect();
    let small = vec![tool("alerts_weather".to_owned(), "severe weather alerts")];
    for (id, tools) in [("weather", big), ("alerts", small)] {
        let group = ToolGroup::new(GroupId::new(id).unwrap(), id, format!("{id} tools"));
        catalog
            .register_group_with_tools(group, Origin::Builtin, tools)
            .unwrap();
    }
    catalog
}

/// The tools a search answer lists, in order.
fn listed_tools(found: &GroupsFound<'_>) -> Vec<String> {
    found
        .groups
        .iter()
        .flat_map(|group| group.tools.iter().map(|tool| tool.name.to_string()))
        .collect()
}

/// The shipped search ranks tools across groups with no cap per group: it
/// lists `search_results` tools even where they are all of one group
/// (ranking groups, a group showed at most 10), and asked again, once it
/// loaded them, the next ones, naming the loaded ones apart.
#[test]
fn the_search_ranks_tools_across_groups_and_pages_through_them() {
    let catalog = large_group(30);
    let config = RoutingConfig {
        search_results: Some(12),
        ..RoutingConfig::default()
    };
    let meta = MetaTools::new([MetaTool::FindToolGroups])
        .with_taxonomy(config.validate(&catalog).unwrap())
        .with_found_tools(FoundTools::Loaded);
    let call = meta
        .parse("find_tool_groups", &json!({"query": "weather forecast"}))
        .unwrap()
        .unwrap();
    let mut active = ActiveToolSet::new();
    let Ok(MetaAnswer::Found(first)) = meta.answer(&call, Some(&mut active), &catalog) else {
        panic!("a ranking");
    };
    let first_tools = listed_tools(&first);
    assert_eq!(first_tools.len(), 12, "{first_tools:?}");
    assert!(first.more);
    assert!(first.already_loaded.is_empty());
    let text = first.to_string();
    assert!(
        text.starts_with("The best tools for this request, under their groups ("),
        "{text}"
    );
    assert!(
        text.ends_with(
            "\nNot among them? Call find_tool_groups again, in other words or the same: it \
             lists the next best tools."
        ),
        "{text}"
    );
    for tool in &first_tools {
        assert!(active.check_available(&catalog, tool).is_ok(), "{tool}");
    }

    let Ok(MetaAnswer::Found(second)) = meta.answer(&call, Some(&mut active), &catalog) else {
        panic!("a ranking");
    };
    let second_tools = listed_tools(&second);
    assert_eq!(second_tools.len(), 12, "{second_tools:?}");
    assert!(
        second_tools.iter().all(|tool| !first_tools.contains(tool)),
        "the next page: {second_tools:?}"
    );
    let passed_over: Vec<String> = second
        .already_loaded
        .iter()
        .map(|t| t.to_string())
        .collect();
    assert_eq!(passed_over, first_tools, "named apart, best first");
    assert!(
        second.to_string().contains(&format!(
            "\nAlso matching, loaded already: {}.",
            first_tools.join(", ")
        )),
        "{second}"
    );

    // The last page says there is no more.
    let Ok(MetaAnswer::Found(third)) = meta.answer(&call, Some(&mut active), &catalog) else {
        panic!("a ranking");
    };
    assert_eq!(listed_tools(&third).len(), 31 - 24);
    assert!(!third.more);
    assert!(!third.to_string().contains("Call find_tool_groups again"));
}

/// A search that only names its tools, or answers a caller without a
/// session, loads nothing, so it never says it would list others when asked
/// again.
#[test]
fn a_search_that_loads_nothing_offers_no_next_page() {
    let catalog = large_group(30);
    let taxonomy = Taxonomy::default();
    let call = |meta: &MetaTools| {
        meta.parse("find_tool_groups", &json!({"query": "weather forecast"}))
            .unwrap()
            .unwrap()
    };
    let named = MetaTools::new([MetaTool::FindToolGroups]).with_taxonomy(taxonomy);
    let mut active = ActiveToolSet::new();
    let Ok(MetaAnswer::Found(found)) = named.answer(&call(&named), Some(&mut active), &catalog)
    else {
        panic!("a ranking");
    };
    assert_eq!(listed_tools(&found).len(), DEFAULT_SEARCH_RESULTS);
    assert!(!found.more && active.loaded_groups().is_empty());
    let loading = named.with_found_tools(FoundTools::Loaded);
    let Ok(MetaAnswer::Found(found)) = loading.answer(&call(&loading), None, &catalog) else {
        panic!("a ranking");
    };
    assert!(!found.more, "no session: nothing loaded");
}
