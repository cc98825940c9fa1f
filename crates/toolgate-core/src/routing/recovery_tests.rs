use super::{LearnedRecovery, MAX_LEARNED, MIN_MISSES};
use crate::name::GroupId;
use crate::routing::KEPT_OUTCOMES;

fn group(name: &str) -> GroupId {
    GroupId::new(name).unwrap()
}

/// `count` turns, every `every`-th of them missing `name`, the others held.
fn turns(learned: &mut LearnedRecovery, name: &str, count: usize, every: usize) {
    for i in 0..count {
        if i % every == 0 {
            learned.record(&[group(name)]);
        } else {
            learned.record(&[]);
        }
    }
}

#[test]
fn nothing_is_learned_before_a_group_is_missed_twice() {
    let mut learned = LearnedRecovery::new();
    assert!(learned.groups().is_empty());
    learned.record(&[group("files")]);
    assert!(learned.groups().is_empty(), "one miss is chance");
    learned.record(&[group("files")]);
    assert_eq!(learned.groups(), vec![group("files")]);
    assert_eq!(MIN_MISSES, 2);
}

#[test]
fn a_turn_missing_a_group_twice_counts_once() {
    let mut learned = LearnedRecovery::new();
    learned.record(&[group("files"), group("files")]);
    turns(&mut learned, "other", 50, 100);
    assert!(
        learned.groups().is_empty(),
        "1 miss of files, not 2: {:?}",
        learned.groups()
    );
}

#[test]
fn the_most_missed_come_first_and_at_most_the_bound() {
    let mut learned = LearnedRecovery::new();
    let names = ["a", "b", "c", "d", "e", "f", "g"];
    for (index, name) in names.iter().enumerate() {
        // g missed 8 times, f 7, ... a 2.
        for _ in 0..index + 2 {
            learned.record(&[group(name)]);
        }
    }
    let groups = learned.groups();
    assert_eq!(groups.len(), MAX_LEARNED);
    assert_eq!(groups[0], group("g"));
    assert_eq!(groups[MAX_LEARNED - 1], group("c"));
}

#[test]
fn old_misses_are_forgotten_once_the_kept_turns_are_full() {
    let mut learned = LearnedRecovery::default();
    turns(&mut learned, "files", 200, 2);
    assert_eq!(learned.groups(), vec![group("files")]);
    turns(&mut learned, "none", KEPT_OUTCOMES, KEPT_OUTCOMES + 1);
    // The last turns recorded one miss of "none" (its first turn) only.
    assert_eq!(learned.turns(), KEPT_OUTCOMES);
    assert!(learned.groups().is_empty(), "{:?}", learned.groups());
}

#[test]
fn what_an_earlier_run_learned_seeds_the_next() {
    let earlier: Vec<Vec<GroupId>> = vec![vec![group("time")], vec![], vec![group("time")]];
    let learned = LearnedRecovery::default().with_turns(&earlier);
    assert_eq!(learned.turns(), 3);
    assert_eq!(learned.groups(), vec![group("time")]);
}
