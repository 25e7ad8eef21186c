//! Small statistics shared by the harness, the matrix data types and the replay; quantiles of
//! distributions come from `statrs`.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Two-sided 95% Student-t quantile for `df` degrees of freedom (infinite for none).
pub fn t_975(df: usize) -> f64 {
    if df == 0 {
        return f64::INFINITY;
    }
    StudentsT::new(0.0, 1.0, df as f64)
        .map(|t| t.inverse_cdf(0.975))
        .unwrap_or(f64::INFINITY)
}

/// Median of a NaN-free slice, in any order; 0 for an empty one.
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => 0.5 * (v[n / 2 - 1] + v[n / 2]),
    }
}

#[cfg(test)]
mod tests {
    use super::{median, t_975};

    #[test]
    fn median_of_even_and_odd_counts_in_any_order() {
        assert_eq!(median(&[1.0, 2.0, 10.0]), 2.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 4.0, 10.0]), 3.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    /// Against published tables (four decimals): small samples, where a coarse table was up to
    /// 5% too narrow (df 11 is 2.201, not 2.086), and the normal limit.
    #[test]
    fn student_quantiles_match_the_tables() {
        for (df, q) in [
            (1, 12.7062),
            (2, 4.3027),
            (3, 3.1824),
            (10, 2.2281),
            (11, 2.2010),
            (20, 2.0860),
            (30, 2.0423),
            (60, 2.0003),
            (1000, 1.9623),
        ] {
            assert!((t_975(df) - q).abs() < 1e-4, "df {df}: {}", t_975(df));
        }
        assert_eq!(t_975(0), f64::INFINITY);
    }
}
