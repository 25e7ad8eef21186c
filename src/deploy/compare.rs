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
    /// The replay of the deploy, where its journal was there to make it.
    pub of_deploy: Option<OfDeploy>,
}

/// The replay of a deploy ([`super::replay_of_deploy`]): its figures, and what its journal
/// counted.
#[derive(Debug, Clone, PartialEq)]
pub struct OfDeploy {
    pub makespan_s: f64,
    pub mean_jct_s: f64,
    /// Rounds a job was started again in for its grant.
    pub restarts: usize,
    /// Jobs that finished a round later deployed than in the replay of the deploy.
    pub slips: usize,
}

impl CompareRow {
    /// The engine's part of the gap, percent of the replay, (makespan, mean JCT): the deploy
    /// against the replay of the deploy. With the matrices' part it sums to the whole gap.
    pub fn engine_gap_pct(&self) -> Option<(f64, f64)> {
        let o = self.of_deploy.as_ref()?;
        Some((
            part_pct(self.makespan.0, o.makespan_s, self.makespan.1),
            part_pct(self.mean_jct.0, o.mean_jct_s, self.mean_jct.1),
        ))
    }

    /// The matrices' part of the gap, percent of the replay, (makespan, mean JCT): the replay
    /// of the deploy against the replay on the matrices.
    pub fn matrix_gap_pct(&self) -> Option<(f64, f64)> {
        let o = self.of_deploy.as_ref()?;
        Some((
            part_pct(o.makespan_s, self.makespan.1, self.makespan.1),
            part_pct(o.mean_jct_s, self.mean_jct.1, self.mean_jct.1),
        ))
    }
}

/// (a - b) / replay, percent.
fn part_pct(a: f64, b: f64, replay: f64) -> f64 {
    (a - b) / replay * 100.0
}

/// (deploy - replay) / replay, percent.
pub fn gap_pct((deploy, replay): (f64, f64)) -> f64 {
    (deploy - replay) / replay * 100.0
}

/// The rows of the comparison, in the deploy's scheme order; `of_deploy` the replay of each
/// scheme's deploy, in the same order, where made.
pub fn rows(
    deployed: &ReplaySummary,
    replayed: &ReplaySummary,
    of_deploy: &[Option<OfDeploy>],
) -> Vec<CompareRow> {
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
        .enumerate()
        .filter_map(|(k, d)| {
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
                of_deploy: of_deploy.get(k).cloned().flatten(),
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
    if rows.iter().any(|r| r.of_deploy.is_some()) {
        o.push_str(&render_parts(rows));
    }
    o
}

/// The gap in two parts, a line per scheme: the engine's (the deploy against the replay of the
/// deploy) and the matrices' (the replay of the deploy against the replay).
fn render_parts(rows: &[CompareRow]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\nthe gap in two parts: the engine's (deploy vs. the replay at the rates the jobs ran \
         at) + the matrices' (that vs. the replay)"
    );
    let _ = writeln!(
        o,
        "{:<24} {:>24} {:>24} {:>9} {:>6}",
        "scheme", "makespan engine+matrices", "mean JCT engine+matrices", "restarts", "slips"
    );
    for r in rows {
        let (Some(e), Some(m), Some(of)) = (r.engine_gap_pct(), r.matrix_gap_pct(), &r.of_deploy)
        else {
            continue;
        };
        let parts = |e: f64, m: f64| format!("{e:+.1}% {m:+.1}%");
        let _ = writeln!(
            o,
            "{:<24} {:>24} {:>24} {:>9} {:>6}",
            format!("{}+{}", r.policy, r.mechanism),
            parts(e.0, m.0),
            parts(e.1, m.1),
            of.restarts,
            of.slips
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
            col(
                "makespan_replay_of_deploy_s",
                o(|r| r.of_deploy.as_ref().map(|d| d.makespan_s)),
            ),
            col(
                "mean_jct_replay_of_deploy_s",
                o(|r| r.of_deploy.as_ref().map(|d| d.mean_jct_s)),
            ),
            col(
                "engine_gap_makespan_pct",
                o(|r| r.engine_gap_pct().map(|g| g.0)),
            ),
            col(
                "engine_gap_mean_jct_pct",
                o(|r| r.engine_gap_pct().map(|g| g.1)),
            ),
            col(
                "matrix_gap_makespan_pct",
                o(|r| r.matrix_gap_pct().map(|g| g.0)),
            ),
            col(
                "matrix_gap_mean_jct_pct",
                o(|r| r.matrix_gap_pct().map(|g| g.1)),
            ),
            col(
                "restarts",
                (rows.iter())
                    .map(|r| r.of_deploy.as_ref().map(|d| d.restarts as u64))
                    .collect::<Vec<_>>(),
            ),
            col(
                "slips",
                (rows.iter())
                    .map(|r| r.of_deploy.as_ref().map(|d| d.slips as u64))
                    .collect::<Vec<_>>(),
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
    fn the_two_parts_of_a_gap_sum_to_it() {
        let row = CompareRow {
            policy: "fifo".into(),
            mechanism: "tune".into(),
            jobs: 4,
            unfinished: 0,
            makespan: (305.0, 285.0),
            mean_jct: (189.0, 172.0),
            p99_jct: (300.0, 280.0),
            gain_over_proportional: None,
            of_deploy: Some(OfDeploy {
                makespan_s: 300.0,
                mean_jct_s: 180.0,
                restarts: 1,
                slips: 2,
            }),
        };
        let (e, m) = (row.engine_gap_pct().unwrap(), row.matrix_gap_pct().unwrap());
        assert!((e.0 + m.0 - gap_pct(row.makespan)).abs() < 1e-9);
        assert!((e.1 + m.1 - gap_pct(row.mean_jct)).abs() < 1e-9);
        assert!((m.1 - 8.0 / 172.0 * 100.0).abs() < 1e-9);
        let text = render(std::slice::from_ref(&row));
        assert!(text.contains("the gap in two parts"), "{text}");
        assert!(text.contains("+1.8% +5.3%"), "{text}");
        assert!(text.contains("+5.2% +4.7%"), "{text}");
        let frame = frame(&[row]).unwrap();
        assert!(frame.column("engine_gap_mean_jct_pct").is_ok());
        assert!(frame.column("matrix_gap_makespan_pct").is_ok());
    }

    #[test]
    fn gaps_are_relative_to_the_replay() {
        assert!((gap_pct((110.0, 100.0)) - 10.0).abs() < 1e-12);
        assert!((gap_pct((90.0, 100.0)) + 10.0).abs() < 1e-12);
        assert!(!gap_pct((1.0, 0.0)).is_finite(), "undefined, shown as -");
    }
}
