//! Deploy against replay, scheme by scheme: the table Synergy's paper prints for its physical
//! cluster against its simulator (makespan, mean and p99 JCT, and the gap in percent), and the
//! gain of each scheme over the proportional share under the same policy, in both.

use crate::replay::ReplaySummary;
use crate::replay::metrics::Summary;
use crate::replay::tables::{col, finite, write_table};
use polars::prelude::DataFrame;
use std::fmt::Write as _;
use std::path::Path;

/// One scheme's figures, deployed and replayed, seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareRow {
    pub policy: String,
    pub mechanism: String,
    pub jobs: usize,
    /// Jobs the deploy did not finish (failed, or still running when it stopped).
    pub unfinished: usize,
    pub makespan: (f64, f64),
    pub mean_jct: (f64, f64),
    pub p99_jct: (f64, f64),
    /// Mean JCT's gain over `<policy>+proportional`, percent, (deploy, replay); `None` where
    /// the comparison has no proportional run of the policy, or this is it.
    pub gain_over_proportional: Option<(f64, f64)>,
}

/// (deploy - replay) / replay, percent.
pub fn gap_pct((deploy, replay): (f64, f64)) -> f64 {
    (deploy - replay) / replay * 100.0
}

/// The rows of the comparison, in the deploy's scheme order.
pub fn rows(deployed: &ReplaySummary, replayed: &ReplaySummary) -> Vec<CompareRow> {
    let find = |s: &ReplaySummary, policy: &str, mech: &str| -> Option<Summary> {
        s.runs
            .iter()
            .map(|r| &r.summary)
            .find(|m| m.policy == policy && m.mechanism == mech)
            .cloned()
    };
    deployed
        .runs
        .iter()
        .filter_map(|d| {
            let d = &d.summary;
            let r = find(replayed, &d.policy, &d.mechanism)?;
            let gain = |s: &ReplaySummary, own: f64| {
                let base = find(s, &d.policy, "proportional")?;
                Some((base.mean_jct_s - own) / base.mean_jct_s * 100.0)
            };
            let gain_over_proportional = if d.mechanism == "proportional" {
                None
            } else {
                gain(deployed, d.mean_jct_s).zip(gain(replayed, r.mean_jct_s))
            };
            Some(CompareRow {
                policy: d.policy.clone(),
                mechanism: d.mechanism.clone(),
                jobs: d.jobs_measured,
                unfinished: d.unfinished,
                makespan: (d.makespan_s, r.makespan_s),
                mean_jct: (d.mean_jct_s, r.mean_jct_s),
                p99_jct: (d.p99_jct_s, r.p99_jct_s),
                gain_over_proportional,
            })
        })
        .collect()
}

fn cell(x: f64, prec: usize) -> String {
    if x.is_finite() {
        format!("{x:.prec$}")
    } else {
        "-".into()
    }
}

/// The comparison as a text table (seconds, gaps in percent).
pub fn render(rows: &[CompareRow]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<24} {:>5} {:>21} {:>21} {:>21} {:>15}",
        "scheme",
        "jobs",
        "makespan s (gap)",
        "mean JCT s (gap)",
        "p99 JCT s (gap)",
        "gain vs prop."
    );
    let _ = writeln!(
        o,
        "{:<24} {:>5} {:>21} {:>21} {:>21} {:>15}",
        "", "", "deploy / replay", "deploy / replay", "deploy / replay", "deploy / replay"
    );
    for r in rows {
        let pair =
            |p: (f64, f64)| format!("{} / {} ({:+.1}%)", cell(p.0, 0), cell(p.1, 0), gap_pct(p));
        let gain = r
            .gain_over_proportional
            .map_or("-".into(), |(d, p)| format!("{d:+.1}% / {p:+.1}%"));
        let jobs = if r.unfinished > 0 {
            format!("{}!", r.jobs)
        } else {
            r.jobs.to_string()
        };
        let _ = writeln!(
            o,
            "{:<24} {:>5} {:>21} {:>21} {:>21} {:>15}",
            format!("{}+{}", r.policy, r.mechanism),
            jobs,
            pair(r.makespan),
            pair(r.mean_jct),
            pair(r.p99_jct),
            gain
        );
    }
    if rows.iter().any(|r| r.unfinished > 0) {
        let _ = writeln!(
            o,
            "!: some jobs of the deploy did not finish (see the jobs table's failure column)"
        );
    }
    o
}

/// The comparison as a table: one row per scheme, nulls where a figure is undefined.
pub fn frame(rows: &[CompareRow]) -> Result<DataFrame, crate::replay::ReplayError> {
    let f = |get: fn(&CompareRow) -> f64| rows.iter().map(|r| finite(get(r))).collect::<Vec<_>>();
    let o = |get: fn(&CompareRow) -> Option<f64>| {
        rows.iter()
            .map(|r| get(r).and_then(finite))
            .collect::<Vec<_>>()
    };
    let text = |get: fn(&CompareRow) -> &str| rows.iter().map(get).collect::<Vec<_>>();
    DataFrame::new(
        rows.len(),
        vec![
            col("policy", text(|r| &r.policy)),
            col("mechanism", text(|r| &r.mechanism)),
            col(
                "jobs",
                rows.iter().map(|r| r.jobs as u64).collect::<Vec<_>>(),
            ),
            col(
                "unfinished",
                rows.iter().map(|r| r.unfinished as u64).collect::<Vec<_>>(),
            ),
            col("makespan_deploy_s", f(|r| r.makespan.0)),
            col("makespan_replay_s", f(|r| r.makespan.1)),
            col("makespan_gap_pct", f(|r| gap_pct(r.makespan))),
            col("mean_jct_deploy_s", f(|r| r.mean_jct.0)),
            col("mean_jct_replay_s", f(|r| r.mean_jct.1)),
            col("mean_jct_gap_pct", f(|r| gap_pct(r.mean_jct))),
            col("p99_jct_deploy_s", f(|r| r.p99_jct.0)),
            col("p99_jct_replay_s", f(|r| r.p99_jct.1)),
            col("p99_jct_gap_pct", f(|r| gap_pct(r.p99_jct))),
            col(
                "gain_deploy_pct",
                o(|r| r.gain_over_proportional.map(|g| g.0)),
            ),
            col(
                "gain_replay_pct",
                o(|r| r.gain_over_proportional.map(|g| g.1)),
            ),
        ],
    )
    .map_err(|e| crate::replay::ReplayError::Internal(format!("building the comparison: {e}")))
}

/// Writes the comparison as `<dir>/compare.csv` and `.parquet`.
pub fn write(rows: &[CompareRow], dir: &Path) -> Result<(), crate::replay::ReplayError> {
    std::fs::create_dir_all(dir).map_err(crate::replay::ReplayError::io(dir))?;
    write_table(&mut frame(rows)?, dir, "compare")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_relative_to_the_replay() {
        assert!((gap_pct((110.0, 100.0)) - 10.0).abs() < 1e-12);
        assert!((gap_pct((90.0, 100.0)) + 10.0).abs() < 1e-12);
        assert!(!gap_pct((1.0, 0.0)).is_finite(), "undefined, shown as -");
    }
}
