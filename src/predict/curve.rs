//! A job's CPU curve: its rate at each CPU level of the top memory level, in log-log space,
//! read between and beyond its levels.

/// Rates over CPU levels, as `(ln cpu, ln samples/s)` points in ascending CPU order.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    points: Vec<(f64, f64)>,
    /// The CPU levels as given, in the same order (`exp(ln c)` is not always `c`).
    cpus: Vec<f64>,
}

impl Curve {
    /// The curve through `(cpu, samples/s)` pairs; pairs with a CPU level or rate that is not
    /// positive and finite are left out, and of two at one CPU level the first is kept.
    /// `None` with fewer than one pair left.
    pub fn new(pairs: impl IntoIterator<Item = (f64, f64)>) -> Option<Curve> {
        let usable = |v: f64| v.is_finite() && v > 0.0;
        let mut pairs: Vec<(f64, f64)> = (pairs.into_iter())
            .filter(|&(c, r)| usable(c) && usable(r))
            .collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        pairs.dedup_by(|b, a| a.0 == b.0);
        (!pairs.is_empty()).then(|| Curve {
            points: pairs.iter().map(|(c, r)| (c.ln(), r.ln())).collect(),
            cpus: pairs.iter().map(|p| p.0).collect(),
        })
    }

    /// `ln` of the rate at `ln cpu` = `x`: linear between levels; below the lowest, the rate
    /// falls in proportion to the CPUs (each CPU does the same work); above the highest, it
    /// stays (the accelerator or the job's own parallelism bounds it).
    pub fn at(&self, x: f64) -> f64 {
        let (first, last) = (self.points[0], self.points[self.points.len() - 1]);
        if x <= first.0 {
            return first.1 + (x - first.0);
        }
        if x >= last.0 {
            return last.1;
        }
        let i = self.points.partition_point(|p| p.0 <= x);
        let (a, b) = (self.points[i - 1], self.points[i]);
        a.1 + (x - a.0) / (b.0 - a.0) * (b.1 - a.1)
    }

    /// The CPU levels the curve was given at.
    pub fn cpus(&self) -> impl Iterator<Item = f64> + '_ {
        self.cpus.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_between_below_and_above_its_levels() {
        let c = Curve::new([(1.0, 100.0), (4.0, 400.0), (8.0, 400.0)]).unwrap();
        assert!(
            (c.at(2f64.ln()).exp() - 200.0).abs() < 1e-9,
            "log-linear between"
        );
        assert!(
            (c.at(0.5f64.ln()).exp() - 50.0).abs() < 1e-9,
            "proportional below"
        );
        assert!((c.at(16f64.ln()).exp() - 400.0).abs() < 1e-9, "flat above");
        assert!(
            (c.at(4f64.ln()).exp() - 400.0).abs() < 1e-9,
            "exact at a level"
        );
    }

    #[test]
    fn leaves_out_what_is_not_a_rate() {
        assert!(Curve::new([(1.0, 0.0), (0.0, 5.0), (2.0, f64::NAN)]).is_none());
        let c = Curve::new([(2.0, 10.0), (1.0, 5.0), (2.0, 99.0)]).unwrap();
        assert_eq!(c.cpus().count(), 2);
    }

    proptest! {
        /// A curve that never falls with more CPUs reads as never falling anywhere.
        #[test]
        fn a_rising_curve_reads_rising(
            steps in proptest::collection::vec(0.0f64..2.0, 2..8),
            x in -3.0f64..4.0, dx in 0.0f64..2.0,
        ) {
            let mut rate = 1.0;
            let pairs: Vec<(f64, f64)> = steps.iter().enumerate().map(|(i, s)| {
                rate += s;
                ((i + 1) as f64, rate)
            }).collect();
            let c = Curve::new(pairs).unwrap();
            prop_assert!(c.at(x + dx) >= c.at(x) - 1e-12);
        }
    }
}
