//! Ordinary least squares: the one fit behind every cell's rate and interval. It knows
//! nothing of cells or launches: a design matrix, a response, each row's group, and the
//! fitted coefficients with their covariance.
//!
//! Rows of one group (the windows of one visit) share what happened over it, so the residual
//! variance is split in two, as a one-way analysis of variance of the residuals does: within
//! groups, and a variance shared by each group's rows. A combination's variance counts both,
//! and its degrees of freedom follow Satterthwaite's rule between the two.
//!
//! No unit is downweighted. The host's windows have heavy tails, and they are the host's
//! ordinary behaviour, which another sweep meets too: on the recorded default sweeps, leaving
//! out windows beyond 6 robust deviations of a Huber fit cut the pairs inside from 93% to 86%,
//! and Huber's weights on simulated sweeps from 95% to 90% (docs/findings/cell-model.md). A
//! visit the machine disturbed widens the interval instead.

use nalgebra::{DMatrix, DVector};
use std::collections::BTreeMap;

/// A fitted linear model.
#[derive(Debug, Clone)]
pub struct Fitted {
    coefficients: DVector<f64>,
    /// `(Xᵀ X)⁺ Xᵀ`: each coefficient as a weighted sum of the rows.
    projection: DMatrix<f64>,
    /// Each row's group.
    groups: Vec<usize>,
    /// The residual variance within groups, and its degrees of freedom.
    within: (f64, usize),
    /// The variance a group's rows share beyond it (0 where none shows), and its degrees of
    /// freedom.
    between: (f64, usize),
    degrees_of_freedom: usize,
}

impl Fitted {
    /// `aᵀβ`: a linear combination of the coefficients.
    pub fn estimate(&self, a: &[f64]) -> f64 {
        a.iter()
            .zip(self.coefficients.iter())
            .map(|(x, b)| x * b)
            .sum()
    }

    /// The variance of `aᵀβ` under the fitted variances, and its degrees of freedom.
    pub fn variance(&self, a: &[f64]) -> (f64, usize) {
        let a = DVector::from_column_slice(a);
        let c = self.projection.transpose() * a;
        let mut sums: BTreeMap<usize, f64> = BTreeMap::new();
        for (w, g) in c.iter().zip(&self.groups) {
            *sums.entry(*g).or_default() += w;
        }
        let within = self.within.0 * c.norm_squared();
        let between = self.between.0 * sums.values().map(|s| s * s).sum::<f64>();
        let total = (within + between).max(0.0);
        // Satterthwaite: the degrees of freedom of a sum of two variance estimates.
        let parts = within.powi(2) / self.within.1.max(1) as f64
            + between.powi(2) / self.between.1.max(1) as f64;
        let df = match parts > 0.0 {
            true => {
                ((total * total / parts).floor() as usize).clamp(1, self.degrees_of_freedom.max(1))
            }
            false => self.degrees_of_freedom,
        };
        (total, df)
    }

    /// The residual variance within groups.
    #[cfg(test)]
    pub fn residual_variance(&self) -> f64 {
        self.within.0
    }

    /// Units less the design's rank.
    pub fn degrees_of_freedom(&self) -> usize {
        self.degrees_of_freedom
    }

    /// The coefficient of column `j`.
    pub fn coefficient(&self, j: usize) -> f64 {
        self.coefficients[j]
    }
}

/// Fits `y = X β` by least squares, row `i` in group `groups[i]`. Columns may be collinear:
/// estimable combinations come out right and the degrees of freedom count the design's rank.
/// `None` without units or with a row of the wrong length.
pub fn fit(rows: &[Vec<f64>], y: &[f64], groups: &[usize]) -> Option<Fitted> {
    let n = y.len();
    let p = rows.first()?.len();
    if rows.len() != n || groups.len() != n || rows.iter().any(|r| r.len() != p) || p == 0 {
        return None;
    }
    let x = DMatrix::from_fn(n, p, |i, j| rows[i][j]);
    let y = DVector::from_column_slice(y);
    let (coefficients, unscaled_covariance, rank) = solve(&x, &y)?;
    let residuals = &y - &x * &coefficients;
    let degrees_of_freedom = n.saturating_sub(rank);
    let (within, between) = variance_components(residuals.as_slice(), groups, rank);
    Some(Fitted {
        coefficients,
        projection: unscaled_covariance * x.transpose(),
        groups: groups.to_vec(),
        within,
        between,
        degrees_of_freedom,
    })
}

/// The residuals' variance within groups and the variance a group's rows share beyond it,
/// each with its degrees of freedom (a one-way analysis of variance, the groups' means over
/// the `rank` the fit took from them). Without rows enough to tell the two apart, the whole
/// residual variance is within.
fn variance_components(
    residuals: &[f64],
    groups: &[usize],
    rank: usize,
) -> ((f64, usize), (f64, usize)) {
    let n = residuals.len();
    let mut of_group: BTreeMap<usize, (f64, usize)> = BTreeMap::new();
    for (r, g) in residuals.iter().zip(groups) {
        let e = of_group.entry(*g).or_default();
        e.0 += r;
        e.1 += 1;
    }
    let g = of_group.len();
    let whole = match n.saturating_sub(rank) {
        0 => (0.0, 0),
        df => (residuals.iter().map(|r| r * r).sum::<f64>() / df as f64, df),
    };
    let (within_df, between_df) = (n.saturating_sub(g), g.saturating_sub(rank));
    if within_df == 0 || between_df == 0 {
        return (whole, (0.0, 0));
    }
    let mean_of = |g: &usize| {
        let (sum, m) = of_group[g];
        sum / m as f64
    };
    let within_ss: f64 = (residuals.iter().zip(groups))
        .map(|(r, g)| (r - mean_of(g)).powi(2))
        .sum();
    let between_ss: f64 = (of_group.values())
        .map(|(sum, m)| sum * sum / *m as f64)
        .sum();
    let within = within_ss / within_df as f64;
    let between_ms = between_ss / between_df as f64;
    // The rows a group holds, in effect, where groups differ in size.
    let squares: f64 = of_group.values().map(|(_, m)| (*m * *m) as f64).sum();
    let n0 = (n as f64 - squares / n as f64) / (g - 1).max(1) as f64;
    let between = ((between_ms - within) / n0.max(1.0)).max(0.0);
    ((within, within_df), (between, between_df))
}

/// The least-squares solution, `(Xᵀ X)⁺` and the design's rank.
fn solve(x: &DMatrix<f64>, y: &DVector<f64>) -> Option<(DVector<f64>, DMatrix<f64>, usize)> {
    let normal = x.transpose() * x;
    let svd = normal.clone().svd(true, true);
    let largest = svd.singular_values.max();
    let tolerance = largest * 1e-10 * normal.ncols() as f64;
    let rank = svd
        .singular_values
        .iter()
        .filter(|s| **s > tolerance)
        .count();
    let pinv = svd.pseudo_inverse(tolerance).ok()?;
    let beta = &pinv * (x.transpose() * y);
    beta.iter()
        .all(|b| b.is_finite())
        .then_some((beta, pinv, rank))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};

    fn normal(rng: &mut ChaCha8Rng) -> f64 {
        // Box-Muller.
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let v = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (-2.0 * (u.max(1e-300)).ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// A line with known coefficients and noise: the fit finds them within a few standard
    /// errors, and the residual variance is the noise's.
    #[test]
    fn recovers_a_line_and_its_noise() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let (rows, y): (Vec<Vec<f64>>, Vec<f64>) = (0..400)
            .map(|i| {
                let x = i as f64 / 40.0;
                (vec![1.0, x], 2.0 + 0.5 * x + 0.1 * normal(&mut rng))
            })
            .unzip();
        let f = fit(&rows, &y, &(0..y.len()).collect::<Vec<_>>()).unwrap();
        assert_eq!(f.degrees_of_freedom(), 398);
        for (j, truth) in [(0, 2.0), (1, 0.5)] {
            let mut a = vec![0.0; 2];
            a[j] = 1.0;
            let se = f.variance(&a).0.sqrt();
            assert!((f.estimate(&a) - truth).abs() < 4.0 * se, "{j}");
        }
        assert!((f.residual_variance().sqrt() - 0.1).abs() < 0.01);
    }

    /// Two collinear columns (a launch that is the sum of two cells): their difference is
    /// still estimable, and the rank, not the column count, sets the degrees of freedom.
    #[test]
    fn collinear_columns_keep_estimable_contrasts() {
        let rows = vec![
            vec![1.0, 0.0, 1.0],
            vec![1.0, 0.0, 1.0],
            vec![0.0, 1.0, 1.0],
            vec![0.0, 1.0, 1.0],
        ];
        let y = [1.0, 1.2, 3.0, 3.2];
        let f = fit(&rows, &y, &(0..y.len()).collect::<Vec<_>>()).unwrap();
        assert_eq!(f.degrees_of_freedom(), 2);
        assert!((f.estimate(&[-1.0, 1.0, 0.0]) - 2.0).abs() < 1e-9);
        assert!((f.residual_variance() - 0.02).abs() < 1e-9);
    }

    /// Two cells, each measured in visits of 8 rows, every visit shifted by its own draw: the
    /// fit finds the shared variance, and the contrast's interval, counting it, holds the
    /// true difference about 95% of the time where the rows alone would hold it far less.
    #[test]
    fn rows_of_one_visit_share_a_variance_the_interval_counts() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let (mut held, mut held_by_rows, trials) = (0, 0, 400);
        let mut shared = Vec::new();
        for _ in 0..trials {
            let (mut rows, mut y, mut groups) = (Vec::new(), Vec::new(), Vec::new());
            for visit in 0..12 {
                let cell = visit % 2;
                let shift = 0.05 * normal(&mut rng);
                for _ in 0..8 {
                    rows.push(if cell == 0 {
                        vec![1.0, 0.0]
                    } else {
                        vec![0.0, 1.0]
                    });
                    y.push(cell as f64 * 0.3 + shift + 0.01 * normal(&mut rng));
                    groups.push(visit);
                }
            }
            let f = fit(&rows, &y, &groups).unwrap();
            shared.push(f.between.0);
            let a = [-1.0, 1.0];
            let (variance, df) = f.variance(&a);
            let t = crate::stats::t_975(df);
            let off = (f.estimate(&a) - 0.3).abs();
            held += usize::from(off <= t * variance.sqrt());
            let rows_only = f.within.0 * (2.0 / 48.0);
            held_by_rows += usize::from(off <= 1.96 * rows_only.sqrt());
        }
        let share = held as f64 / trials as f64;
        assert!((0.90..=0.99).contains(&share), "{share}");
        assert!(held_by_rows * 2 < held, "{held_by_rows} of {trials}");
        let mean = shared.iter().sum::<f64>() / shared.len() as f64;
        assert!((mean.sqrt() - 0.05).abs() < 0.01, "{}", mean.sqrt());
    }

    /// Rows each a group of their own leave nothing shared: the fit is plain least squares.
    #[test]
    fn rows_of_their_own_are_plain_least_squares() {
        let rows: Vec<Vec<f64>> = (0..6).map(|i| vec![1.0, i as f64]).collect();
        let y = [0.1, 1.0, 2.1, 2.9, 4.2, 5.0];
        let f = fit(&rows, &y, &[0, 1, 2, 3, 4, 5]).unwrap();
        assert_eq!(f.between.0, 0.0);
        assert_eq!(f.variance(&[0.0, 1.0]).1, 4);
    }

    #[test]
    fn refuses_ragged_or_empty_designs() {
        assert!(fit(&[], &[], &[]).is_none());
        assert!(fit(&[vec![1.0], vec![1.0, 2.0]], &[1.0, 2.0], &[0, 1]).is_none());
    }
}
