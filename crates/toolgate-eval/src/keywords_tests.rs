use pretty_assertions::assert_eq;

use super::*;

#[test]
fn the_rewrite_keeps_content_words_in_order_up_to_the_limit() {
    assert_eq!(
        keyword_query(
            "I'm planning a trip: find flights from Paris to Tokyo, book a hotel near Shibuya \
             and convert 500 EUR to JPY"
        ),
        "planning trip find flights paris tokyo book hotel"
    );
}

#[test]
fn a_request_of_function_words_only_is_sent_as_it_is() {
    assert_eq!(keyword_query("  Can you do it?  "), "Can you do it?");
}

#[test]
fn apostrophes_inside_words_stay_and_numbers_count_as_words() {
    assert_eq!(keyword_query("Messi's 2022 goals"), "messi's 2022 goals");
}
