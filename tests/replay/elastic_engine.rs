//! The elastic engine, one decision at a time: placements and progress after a decision for
//! each baseline, restarts charged once per change, exact completion times, noise determinism,
//! feasibility of every registered policy on random jobs, and the CLI's errors.
//!
//! The cluster: 2 servers x (4 GPUs, 16 cores, 64 GB). The hand-made application runs 100
//! samples/s per GPU at any batch and on any servers, with statistical efficiency 1, so every
//! figure below can be computed by hand.

use profiler::replay::cluster::{Cluster, ClusterSpec};
use profiler::replay::elastic::allocation::Allocation;
use profiler::replay::elastic::engine::{ElasticReplay, EngineConfig, noise_factor};
use profiler::replay::elastic::feasibility::check;
use profiler::replay::elastic::job::{BatchRule, Completion, ElasticJob, ElasticJobSpec};
use profiler::replay::elastic::model::efficiency::EfficiencyModel;
use profiler::replay::elastic::model::step_time::StepTimeModel;
use profiler::replay::elastic::model::{AppModel, AppModels};
use profiler::replay::elastic::policy::{self, DecisionCtx, ElasticPolicy};
use proptest::prelude::*;
use std::path::Path;

fn two_servers() -> Cluster {
    let toml = "name = \"two\"\n[[group]]\ncount = 2\ngpus = 4\ncpus = 16\nmemory_gb = 64\n";
    ClusterSpec::from_toml(toml, Path::new("two.toml"))
        .unwrap()
        .build()
        .unwrap()
}

/// 100 samples/s per GPU whatever the batch, no synchronisation cost, efficiency 1.
fn linear_app() -> AppModels {
    AppModels {
        apps: vec![AppModel {
            name: "lin".into(),
            step_time: StepTimeModel {
                compute_s: 0.0,
                compute_s_per_sample: 0.01,
                sync_local_s: 0.0,
                sync_local_s_per_replica: 0.0,
                sync_node_s: 0.0,
                sync_node_s_per_replica: 0.0,
                gamma: 1.0,
            },
            efficiency: EfficiencyModel { phi: vec![] },
            max_local_batch: 64,
            min_local_batch: 1,
            accumulate_alone_above: None,
            resources: None,
        }],
    }
}

/// A job of the linear app: base batch 32 per GPU, linear scaling up to 8x.
fn job(id: u64, arrival_s: f64, gpus: u32, work: f64) -> ElasticJobSpec {
    ElasticJobSpec {
        id,
        name: format!("j{id}"),
        app: "lin".into(),
        arrival_s,
        requested_gpus: gpus,
        base_batch: 32,
        batch_rule: BatchRule::LinearScaling { max_scale: 8.0 },
        min_batch: 32,
        max_batch: 256,
        epoch_samples: 1000.0,
        completion: Completion::Progress { samples: work },
        origin: None,
    }
}

fn config(noise: f64, seed: u64) -> EngineConfig {
    EngineConfig {
        noise_sigma: noise,
        seed,
        ..EngineConfig::default()
    }
}

/// (job id, GPUs per server) of the running jobs.
fn placements(jobs: &[ElasticJob]) -> Vec<(u64, Vec<(usize, u32)>)> {
    jobs.iter()
        .filter_map(|j| {
            j.allocation
                .as_ref()
                .map(|a| (j.spec.id, a.gpus_per_server.clone()))
        })
        .collect()
}

/// Steps one decision of `pol` on the two-server cluster.
fn after_one(pol: &str, jobs: Vec<ElasticJobSpec>) -> Vec<ElasticJob> {
    let (cluster, models) = (two_servers(), linear_app());
    let p = policy::by_name(pol, 0).unwrap();
    let mut r = ElasticReplay::new(jobs, &cluster, &models, p, config(0.0, 0)).unwrap();
    assert!(r.step_decision().unwrap());
    assert_eq!(r.now(), 60.0);
    r.active().to_vec()
}

/// A (4 GPUs, longest), B (2 GPUs, shortest), C (4 GPUs) at t = 0.
fn abc() -> Vec<ElasticJobSpec> {
    vec![
        job(0, 0.0, 4, 1e8),
        job(1, 0.0, 2, 1e6),
        job(2, 0.0, 4, 1e7),
    ]
}

#[test]
fn fifo_and_tiresias_gang_in_arrival_order_with_backfill() {
    for pol in ["fifo", "tiresias", "las"] {
        let jobs = after_one(pol, abc());
        // A fills server 0 (best fit, ties to the lowest index), B takes 2 GPUs of server 1,
        // C (4 GPUs) no longer fits.
        assert_eq!(
            placements(&jobs),
            vec![(0, vec![(0, 4)]), (1, vec![(1, 2)])],
            "{pol}"
        );
        // Progress after 30 s of restart and 30 s of running: 100 samples/s per GPU.
        assert_eq!(jobs[0].progress, 4.0 * 100.0 * 30.0, "{pol}");
        assert_eq!(jobs[1].progress, 2.0 * 100.0 * 30.0, "{pol}");
        assert_eq!(jobs[2].progress, 0.0, "{pol}");
        assert_eq!(jobs[0].allocation.as_ref().unwrap().global_batch, 128);
    }
}

#[test]
fn tiresias_demotes_past_16_gpu_hours() {
    // A holds all 8 GPUs from 0; by 7260 s it has attained 8 x 7260 GPU-s > 16 GPU-hours
    // (57600 GPU-s), so B, arriving at 7250 s, outranks it at the decision at 7260 (preempting
    // it); under FIFO B waits.
    let jobs = vec![job(0, 0.0, 8, 1e12), job(1, 7250.0, 8, 1e12)];
    let (cluster, models) = (two_servers(), linear_app());
    for (pol, runs) in [("tiresias", 1u64), ("fifo", 0)] {
        let p = policy::by_name(pol, 0).unwrap();
        let mut r = ElasticReplay::new(jobs.clone(), &cluster, &models, p, config(0.0, 0)).unwrap();
        r.step_until(7200.0).unwrap();
        // Attained service counts the GPUs held, restart included.
        assert_eq!(r.active()[0].attained_gpu_s, 8.0 * 7260.0);
        r.step_decision().unwrap();
        assert_eq!(r.now(), 7320.0);
        let running: Vec<u64> = placements(r.active()).iter().map(|p| p.0).collect();
        assert_eq!(running, vec![runs], "{pol}");
    }
    use profiler::replay::elastic::policy::tiresias::{THRESHOLDS_GPU_S, Tiresias};
    let t = Tiresias::new(THRESHOLDS_GPU_S.to_vec());
    assert_eq!(
        (t.queue(0.0), t.queue(57_599.0), t.queue(57_600.0)),
        (0, 0, 1)
    );
}

#[test]
fn srtf_runs_the_shortest_first() {
    let jobs = after_one("srtf", abc());
    // B (1e6 samples on 2 GPUs: 5000 s) and C (1e7 on 4: 25000 s) before A (250000 s).
    assert_eq!(
        placements(&jobs),
        vec![(1, vec![(0, 2)]), (2, vec![(1, 4)])]
    );
}

#[test]
fn optimus_hands_out_gpus_by_marginal_gain() {
    let jobs = after_one(
        "optimus",
        vec![
            job(0, 0.0, 4, 1e7),
            job(1, 0.0, 2, 1e7),
            job(2, 0.0, 4, 1e7),
        ],
    );
    // Equal work: 1 GPU each, then by gain W/(100 g (g + 1)), ties to arrival order: 3, 3, 2.
    let counts: Vec<u32> = jobs
        .iter()
        .map(|j| j.allocation.as_ref().unwrap().gpus())
        .collect();
    assert_eq!(counts, vec![3, 3, 2]);
    // Batch from the rule: 32 per GPU.
    assert_eq!(jobs[0].allocation.as_ref().unwrap().global_batch, 96);
    assert_eq!(jobs[2].progress, 2.0 * 100.0 * 30.0);
}

#[test]
fn pollux_explores_by_doubling_then_balances_speedups() {
    let (cluster, models) = (two_servers(), linear_app());
    let jobs = vec![
        job(0, 0.0, 4, 1e7),
        job(1, 0.0, 2, 1e7),
        job(2, 0.0, 4, 1e7),
    ];
    let p = policy::by_name("pollux", 0).unwrap();
    let mut r = ElasticReplay::new(jobs, &cluster, &models, p, config(0.0, 0)).unwrap();
    let counts = |r: &ElasticReplay| -> Vec<u32> {
        let mut c: Vec<u32> = r
            .active()
            .iter()
            .map(|j| j.allocation.as_ref().map_or(0, |a| a.gpus()))
            .collect();
        c.sort_unstable();
        c
    };
    // Before a job has run it may hold one GPU, then twice the most it has run on.
    assert!(r.step_decision().unwrap());
    assert_eq!(counts(&r), vec![1, 1, 1]);
    assert!(r.step_decision().unwrap());
    assert!(counts(&r).iter().all(|&g| g <= 2), "{:?}", counts(&r));
    r.step_until(1800.0).unwrap();
    // Speed-up g / 2 each: the harmonic objective sum 2/g over 8 GPUs is least at 3, 3, 2 in
    // some order, every GPU used.
    assert_eq!(counts(&r), vec![2, 3, 3]);
    let jobs = r.active().to_vec();
    // Any batch within the job's bounds: above 64 per GPU it accumulates gradients.
    for j in &jobs {
        let a = j.allocation.as_ref().unwrap();
        assert!(a.global_batch >= j.spec.min_batch && a.global_batch <= j.spec.max_batch);
    }
}

#[test]
fn exact_completion_time_and_record() {
    // 2 GPUs, 200 samples/s; starts at 0, restarts until 30, needs 20000 samples: done at 130.
    let (cluster, models) = (two_servers(), linear_app());
    let p = policy::by_name("fifo", 0).unwrap();
    let jobs = vec![job(0, 0.0, 2, 20_000.0), job(1, 10.0, 4, 12_000.0)];
    let out = ElasticReplay::new(jobs, &cluster, &models, p, config(0.0, 0))
        .unwrap()
        .finish()
        .unwrap();
    let a = &out.jobs[0];
    assert_eq!((a.first_start_s, a.finish_s, a.jct_s), (0.0, 130.0, 130.0));
    assert_eq!((a.run_s, a.gpu_s, a.reconfigurations), (130.0, 260.0, 1));
    // Arrives at 10, joins at the decision at 60, restarts until 90, 400/s for 30 s.
    let b = &out.jobs[1];
    assert_eq!((b.first_start_s, b.finish_s, b.jct_s), (60.0, 120.0, 110.0));
    assert_eq!(b.wait_s, 50.0);
    let s = &out.summary;
    assert_eq!(s.makespan_s, 130.0);
    assert_eq!(s.mean_jct_s, 120.0);
    assert_eq!(s.restarts_per_job, 0.0);
    // 260 + 240 GPU-seconds over 8 GPUs x 130 s.
    assert!((s.gpu_utilization - 500.0 / 1040.0).abs() < 1e-12);
}

#[test]
fn step_until_stops_before_the_next_decision_after_t() {
    let (cluster, models) = (two_servers(), linear_app());
    let p = policy::by_name("fifo", 0).unwrap();
    let jobs = vec![job(0, 0.0, 2, 20_000.0), job(1, 10.0, 4, 12_000.0)];
    let mut r = ElasticReplay::new(jobs, &cluster, &models, p, config(0.0, 0)).unwrap();
    r.step_until(60.0).unwrap();
    // Decisions at 0 and 60 ran; job 1 ran out of work at 120 exactly, job 0 has 2000 left.
    assert_eq!(r.now(), 120.0);
    assert_eq!(r.decisions().len(), 2);
    assert_eq!(r.active()[1].finish_s, Some(120.0));
    assert_eq!(r.active()[0].finish_s, None);
    assert_eq!(r.active()[0].progress, 200.0 * 90.0);
    // Finished jobs are released (and recorded) at the next decision.
    assert!(r.finished().is_empty());
    r.step_decision().unwrap();
    assert_eq!(r.finished().len(), 1);
    assert_eq!(r.active().len(), 1);
}

/// Plays back a fixed list of decisions for one job; `in_place`: it rescales running jobs in
/// place (as ONES) rather than by checkpoint and restart.
struct Script(Vec<Option<Allocation>>, usize, bool);
impl ElasticPolicy for Script {
    fn name(&self) -> &'static str {
        "script"
    }
    fn decide(&mut self, _: &DecisionCtx) -> Vec<Option<Allocation>> {
        self.1 += 1;
        vec![self.0[(self.1 - 1).min(self.0.len() - 1)].clone()]
    }
    fn rescales_in_place(&self) -> bool {
        self.2
    }
}

#[test]
fn restarts_charged_once_per_change_of_placement_not_of_batch_and_rescales_in_place_cheaper() {
    let at = |server: usize, batch: u32, cpus: f64| {
        Some(Allocation {
            gpus_per_server: vec![(server, 2)],
            global_batch: batch,
            cpus_per_gpu: cpus,
            mem_gb_per_gpu: 8.0,
        })
    };
    let script = vec![
        at(0, 64, 4.0),  // start: charged
        at(0, 64, 4.0),  // same: not charged
        at(1, 64, 4.0),  // move: charged
        at(1, 128, 4.0), // batch: re-tuned between steps, not charged
        at(1, 128, 2.0), // CPU only: live, not charged
        None,            // preemption: released at once, not charged
        at(0, 128, 4.0), // resumption: charged
    ];
    let charged = [1, 1, 2, 2, 2, 2, 3];
    let (cluster, models) = (two_servers(), linear_app());
    for in_place in [false, true] {
        // Seconds of progress in each interval of 60 s: 30 s lost to each start or
        // resumption; to the move, 30 s under checkpoint-restart, the 5-s rescale in place.
        let moved = if in_place { 55.0 } else { 30.0 };
        let running = [30.0, 60.0, moved, 60.0, 60.0, 0.0, 30.0];
        let cfg = EngineConfig {
            rescale_s: 5.0,
            ..config(0.0, 0)
        };
        let mut r = ElasticReplay::new(
            vec![job(0, 0.0, 2, 1e9)],
            &cluster,
            &models,
            Box::new(Script(script.clone(), 0, in_place)),
            cfg,
        )
        .unwrap();
        let mut expected = 0.0;
        for k in 0..running.len() {
            r.step_decision().unwrap();
            expected += 200.0 * running[k];
            let j = &r.active()[0];
            assert_eq!(j.progress, expected, "in place {in_place}, decision {k}");
            assert_eq!(j.reconfigurations, charged[k], "decision {k}");
        }
    }
}

#[test]
fn noise_is_drawn_from_seed_and_job_only() {
    assert_eq!(noise_factor(3, 7, 0.1), noise_factor(3, 7, 0.1));
    assert_ne!(noise_factor(3, 7, 0.1), noise_factor(4, 7, 0.1));
    assert_ne!(noise_factor(3, 7, 0.1), noise_factor(3, 8, 0.1));
    assert_eq!(noise_factor(3, 7, 0.0), 1.0);
    // Mean one, log-sd 0.1.
    let xs: Vec<f64> = (0..20_000).map(|i| noise_factor(1, i, 0.1)).collect();
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    assert!((mean - 1.0).abs() < 0.005, "{mean}");
    let logs: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    let m = logs.iter().sum::<f64>() / logs.len() as f64;
    let sd = (logs.iter().map(|l| (l - m) * (l - m)).sum::<f64>() / logs.len() as f64).sqrt();
    assert!((sd - 0.1).abs() < 0.005, "{sd}");
    // The same jobs under every policy: a job's factor does not depend on the others.
    let (cluster, models) = (two_servers(), linear_app());
    let run = |pol: &str, jobs: Vec<ElasticJobSpec>| {
        ElasticReplay::new(
            jobs,
            &cluster,
            &models,
            policy::by_name(pol, 5).unwrap(),
            config(0.1, 5),
        )
        .unwrap()
        .finish()
        .unwrap()
    };
    let a = run("fifo", abc());
    let b = run("optimus", abc()[..2].to_vec());
    assert_eq!(a.jobs[1].noise, b.jobs[1].noise);
    assert_eq!(a.jobs[1].noise, noise_factor(5, 1, 0.1));
    // Deterministic per seed.
    let again = run("fifo", abc());
    assert_eq!(a.jobs, again.jobs);
}

#[test]
fn unknown_app_and_oversized_jobs_are_errors_naming_the_job() {
    let (cluster, models) = (two_servers(), linear_app());
    let mut j = job(4, 0.0, 2, 1e6);
    j.app = "nope".into();
    j.origin = Some(("t.csv".into(), 9));
    let e = ElasticReplay::new(
        vec![j],
        &cluster,
        &models,
        policy::by_name("fifo", 0).unwrap(),
        config(0.0, 0),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("t.csv:9") && e.contains("job 4") && e.contains("nope"),
        "{e}"
    );
    let e = ElasticReplay::new(
        vec![job(5, 0.0, 9, 1e6)],
        &cluster,
        &models,
        policy::by_name("fifo", 0).unwrap(),
        config(0.0, 0),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("job 5") && e.contains("9 GPUs"), "{e}");
}

#[test]
fn horizon_names_unfinished_jobs() {
    let (cluster, models) = (two_servers(), linear_app());
    let mut j = job(3, 0.0, 2, 1e12);
    j.origin = Some(("w.csv".into(), 4));
    let cfg = EngineConfig {
        horizon_s: 3600.0,
        ..config(0.0, 0)
    };
    let e = ElasticReplay::new(
        vec![j],
        &cluster,
        &models,
        policy::by_name("fifo", 0).unwrap(),
        cfg,
    )
    .unwrap()
    .finish()
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("job 3") && e.contains("w.csv:4"), "{e}");
}

/// Random jobs of up to 8 GPUs on [`two_servers`]: (arrival, GPUs, work, batch rule).
type RandomJob = (f64, u32, f64, u8);

fn random_jobs() -> impl Strategy<Value = Vec<RandomJob>> {
    prop::collection::vec((0.0f64..600.0, 1u32..=8, 1e3f64..2e6, 0u8..3), 1..10)
}

/// Replays `specs` under each policy in `names`: each decision passes the feasibility check
/// (else the engine fails with an internal error), every job finishes, no earlier than it
/// could alone on its best allocation.
fn always_feasible<'a>(
    names: impl Iterator<Item = &'a str>,
    specs: &[RandomJob],
    seed: u64,
) -> Result<(), TestCaseError> {
    let (cluster, models) = (two_servers(), linear_app());
    let jobs: Vec<ElasticJobSpec> = specs
        .iter()
        .enumerate()
        .map(|(i, &(t, g, w, rule))| {
            let mut j = job(i as u64, t.round(), g, w);
            j.batch_rule = match rule {
                0 => BatchRule::LinearScaling { max_scale: 8.0 },
                1 => BatchRule::Fixed(128),
                _ => BatchRule::Free,
            };
            j
        })
        .collect();
    for name in names {
        let p = policy::by_name(name, seed).unwrap();
        let out = ElasticReplay::new(jobs.clone(), &cluster, &models, p, config(0.1, seed))
            .unwrap()
            .finish();
        let out = match out {
            Ok(o) => o,
            Err(e) => return Err(TestCaseError::fail(format!("{name}: {e}"))),
        };
        prop_assert_eq!(out.jobs.len(), jobs.len());
        for r in &out.jobs {
            let spec = &jobs[r.id as usize];
            // Alone on all 8 GPUs at the fastest noise this seed gives it.
            let best = spec.work() / (800.0 * r.noise);
            prop_assert!(
                r.jct_s + 1e-6 >= best + 30.0,
                "{}: job {} jct {} < {}",
                name,
                r.id,
                r.jct_s,
                best
            );
            prop_assert!(r.first_start_s >= spec.arrival_s);
            prop_assert!(r.jct_s.is_finite() && r.gpu_s.is_finite());
        }
    }
    Ok(())
}

/// Pollux runs its simulator's full search (100 x 100) at every decision: a few seconds a
/// trace, four times the rest of the policies together, so it gets fewer cases of its own.
const SLOW: &str = "pollux";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    #[test]
    fn every_policy_is_always_feasible(specs in random_jobs(), seed in 0u64..4) {
        always_feasible(policy::ALL.iter().map(|p| p.0).filter(|n| *n != SLOW), &specs, seed)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4))]
    #[test]
    fn pollux_is_always_feasible(specs in random_jobs(), seed in 0u64..4) {
        always_feasible(std::iter::once(SLOW), &specs, seed)?;
    }
}

#[test]
fn check_rejects_overcommitted_servers() {
    let cluster = two_servers();
    let jobs = vec![
        ElasticJob::new(job(0, 0.0, 4, 1.0)),
        ElasticJob::new(job(1, 0.0, 4, 1.0)),
    ];
    let a = |cpus: f64| {
        Some(Allocation {
            gpus_per_server: vec![(0, 2)],
            global_batch: 64,
            cpus_per_gpu: cpus,
            mem_gb_per_gpu: 8.0,
        })
    };
    assert!(check(&jobs, &[a(4.0), a(4.0)], &cluster).is_ok());
    assert!(check(&jobs, &[a(4.0), a(4.5)], &cluster).is_err());
}

mod cli {
    use clap::Parser;
    use profiler::cli::replay::ReplayArgs;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ReplayArgs,
    }

    fn args(a: &[&str]) -> ReplayArgs {
        Cli::try_parse_from(std::iter::once("replay").chain(a.iter().copied()))
            .unwrap()
            .args
    }

    fn elastic_err(a: &[&str]) -> String {
        args(a).to_elastic().err().unwrap().to_string()
    }

    #[test]
    fn elastic_options_and_defaults() {
        let r = args(&[
            "--elastic",
            "all",
            "--elastic-trace",
            "ones:t.csv",
            "--first",
            "50",
            "--versus",
            "tiresias",
        ])
        .to_elastic()
        .unwrap();
        assert_eq!(r.options.cluster.name.as_deref(), Some("ones-64"));
        assert_eq!(r.options.seeds, 5);
        assert_eq!(r.first, Some(50));
        assert_eq!(r.options.engine.interval_s, 60.0);
        assert_eq!(r.options.engine.reconfiguration_s, 30.0);
        let names: Vec<&str> = profiler::replay::elastic::policy::ALL
            .iter()
            .map(|p| p.0)
            .collect();
        assert_eq!(r.options.policies, names);
        let r = args(&[
            "--elastic",
            "pollux,optimus",
            "--elastic-trace",
            "pollux:w.csv",
        ])
        .to_elastic()
        .unwrap();
        assert_eq!(r.options.cluster.name.as_deref(), Some("pollux-64"));
        assert_eq!(r.options.cluster.build().unwrap().total_cpus, 16.0 * 48.0);
    }

    #[test]
    fn elastic_errors() {
        assert!(elastic_err(&["--elastic", "fifo"]).contains("--elastic-trace"));
        let e = elastic_err(&["--elastic", "nosuch", "--elastic-trace", "ones:t.csv"]);
        assert!(
            e.contains("unknown elastic policy") && e.contains("tiresias"),
            "{e}"
        );
        let e = elastic_err(&["--elastic", "all,fifo", "--elastic-trace", "ones:t.csv"]);
        assert!(e.contains("all"), "{e}");
        let e = elastic_err(&["--elastic", "fifo,fifo", "--elastic-trace", "ones:t.csv"]);
        assert!(e.contains("twice"), "{e}");
        let e = elastic_err(&[
            "--elastic",
            "fifo",
            "--elastic-trace",
            "ones:t.csv",
            "--versus",
            "las",
        ]);
        assert!(e.contains("--versus"), "{e}");
        let e = elastic_err(&[
            "--elastic",
            "fifo",
            "--elastic-trace",
            "ones:t.csv",
            "--trace",
            "x.csv",
        ]);
        assert!(e.contains("--trace"), "{e}");
        let e = elastic_err(&[
            "--elastic",
            "fifo",
            "--elastic-trace",
            "ones:t.csv",
            "--first",
            "0",
        ]);
        assert!(e.contains("--first"), "{e}");
        let e = elastic_err(&[
            "--elastic",
            "fifo",
            "--elastic-trace",
            "ones:t.csv",
            "--seeds",
            "0",
        ]);
        assert!(e.contains("seeds"), "{e}");
        let e = elastic_err(&[
            "--elastic",
            "fifo",
            "--elastic-trace",
            "ones:t.csv",
            "--interval",
            "0",
        ]);
        assert!(e.contains("interval"), "{e}");
        let e = elastic_err(&[
            "--elastic",
            "fifo",
            "--elastic-trace",
            "ones:t.csv",
            "--noise=-1",
        ]);
        assert!(e.contains("noise"), "{e}");
        let e = args(&["--first", "50"])
            .to_options()
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--elastic"), "{e}");
        let e = args(&["--interval", "30"])
            .to_options()
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--interval") && e.contains("--round-s"), "{e}");
        assert!(
            Cli::try_parse_from([
                "replay",
                "--elastic",
                "fifo",
                "--elastic-trace",
                "bad:t.csv"
            ])
            .is_err()
        );
    }
}
