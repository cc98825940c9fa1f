use pretty_assertions::assert_eq;

use super::{SseEvent, SseParser};

fn event(name: &str, data: &str) -> SseEvent {
    SseEvent {
        event: name.to_owned(),
        data: data.to_owned(),
    }
}

#[test]
fn events_split_anywhere_come_out_whole() {
    let body = "event: message_start\ndata: {\"a\":1}\n\n: a comment\ndata: first\ndata: second\n\nevent:ping\ndata:{}\n\n";
    let whole = SseParser::default().feed(body.as_bytes());
    let expected = vec![
        event("message_start", "{\"a\":1}"),
        event("", "first\nsecond"),
        event("ping", "{}"),
    ];
    assert_eq!(whole, expected);
    for split in 0..body.len() {
        let mut parser = SseParser::default();
        let mut events = parser.feed(&body.as_bytes()[..split]);
        events.extend(parser.feed(&body.as_bytes()[split..]));
        assert_eq!(events, expected, "split at {split}");
        assert!(!parser.has_partial());
    }
}

#[test]
fn every_line_ending_works_even_split_between_cr_and_lf() {
    for body in [
        "data: x\r\n\r\ndata: y\r\n\r\n",
        "data: x\r\rdata: y\r\r",
        "data: x\n\ndata: y\n\n",
    ] {
        for split in 0..body.len() {
            let mut parser = SseParser::default();
            let mut events = parser.feed(&body.as_bytes()[..split]);
            events.extend(parser.feed(&body.as_bytes()[split..]));
            assert_eq!(
                events,
                vec![event("", "x"), event("", "y")],
                "{body:?} split at {split}"
            );
        }
    }
}

#[test]
fn a_character_split_across_chunks_survives() {
    let body = "data: caf\u{e9} \u{1f600}\n\n".as_bytes();
    for split in 0..body.len() {
        let mut parser = SseParser::default();
        let mut events = parser.feed(&body[..split]);
        events.extend(parser.feed(&body[split..]));
        assert_eq!(events, vec![event("", "caf\u{e9} \u{1f600}")]);
    }
}

#[test]
fn an_unfinished_event_is_partial() {
    let mut parser = SseParser::default();
    assert!(parser.feed(b"data: {\"choices\"").is_empty());
    assert!(parser.has_partial());
}
