//! Integration tests of `profiler replay` (one test binary).

use profiler::replay::cluster::ClusterSpec;
#[allow(unused_imports)]
use profiler::replay::engine::RoundRow;
use profiler::replay::engine::{EngineConfig, JobState, simulate};
use profiler::replay::job::JobSpec;
use profiler::replay::mechanism::{self, Placement};
use profiler::replay::profile::{ProfileSet, Semantics};
use profiler::replay::workload::synthetic::{DurationDist, Synthetic, SyntheticSpec};
use profiler::replay::{ReplayError, ReplayOptions, WorkloadSpec, policy, run, zoo};
use std::path::{Path, PathBuf};

const REFERENCE: &str = "/work/shared/reference";

fn reference(p: &str) -> Option<PathBuf> {
    let p = Path::new(REFERENCE).join(p);
    p.exists().then_some(p)
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/replay")
        .join(name)
}

/// Regenerates `matrices/zoo*/` from Synergy's tables: `cargo test --test replay -- --ignored zoo_generate`.
#[test]
#[ignore]
fn zoo_generate() {
    let m = reference("synergy/model_zoo_matrices.csv").expect("reference data");
    let s = reference("synergy/model_zoo_scalars.csv").expect("reference data");
    for (shape, matrix) in zoo::convert(&m, &s).unwrap() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(zoo::shape_dir(shape));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{}.matrix.jsonl", matrix.header.job.model));
        std::fs::write(path, zoo::to_jsonl(&matrix)).unwrap();
    }
}

#[test]
fn zoo_files_match_converter_and_best_cases() {
    let (Some(m), Some(s)) = (
        reference("synergy/model_zoo_matrices.csv"),
        reference("synergy/model_zoo_scalars.csv"),
    ) else {
        eprintln!("reference data absent; skipped");
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (shape, matrix) in zoo::convert(&m, &s).unwrap() {
        let path = root
            .join(zoo::shape_dir(shape))
            .join(format!("{}.matrix.jsonl", matrix.header.job.model));
        let committed = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            committed,
            zoo::to_jsonl(&matrix),
            "{} is stale; rerun zoo_generate",
            path.display()
        );
        // The files load with the project's own matrix reader.
        profiler::matrix::load_matrix(&path).unwrap();
    }
    let zoo = ProfileSet::builtin_zoo();
    let r18 = &zoo.profiles[zoo.lookup("res18").unwrap()];
    assert_eq!((r18.best_cpu, r18.best_mem), (9.0, 62.5));
    // 2.4 x 512 / 0.64 samples/s at the best case; 1.0 x 512 / 0.64 at the proportional share.
    assert!((r18.best_tput - 2.4 * 512.0 / 0.64).abs() < 1e-6);
    assert!((r18.per_gpu(3.0, 62.5, Semantics::Exact) - 800.0).abs() < 1e-6);
    // Interpolation halfway between 3 and 4 cores (1.0 and 1.3).
    assert!((r18.per_gpu(3.5, 62.5, Semantics::Exact) - 1.15 * 800.0).abs() < 1e-6);
    assert!((r18.per_gpu(3.5, 62.5, Semantics::Synergy) - 800.0).abs() < 1e-6);
    let alex = &zoo.profiles[zoo.lookup("alexnet").unwrap()];
    assert_eq!((alex.best_cpu, alex.best_mem), (12.0, 125.0));
}

fn deploy(trace: &str, pol: &str, sem: Semantics) -> Option<Vec<profiler::replay::RunResult>> {
    let path = reference(&format!("synergy/{trace}"))?;
    let opts = ReplayOptions {
        cluster: ClusterSpec::synergy(4),
        workload: WorkloadSpec::SynergyCsv(path),
        schemes: ["proportional", "tune", "opt"]
            .iter()
            .map(|m| (pol.to_owned(), m.to_string()))
            .collect(),
        semantics: sem,
        ..Default::default()
    };
    Some(run(&opts).unwrap().runs)
}

#[test]
fn deploy_static_fifo_makespan_tune_beats_proportional() {
    for sem in [Semantics::Exact, Semantics::Synergy] {
        let Some(r) = deploy("deploy_static_100job.csv", "fifo", sem) else {
            return;
        };
        let (p, t, o) = (&r[0].summary, &r[1].summary, &r[2].summary);
        assert_eq!(p.jobs_measured, 100);
        let speedup = p.makespan_s / t.makespan_s;
        eprintln!(
            "{sem:?} makespan h: prop {:.2} tune {:.2} opt {:.2}",
            p.makespan_s / 3600.0,
            t.makespan_s / 3600.0,
            o.makespan_s / 3600.0
        );
        assert!(
            (1.2..1.8).contains(&speedup),
            "tune makespan speed-up {speedup}"
        );
        assert!(
            o.makespan_s <= t.makespan_s * 1.02,
            "opt {} vs tune {}",
            o.makespan_s,
            t.makespan_s
        );
    }
}

#[test]
fn deploy_dynamic_srtf_jct_tune_beats_proportional() {
    for sem in [Semantics::Exact, Semantics::Synergy] {
        let Some(r) = deploy("deploy_dynamic_100job.csv", "srtf", sem) else {
            return;
        };
        let (p, t, o) = (&r[0].summary, &r[1].summary, &r[2].summary);
        eprintln!(
            "{sem:?} mean/p99 JCT h: prop {:.2}/{:.2} tune {:.2}/{:.2} opt {:.2}/{:.2}",
            p.mean_jct_s / 3600.0,
            p.p99_jct_s / 3600.0,
            t.mean_jct_s / 3600.0,
            t.p99_jct_s / 3600.0,
            o.mean_jct_s / 3600.0,
            o.p99_jct_s / 3600.0
        );
        assert!(
            p.mean_jct_s / t.mean_jct_s > 1.2,
            "mean JCT ratio {}",
            p.mean_jct_s / t.mean_jct_s
        );
        assert!(
            p.p99_jct_s / t.p99_jct_s > 1.3,
            "p99 JCT ratio {}",
            p.p99_jct_s / t.p99_jct_s
        );
        assert!(o.mean_jct_s <= t.mean_jct_s * 1.05);
    }
}
