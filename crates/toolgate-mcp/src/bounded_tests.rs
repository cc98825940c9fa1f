use super::*;

#[test]
fn a_long_text_is_cut_on_a_character_boundary_and_marked() {
    assert_eq!(bounded("short", 80), "short");
    assert_eq!(bounded("abcdef", 3), "abc…");
    // `é` is two bytes: a cut inside it moves back before it.
    assert_eq!(bounded("aéb", 2), "a…");
    let mut text = "aéb".to_owned();
    truncate(&mut text, 2);
    assert_eq!(text, "a");
    let mut text = "abc".to_owned();
    truncate(&mut text, 5);
    assert_eq!(text, "abc");
}
