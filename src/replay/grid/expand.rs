//! A grid's scenarios: the product of its axes in a fixed order (clusters, workloads, splits,
//! seeds, schemes; the last varies fastest), each with a stable index and a readable id, and
//! the [`ReplayOptions`] that replay it.
//!
//! A scenario is a deterministic function of its options (the synthetic workload is seeded by
//! the scenario's seed), so where and in which order scenarios run does not change results.

use super::super::workload::synthetic::SyntheticSpec;
use super::super::{ReplayOptions, WorkloadSpec};
use super::spec::{GridSpec, WorkloadAxis};

/// One point of the grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Position in the expansion (0-based); the summary's row order.
    pub index: usize,
    /// `cluster/load=4/split=20:70:10/seed=1/srtf+tune` (or `trace=FILE` for a trace).
    pub id: String,
    pub cluster: String,
    /// Synthetic arrival rate (jobs/hour), or `None` for a trace.
    pub jobs_per_hour: Option<f64>,
    /// The trace as written in the grid, or `None` for a synthetic load.
    pub trace: Option<String>,
    pub split: [f64; 3],
    pub seed: u64,
    pub policy: String,
    pub mechanism: String,
    // Positions on the cluster and workload axes, to build the options.
    cluster_i: usize,
    workload_i: usize,
}

fn split_label(s: &[f64; 3]) -> String {
    format!("{}:{}:{}", s[0], s[1], s[2])
}

/// Every scenario of `grid`, in expansion order (`index` = position).
pub fn scenarios(grid: &GridSpec) -> Vec<Scenario> {
    let mut out = Vec::with_capacity(grid.len());
    for (ci, c) in grid.clusters.iter().enumerate() {
        for (wi, w) in grid.workloads.iter().enumerate() {
            for split in &grid.splits {
                for &seed in &grid.seeds {
                    for (policy, mechanism) in &grid.schemes {
                        let (jobs_per_hour, trace, what) = match w {
                            WorkloadAxis::Load(x) => (Some(*x), None, format!("load={x}")),
                            WorkloadAxis::Trace { label, .. } => {
                                (None, Some(label.clone()), format!("trace={label}"))
                            }
                        };
                        out.push(Scenario {
                            index: out.len(),
                            id: format!(
                                "{}/{what}/split={}/seed={seed}/{policy}+{mechanism}",
                                c.label,
                                split_label(split)
                            ),
                            cluster: c.label.clone(),
                            jobs_per_hour,
                            trace,
                            split: *split,
                            seed,
                            policy: policy.clone(),
                            mechanism: mechanism.clone(),
                            cluster_i: ci,
                            workload_i: wi,
                        });
                    }
                }
            }
        }
    }
    out
}

/// The replay of one scenario: one scheme, no output directory (the grid writes one table).
pub fn options(grid: &GridSpec, s: &Scenario) -> ReplayOptions {
    let st = &grid.settings;
    let workload = match &grid.workloads[s.workload_i] {
        WorkloadAxis::Load(x) => WorkloadSpec::Synthetic(SyntheticSpec {
            jobs_per_hour: *x,
            duration: st.duration.clone(),
            gpu_demand: st.gpu_demand.clone(),
            split: s.split,
            seed: s.seed,
            max_jobs: st.jobs,
        }),
        WorkloadAxis::Trace { spec, .. } => spec.clone(),
    };
    ReplayOptions {
        cluster: grid.clusters[s.cluster_i].spec.clone(),
        profiles: st.profiles.clone(),
        workload,
        schemes: vec![(s.policy.clone(), s.mechanism.clone())],
        semantics: st.semantics,
        round_s: st.round_s,
        first_round_s: st.first_round_s,
        window: st.window,
        split: s.split,
        seed: s.seed,
        wide_jobs: st.wide_jobs,
        spread_penalty: None,
        record: None,
        max_rounds: ReplayOptions::default().max_rounds,
        horizon_s: st.horizon_s,
        out_dir: None,
        stream: false,
        // A grid's cells are many replays already; each is one scheme, with no verdict.
        draws: 0,
    }
}

/// The scenarios of array task `chunk_index` when each task runs `chunk` of them: a contiguous
/// range of indices (empty past the end).
pub fn chunk_range(total: usize, chunk: usize, chunk_index: usize) -> std::ops::Range<usize> {
    let chunk = chunk.max(1);
    let start = chunk_index.saturating_mul(chunk).min(total);
    start..start.saturating_add(chunk).min(total)
}

/// Array tasks needed for `total` scenarios, `chunk` per task.
pub fn chunk_count(total: usize, chunk: usize) -> usize {
    total.div_ceil(chunk.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The array's chunks cover every scenario exactly once, in order, none empty.
        #[test]
        fn chunks_partition_the_scenarios(total in 0usize..5000, chunk in 1usize..300) {
            let tasks = chunk_count(total, chunk);
            let mut next = 0;
            for i in 0..tasks {
                let r = chunk_range(total, chunk, i);
                prop_assert_eq!(r.start, next);
                prop_assert!(!r.is_empty() && r.len() <= chunk);
                next = r.end;
            }
            prop_assert_eq!(next, total);
            prop_assert!(chunk_range(total, chunk, tasks).is_empty());
            prop_assert!(chunk_range(total, chunk, usize::MAX).is_empty());
        }
    }

    #[test]
    fn expansion_order_and_ids() {
        let path = std::path::Path::new("g.toml");
        let grid = GridSpec::parse(
            "clusters = [\"synergy-1\", \"synergy-2\"]\nloads = [1.5, 3]\nsplits = [[1, 0, 0], [20, 70, 10]]\n\
             seeds = [7, 8]\nschemes = [\"fifo+tune\", \"las+opt\"]\n[settings]\njobs = 9\n",
            path,
        )
        .unwrap();
        let s = scenarios(&grid);
        assert_eq!(s.len(), 32);
        assert_eq!(s[0].id, "synergy-1/load=1.5/split=1:0:0/seed=7/fifo+tune");
        assert_eq!(s[1].id, "synergy-1/load=1.5/split=1:0:0/seed=7/las+opt");
        assert_eq!(s[2].id, "synergy-1/load=1.5/split=1:0:0/seed=8/fifo+tune");
        assert_eq!(s[31].id, "synergy-2/load=3/split=20:70:10/seed=8/las+opt");
        assert!(s.iter().enumerate().all(|(i, x)| x.index == i));
        let ids: std::collections::BTreeSet<_> = s.iter().map(|x| &x.id).collect();
        assert_eq!(ids.len(), 32);
        let o = options(&grid, &s[31]);
        assert_eq!(o.schemes, vec![("las".to_owned(), "opt".to_owned())]);
        assert_eq!((o.seed, o.split), (8, [20.0, 70.0, 10.0]));
        match o.workload {
            WorkloadSpec::Synthetic(w) => {
                assert_eq!((w.jobs_per_hour, w.seed, w.max_jobs), (3.0, 8, Some(9)));
                assert_eq!(w.split, [20.0, 70.0, 10.0]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(o.cluster.groups[0].count, 2);
    }
}
