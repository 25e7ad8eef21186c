//! Ordinary least squares: the one fit behind every cell's rate and interval. It knows
//! nothing of cells or launches: a design matrix, a response, and the fitted coefficients
//! with their covariance.
//!
//! No unit is downweighted. The host's windows have heavy tails, and they are the host's
//! ordinary behaviour, which another sweep meets too: on the recorded default sweeps, leaving
//! out windows beyond 6 robust deviations of a Huber fit cut the pairs inside from 93% to 86%,
//! and Huber's weights on simulated sweeps from 95% to 90% (docs/findings/cell-model.md). A
//! visit the machine disturbed widens the interval instead.

use nalgebra::{DMatrix, DVector};

/// A fitted linear model.
#[derive(Debug, Clone)]
pub struct Fitted {
    coefficients: DVector<f64>,
    /// `(Xᵀ X)⁺`, the covariance over the residual variance.
    unscaled_covariance: DMatrix<f64>,
    residual_variance: f64,
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

    /// The variance of `aᵀβ` under the fitted residual variance.
    pub fn variance(&self, a: &[f64]) -> f64 {
        let a = DVector::from_column_slice(a);
        let v = (a.transpose() * &self.unscaled_covariance * &a)[(0, 0)];
        (v * self.residual_variance).max(0.0)
    }

    /// The residual variance: the squared residuals over the degrees of freedom.
    #[cfg(test)]
    pub fn residual_variance(&self) -> f64 {
        self.residual_variance
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

/// Fits `y = X β` by least squares. Columns may be collinear: estimable combinations come
/// out right and the degrees of freedom count the design's rank. `None` without units or with
/// a row of the wrong length.
pub fn fit(rows: &[Vec<f64>], y: &[f64]) -> Option<Fitted> {
    let n = y.len();
    let p = rows.first()?.len();
    if rows.len() != n || rows.iter().any(|r| r.len() != p) || p == 0 {
        return None;
    }
    let x = DMatrix::from_fn(n, p, |i, j| rows[i][j]);
    let y = DVector::from_column_slice(y);
    let (coefficients, unscaled_covariance, rank) = solve(&x, &y)?;
    let residuals = &y - &x * &coefficients;
    let degrees_of_freedom = n.saturating_sub(rank);
    let residual_variance = match degrees_of_freedom {
        0 => 0.0,
        df => residuals.norm_squared() / df as f64,
    };
    Some(Fitted {
        coefficients,
        unscaled_covariance,
        residual_variance,
        degrees_of_freedom,
    })
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
        let f = fit(&rows, &y).unwrap();
        assert_eq!(f.degrees_of_freedom(), 398);
        for (j, truth) in [(0, 2.0), (1, 0.5)] {
            let mut a = vec![0.0; 2];
            a[j] = 1.0;
            let se = f.variance(&a).sqrt();
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
        let f = fit(&rows, &y).unwrap();
        assert_eq!(f.degrees_of_freedom(), 2);
        assert!((f.estimate(&[-1.0, 1.0, 0.0]) - 2.0).abs() < 1e-9);
        assert!((f.residual_variance() - 0.02).abs() < 1e-9);
    }

    #[test]
    fn refuses_ragged_or_empty_designs() {
        assert!(fit(&[], &[]).is_none());
        assert!(fit(&[vec![1.0], vec![1.0, 2.0]], &[1.0, 2.0]).is_none());
    }
}
