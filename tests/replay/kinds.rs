//! Heterogeneous clusters: two machine kinds, a matrix per model per kind, each job run at the
//! rate of its model's matrix of the kind of server it is placed on.

use profiler::replay::cluster::{ClusterSpec, KindPlacement};
use profiler::replay::{ReplayOptions, WorkloadSpec, run};
use std::path::Path;

const GB10: u64 = 10 << 30;

/// A matrix of `model` measured on machine kind `kind`: `rate` samples/s per GPU at every
/// point (batch 1, so a trace's iterations are samples).
fn matrix(dir: &Path, model: &str, kind: &str, rate: f64) {
    let header = format!(
        r#"{{"kind":"profiler-matrix","schema_version":1,"job":{{"name":"{model}-{kind}","model":"{model}","gpus":1,"batch_size_per_gpu":1}},"machine":{{"hostname":"{kind}-1","cpus":8,"memory_bytes":1,"kernel":"6.1","cgroup":"v2","gpus":[],"kind":"{kind}"}},"axes":{{"cpu":[1.0,2.0],"memory_bytes":[{GB10}]}},"created_unix_s":0}}"#
    );
    let cell = |cpu: f64| {
        format!(
            r#"{{"cpu":{cpu:.1},"memory_bytes":{GB10},"source":"measured","throughput":{{"samples_per_s":{rate},"ci95_low":{rate},"ci95_high":{rate},"windows":1,"measured_s":1.0}},"wall_s":1.0}}"#
        )
    };
    let text = format!("{header}\n{}\n{}\n", cell(1.0), cell(2.0));
    std::fs::write(dir.join(format!("{model}-{kind}.matrix.jsonl")), text).unwrap();
}

/// One server of each kind, fast first; one GPU, 2 cores and 20 GB each.
fn cluster(placement: KindPlacement, fallback: Option<&str>) -> ClusterSpec {
    let mut text = String::new();
    for kind in ["fast", "slow"] {
        text.push_str(&format!(
            "[[group]]\ncount = 1\ngpus = 1\ncpus = 2\nmemory_gb = 20\nmachine_kind = \"{kind}\"\n"
        ));
    }
    let mut spec = ClusterSpec::from_toml(&text, Path::new("two-kinds.toml")).unwrap();
    spec.kind_placement = placement;
    spec.kind_fallback = fallback.map(str::to_string);
    spec
}

/// `cpu-bound` runs twice as fast on the fast kind; `indifferent` the same on both.
fn profiles(dir: &Path) {
    matrix(dir, "cpu-bound", "fast", 200.0);
    matrix(dir, "cpu-bound", "slow", 100.0);
    matrix(dir, "indifferent", "fast", 100.0);
    matrix(dir, "indifferent", "slow", 100.0);
}

fn replay(dir: &Path, cluster: ClusterSpec) -> Result<Vec<(u64, f64)>, String> {
    let trace = dir.join("trace.csv");
    // The indifferent job first in FIFO order: placed first, it takes the server it is sent to.
    std::fs::write(&trace, "0,indifferent,0.0,3000,1\n1,cpu-bound,0.0,6000,1\n").unwrap();
    let opts = ReplayOptions {
        cluster,
        profiles: Some(dir.to_owned()),
        workload: WorkloadSpec::SynergyCsv(trace),
        round_s: 60.0,
        ..ReplayOptions::default()
    };
    let summary = run(&opts).map_err(|e| e.to_string())?;
    Ok((summary.runs[0].jobs.iter())
        .map(|j| (j.id, j.jct_s.expect("finished")))
        .collect())
}

#[test]
fn each_job_runs_at_the_rate_of_the_kind_it_is_placed_on() {
    let dir = tempfile::tempdir().unwrap();
    profiles(dir.path());
    // By kind: the fast kind runs models 1.41 times faster on average (the geometric mean of
    // 2 and 1); the CPU-bound job gains 2 there (advantage 1.41 against 1 on the slow kind),
    // the indifferent one 1 (0.71 against 1). So the indifferent job goes to the slow server
    // and finishes 3,000 samples at 100/s; the CPU-bound one to the fast, 6,000 at 200/s.
    let by_kind = replay(dir.path(), cluster(KindPlacement::ByKind, None)).unwrap();
    assert_eq!(by_kind.len(), 2);
    assert!((by_kind[0].1 - 3000.0 / 100.0).abs() < 1e-6, "{by_kind:?}");
    assert!((by_kind[1].1 - 6000.0 / 200.0).abs() < 1e-6, "{by_kind:?}");
    // Ignoring kinds, best fit sends the first job to the first server (fast, where it runs at
    // 100/s as on slow) and the CPU-bound one to the slow server: 6,000 at 100/s.
    let any = replay(dir.path(), cluster(KindPlacement::Any, None)).unwrap();
    assert!((any[0].1 - 3000.0 / 100.0).abs() < 1e-6, "{any:?}");
    assert!((any[1].1 - 6000.0 / 100.0).abs() < 1e-6, "{any:?}");
}

#[test]
fn a_model_with_no_matrix_of_a_kind_is_an_error_unless_a_fallback_is_named() {
    let dir = tempfile::tempdir().unwrap();
    profiles(dir.path());
    std::fs::remove_file(dir.path().join("cpu-bound-slow.matrix.jsonl")).unwrap();
    let e = replay(dir.path(), cluster(KindPlacement::ByKind, None)).unwrap_err();
    assert!(
        e.contains("cpu-bound") && e.contains("machine kind slow") && e.contains("fast"),
        "{e}"
    );
    // With the fast kind's matrix standing in, the CPU-bound job runs at 200/s anywhere.
    let jobs = replay(dir.path(), cluster(KindPlacement::Any, Some("fast"))).unwrap();
    assert!((jobs[1].1 - 6000.0 / 200.0).abs() < 1e-6, "{jobs:?}");
}

#[test]
fn matrices_of_several_kinds_need_a_cluster_that_names_kinds() {
    let dir = tempfile::tempdir().unwrap();
    profiles(dir.path());
    let plain = ClusterSpec::from_toml(
        "[[group]]\ncount = 2\ngpus = 1\ncpus = 2\nmemory_gb = 20\n",
        Path::new("plain.toml"),
    )
    .unwrap();
    let e = replay(dir.path(), plain).unwrap_err();
    assert!(
        e.contains("machine_kind") && e.contains("fast, slow"),
        "{e}"
    );
    // Groups must all name a kind, or none.
    let e = ClusterSpec::from_toml(
        "[[group]]\ncount = 1\ngpus = 1\ncpus = 2\nmemory_gb = 20\nmachine_kind = \"fast\"\n\
         [[group]]\ncount = 1\ngpus = 1\ncpus = 2\nmemory_gb = 20\n",
        Path::new("half.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("half.toml:7") && e.contains("every group"),
        "{e}"
    );
}
