//! Cells whose side of the best-case demand's threshold is in doubt. The demand takes the
//! cheapest point reaching `(1 - eps)` of the best relative rate, so a cell whose relative rate
//! lies near that threshold, with an interval wide enough that another sweep of the job would
//! put it on the other side, makes the demand itself a coin toss: a sweep that reads 0.988 at
//! 1 CPU from three blocks of ±60% exports 1 CPU where the next twenty sweeps export 2. Such
//! cells are worth more blocks; cells far from the threshold are not, however wide.

use super::relative::RelativeRate;

/// A cell is in doubt where another sweep would read it on the other side of the threshold in
/// more than a quarter of sweeps: its distance to the threshold, in log space, is under 0.674
/// standard deviations (the normal distribution's upper quartile).
pub const DOUBT_QUARTILE: f64 = 0.674;

/// The indices of `relative`'s rates in doubt: those whose distance (in log) to `(1 - eps)` of
/// the best rate among them is under [`DOUBT_QUARTILE`] times the standard deviation their
/// interval's upper half gives (read with the normal quantile, which errs toward doubt where
/// the interval holds Student's for few blocks). Rates without an interval (the reference, a
/// cell of one block with nothing to pool) are never in doubt: more blocks would not show them
/// as less sure.
pub fn in_doubt(relative: &[Option<&RelativeRate>], eps: f64) -> Vec<usize> {
    let best = (relative.iter().flatten())
        .map(|r| r.rate)
        .filter(|r| r.is_finite())
        .fold(0.0, f64::max);
    if best <= 0.0 {
        return Vec::new();
    }
    let threshold = best * (1.0 - eps.clamp(0.0, 0.999));
    (relative.iter().enumerate())
        .filter_map(|(i, r)| {
            let r = (*r)?;
            let sd = (r.ci95_high / r.rate).ln() / 1.96;
            let distance = (r.rate / threshold).ln().abs();
            (sd > 0.0 && distance < DOUBT_QUARTILE * sd).then_some(i)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rel(rate: f64, low: f64, high: f64) -> RelativeRate {
        RelativeRate::unadjusted(rate, [low, high], 3, 0)
    }

    /// Three relaunched framework scripts' first sweeps: a tqdm loop whose 1-CPU cell read
    /// 0.988 [0.543, 1.798] (the threshold 0.98 in the middle of it) is in doubt; plain PyTorch
    /// at 0.610 [0.320, 1.161] and Lightning at 0.765 [0.559, 1.048] are not, however wide.
    #[test]
    fn only_a_cell_near_the_threshold_is_in_doubt() {
        let one = rel(1.0, 1.0, 1.0);
        let tqdm = rel(0.988, 0.543, 1.798);
        let torch = rel(0.610, 0.320, 1.161);
        let lightning = rel(0.765, 0.559, 1.048);
        assert_eq!(in_doubt(&[Some(&one), Some(&tqdm)], 0.02), vec![1]);
        assert!(in_doubt(&[Some(&one), Some(&torch)], 0.02).is_empty());
        assert!(in_doubt(&[Some(&one), Some(&lightning)], 0.02).is_empty());
        // Narrow enough, the same rate is sure of its side.
        let narrow = rel(0.988, 0.97, 1.006);
        assert!(in_doubt(&[Some(&one), Some(&narrow)], 0.02).is_empty());
        // Nothing to compare with.
        assert!(in_doubt(&[None, None], 0.02).is_empty());
    }

    proptest! {
        /// A cell whose interval holds the threshold far from its middle, or not at all, is never
        /// in doubt, and the order of the cells does not change which are.
        #[test]
        fn doubt_needs_the_threshold_near_the_middle(
            rate in 0.05f64..1.5,
            half in 0.001f64..2.0,
            eps in 0.0f64..0.5,
        ) {
            let one = rel(1.0, 1.0, 1.0);
            let r = rel(rate, rate * (-half).exp(), rate * half.exp());
            let doubt = in_doubt(&[Some(&one), Some(&r)], eps);
            let best = rate.max(1.0);
            let threshold = best * (1.0 - eps);
            let far = (rate / threshold).ln().abs() >= DOUBT_QUARTILE * half / 1.96;
            prop_assert_eq!(doubt.contains(&1), !far);
            prop_assert!(!doubt.contains(&0), "the reference has no interval");
            let swapped = in_doubt(&[Some(&r), Some(&one)], eps);
            prop_assert_eq!(swapped.contains(&0), doubt.contains(&1));
        }
    }
}
