//! Statistical efficiency of a batch size (Pollux, OSDI'21): a step at global batch B makes
//! E(B) = (phi + B0) / (phi + B) times the progress per sample of a step at the base batch B0,
//! where phi is the (pre-conditioned) gradient noise scale, B0 x grad_var / grad_sqr, which grows
//! as training progresses.

/// phi as a function of the progress fraction: piecewise log-linear through `(fraction, phi)`
/// points, fraction ascending in [0, 1], phi > 0; constant beyond the ends.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EfficiencyModel {
    pub phi: Vec<(f64, f64)>,
}

impl EfficiencyModel {
    /// A gradient noise scale that does not change with progress.
    pub fn constant(phi: f64) -> EfficiencyModel {
        EfficiencyModel {
            phi: vec![(0.0, phi)],
        }
    }

    pub fn phi_at(&self, progress_frac: f64) -> f64 {
        let p = &self.phi;
        match p.len() {
            0 => f64::INFINITY,
            1 => p[0].1,
            _ => {
                if progress_frac <= p[0].0 {
                    return p[0].1;
                }
                for w in p.windows(2) {
                    let ((x0, y0), (x1, y1)) = (w[0], w[1]);
                    if progress_frac <= x1 {
                        let t = if x1 > x0 {
                            (progress_frac - x0) / (x1 - x0)
                        } else {
                            1.0
                        };
                        return (y0.ln() + t * (y1.ln() - y0.ln())).exp();
                    }
                }
                p[p.len() - 1].1
            }
        }
    }

    /// E(B) relative to `base_batch`, in (0, 1] for B >= B0 (above 1 for B < B0).
    pub fn efficiency(&self, global_batch: f64, base_batch: f64, progress_frac: f64) -> f64 {
        let phi = self.phi_at(progress_frac);
        if !phi.is_finite() {
            return 1.0;
        }
        (phi + base_batch) / (phi + global_batch.max(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phi_is_log_linear_between_points_and_constant_beyond() {
        let m = EfficiencyModel {
            phi: vec![(0.2, 100.0), (0.6, 10_000.0)],
        };
        assert_eq!(m.phi_at(0.0), 100.0);
        assert!((m.phi_at(0.4) - 1000.0).abs() < 1e-6);
        assert_eq!(m.phi_at(1.0), 10_000.0);
        // E(B0) = 1; larger batches are less efficient, more so early.
        assert_eq!(m.efficiency(32.0, 32.0, 0.5), 1.0);
        assert!(m.efficiency(1024.0, 32.0, 0.0) < m.efficiency(1024.0, 32.0, 1.0));
    }
}
