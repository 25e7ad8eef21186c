//! Replay speed: `cargo bench --bench replay`.
//!
//! * Synergy's default scenario: 128 GPUs (16 x 8, 24 CPUs, 500 GB), 9 jobs/hour, one-GPU jobs,
//!   split 20/70/10, replayed until jobs 4000..4999 finish; FIFO with proportional, tune, opt.
//! * A 100,000-job synthetic trace on 1,024 GPUs (128 servers), load scaled with the cluster
//!   (72 jobs/hour), FIFO with proportional and tune.
//! * The full Philly job list (`../shared/reference/philly/philly_jobs.csv`, 82,248 jobs, wide
//!   jobs spanning servers) on 128 and on 2,560 GPUs, FIFO + tune (skipped with a message where
//!   the file is absent).
//! * With `REPLAY_BENCH_MILLION=1` only (a run takes a minute or two): 1,000,000 synthetic jobs on
//!   10,240 GPUs (1,280 servers, 720 jobs/hour), FIFO + tune, jobs streamed to a temporary
//!   directory as they finish.
//!
//! Before the timed runs, each scenario is replayed once and its decision time per round
//! (policy + mechanism) printed.

use criterion::{Criterion, criterion_group, criterion_main};
use profiler::replay::cluster::ClusterSpec;
use profiler::replay::workload::synthetic::SyntheticSpec;
use profiler::replay::{ReplayOptions, WorkloadSpec, run};
use std::hint::black_box;
use std::time::Duration;

fn default_scenario(mech: &str) -> ReplayOptions {
    ReplayOptions {
        cluster: ClusterSpec::synergy(16),
        workload: WorkloadSpec::Synthetic(SyntheticSpec {
            jobs_per_hour: 9.0,
            ..Default::default()
        }),
        schemes: vec![("fifo".into(), mech.into())],
        window: Some((4000, 4999)),
        ..Default::default()
    }
}

/// FIFO over `jobs` synthetic jobs arriving at `jobs_per_hour` on `servers` Synergy servers.
fn synthetic(servers: u32, jobs_per_hour: f64, jobs: u64, mech: &str) -> ReplayOptions {
    ReplayOptions {
        cluster: ClusterSpec::synergy(servers),
        workload: WorkloadSpec::Synthetic(SyntheticSpec {
            jobs_per_hour,
            max_jobs: Some(jobs),
            ..Default::default()
        }),
        schemes: vec![("fifo".into(), mech.into())],
        ..Default::default()
    }
}

fn big_trace(mech: &str) -> ReplayOptions {
    synthetic(128, 72.0, 100_000, mech)
}

fn philly(servers: u32) -> Option<ReplayOptions> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/reference/philly/philly_jobs.csv");
    if !path.exists() {
        eprintln!(
            "skipping the Philly benchmarks: {} is absent",
            path.display()
        );
        return None;
    }
    Some(ReplayOptions {
        cluster: ClusterSpec::synergy(servers),
        workload: WorkloadSpec::PhillyCsv(path),
        schemes: vec![("fifo".into(), "tune".into())],
        ..Default::default()
    })
}

fn million(out: &std::path::Path) -> ReplayOptions {
    ReplayOptions {
        out_dir: Some(out.to_owned()),
        stream: true,
        ..synthetic(1280, 720.0, 1_000_000, "tune")
    }
}

fn describe(name: &str, opts: &ReplayOptions) {
    let out = run(opts).expect("replay runs");
    let s = &out.runs[0].summary;
    eprintln!(
        "{name}: {} rounds, {:.3} s wall, decision per round mean {:.4} ms, max {:.3} ms, {} jobs measured, mean JCT {:.2} h{}",
        s.rounds,
        s.wall_s,
        s.mean_decision_ms,
        s.max_decision_ms,
        s.jobs_measured,
        s.mean_jct_s / 3600.0,
        s.lp_rounding_ratio.map_or(String::new(), |x| format!(
            ", opt rounding {:.1}% of LP bound",
            x * 100.0
        ))
    );
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("synergy_default_128gpu_window4000_4999");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    for mech in ["proportional", "tune", "opt"] {
        let opts = default_scenario(mech);
        describe(&format!("default/{mech}"), &opts);
        g.bench_function(mech, |b| {
            b.iter(|| black_box(run(&opts).expect("replay runs")))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("trace_100k_jobs_1024gpu");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(10));
    for mech in ["proportional", "tune"] {
        let opts = big_trace(mech);
        describe(&format!("100k/{mech}"), &opts);
        g.bench_function(mech, |b| {
            b.iter(|| black_box(run(&opts).expect("replay runs")))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("philly_full_list_fifo_tune");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(10));
    for (gpus, servers) in [(128, 16), (2560, 320)] {
        if let Some(opts) = philly(servers) {
            describe(&format!("philly/{gpus}gpu"), &opts);
            g.bench_function(format!("{gpus}gpu"), |b| {
                b.iter(|| black_box(run(&opts).expect("replay runs")))
            });
        }
    }
    g.finish();

    if std::env::var_os("REPLAY_BENCH_MILLION").is_none() {
        eprintln!("skipping 1,000,000 jobs on 10,240 GPUs: set REPLAY_BENCH_MILLION=1 to run it");
        return;
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let opts = million(dir.path());
    describe("1M/tune", &opts);
    let mut g = c.benchmark_group("synthetic_1m_jobs_10240gpu");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(60));
    g.bench_function("tune", |b| {
        b.iter(|| black_box(run(&opts).expect("replay runs")))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
