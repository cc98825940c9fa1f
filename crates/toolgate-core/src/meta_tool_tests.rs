use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

#[test]
fn every_meta_tool_is_found_by_its_name() {
    for tool in MetaTool::ALL {
        assert_eq!(MetaTool::from_name(tool.name()), Some(tool));
        assert_eq!(tool.definition().name.as_str(), tool.name());
    }
    assert_eq!(MetaTool::from_name("load_tool_groups"), None);
}

#[test]
fn the_group_meta_tools_take_one_required_group_name() {
    for tool in [MetaTool::LoadToolGroup, MetaTool::UnloadToolGroup] {
        let schema = tool.definition().input_schema;
        assert_eq!(schema["required"], json!(["group_name"]));
        assert_eq!(schema["properties"]["group_name"]["type"], "string");
    }
}

#[test]
fn a_load_reads_a_trimmed_group_name() {
    assert_eq!(
        MetaCall::parse(MetaTool::LoadToolGroup, &json!({"group_name": " pdf "})),
        Ok(MetaCall::Load {
            group: "pdf".to_owned(),
            tools: None,
        })
    );
    for bad in [
        json!({}),
        json!({"group_name": ""}),
        json!({"group_name": 3}),
        json!(null),
    ] {
        let error = MetaCall::parse(MetaTool::LoadToolGroup, &bad).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Required parameter 'group_name' is missing."
        );
        assert_eq!(error.kind(), "missing_parameter");
    }
}

#[test]
fn an_unload_without_a_group_name_is_an_unload_error() {
    let error = MetaCall::parse(MetaTool::UnloadToolGroup, &json!({})).unwrap_err();
    assert_eq!(error, MetaError::Unload(UnloadGroupError::MissingParameter));
}

#[test]
fn call_tool_reads_the_name_and_an_object_of_arguments() {
    assert_eq!(
        MetaCall::parse(MetaTool::CallTool, &json!({"name": "get_current_time"})),
        Ok(MetaCall::CallTool {
            tool: "get_current_time".to_owned(),
            arguments: json!({}),
        })
    );
    let refused = |arguments| {
        MetaCall::parse(MetaTool::CallTool, &arguments)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        refused(json!({"arguments": {}})),
        "Required parameter 'name' is missing."
    );
    assert_eq!(
        refused(json!({"name": "load_tool_group"})),
        "'load_tool_group' is a meta-tool: call it directly."
    );
    assert_eq!(
        refused(json!({"name": "x", "arguments": [1]})),
        "Parameter 'arguments' must be an object."
    );
}

#[test]
fn only_a_load_has_a_group_to_prepare() {
    let load = MetaCall::Load {
        group: "git".to_owned(),
        tools: None,
    };
    assert_eq!(load.group_to_prepare(), Some("git"));
    let find = MetaCall::FindGroups {
        query: "commit".to_owned(),
    };
    assert_eq!(find.group_to_prepare(), None);
}
