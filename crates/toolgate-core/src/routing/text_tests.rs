use pretty_assertions::assert_eq;

use proptest::prelude::*;

use super::{terms, words};

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

#[test]
fn unspaced_scripts_are_matched_by_pairs_of_characters() {
    assert_eq!(terms("天气预报"), ["天气", "气预", "预报"]);
    assert_eq!(terms("查询 天气"), ["查询", "天气"]);
    assert_eq!(terms("八"), ["八"], "a lone character stays as it is");
    assert_eq!(
        terms("iPhone手机price"),
        ["phone", "手机", "price"],
        "the Latin around a run keeps its own words"
    );
    assert_eq!(terms("東京の天気"), ["東京", "京の", "の天", "天気"]);
    assert_eq!(terms("날씨예보"), ["날씨", "씨예", "예보"]);
    assert_eq!(
        terms("bing_search 搜索关键词"),
        ["bing", "search", "搜索", "索关", "关键", "键词"]
    );
}

proptest! {
    /// Any text, CJK or not: words come out nonempty and lowercase, and a
    /// run of CJK characters only as pairs or a lone character.
    #[test]
    fn any_text_gives_nonempty_lowercase_words(text in "[a-zA-Z0-9 _天气预报東京の날씨é.-]{0,40}") {
        for word in words(&text) {
            prop_assert!(!word.is_empty());
            prop_assert_eq!(word.to_lowercase(), word.clone());
            let cjk = word.chars().filter(|c| "天气预报東京の날씨".contains(*c)).count();
            prop_assert!(cjk == 0 || (cjk == word.chars().count() && cjk <= 2), "{word}");
        }
    }
}
