use pretty_assertions::assert_eq;

use super::terms;

#[test]
fn identifiers_and_prose_meet_on_the_same_terms() {
    assert_eq!(terms("getWeatherForecast"), ["weather", "forecast"]);
    assert_eq!(terms("get_weather_forecasts"), ["weather", "forecast"]);
    assert_eq!(
        terms("What is the weather forecast?"),
        ["weather", "forecast"]
    );
    assert_eq!(
        terms("HTTPServer list-repos"),
        ["http", "server", "list", "repo"]
    );
    assert_eq!(
        terms("searching queries created"),
        ["search", "query", "creat"]
    );
    assert_eq!(
        terms("class address"),
        ["class", "address"],
        "a double s is not a plural"
    );
    assert_eq!(terms("mp3 to wav"), ["mp", "3", "wav"]);
}
