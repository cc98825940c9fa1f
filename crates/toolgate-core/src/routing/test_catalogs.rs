//! The small catalogs the router's tests share: mail, calendar and weather
//! groups, and any other written the same way.

use serde_json::json;

use crate::catalog::Catalog;
use crate::group::ToolGroup;
use crate::name::{GroupId, ToolName};
use crate::origin::Origin;
use crate::tool::ToolDefinition;

/// A group: its id, description and tools (name, description).
pub(crate) type GroupSpec<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>);

/// gmail, calendar and weather, with two, two and one tools.
pub(crate) fn catalog() -> Catalog {
    catalog_of([
        (
            "gmail",
            "Read and send email",
            vec![
                ("gmail_send", "Send an email message"),
                ("gmail_search", "Search the inbox for emails"),
            ],
        ),
        (
            "calendar",
            "Events and meetings",
            vec![
                ("calendar_create_event", "Create a calendar event"),
                ("calendar_list", "List upcoming meetings"),
            ],
        ),
        (
            "weather",
            "Forecasts",
            vec![("weather_forecast", "Weather forecast for a city")],
        ),
    ])
}

/// A catalog of `groups`, every tool taking an empty object.
pub(crate) fn catalog_of<'a>(groups: impl IntoIterator<Item = GroupSpec<'a>>) -> Catalog {
    let mut catalog = Catalog::new();
    for (group, description, tools) in groups {
        let tools = tools
            .into_iter()
            .map(|(name, text)| {
                let definition = ToolDefinition::new(
                    ToolName::new(name).unwrap(),
                    text,
                    json!({"type": "object"}),
                )
                .unwrap();
                (definition, Origin::Builtin)
            })
            .collect();
        catalog
            .register_group_with_tools(
                ToolGroup::new(GroupId::new(group).unwrap(), group, description),
                Origin::Builtin,
                tools,
            )
            .unwrap();
    }
    catalog
}

/// Group ids of `names`.
pub(crate) fn ids(names: &[&str]) -> Vec<GroupId> {
    names.iter().map(|n| GroupId::new(*n).unwrap()).collect()
}
