use super::*;

#[test]
fn failed_accepts_wait_longer_each_time_and_recover() {
    let mut errors = AcceptErrors::default();
    let error = std::io::Error::from_raw_os_error(24); // EMFILE
    let waits: Vec<u128> = (0..10).map(|_| errors.failed(&error).as_millis()).collect();
    assert_eq!(waits, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
    // Only the first of a burst is logged; the rest are counted.
    assert_eq!(errors.unlogged, 9);
    errors.recovered();
    assert_eq!(errors.failed(&error).as_millis(), 5);
}
