use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{PythonCall, called_name};

fn schema(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[test]
fn named_and_positional_literals_become_json_arguments() {
    let call = PythonCall::parse(
        "post_tweet('Tires checked!', tags=['#RoadTrip', \"#Car\"], mentions=[], \
         count = -3, ratio=2.5e1, flag=True, none=None, pair=(1, 'a'), map={'k': False},)",
    )
    .unwrap();
    assert_eq!(call.name, "post_tweet");
    let arguments = call.arguments(&schema(json!({
        "type": "object",
        "properties": {"content": {"type": "string"}, "tags": {"type": "array"}}
    })));
    assert_eq!(
        Value::Object(arguments),
        json!({
            "content": "Tires checked!",
            "tags": ["#RoadTrip", "#Car"],
            "mentions": [],
            "count": -3,
            "ratio": 25.0,
            "flag": true,
            "none": null,
            "pair": [1, "a"],
            "map": {"k": false},
        })
    );
}

#[test]
fn escapes_empty_calls_and_text_that_is_no_call() {
    let call = PythonCall::parse(r"echo(content='it\'s\na \\ line')").unwrap();
    assert_eq!(
        call.named,
        [("content".to_owned(), json!("it's\na \\ line"))]
    );
    let empty = PythonCall::parse("check_tire_pressure()").unwrap();
    assert_eq!((empty.positional.len(), empty.named.len()), (0, 0));
    for broken in [
        "cd(folder='a'",
        "cd folder",
        "cd(folder=open('x'))",
        "cd() tail",
    ] {
        assert_eq!(PythonCall::parse(broken), None, "{broken}");
    }
    assert_eq!(called_name(" cd(folder='a'"), "cd");
}
