use super::LoadedSchemas;

#[test]
fn loaded_schemas_are_spelled_as_the_setting_writes_them() {
    assert_eq!(LoadedSchemas::default(), LoadedSchemas::ToolList);
    for value in LoadedSchemas::ALL {
        assert_eq!(LoadedSchemas::from_setting(value.as_str()), Some(value));
    }
    assert_eq!(
        LoadedSchemas::ALL.map(LoadedSchemas::as_str),
        ["tool_list", "conversation"]
    );
    assert_eq!(LoadedSchemas::from_setting("Conversation"), None);
    assert_eq!(LoadedSchemas::from_setting(""), None);
}
