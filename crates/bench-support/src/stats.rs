//! Percentiles, medians and duration units.
//!
//! One definition of a percentile for every benchmark: the sample at index `round((n - 1) · q)`
//! of the sorted samples (no interpolation, so every figure is a value that was measured). For
//! an even count the median is then the upper of the two middle samples.

use std::time::Duration;

/// The `q` quantile (`0.0..=1.0`, e.g. `0.99`) of samples already sorted ascending.
///
/// # Panics
/// If `sorted` is empty.
pub fn percentile<T: Copy>(sorted: &[T], q: f64) -> T {
    assert!(!sorted.is_empty(), "a percentile of no samples");
    let index = ((sorted.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
    sorted[index]
}

/// Sorts `samples` and returns their `qs` quantiles, in the order asked.
pub fn percentiles<T: Copy + Ord, const N: usize>(mut samples: Vec<T>, qs: [f64; N]) -> [T; N] {
    samples.sort_unstable();
    qs.map(|q| percentile(&samples, q))
}

/// The median of `values` (any order; NaN sorts last).
///
/// # Panics
/// If `values` is empty.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    percentile(&values, 0.5)
}

/// The median of `values` if every one is present, else `None`: a figure missing from one round
/// makes the median over the rounds missing too, rather than a median of fewer rounds.
pub fn median_of_all(values: Vec<Option<f64>>) -> Option<f64> {
    values.into_iter().collect::<Option<Vec<f64>>>().map(median)
}

/// `d` in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `d` in microseconds.
pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_measured_samples_at_the_rounded_rank() {
        let samples: Vec<u32> = (1..=200).collect();
        assert_eq!(
            percentiles(samples.clone(), [0.0, 0.5, 0.9, 0.99, 1.0]),
            [1, 101, 180, 198, 200]
        );
        assert_eq!(percentile(&[7], 0.99), 7);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        // Even count: the upper middle sample.
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
    }

    #[test]
    fn a_median_over_rounds_needs_every_round() {
        assert_eq!(
            median_of_all(vec![Some(1.0), Some(5.0), Some(2.0)]),
            Some(2.0)
        );
        assert_eq!(median_of_all(vec![Some(1.0), None, Some(2.0)]), None);
    }

    #[test]
    #[should_panic(expected = "no samples")]
    fn a_percentile_of_nothing_is_a_bug_in_the_caller() {
        percentile::<u32>(&[], 0.5);
    }
}
