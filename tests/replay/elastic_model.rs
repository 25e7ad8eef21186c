//! The elastic job model against the data it is calibrated from (`workloads/elastic/`), and the
//! elastic trace adapters (ONES's trace, Pollux's workloads).
//!
//! Fit errors, printed per application:
//! `cargo test --test replay elastic_model::fit_errors -- --nocapture`.
//! Regenerate `workloads/elastic/models.json` after a change of data or fit:
//! `cargo test --test replay -- --ignored elastic_models_generate`.

use profiler::replay::elastic::job::{BatchRule, ElasticJobSpec};
use profiler::replay::elastic::model::calibration::{self, Calibration};
use profiler::replay::elastic::model::efficiency::EfficiencyModel;
use profiler::replay::elastic::model::step_time::StepTimeModel;
use profiler::replay::elastic::model::{AppModels, fit, reference};
use profiler::replay::elastic::workload::{ones, pollux};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/elastic")
}

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

/// Refitting takes seconds in a debug build: once per test binary.
fn refit() -> &'static Calibration {
    static C: std::sync::LazyLock<Calibration> =
        std::sync::LazyLock::new(|| calibration::calibrate(&root()).unwrap());
    &C
}

#[test]
#[ignore]
fn elastic_models_generate() {
    std::fs::write(root().join("models.json"), refit().to_json()).unwrap();
}

/// Relative closeness of two numbers (the fit is deterministic, but floating-point libraries
/// may differ in the last bits between platforms).
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()) + 1e-12
}

fn close_step(a: &StepTimeModel, b: &StepTimeModel) -> bool {
    close(a.compute_s, b.compute_s)
        && close(a.compute_s_per_sample, b.compute_s_per_sample)
        && close(a.sync_local_s, b.sync_local_s)
        && close(a.sync_local_s_per_replica, b.sync_local_s_per_replica)
        && close(a.sync_node_s, b.sync_node_s)
        && close(a.sync_node_s_per_replica, b.sync_node_s_per_replica)
        && close(a.gamma, b.gamma)
}

fn close_phi(a: &EfficiencyModel, b: &EfficiencyModel) -> bool {
    a.phi.len() == b.phi.len()
        && a.phi
            .iter()
            .zip(&b.phi)
            .all(|(x, y)| close(x.0, y.0) && close(x.1, y.1))
}

/// The committed table is what the fit gives on the committed data.
#[test]
fn committed_models_match_a_refit() {
    let (built, fresh) = (Calibration::builtin(), refit());
    let stale = "workloads/elastic/models.json is stale; rerun elastic_models_generate";
    assert_eq!(built.pollux.len(), 6, "{stale}");
    assert_eq!(built.ones.len(), 10, "{stale}");
    for (a, b) in built.pollux.iter().zip(&fresh.pollux) {
        assert_eq!(a.name, b.name, "{stale}");
        assert!(
            close_step(&a.step_time, &b.step_time),
            "{}: {stale}",
            a.name
        );
        assert!(
            close_phi(&a.efficiency, &b.efficiency),
            "{}: {stale}",
            a.name
        );
        assert_eq!(a.phi_source, b.phi_source, "{stale}");
        assert_eq!(
            (a.base_batch, a.max_batch, a.max_local_batch),
            (b.base_batch, b.max_batch, b.max_local_batch),
            "{stale}"
        );
        assert!(close(a.work_samples, b.work_samples), "{stale}");
        assert!(close(a.epoch_samples, b.epoch_samples), "{stale}");
    }
    for (a, b) in built.ones.iter().zip(&fresh.ones) {
        assert_eq!(a.key, b.key, "{stale}");
        assert!(close_step(&a.step_time, &b.step_time), "{}: {stale}", a.key);
        assert!(
            close_phi(&a.efficiency, &b.efficiency),
            "{}: {stale}",
            a.key
        );
        assert_eq!(a.work.len(), b.work.len(), "{stale}");
        for (x, y) in a.work.iter().zip(&b.work) {
            assert!(close(x.work_samples, y.work_samples), "{}: {stale}", a.key);
        }
    }
}

/// Measured bounds of the step-time fit (median, max relative error on every measured step of
/// placements.csv and scalability.csv), with a little headroom.
const STEP_BOUNDS: [(&str, f64, f64); 6] = [
    ("bert", 0.05, 0.45),
    ("cifar10", 0.07, 0.50),
    ("deepspeech2", 0.08, 0.45),
    ("imagenet", 0.06, 0.45),
    ("ncf", 0.08, 0.65),
    ("yolov3", 0.08, 0.50),
];

/// Measured bounds of the efficiency model: median and max relative error of the predicted
/// iterations over every row of every curve but the base batch's (the chosen phi source's).
const EFFICIENCY_BOUNDS: [(&str, f64, f64); 6] = [
    ("bert", 0.02, 0.02),
    ("cifar10", 0.05, 0.22),
    ("deepspeech2", 0.05, 0.18),
    ("imagenet", 0.04, 0.33),
    ("ncf", 0.01, 0.03),
    ("yolov3", 0.05, 0.34),
];

#[test]
fn fit_errors() {
    let cal = refit();
    for (app, med, max) in STEP_BOUNDS {
        let a = cal.pollux_app(app).unwrap();
        let f = a.step_fit;
        eprintln!(
            "{app}: step time over {} measured steps: median {:.1}%, max {:.1}%; {:?}",
            f.samples,
            100.0 * f.median,
            100.0 * f.max,
            a.step_time
        );
        let data = calibration::step_samples(&root().join("pollux").join(app)).unwrap();
        let errs = fit::step_time_errors(&a.step_time, &data);
        let worst = (0..errs.len())
            .max_by(|&i, &j| errs[i].total_cmp(&errs[j]))
            .unwrap();
        let high = errs.iter().filter(|&&e| e > 0.2).count();
        eprintln!(
            "{app}: worst {:?} ({:.0}%); {high} of {} steps off by more than 20%",
            data[worst],
            100.0 * errs[worst],
            errs.len()
        );
        assert!(f.median <= med && f.max <= max, "{app}: {f:?}");
        assert!(f.samples > 100, "{app}");
    }
    for (app, med, max) in EFFICIENCY_BOUNDS {
        let a = cal.pollux_app(app).unwrap();
        eprintln!("{app}: phi from {:?}", a.phi_source);
        for (c, (g, i)) in a.efficiency_fit.iter().zip(
            a.efficiency_fit_gradient_statistics
                .iter()
                .zip(&a.efficiency_fit_iterations),
        ) {
            eprintln!(
                "{app}: B {}: iterations median {:.1}%, max {:.1}% (gradient statistics {:.1}%, {:.1}%; iterations {:.1}%, {:.1}%)",
                c.batch,
                100.0 * c.median,
                100.0 * c.max,
                100.0 * g.median,
                100.0 * g.max,
                100.0 * i.median,
                100.0 * i.max
            );
            assert!(
                c.median <= med && c.max <= max,
                "{app} B {}: {c:?}",
                c.batch
            );
        }
        assert!(a.efficiency_fit.len() >= 4, "{app}");
    }
    for t in &cal.ones {
        for p in &t.throughput_fit {
            eprintln!(
                "{}: {} GPUs: measured {:.0}/s per GPU, model {:.0}",
                t.key, p.gpus, p.measured_per_gpu, p.model_per_gpu
            );
        }
        for w in &t.work {
            eprintln!(
                "{}: N {}: {:.1} epochs at batch {} -> work {:.0} base-batch samples",
                t.key, w.epoch_size, w.epochs, w.history_batch, w.work_samples
            );
        }
    }
}

/// The staged fit recovers a model it generated the data from, with and without the measured
/// synchronisation times (without them the refinement alone finds the synchronisation).
#[test]
fn step_time_fit_recovers_a_known_model() {
    for with_sync in [true, false] {
        recover(with_sync);
    }
}

fn recover(with_sync: bool) {
    let truth = StepTimeModel {
        compute_s: 0.02,
        compute_s_per_sample: 0.001,
        sync_local_s: 0.01,
        sync_local_s_per_replica: 0.002,
        sync_node_s: 0.1,
        sync_node_s_per_replica: 0.005,
        gamma: 2.0,
    };
    let mut data = Vec::new();
    for &(n, nodes) in &[(1, 1), (2, 1), (4, 1), (8, 2), (16, 4), (32, 8)] {
        for &b in &[16.0, 64.0, 256.0, 1024.0] {
            let t = truth.step_time(n, nodes, b);
            // What a profiler measures as synchronisation: the step beyond its compute.
            let sync = if n > 1 {
                t - truth.compute_time(b)
            } else {
                0.0
            };
            data.push(reference::StepSample {
                replicas: n,
                nodes,
                local_batch: b,
                step_s: t,
                sync_s: if with_sync { sync } else { 0.0 },
            });
        }
    }
    let f = fit::fit_step_time(&data).unwrap();
    assert!(f.max_rel_err < 0.02, "with_sync {with_sync}: {f:?}");
}

/// ONES's per-GPU throughputs at the GPU counts the history has are matched by one time scale
/// per type (a type's runs differ up to 2x between them, so within 25%).
#[test]
fn ones_types_match_history_throughput() {
    let cal = refit();
    for t in &cal.ones {
        assert!(!t.throughput_fit.is_empty(), "{}", t.key);
        for p in &t.throughput_fit {
            let r = p.model_per_gpu / p.measured_per_gpu;
            assert!((0.8..1.25).contains(&r), "{}: {p:?}", t.key);
        }
        // BERT runs P + 1 = 6 epochs or fewer; the CNNs tens of epochs.
        for w in &t.work {
            let (lo, hi) = if t.key.starts_with("bert") {
                (4.0, 6.5)
            } else {
                (10.0, 70.0)
            };
            assert!((lo..=hi).contains(&w.epochs), "{}: {w:?}", t.key);
            assert!(
                w.work_samples <= w.epochs * w.epoch_size * (1.0 + 1e-9),
                "{}",
                t.key
            );
        }
    }
}

#[test]
fn builtin_models_cover_every_trace_application() {
    let models = AppModels::builtin();
    assert_eq!(models.apps.len(), 16);
    let cal = Calibration::builtin();
    for j in ones::read(&repo("workloads/traces/ones/trace_1.csv"), cal).unwrap() {
        assert!(models.get(&j.app).is_some(), "{}", j.app);
    }
    for n in 1..=8 {
        let p = repo(&format!("workloads/traces/pollux/workload-{n}.csv"));
        let jobs = pollux::read(&p, cal).unwrap();
        assert_eq!(jobs.len(), 160);
        for j in jobs {
            assert!(models.get(&j.app).is_some(), "{}", j.app);
        }
    }
}

/// Throughput grows with GPUs on one server where the data says so: at every local batch where
/// Pollux measured 1, 2, 3 and 4 GPUs on one server (and the measured throughput grows, which it
/// does everywhere), so does the model's; ONES's types at their base batch likewise.
#[test]
fn throughput_grows_with_gpus_on_one_server() {
    let models = AppModels::builtin();
    let cal = Calibration::builtin();
    for a in &cal.pollux {
        let m = models.get(&a.name).unwrap();
        let data = calibration::step_samples(&root().join("pollux").join(&a.name)).unwrap();
        let mut batches: Vec<f64> = data.iter().map(|s| s.local_batch).collect();
        batches.sort_by(f64::total_cmp);
        batches.dedup();
        let mut checked = 0;
        for b in batches {
            let measured: Vec<f64> = (1..=4)
                .filter_map(|g| {
                    data.iter()
                        .find(|s| s.replicas == g && s.nodes == 1 && s.local_batch == b)
                        .map(|s| g as f64 * b / s.step_s)
                })
                .collect();
            if measured.len() < 4 || measured.windows(2).any(|w| w[1] < w[0]) {
                continue;
            }
            let x: Vec<f64> = (1..=4).map(|g| m.throughput(g, 1, b)).collect();
            assert!(
                x.windows(2).all(|w| w[1] >= w[0]),
                "{} at {b}: {x:?}",
                a.name
            );
            checked += 1;
        }
        assert!(checked >= 5, "{}: {checked} batches", a.name);
    }
    for t in &cal.ones {
        let m = models.get(&t.key).unwrap();
        let x: Vec<f64> = [1, 2, 3, 4]
            .iter()
            .map(|&g| m.throughput(g, 1, t.base_batch as f64))
            .collect();
        assert!(x.windows(2).all(|w| w[1] >= w[0]), "{}: {x:?}", t.key);
    }
}

fn efficiency_strategy() -> impl Strategy<Value = (usize, f64, f64, f64)> {
    (0usize..16, 0.0f64..=1.0, 1.0f64..64.0, 1.0f64..64.0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// E(B) is in (0, 1] for B >= B0 and does not grow with B, for every built-in model at any
    /// progress.
    #[test]
    fn efficiency_in_unit_interval_and_decreasing((i, frac, s1, s2) in efficiency_strategy()) {
        let models = AppModels::builtin();
        let m = &models.apps[i];
        let b0 = 32.0;
        let (lo, hi) = (b0 * s1.min(s2), b0 * s1.max(s2));
        let (e_lo, e_hi) = (
            m.efficiency.efficiency(lo, b0, frac),
            m.efficiency.efficiency(hi, b0, frac),
        );
        prop_assert!(e_lo > 0.0 && e_lo <= 1.0 + 1e-12, "{} {e_lo}", m.name);
        prop_assert!(e_hi > 0.0 && e_hi <= e_lo + 1e-12, "{} {e_hi} > {e_lo}", m.name);
        // Goodput never exceeds throughput at or above the base batch.
        let g = m.goodput(4, 1, hi as u32, b0 as u32, frac);
        prop_assert!(g <= m.throughput(4, 1, (hi as u32) as f64 / 4.0) * (1.0 + 1e-9));
    }

    /// Step time grows with the local batch and never falls below the compute time.
    #[test]
    fn step_time_monotone_in_local_batch(i in 0usize..16, gpus in 1u32..64, b in 1.0f64..512.0, k in 1.0f64..4.0) {
        let models = AppModels::builtin();
        let m = &models.apps[i].step_time;
        let nodes = gpus.div_ceil(4);
        let (t1, t2) = (m.step_time(gpus, nodes, b), m.step_time(gpus, nodes, b * k));
        prop_assert!(t1.is_finite() && t1 > 0.0);
        prop_assert!(t2 >= t1 * (1.0 - 1e-12));
        prop_assert!(t1 >= (m.compute_s + m.compute_s_per_sample * b) * (1.0 - 1e-12));
    }

    /// ONES's batch rule: GPUs x base up to the cap, within the job's bounds.
    #[test]
    fn ones_jobs_follow_the_linear_scaling_rule(row in 0usize..400, gpus in 1u32..128) {
        let jobs = ones_jobs();
        let j = &jobs[row];
        let b = j.rule_batch(gpus).unwrap();
        let BatchRule::LinearScaling { max_scale } = j.batch_rule else { panic!() };
        let want = (gpus as f64 * j.base_batch as f64).min((max_scale * j.base_batch as f64).floor());
        prop_assert_eq!(b, want as u32);
        prop_assert!(j.min_batch <= b && b <= j.max_batch);
    }
}

fn ones_jobs() -> &'static [ElasticJobSpec] {
    static J: std::sync::LazyLock<Vec<ElasticJobSpec>> = std::sync::LazyLock::new(|| {
        ones::read(
            &repo("workloads/traces/ones/trace_1.csv"),
            Calibration::builtin(),
        )
        .unwrap()
    });
    &J
}

#[test]
fn ones_trace_reads_as_the_artifact_describes() {
    let jobs = ones_jobs();
    assert_eq!(jobs.len(), 400);
    assert!(jobs.windows(2).all(|w| w[0].arrival_s <= w[1].arrival_s));
    // The first 50 jobs arrive over 0..1558 s (ALGORITHM.md 3.3).
    assert_eq!(jobs[49].arrival_s, 1558.0);
    let first = &jobs[0];
    assert_eq!(first.app, "resnet50-imagenet");
    assert_eq!(
        (first.base_batch, first.min_batch, first.max_batch),
        (32, 32, 512)
    );
    assert_eq!(first.requested_gpus, 16);
    assert_eq!(first.epoch_samples, 10000.0);
    assert_eq!(first.origin.as_ref().unwrap().1, 2);
    let sst2 = jobs.iter().find(|j| j.app == "bert-sst2").unwrap();
    assert_eq!(sst2.max_batch, 256);
    for j in jobs {
        assert!(
            j.work() > 0.0 && j.work() <= 100.0 * j.epoch_samples,
            "{j:?}"
        );
    }
}

#[test]
fn pollux_workload_reads_with_application_bounds() {
    let p = repo("workloads/traces/pollux/workload-1.csv");
    let jobs = pollux::read(&p, Calibration::builtin()).unwrap();
    let c = jobs.iter().find(|j| j.name == "cifar10-0").unwrap();
    assert_eq!(c.batch_rule, BatchRule::Fixed(2048));
    assert_eq!((c.base_batch, c.min_batch, c.max_batch), (128, 128, 4096));
    assert_eq!(c.requested_gpus, 6);
    assert_eq!(c.rule_batch(1), Some(2048));
    let app = Calibration::builtin().pollux_app("cifar10").unwrap();
    assert_eq!(c.work(), app.work_samples);
    // 100 epochs of CIFAR-10's 50,000 images at the base batch.
    assert!((app.work_samples - 100.0 * 50_000.0).abs() < 0.01 * app.work_samples);
}

/// Bad rows are refused with the file, the line and what was expected.
#[test]
fn adapter_errors_name_file_line_and_expectation() {
    let d = tempfile::tempdir().unwrap();
    let cal = Calibration::builtin();
    let ones_row = "0,resnet50,imagenet,10000,10,32,5.00E-04,0.008,0.55,16";
    let cases: [(&str, &str, &str); 9] = [
        ("time,model\n", "", "expected header"),
        (
            ones::HEADER,
            "0,resnet99,imagenet,10000,10,32,5e-4,0.008,0.55,16",
            "known: bert-cola",
        ),
        (
            ones::HEADER,
            "NaN,resnet50,imagenet,10000,10,32,5e-4,0.008,0.55,16",
            "time",
        ),
        (
            ones::HEADER,
            "0,resnet50,imagenet,-5,10,32,5e-4,0.008,0.55,16",
            "epoch_size",
        ),
        (
            ones::HEADER,
            "0,resnet50,imagenet,10000,10,32,5e-4,0.0001,0.55,16",
            "max_lr / lr",
        ),
        (
            ones::HEADER,
            "0,resnet50,imagenet,10000,10,32,5e-4,0.008,0.55,0",
            "num_gpus",
        ),
        (
            ones::HEADER,
            "0,resnet50,imagenet,10000,10,32,5e-4,0.008,0.55",
            "expected 10 columns",
        ),
        (
            ones::HEADER,
            "0,resnet50,imagenet,10000,10,32,5e-4,0.008,7,16",
            "target_acc",
        ),
        (
            ones::HEADER,
            "0,resnet50,imagenet,10000,10,0,5e-4,0.008,0.55,16",
            "batch_size",
        ),
    ];
    for (k, (header, row, want)) in cases.iter().enumerate() {
        let p = d.path().join(format!("o{k}.csv"));
        std::fs::write(&p, format!("{header}\n{ones_row}\n{row}\n")).unwrap();
        let e = ones::read(&p, cal).unwrap_err().to_string();
        let line = if header.starts_with("time,model\n") {
            1
        } else {
            3
        };
        assert!(
            e.contains(&format!("o{k}.csv:{line}:")) && e.contains(want),
            "{e}"
        );
    }
    let good = "cifar10-0,107,cifar10,6,2048";
    let cases: [(&str, &str); 5] = [
        ("x,107,cifar11,6,2048", "known: bert, cifar10"),
        ("x,-1,cifar10,6,2048", "time"),
        ("x,107,cifar10,6,99999", "validated range [128, 4096]"),
        ("x,107,cifar10,1e9,2048", "num_replicas"),
        (",107,cifar10,6,2048", "name"),
    ];
    for (k, (row, want)) in cases.iter().enumerate() {
        let p = d.path().join(format!("p{k}.csv"));
        std::fs::write(&p, format!("{}\n{good}\n{row}\n", pollux::HEADER)).unwrap();
        let e = pollux::read(&p, cal).unwrap_err().to_string();
        assert!(
            e.contains(&format!("p{k}.csv:3:")) && e.contains(want),
            "{e}"
        );
    }
}

/// The adapters and the table drive the elastic engine end to end: ONES's first 50 jobs on
/// ONES's 64 GPUs (every registered policy) and the first 40 jobs of Pollux's first workload on
/// its 64 GPUs (four policies; the whole workload takes a minute in a debug build), one seed.
/// Every job finishes, and no policy's mean JCT is below what the jobs would take alone at
/// their requested GPUs with no queueing divided by 20 (a sanity bound on the model's scale).
#[test]
fn adapters_drive_the_elastic_engine() {
    use profiler::replay::cluster::ClusterSpec;
    use profiler::replay::elastic::experiment::{ElasticOptions, render, run};
    use profiler::replay::elastic::policy;
    let cal = Calibration::builtin();
    let models = AppModels::builtin();
    let mut ones_jobs = ones_jobs().to_vec();
    ones_jobs.truncate(50);
    let mut pollux_jobs =
        pollux::read(&repo("workloads/traces/pollux/workload-1.csv"), cal).unwrap();
    pollux_jobs.truncate(40);
    let all: Vec<String> = policy::ALL.iter().map(|p| p.0.to_owned()).collect();
    let some: Vec<String> = ["tiresias", "optimus", "pollux", "ones"]
        .iter()
        .filter(|p| all.iter().any(|a| a == *p))
        .map(|p| p.to_string())
        .collect();
    for (jobs, cluster, policies) in [
        (ones_jobs, "ones-64", all.clone()),
        (pollux_jobs, "pollux-64", some),
    ] {
        let opts = ElasticOptions {
            cluster: ClusterSpec::builtin(cluster).unwrap(),
            policies,
            first_seed: 0,
            seeds: 1,
            engine: Default::default(),
            versus: vec![],
            out_dir: None,
        };
        let started = std::time::Instant::now();
        let e = run(&opts, &jobs, &models, cluster).unwrap();
        eprintln!("{}({:.1} s)", render(&e), started.elapsed().as_secs_f64());
        let alone: f64 = jobs
            .iter()
            .map(|j| {
                let m = models.get(&j.app).unwrap();
                let g = j.requested_gpus.min(64);
                let b = j.rule_batch(g).unwrap_or(j.base_batch * g);
                j.work() / m.goodput(g, g.div_ceil(4), b, j.base_batch, 0.5)
            })
            .sum::<f64>()
            / jobs.len() as f64;
        for r in e.runs.iter().flatten() {
            assert_eq!(r.summary.jobs, jobs.len());
            assert!(
                r.summary.mean_jct_s > alone / 20.0,
                "{}: {} vs alone {alone}",
                r.summary.policy,
                r.summary.mean_jct_s
            );
        }
    }
}
