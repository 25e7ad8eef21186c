//! Ordinary least squares: the one fit behind every cell's rate and interval. It knows
//! nothing of cells or launches: a design matrix, a response, each row's group, and the
//! fitted coefficients with their covariance.
//!
//! Rows of one group (the windows of one visit) share what happened over it, so the residual
//! variance is split in two, as a one-way analysis of variance of the residuals does: within
//! groups, and a variance shared by each group's rows. Rows fall in classes (a cell's
//! windows), each with its own two variances: a storage-bound cell is noisier than a
//! quota-bound one. A class with few rows borrows from the whole fit's variances, as an
//! empirical-Bayes moderated variance does. A combination's variance counts every part, and
//! its degrees of freedom follow Satterthwaite's rule between them.
//!
//! No unit is downweighted. The host's windows have heavy tails, and they are the host's
//! ordinary behaviour, which another sweep meets too: on the recorded default sweeps, leaving
//! out windows beyond 6 robust deviations of a Huber fit cut the pairs inside from 93% to 86%,
//! and Huber's weights on simulated sweeps from 95% to 90% (docs/findings/cell-model.md). A
//! visit the machine disturbed widens the interval instead.

use nalgebra::{DMatrix, DVector};
use std::collections::BTreeMap;

/// The degrees of freedom the whole fit's variances count for in each class's own. On the
/// recorded corpus, 4 held the storage-bound cell's estimates in 89% of pairs where the
/// pooled variance held 80%, and 0 widened the median interval by a further 8%
/// (docs/findings/cell-model.md).
const PRIOR_DF: f64 = 4.0;

/// A fitted linear model.
#[derive(Debug, Clone)]
pub struct Fitted {
    coefficients: DVector<f64>,
    /// `(Xᵀ X)⁺ Xᵀ`: each coefficient as a weighted sum of the rows.
    projection: DMatrix<f64>,
    /// Each row's group.
    groups: Vec<usize>,
    /// Each row's class.
    classes: Vec<usize>,
    /// Each class's variances.
    noise: BTreeMap<usize, Noise>,
    degrees_of_freedom: usize,
}

/// The noise of one class of rows: a variance within groups and one each group's rows share
/// beyond it, each with its degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Noise {
    within: (f64, f64),
    between: (f64, f64),
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
        let mut sums: BTreeMap<usize, (usize, f64)> = BTreeMap::new();
        let mut squares: BTreeMap<usize, f64> = BTreeMap::new();
        for ((w, g), k) in c.iter().zip(&self.groups).zip(&self.classes) {
            let e = sums.entry(*g).or_insert((*k, 0.0));
            e.1 += w;
            *squares.entry(*k).or_default() += w * w;
        }
        let mut shared: BTreeMap<usize, f64> = BTreeMap::new();
        for (k, s) in sums.values() {
            *shared.entry(*k).or_default() += s * s;
        }
        // Each class's two parts: (variance, degrees of freedom).
        let parts: Vec<(f64, f64)> = (self.noise.iter())
            .flat_map(|(k, n)| {
                [
                    (
                        n.within.0 * squares.get(k).copied().unwrap_or(0.0),
                        n.within.1,
                    ),
                    (
                        n.between.0 * shared.get(k).copied().unwrap_or(0.0),
                        n.between.1,
                    ),
                ]
            })
            .collect();
        let total = parts.iter().map(|(v, _)| v).sum::<f64>().max(0.0);
        // Satterthwaite: the degrees of freedom of a sum of variance estimates.
        let spread: f64 = (parts.iter())
            .filter(|(v, _)| *v > 0.0)
            .map(|(v, df)| v * v / df.max(1.0))
            .sum();
        let df = match spread > 0.0 {
            true => {
                ((total * total / spread).floor() as usize).clamp(1, self.degrees_of_freedom.max(1))
            }
            false => self.degrees_of_freedom,
        };
        (total, df)
    }

    /// The residual variance within groups of class `k`.
    #[cfg(test)]
    fn within(&self, k: usize) -> f64 {
        self.noise[&k].within.0
    }

    /// The variance a group of class `k` shares.
    #[cfg(test)]
    fn between(&self, k: usize) -> f64 {
        self.noise[&k].between.0
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

/// Fits `y = X β` by least squares, row `i` in group `groups[i]` and class `classes[i]` (a
/// group's rows share a class). Columns may be collinear: estimable combinations come out
/// right and the degrees of freedom count the design's rank. `None` without units or with a
/// row of the wrong length.
pub fn fit(rows: &[Vec<f64>], y: &[f64], groups: &[usize], classes: &[usize]) -> Option<Fitted> {
    let n = y.len();
    let p = rows.first()?.len();
    if rows.len() != n
        || groups.len() != n
        || classes.len() != n
        || rows.iter().any(|r| r.len() != p)
        || p == 0
    {
        return None;
    }
    let x = DMatrix::from_fn(n, p, |i, j| rows[i][j]);
    let y = DVector::from_column_slice(y);
    let (coefficients, unscaled_covariance, rank) = solve(&x, &y)?;
    let residuals = &y - &x * &coefficients;
    let projection = unscaled_covariance * x.transpose();
    let leverage: Vec<f64> = (0..n)
        .map(|i| x.row(i).transpose().dot(&projection.column(i)))
        .collect();
    let rows: Vec<Row> = (0..n)
        .map(|i| Row {
            residual: residuals[i],
            leverage: leverage[i],
            group: groups[i],
            class: classes[i],
        })
        .collect();
    Some(Fitted {
        coefficients,
        projection,
        groups: groups.to_vec(),
        classes: classes.to_vec(),
        noise: noise_of_classes(&rows, rank),
        degrees_of_freedom: n.saturating_sub(rank),
    })
}

/// One row's residual, its leverage (the hat matrix's diagonal), its group and its class.
#[derive(Debug, Clone, Copy)]
struct Row {
    residual: f64,
    leverage: f64,
    group: usize,
    class: usize,
}

/// Each class's noise: its own variance components, pooled with the whole fit's as if the
/// whole fit were [`PRIOR_DF`] degrees of freedom more of the class's own.
fn noise_of_classes(rows: &[Row], rank: usize) -> BTreeMap<usize, Noise> {
    let whole_df = (rows.len() as f64 - rank as f64).max(0.0);
    let pooled = components(rows, whole_df);
    let mut classes: BTreeMap<usize, Vec<Row>> = BTreeMap::new();
    for r in rows {
        classes.entry(r.class).or_default().push(*r);
    }
    (classes.into_iter())
        .map(|(k, own_rows)| {
            let df: f64 = own_rows.iter().map(|r| (1.0 - r.leverage).max(0.0)).sum();
            let own = components(&own_rows, df);
            let blend = |pooled: (f64, f64), own: (f64, f64)| {
                let w = PRIOR_DF.min(pooled.1);
                match w + own.1 {
                    d if d > 0.0 => (
                        (w * pooled.0 + own.1 * own.0) / d,
                        (w + own.1).min(whole_df.max(1.0)),
                    ),
                    _ => pooled,
                }
            };
            let noise = Noise {
                within: blend(pooled.within, own.within),
                between: blend(pooled.between, own.between),
            };
            (k, noise)
        })
        .collect()
}

/// The residuals' variance within groups and the variance a group's rows share beyond it,
/// each with its degrees of freedom: a one-way analysis of variance of `rows`, which hold
/// `df` residual degrees of freedom. Without rows enough to tell the two apart, the whole
/// residual variance is within.
fn components(rows: &[Row], df: f64) -> Noise {
    let n = rows.len();
    let mut of_group: BTreeMap<usize, (f64, usize)> = BTreeMap::new();
    for r in rows {
        let e = of_group.entry(r.group).or_default();
        e.0 += r.residual;
        e.1 += 1;
    }
    let g = of_group.len();
    let ss: f64 = rows.iter().map(|r| r.residual * r.residual).sum();
    let whole = match df > 0.5 {
        true => (ss / df, df),
        false => (0.0, 0.0),
    };
    let within_df = n.saturating_sub(g) as f64;
    let between_df = df - within_df;
    if within_df < 1.0 || between_df < 0.5 {
        return Noise {
            within: whole,
            between: (0.0, 0.0),
        };
    }
    let mean_of = |g: &usize| {
        let (sum, m) = of_group[g];
        sum / m as f64
    };
    let within_ss: f64 = (rows.iter())
        .map(|r| (r.residual - mean_of(&r.group)).powi(2))
        .sum();
    let between_ss: f64 = (of_group.values())
        .map(|(sum, m)| sum * sum / *m as f64)
        .sum();
    let within = within_ss / within_df;
    let between_ms = between_ss / between_df;
    // The rows a group holds, in effect, where groups differ in size.
    let squares: f64 = of_group.values().map(|(_, m)| (*m * *m) as f64).sum();
    let n0 = (n as f64 - squares / n as f64) / (g.saturating_sub(1)).max(1) as f64;
    let between = ((between_ms - within) / n0.max(1.0)).max(0.0);
    Noise {
        within: (within, within_df),
        between: (between, between_df),
    }
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

    /// Fits `rows`, each row a group of its own, all of one class.
    fn fit_alone(rows: &[Vec<f64>], y: &[f64]) -> Fitted {
        let groups: Vec<usize> = (0..y.len()).collect();
        fit(rows, y, &groups, &vec![0; y.len()]).unwrap()
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
        let f = fit_alone(&rows, &y);
        assert_eq!(f.degrees_of_freedom(), 398);
        for (j, truth) in [(0, 2.0), (1, 0.5)] {
            let mut a = vec![0.0; 2];
            a[j] = 1.0;
            let se = f.variance(&a).0.sqrt();
            assert!((f.estimate(&a) - truth).abs() < 4.0 * se, "{j}");
        }
        assert!((f.within(0).sqrt() - 0.1).abs() < 0.01);
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
        let f = fit_alone(&rows, &y);
        assert_eq!(f.degrees_of_freedom(), 2);
        assert!((f.estimate(&[-1.0, 1.0, 0.0]) - 2.0).abs() < 1e-9);
        assert!((f.within(0) - 0.02).abs() < 1e-9);
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
            let f = fit(&rows, &y, &groups, &vec![0; y.len()]).unwrap();
            shared.push(f.between(0));
            let a = [-1.0, 1.0];
            let (variance, df) = f.variance(&a);
            let t = crate::stats::t_975(df);
            let off = (f.estimate(&a) - 0.3).abs();
            held += usize::from(off <= t * variance.sqrt());
            let rows_only = f.within(0) * (2.0 / 48.0);
            held_by_rows += usize::from(off <= 1.96 * rows_only.sqrt());
        }
        let share = held as f64 / trials as f64;
        assert!((0.90..=0.99).contains(&share), "{share}");
        assert!(held_by_rows * 2 < held, "{held_by_rows} of {trials}");
        let mean = shared.iter().sum::<f64>() / shared.len() as f64;
        assert!((mean.sqrt() - 0.05).abs() < 0.01, "{}", mean.sqrt());
    }

    /// Three cells, the third five times as noisy as the others, each in visits of 4 rows:
    /// each class keeps its own variance, so the noisy cell's interval still holds the truth
    /// about 95% of the time, and the quiet cell's is about half as wide (a pooled variance
    /// would give both one width).
    #[test]
    fn a_noisy_class_keeps_its_own_variance() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let trials = 400;
        let (mut held, mut quiet_width, mut noisy_width) = ([0; 2], 0.0, 0.0);
        for _ in 0..trials {
            let (mut rows, mut y, mut groups, mut classes) = (vec![], vec![], vec![], vec![]);
            for visit in 0..18 {
                let cell = visit % 3;
                let sd = if cell == 2 { 0.05 } else { 0.01 };
                for _ in 0..4 {
                    let mut row = vec![0.0; 3];
                    row[cell] = 1.0;
                    rows.push(row);
                    y.push(0.1 * cell as f64 + sd * normal(&mut rng));
                    groups.push(visit);
                    classes.push(cell);
                }
            }
            let f = fit(&rows, &y, &groups, &classes).unwrap();
            for (k, cell) in [1, 2].into_iter().enumerate() {
                let mut a = [0.0; 3];
                (a[0], a[cell]) = (-1.0, 1.0);
                let (variance, df) = f.variance(&a);
                let half = crate::stats::t_975(df) * variance.sqrt();
                held[k] += usize::from((f.estimate(&a) - 0.1 * cell as f64).abs() <= half);
                *[&mut quiet_width, &mut noisy_width][k] += half / trials as f64;
            }
        }
        // The quiet cell borrows some of the whole fit's variance: its interval errs wide.
        let share = held.map(|h| h as f64 / trials as f64);
        assert!(
            share[0] >= 0.95 && (0.90..=0.99).contains(&share[1]),
            "{held:?}"
        );
        assert!(
            noisy_width > 1.8 * quiet_width,
            "{quiet_width} {noisy_width}"
        );
    }

    /// Rows each a group of their own leave nothing shared: the fit is plain least squares.
    #[test]
    fn rows_of_their_own_are_plain_least_squares() {
        let rows: Vec<Vec<f64>> = (0..6).map(|i| vec![1.0, i as f64]).collect();
        let y = [0.1, 1.0, 2.1, 2.9, 4.2, 5.0];
        let f = fit(&rows, &y, &[0, 1, 2, 3, 4, 5], &[0; 6]).unwrap();
        assert_eq!(f.between(0), 0.0);
        assert_eq!(f.variance(&[0.0, 1.0]).1, 4);
    }

    #[test]
    fn refuses_ragged_or_empty_designs() {
        assert!(fit(&[], &[], &[], &[]).is_none());
        assert!(fit(&[vec![1.0], vec![1.0, 2.0]], &[1.0, 2.0], &[0, 1], &[0, 0]).is_none());
    }
}
