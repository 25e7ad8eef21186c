//! Speed of the elastic policies' decisions: `cargo bench --bench elastic`.
//!
//! Two scenarios, each a snapshot of a busy cluster (every job arrived, most running, most past
//! their first epoch, the population warm from earlier decisions):
//! * ONES's: 64 GPUs (16 servers x 4 GPUs, 32 cores, 256 GB), 50 jobs;
//! * large: 1,024 GPUs (256 x 4), 1,000 jobs.
//!
//! Timed: one whole decision (60 generations, the default 60 s interval at ONES's one
//! generation a second; 16 + 60 x 48 + 16 fitness evaluations) and one fitness evaluation of a
//! decision (`Evolution::score_decision`, which also rebuilds the decision's job view). Before
//! the timed runs, each prints its fitness evaluations per second inside a decision.
//!
//! Also timed: one decision of every other policy (the gang schedulers, Optimus, Pollux's
//! NSGA-II, which runs fewer generations where the matrix is large) on the same snapshots.

use criterion::{Criterion, criterion_group, criterion_main};
use profiler::replay::cluster::{Cluster, ClusterSpec};
use profiler::replay::elastic::allocation::Allocation;
use profiler::replay::elastic::job::{BatchRule, Completion, ElasticJob, ElasticJobSpec};
use profiler::replay::elastic::model::efficiency::EfficiencyModel;
use profiler::replay::elastic::model::resources::attach_resources;
use profiler::replay::elastic::model::step_time::StepTimeModel;
use profiler::replay::elastic::model::{AppModel, AppModels};
use profiler::replay::elastic::policy::evolution::Evolution;
use profiler::replay::elastic::policy::{self, DecisionCtx, ElasticPolicy, joint, ones};
use profiler::replay::profile::ProfileSet;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

fn models() -> AppModels {
    let app = |name: &str, per_sample: f64, phi: f64| AppModel {
        name: name.into(),
        step_time: StepTimeModel {
            compute_s: 0.01,
            compute_s_per_sample: per_sample,
            sync_local_s: 0.01,
            sync_local_s_per_replica: 0.002,
            sync_node_s: 0.05,
            sync_node_s_per_replica: 0.01,
            gamma: 1.5,
        },
        efficiency: EfficiencyModel::constant(phi),
        max_local_batch: 256,
        min_local_batch: 1,
        accumulate_alone_above: None,
        resources: None,
    };
    let mut m = AppModels {
        apps: vec![
            app("cifar10", 2e-4, 500.0),
            app("bert", 4e-3, 100.0),
            app("imagenet", 1e-3, 2000.0),
        ],
    };
    attach_resources(&mut m, &ProfileSet::builtin_zoo());
    m
}

fn cluster(servers: u32) -> Cluster {
    let text = format!("[[group]]\ncount = {servers}\ngpus = 4\ncpus = 32\nmemory_gb = 256\n");
    ClusterSpec::from_toml(&text, Path::new("bench.toml"))
        .unwrap()
        .build()
        .unwrap()
}

fn jobs(n: usize) -> Vec<ElasticJob> {
    let apps = ["cifar10", "bert", "imagenet"];
    (0..n)
        .map(|i| {
            let base = [32u32, 64, 128][i % 3];
            let epoch = 10_000.0 + (i * 7919 % 40_000) as f64;
            ElasticJob::new(ElasticJobSpec {
                id: i as u64,
                name: format!("job-{i}"),
                app: apps[(i / 3) % 3].into(),
                arrival_s: 0.0,
                requested_gpus: 1 + (i % 4) as u32,
                base_batch: base,
                batch_rule: BatchRule::LinearScaling { max_scale: 16.0 },
                min_batch: base,
                max_batch: base * 16,
                epoch_samples: epoch,
                completion: Completion::Progress {
                    samples: epoch * (10 + i % 30) as f64,
                },
                origin: None,
            })
        })
        .collect()
}

/// A busy snapshot: a few decisions applied, every running job credited two epochs (so most
/// are past ONES's first-epoch protection and free to change).
fn snapshot(
    policy: &mut dyn ElasticPolicy,
    servers: u32,
    n: usize,
) -> (Cluster, AppModels, Vec<ElasticJob>) {
    let cl = cluster(servers);
    let m = models();
    let mut js = jobs(n);
    for _ in 0..3 {
        let ctx = DecisionCtx {
            now: 0.0,
            jobs: &js,
            cluster: &cl,
            models: &m,
            interval_s: 60.0,
            reconfiguration_s: 30.0,
        };
        let d: Vec<Option<Allocation>> = policy.decide(&ctx);
        for (j, a) in js.iter_mut().zip(d) {
            if let Some(a) = &a {
                j.samples += 2.0 * j.spec.epoch_samples;
                j.progress = (j.progress + 1.5 * j.spec.epoch_samples).min(0.9 * j.spec.work());
                j.run_s += 60.0;
                j.max_gpus_run = j.max_gpus_run.max(a.gpus());
                j.reconfigurations += 1;
            }
            j.allocation = a;
        }
    }
    (cl, m, js)
}

/// The timed decision's context: three decisions into the snapshot.
fn busy_ctx<'a>(cl: &'a Cluster, m: &'a AppModels, js: &'a [ElasticJob]) -> DecisionCtx<'a> {
    DecisionCtx {
        now: 180.0,
        jobs: js,
        cluster: cl,
        models: m,
        interval_s: 60.0,
        reconfiguration_s: 30.0,
    }
}

const SIZES: [(&str, u32, usize); 2] = [("64gpu-50jobs", 16, 50), ("1024gpu-1000jobs", 256, 1000)];

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("elastic");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    for variant in [ones::ONES, ones::PLUS, joint::JOINT] {
        for (label, servers, n) in SIZES {
            let mut policy = Evolution::new(variant, 1);
            let (cl, m, js) = snapshot(&mut policy, servers, n);
            let ctx = busy_ctx(&cl, &m, &js);
            let t = Instant::now();
            let d = policy.decide(&ctx);
            let s = t.elapsed().as_secs_f64();
            let evals = (2 * evolution_pop() + 60 * 3 * evolution_pop()) as f64;
            eprintln!(
                "{} {label}: one decision {:.3} s, {:.0} fitness evaluations/s in the search",
                variant.name,
                s,
                evals / s
            );
            g.bench_function(format!("{}/{label}/decision", variant.name), |b| {
                b.iter(|| black_box(policy.decide(black_box(&ctx))))
            });
            g.bench_function(format!("{}/{label}/fitness", variant.name), |b| {
                b.iter(|| black_box(policy.score_decision(black_box(&ctx), black_box(&d))))
            });
        }
    }
    for name in ["fifo", "srtf", "las", "tiresias", "optimus", "pollux"] {
        for (label, servers, n) in SIZES {
            let mut policy = policy::by_name(name, 1).expect("a registered policy");
            let (cl, m, js) = snapshot(policy.as_mut(), servers, n);
            let ctx = busy_ctx(&cl, &m, &js);
            g.bench_function(format!("{name}/{label}/decision"), |b| {
                b.iter(|| black_box(policy.decide(black_box(&ctx))))
            });
        }
    }
    g.finish();
}

fn evolution_pop() -> usize {
    profiler::replay::elastic::policy::evolution::POPULATION
}

criterion_group!(benches, bench);
criterion_main!(benches);
