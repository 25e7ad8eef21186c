//! Visits: a live launch walks its points in rounds, each round a block that ends with the
//! reference, so one launch measures a point several times. Each measurement is a visit; a
//! visit is read against the reference of its own block (`super::relative`), and a launch's
//! rate for the point is its visits' together, so the between-launch interval still counts
//! launches, not visits.

use serde::{Deserialize, Serialize};

/// One measurement of a cell: the launch it was made on and the windows it covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Visit {
    /// The sweep's launch it was measured on, counted from 1 in the order they started.
    pub launch: u32,
    pub samples_per_s: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
    /// Seconds of windows the rate covers.
    pub measured_s: f64,
    /// Windows the interval's Student quantile counts (0 where not recorded: the interval is
    /// then read as a normal one).
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub windows: u32,
    /// Unix seconds of the first and last report the rate covers.
    pub measured_unix_s: [f64; 2],
    /// Spans inside `measured_unix_s` the rate leaves out: windows discarded as disturbed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out_unix_s: Vec<[f64; 2]>,
    /// The visit stayed disturbed (other processes took the job's CPUs after its windows'
    /// re-measurements ran out): the cell's rate leaves it out where it has undisturbed visits.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disturbed: bool,
    /// The host's speed on the job's CPUs meanwhile, where a probe ran beside the job and got
    /// time enough to say (`crate::harness::measure::host_probe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostSpeed>,
}

/// What the probe on the job's CPUs saw during a visit: its speed over the visit and, for each
/// of the visit's windows where it got time enough, the job's rate beside its speed. The
/// windows say how much of the job's swing the host's speed explains (`super::relative`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpeed {
    /// The probe's work per second of its own CPU time (its instructions; a unit of this
    /// machine, compared only within a sweep).
    pub speed: f64,
    /// `[job's samples/s, probe's speed]` for each window of the visit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<[f64; 2]>,
    /// The variance of the log of `speed` that is the probe's own noise, from the spread
    /// between its successive bursts on a CPU (0 where not recorded).
    #[serde(default, skip_serializing_if = "crate::matrix::is_zero_f64")]
    pub log_variance: f64,
}

impl Visit {
    fn half_width(&self) -> f64 {
        (self.ci95_high - self.ci95_low) / 2.0
    }
}

/// What the visits of one launch measured together.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchOfVisits {
    pub samples_per_s: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
    pub measured_s: f64,
    /// From the first visit's start to the last's end.
    pub measured_unix_s: [f64; 2],
    /// What inside that span the rate leaves out: the gaps between visits (the launch measured
    /// other points then) and the windows each visit discarded.
    pub left_out_unix_s: Vec<[f64; 2]>,
}

/// The rate of one launch from its visits: their mean weighted by measuring time, with a 95%
/// interval that holds both the visits' own windows and their spread around the mean (a launch
/// whose host slowed between rounds measured less steadily than any visit's windows say).
/// `None` without visits.
pub fn launch_of_visits(visits: &[&Visit]) -> Option<LaunchOfVisits> {
    let mut sorted: Vec<&Visit> = visits.to_vec();
    sorted.sort_by(|a, b| a.measured_unix_s[0].total_cmp(&b.measured_unix_s[0]));
    let (first, last) = (*sorted.first()?, *sorted.last()?);
    let n = sorted.len() as f64;
    let weight = |v: &Visit| v.measured_s.max(f64::MIN_POSITIVE);
    let total: f64 = sorted.iter().map(|v| weight(v)).sum();
    let rate = sorted
        .iter()
        .map(|v| weight(v) * v.samples_per_s)
        .sum::<f64>()
        / total;
    let within = sorted
        .iter()
        .map(|v| (weight(v) / total * v.half_width()).powi(2))
        .sum::<f64>()
        .sqrt();
    let between = match sorted.len() {
        0 | 1 => 0.0,
        _ => {
            let var = sorted
                .iter()
                .map(|v| (v.samples_per_s - rate).powi(2))
                .sum::<f64>()
                / (n - 1.0);
            1.96 * (var / n).sqrt()
        }
    };
    let half = within.max(between);
    let mut left_out_unix_s: Vec<[f64; 2]> = (sorted.iter())
        .flat_map(|v| v.left_out_unix_s.iter().copied())
        .chain(
            (sorted.windows(2))
                .map(|w| [w[0].measured_unix_s[1], w[1].measured_unix_s[0]])
                .filter(|[a, b]| b > a),
        )
        .collect();
    left_out_unix_s.sort_by(|a, b| a[0].total_cmp(&b[0]));
    Some(LaunchOfVisits {
        samples_per_s: rate,
        ci95_low: (rate - half).max(0.0),
        ci95_high: rate + half,
        measured_s: total,
        measured_unix_s: [first.measured_unix_s[0], last.measured_unix_s[1]],
        left_out_unix_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn visit(launch: u32, rate: f64, half: f64, start: f64, secs: f64) -> Visit {
        Visit {
            launch,
            samples_per_s: rate,
            ci95_low: rate - half,
            ci95_high: rate + half,
            measured_s: secs,
            windows: 0,
            measured_unix_s: [start, start + secs],
            left_out_unix_s: Vec::new(),
            disturbed: false,
            host: None,
        }
    }

    /// Two visits of 2 s and one of 4 s: the mean weighs the long one twice, the interval
    /// holds their spread (wider than any visit's windows), and the gaps are left out.
    #[test]
    fn a_launch_is_its_visits_weighted_by_time() {
        let v = [
            visit(1, 100.0, 1.0, 10.0, 2.0),
            visit(1, 110.0, 1.0, 30.0, 4.0),
            visit(1, 90.0, 1.0, 20.0, 2.0),
        ];
        let l = launch_of_visits(&v.iter().collect::<Vec<_>>()).unwrap();
        assert!((l.samples_per_s - 102.5).abs() < 1e-9, "{l:?}");
        let sd = ((2.5f64.powi(2) + 7.5f64.powi(2) + 12.5f64.powi(2)) / 2.0).sqrt();
        assert!((l.ci95_high - l.samples_per_s - 1.96 * sd / 3f64.sqrt()).abs() < 1e-9);
        assert_eq!(l.measured_unix_s, [10.0, 34.0]);
        assert_eq!(l.left_out_unix_s, vec![[12.0, 20.0], [22.0, 30.0]]);
        assert_eq!(l.measured_s, 8.0);
    }

    /// One visit is the launch: its rate, its interval, its span and the windows it left out.
    #[test]
    fn one_visit_is_the_launch() {
        let v = visit(2, 50.0, 3.0, 5.0, 2.0);
        let l = launch_of_visits(&[&v]).unwrap();
        assert_eq!(
            (l.samples_per_s, l.ci95_low, l.ci95_high),
            (50.0, 47.0, 53.0)
        );
        assert!(l.left_out_unix_s.is_empty());
        let discarded = Visit {
            left_out_unix_s: vec![[5.5, 6.0]],
            ..v.clone()
        };
        let l = launch_of_visits(&[&discarded]).unwrap();
        assert_eq!(l.left_out_unix_s, vec![[5.5, 6.0]]);
        assert!(launch_of_visits(&[]).is_none());
    }
}
