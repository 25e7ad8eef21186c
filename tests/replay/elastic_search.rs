//! Property tests of the evolutionary search (ONES, its variants, the joint search): on random
//! jobs and clusters, driven by a small stepping loop of their own (progress = throughput x
//! statistical efficiency, a restart charged on every change), every decision is feasible, never
//! worse by the search's own fitness than its initial (repaired) population, within the caps
//! and once-per-epoch rule, and the same seed gives the same decisions.

use profiler::replay::cluster::{Cluster, ClusterSpec};
use profiler::replay::elastic::allocation::Allocation;
use profiler::replay::elastic::feasibility::check;
use profiler::replay::elastic::job::{BatchRule, Completion, ElasticJob, ElasticJobSpec};
use profiler::replay::elastic::model::efficiency::EfficiencyModel;
use profiler::replay::elastic::model::resources::attach_resources;
use profiler::replay::elastic::model::step_time::StepTimeModel;
use profiler::replay::elastic::model::{AppModel, AppModels};
use profiler::replay::elastic::policy::evolution::{Evolution, Variant};
use profiler::replay::elastic::policy::{DecisionCtx, ElasticPolicy, joint, ones};
use profiler::replay::profile::ProfileSet;
use proptest::prelude::*;
use std::path::Path;

const VARIANTS: [Variant; 9] = [
    ones::ONES,
    ones::PIN,
    ones::QUEUE,
    ones::MUTATE,
    ones::BATCH,
    ones::MEAN,
    ones::PLUS,
    joint::JOINT,
    joint::RESOURCES_ONLY,
];

fn models(resources: bool) -> AppModels {
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
    if resources {
        attach_resources(&mut m, &ProfileSet::builtin_zoo());
    }
    m
}

fn cluster(servers: u32, gpus: u32, cpus: f64) -> Cluster {
    let text = format!(
        "[[group]]\ncount = {servers}\ngpus = {gpus}\ncpus = {cpus}\nmemory_gb = {}\n",
        gpus * 60
    );
    ClusterSpec::from_toml(&text, Path::new("p.toml"))
        .unwrap()
        .build()
        .unwrap()
}

/// Deterministic pseudo-random jobs from a seed (splitmix64).
fn jobs(seed: u64, n: usize) -> Vec<ElasticJob> {
    let mut x = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut next = |k: u64| {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % k
    };
    let apps = ["cifar10", "bert", "imagenet"];
    let mut t = 0.0;
    (0..n)
        .map(|i| {
            t += next(60) as f64;
            let base = [16u32, 32, 64, 128][next(4) as usize];
            let scale = [2.0, 4.0, 16.0][next(3) as usize];
            let rule = match next(4) {
                0 => BatchRule::Fixed(base * 2),
                1 => BatchRule::Free,
                _ => BatchRule::LinearScaling { max_scale: scale },
            };
            let epoch = (10_000 + next(40_000)) as f64;
            ElasticJob::new(ElasticJobSpec {
                id: i as u64,
                name: format!("job-{i}"),
                app: apps[next(3) as usize].into(),
                arrival_s: t,
                requested_gpus: 1 + next(4) as u32,
                base_batch: base,
                batch_rule: rule,
                min_batch: base,
                max_batch: (base as f64 * scale) as u32,
                epoch_samples: epoch,
                completion: Completion::Progress {
                    samples: epoch * (3 + next(20)) as f64,
                },
                origin: None,
            })
        })
        .collect()
}

/// One run: every decision with the jobs it was made for.
type Run = Vec<(Vec<ElasticJob>, Vec<Option<Allocation>>)>;

/// Steps `jobs` on `cluster` under `policy`: a decision every `interval` s, progress at the
/// model's goodput of the allocation, 30 s without progress after every change.
fn simulate(
    policy: &mut Evolution,
    cl: &Cluster,
    m: &AppModels,
    mut all: Vec<ElasticJob>,
    decisions: usize,
    mut each: impl FnMut(&Evolution, &DecisionCtx, &[Option<Allocation>]),
) -> Run {
    let interval = 60.0;
    let reconf = 30.0;
    let mut out = Vec::new();
    let mut now = 0.0;
    for _ in 0..decisions {
        let idx: Vec<usize> = (0..all.len())
            .filter(|&i| all[i].spec.arrival_s <= now && all[i].finish_s.is_none())
            .collect();
        if idx.is_empty() && all.iter().all(|j| j.finish_s.is_some()) {
            break;
        }
        let active: Vec<ElasticJob> = idx.iter().map(|&i| all[i].clone()).collect();
        let ctx = DecisionCtx {
            now,
            jobs: &active,
            cluster: cl,
            models: m,
            interval_s: interval,
            reconfiguration_s: reconf,
        };
        let d = policy.decide(&ctx);
        each(policy, &ctx, &d);
        for (&i, a) in idx.iter().zip(&d) {
            let j = &mut all[i];
            let changed = match (&j.allocation, a) {
                (None, None) => false,
                (Some(x), Some(y)) => !x.same_placement(y),
                _ => true,
            };
            if changed {
                j.reconfigurations += 1;
                j.samples_at_last_change = j.samples;
                j.busy_until_s = now + reconf;
            }
            j.allocation = a.clone();
            if let Some(a) = a {
                j.first_start_s.get_or_insert(now);
                let app = m.get(&j.spec.app).unwrap();
                let x = app.throughput_with(
                    a.gpus(),
                    a.nodes(),
                    a.local_batch(),
                    a.cpus_per_gpu,
                    a.mem_gb_per_gpu,
                );
                let e = app.efficiency.efficiency(
                    a.global_batch as f64,
                    j.spec.base_batch as f64,
                    j.progress_frac(),
                );
                let run = (now + interval - j.busy_until_s.max(now)).max(0.0);
                j.samples += x * run;
                j.progress = (j.progress + x * e * run).min(j.spec.work());
                j.run_s += interval;
                j.attained_gpu_s += interval * a.gpus() as f64;
                if j.progress >= j.spec.work() {
                    j.finish_s = Some(now + interval);
                    j.allocation = None;
                }
            }
        }
        out.push((active, d));
        now += interval;
    }
    out
}

fn executed(j: &ElasticJob) -> bool {
    j.samples >= j.spec.epoch_samples
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn search_is_feasible_no_worse_than_its_start_capped_and_deterministic(
        seed in 0u64..10_000,
        v in 0usize..VARIANTS.len(),
        servers in 1u32..5,
        gpus in prop::sample::select(vec![1u32, 2, 4, 8]),
        cpus_per_gpu in prop::sample::select(vec![2.0f64, 3.0, 6.0]),
        n in 1usize..14,
    ) {
        let variant = VARIANTS[v];
        let cl = cluster(servers, gpus, cpus_per_gpu * gpus as f64);
        let m = models(variant.resources || seed % 2 == 0);
        let all = jobs(seed, n);
        let mut most: std::collections::BTreeMap<u64, u32> = Default::default();
        let mut failures: Vec<String> = Vec::new();
        let mut policy = Evolution::new(variant, seed).with_generations(8);
        let run = simulate(&mut policy, &cl, &m, all.clone(), 25, |p, ctx, d| {
            if let Err(e) = check(ctx.jobs, d, ctx.cluster) {
                failures.push(format!("infeasible at {}: {e}", ctx.now));
            }
            // ONES's gate: the search's best is applied whole, or, when it would change a
            // running job within its first epoch since its last change, only its starts of
            // queued jobs on free GPUs.
            let searched = p.last_best();
            if d != searched {
                let blocked = ctx.jobs.iter().zip(searched).any(|(j, a)| {
                    j.allocation.as_ref().is_some_and(|old| {
                        a.as_ref().is_none_or(|a| !a.same_placement(old))
                    }) && j.epochs_since_change() < 1.0
                });
                if !variant.global_gate || !blocked {
                    failures.push(format!("at {}: decision differs from the search's best", ctx.now));
                }
                for ((j, a), s) in ctx.jobs.iter().zip(d).zip(searched) {
                    let ok = match &j.allocation {
                        Some(_) => a == &j.allocation,
                        None => a.is_none() || a == s,
                    };
                    if !ok {
                        failures.push(format!("at {}: job {} gated wrongly", ctx.now, j.spec.id));
                    }
                }
            }
            let best = p.score_decision(ctx, searched);
            let start = p
                .last_initial()
                .iter()
                .map(|i| p.score_decision(ctx, i))
                .fold(f64::INFINITY, f64::min);
            if best > start * (1.0 + 1e-9) + 1e-9 {
                failures.push(format!("at {}: fitness {best} worse than initial {start}", ctx.now));
            }
            for (j, a) in ctx.jobs.iter().zip(d) {
                let n = a.as_ref().map_or(0, |a| a.gpus());
                let live = j.allocation.as_ref().map_or(0, |a| a.gpus());
                // Once per epoch: a running job's placement changes only after a full epoch
                // (its batch, cores and GB per GPU are applied live).
                let moved = match (&j.allocation, a) {
                    (Some(old), Some(new)) => !old.same_placement(new),
                    (old, new) => old.is_some() != new.is_some(),
                };
                if live > 0 && j.epochs_since_change() < 1.0 && moved {
                    failures.push(format!("job {} changed within an epoch", j.spec.id));
                }
                // New jobs run on one GPU; a job at most doubles the most it has held.
                if !executed(j) && n > live.max(1) {
                    failures.push(format!("new job {} got {n} GPUs", j.spec.id));
                }
                let held = most.entry(j.spec.id).or_insert(0);
                if n > (2 * *held).max(1) && n > live {
                    failures.push(format!("job {} jumped from at most {held} to {n} GPUs", j.spec.id));
                }
                *held = (*held).max(n);
            }
        });
        prop_assert!(failures.is_empty(), "{}: {failures:?}", variant.name);
        prop_assert!(!run.is_empty());
        // Same seed, same decisions.
        let mut again = Evolution::new(variant, seed).with_generations(8);
        let rerun = simulate(&mut again, &cl, &m, all, 25, |_, _, _| {});
        let a: Vec<_> = run.iter().map(|r| &r.1).collect();
        let b: Vec<_> = rerun.iter().map(|r| &r.1).collect();
        prop_assert_eq!(a, b);
    }
}

/// The ONES variants actually use the GPUs: on an idle cluster with more work than GPUs, every
/// GPU is allocated after the first decisions, and some job grows beyond one GPU.
#[test]
fn ones_fills_the_cluster_and_grows_jobs() {
    let cl = cluster(4, 4, 24.0);
    let m = models(false);
    let all = jobs(3, 30);
    let mut p = Evolution::new(ones::ONES, 1);
    let mut used = Vec::new();
    let mut widest = 0;
    simulate(&mut p, &cl, &m, all, 60, |_, _, d| {
        let g: u32 = d.iter().flatten().map(|a| a.gpus()).sum();
        used.push(g);
        widest = widest.max(d.iter().flatten().map(|a| a.gpus()).max().unwrap_or(0));
    });
    assert!(used.contains(&16), "{used:?}");
    assert!(widest >= 2, "no job grew: {used:?}");
}

/// Different seeds may decide differently (the search is random), and usually do.
#[test]
fn seeds_change_the_search() {
    let cl = cluster(4, 4, 24.0);
    let m = models(false);
    let all = jobs(5, 25);
    let run = |seed| {
        let mut p = Evolution::new(ones::ONES, seed);
        simulate(&mut p, &cl, &m, all.clone(), 40, |_, _, _| {})
            .into_iter()
            .map(|r| r.1)
            .collect::<Vec<_>>()
    };
    let a = run(1);
    assert_eq!(a, run(1));
    assert!((2..6).any(|s| run(s) != a));
}

/// ONES's scenario: the first 50 jobs of trace_1.csv (by arrival) and the calibrated models.
pub fn ones_scenario() -> (Vec<ElasticJobSpec>, AppModels) {
    use profiler::replay::elastic::experiment::{ElasticTrace, TraceKind, load_trace};
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let trace = ElasticTrace {
        kind: TraceKind::Ones,
        path: root.join("workloads/traces/ones/trace_1.csv"),
    };
    let (mut jobs, models) = load_trace(&trace).unwrap();
    jobs.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s).then(a.id.cmp(&b.id)));
    jobs.truncate(50);
    (jobs, models)
}

/// The figures of docs/findings/elastic-results.md ("Improvements over ONES", "Joint batch x CPU
/// x memory search"): `cargo test --test replay -- --ignored elastic_search_tables --nocapture`.
/// ONES's scenario (first 50 jobs of trace_1.csv on ones-64) for every ONES variant; then the
/// same jobs, with CPU/memory models from the zoo matrices, on ones-64 and on half its cores.
#[test]
#[ignore]
fn elastic_search_tables() {
    use profiler::replay::elastic::engine::EngineConfig;
    use profiler::replay::elastic::experiment::{ElasticOptions, render, run};
    let (jobs, models) = ones_scenario();
    let opts = |cluster: ClusterSpec, policies: &[&str], versus: &str| ElasticOptions {
        cluster,
        policies: policies.iter().map(|p| p.to_string()).collect(),
        first_seed: 0,
        seeds: 5,
        engine: EngineConfig::default(),
        versus: vec![versus.into()],
        out_dir: None,
    };
    let ones64 = ClusterSpec::builtin("ones-64").unwrap();
    let variants = [
        "ones",
        "ones+pin",
        "ones+queue",
        "ones+mutate",
        "ones+batch",
        "ones+mean",
        "ones-plus",
    ];
    let e = run(
        &opts(ones64.clone(), &variants, "ones"),
        &jobs,
        &models,
        "ones",
    )
    .unwrap();
    println!("{}", render(&e));
    let mut with = models.clone();
    let left = attach_resources(&mut with, &ProfileSet::builtin_zoo());
    println!("without a matrix: {left:?}");
    let joint = ["ones-plus", "pollux", "joint-resources", "joint"];
    let scarce = ClusterSpec::resolve(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("workloads/clusters/ones-64-cpu-scarce.toml")
            .to_str()
            .unwrap(),
    )
    .unwrap();
    for cluster in [ones64, scarce] {
        let e = run(
            &opts(cluster, &joint, "ones-plus"),
            &jobs,
            &with,
            "ones+matrices",
        )
        .unwrap();
        println!("{}", render(&e));
    }
}
