//! The statistics the harness, the matrix data types and the replay share, in one place: means,
//! spreads, percentiles and intervals; quantiles of distributions come from `statrs`.

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

/// The lower median of a NaN-free slice, in any order: the middle value, the smaller of the
/// two middle ones for an even count (so one wild value of two does not set it); 0 for an
/// empty one.
pub fn lower_median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
}

/// Arithmetic mean; 0 for an empty slice (a float sum of nothing is -0, which a file would
/// show as a rate of "-0.0").
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Mean and sample standard deviation (0 for fewer than two values); (0, 0) for none.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let m = mean(xs);
    let n = xs.len() as f64;
    let v = if xs.len() > 1 {
        xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, v.sqrt())
}

/// Mean and half-width of the Student-t 95% interval for it (0 for fewer than two values).
pub fn mean_ci95(xs: &[f64]) -> (f64, f64) {
    let (m, sd) = mean_sd(xs);
    match xs.len() {
        0 | 1 => (m, 0.0),
        n => (m, t_975(n - 1) * sd / (n as f64).sqrt()),
    }
}

/// Sample standard deviation over the mean; infinite for fewer than two values or a mean that
/// is not positive (nothing steady can be said).
pub fn coefficient_of_variation(xs: &[f64]) -> f64 {
    let (m, sd) = mean_sd(xs);
    if xs.len() < 2 || m <= 0.0 {
        return f64::INFINITY;
    }
    sd / m
}

/// Nearest-rank percentile of sorted values, `q` in [0, 1]: a value of the sample (a window's
/// gap or time, as measured).
pub fn nearest_rank_percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Linear-interpolation percentile of sorted values (numpy's default), `q` in [0, 100]; NaN for
/// none.
pub fn interpolated_percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q / 100.0 * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_of_nothing_is_a_positive_zero() {
        assert!(mean(&[]) == 0.0 && mean(&[]).is_sign_positive());
        assert_eq!(mean(&[1.0, 2.0]), 1.5);
    }

    #[test]
    fn the_lower_median_of_two_is_the_smaller() {
        assert_eq!(lower_median(&[54.7, 0.04]), 0.04);
        assert_eq!(lower_median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(lower_median(&[]), 0.0);
    }

    #[test]
    fn spread_of_a_small_sample() {
        let (m, sd) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m, 5.0);
        assert!((sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_sd(&[3.0]), (3.0, 0.0));
        assert_eq!(mean_sd(&[]), (0.0, 0.0));
        let (m, half) = mean_ci95(&[1.0, 2.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((half - 4.3027 / 3f64.sqrt()).abs() < 1e-4, "{half}");
        assert!((coefficient_of_variation(&[1.0, 2.0, 3.0]) - 0.5).abs() < 1e-12);
        assert_eq!(coefficient_of_variation(&[1.0]), f64::INFINITY);
    }

    #[test]
    fn percentiles_nearest_rank_and_interpolated() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(nearest_rank_percentile(&xs, 0.5), 2.0);
        assert_eq!(nearest_rank_percentile(&xs, 0.95), 4.0);
        assert_eq!(nearest_rank_percentile(&xs, 0.0), 1.0);
        assert_eq!(interpolated_percentile(&xs, 50.0), 2.5);
        assert_eq!(interpolated_percentile(&xs, 100.0), 4.0);
        assert!(interpolated_percentile(&[], 50.0).is_nan());
    }

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
