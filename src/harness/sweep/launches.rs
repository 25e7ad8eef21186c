//! One point measured on several launches of the job. A scheduler that reads a cell starts the
//! job again on that allocation, so what it needs is where another launch lands: the launches'
//! mean, with an interval that holds both the variation within a launch (its windows) and the
//! variation between launches (where the job's threads and pages land, what else ran).

use crate::matrix::{Cell, LaunchRate, Throughput};

/// The spread of one launch's rate around the mean of `rates`, as a standard deviation in
/// samples/s: the launches' sample standard deviation, but never less than what their own
/// intervals say a single launch varies by (two launches that happen to agree prove no
/// tighter spread than either measured). `None` for fewer than two launches.
pub fn launch_sd(rates: &[Throughput]) -> Option<f64> {
    let k = rates.len();
    if k < 2 {
        return None;
    }
    let mean = rates.iter().map(|t| t.samples_per_s).sum::<f64>() / k as f64;
    let between = rates
        .iter()
        .map(|t| (t.samples_per_s - mean).powi(2))
        .sum::<f64>()
        / (k as f64 - 1.0);
    let within = rates
        .iter()
        .map(|t| ((t.ci95_high - t.ci95_low) / 2.0 / 1.96).powi(2))
        .sum::<f64>()
        / k as f64;
    Some(between.max(within).sqrt())
}

/// The throughput of one point from the throughputs of its launches: their mean, and a 95%
/// interval for where one more launch lands (`mean ± 1.96 · sd · sqrt(1 + 1/k)`, a normal
/// approximation: with two or three launches a Student-t interval would be several times wider
/// than any launch ever lands). One launch is returned as it is.
pub fn combine_throughputs(launches: &[Throughput]) -> Option<Throughput> {
    let (first, k) = (launches.first()?, launches.len());
    let Some(sd) = launch_sd(launches) else {
        return Some(first.clone());
    };
    let mean = launches.iter().map(|t| t.samples_per_s).sum::<f64>() / k as f64;
    let half = 1.96 * sd * (1.0 + 1.0 / k as f64).sqrt();
    Some(Throughput {
        samples_per_s: mean,
        ci95_low: (mean - half).max(0.0),
        ci95_high: mean + half,
        windows: launches.iter().map(|t| t.windows).sum(),
        measured_s: launches.iter().map(|t| t.measured_s).sum(),
        launches: launches
            .iter()
            .map(|t| LaunchRate {
                samples_per_s: t.samples_per_s,
                ci95_low: t.ci95_low,
                ci95_high: t.ci95_high,
            })
            .collect(),
    })
}

/// The cell of one point measured on `cells`' launches: the first launch's cell (its telemetry
/// and notes) with the combined throughput and the wall time of all. Launches without a rate
/// are left out; `None` when none has one.
pub fn combine_cells(cells: &[Cell]) -> Option<Cell> {
    let measured: Vec<&Cell> = cells.iter().filter(|c| c.throughput.is_some()).collect();
    let first = *measured.first()?;
    let rates: Vec<Throughput> = measured
        .iter()
        .filter_map(|c| c.throughput.clone())
        .collect();
    let mut cell = first.clone();
    cell.throughput = combine_throughputs(&rates);
    cell.wall_s = cells.iter().map(|c| c.wall_s).sum();
    Some(cell)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(rate: f64, half: f64) -> Throughput {
        Throughput {
            samples_per_s: rate,
            ci95_low: rate - half,
            ci95_high: rate + half,
            windows: 5,
            measured_s: 10.0,
            launches: Vec::new(),
        }
    }

    #[test]
    fn one_launch_is_kept_as_it_is() {
        assert_eq!(combine_throughputs(&[tp(100.0, 2.0)]), Some(tp(100.0, 2.0)));
        assert_eq!(combine_throughputs(&[]), None);
    }

    /// Two launches 20% apart with tight intervals each: the combined interval holds both, and
    /// one more launch as far out as either.
    #[test]
    fn launches_apart_widen_the_interval_to_hold_them() {
        let t = combine_throughputs(&[tp(90.0, 1.0), tp(110.0, 1.0)]).unwrap();
        assert_eq!(t.samples_per_s, 100.0);
        assert!(t.ci95_low < 90.0 && t.ci95_high > 110.0, "{t:?}");
        assert_eq!(t.launches.len(), 2);
        assert_eq!(t.windows, 10);
    }

    /// Two launches that agree exactly: the interval is still as wide as one launch's own.
    #[test]
    fn agreeing_launches_keep_the_width_one_launch_measured() {
        let t = combine_throughputs(&[tp(100.0, 4.0), tp(100.0, 4.0)]).unwrap();
        let half = (t.ci95_high - t.ci95_low) / 2.0;
        assert!(half >= 4.0, "{t:?}");
    }
}
