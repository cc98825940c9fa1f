use super::probability;

#[test]
fn a_probability_is_rounded_down_so_none_below_one_reads_as_certain() {
    assert_eq!(probability(0.999_655_8, 3), "0.999");
    assert_eq!(probability(0.9994, 3), "0.999");
    assert_eq!(probability(1.0, 3), "1.000");
    assert_eq!(probability(0.805, 3), "0.805");
    assert_eq!(probability(0.0, 2), "0.00");
    assert_eq!(probability(0.987, 2), "0.98");
}
