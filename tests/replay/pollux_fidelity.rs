//! The elastic replay against Pollux's own simulator (petuum/adaptdl, branch osdi21-artifact,
//! `simulator/results-jobload/<policy>-1.0/summary.json`, copied to `tests/data/pollux-golden/`)
//! on its eight workloads, which are byte-identical to `workloads/traces/pollux/`. The table, per
//! workload and per application:
//! `cargo test --release --test replay pollux_fidelity -- --nocapture`.

use profiler::replay::cluster::ClusterSpec;
use profiler::replay::elastic::engine::EngineConfig;
use profiler::replay::elastic::experiment::{ElasticOptions, run};
use profiler::replay::elastic::model::AppModels;
use profiler::replay::elastic::model::calibration::Calibration;
use profiler::replay::elastic::workload::pollux;
use std::collections::BTreeMap;

const POLICIES: [&str; 3] = ["tiresias", "optimus", "pollux"];
/// One seed: without noise Tiresias and Optimus schedule the same with every seed, and Pollux's
/// search moves its mean JCT by 0.3 minutes at most (three seeds' mean against one).
const SEEDS: u64 = 1;
/// Mean JCT of each policy on each workload, against the simulator's.
const WORKLOAD_TOLERANCE_PCT: f64 = 10.0;
/// Mean JCT of each policy on each application with enough jobs over the eight workloads.
const APP_TOLERANCE_PCT: f64 = 15.0;
const APP_MIN_JOBS: usize = 50;

/// Pollux's simulator's JCTs: per workload, per job name, seconds.
fn golden(policy: &str) -> BTreeMap<String, BTreeMap<String, f64>> {
    let path = super::repo(&format!(
        "tests/data/pollux-golden/{policy}-1.0.summary.json"
    ));
    let text = std::fs::read_to_string(&path).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let jcts = v["jcts"].as_object().unwrap();
    jcts.iter()
        .map(|(w, jobs)| {
            let jobs = jobs.as_object().unwrap();
            let jobs = jobs.iter().map(|(n, s)| (n.clone(), s.as_f64().unwrap()));
            (w.clone(), jobs.collect())
        })
        .collect()
}

#[test]
fn pollux_fidelity() {
    let cal = Calibration::builtin();
    let models = AppModels::builtin();
    let gold: Vec<_> = POLICIES.iter().map(|p| golden(p)).collect();
    // mean JCT (ours, simulator) per policy and workload; per policy and application, sums.
    let mut means = vec![vec![(0.0, 0.0); 8]; POLICIES.len()];
    let mut apps: Vec<BTreeMap<String, (f64, f64)>> = vec![BTreeMap::new(); POLICIES.len()];
    // Jobs per application over the eight workloads.
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    // The eight workloads side by side: each runs its policies and seeds on every core, and
    // together they keep the cores busy while one workload's slowest run finishes.
    let experiments: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..=8usize)
            .map(|w| {
                let models = &models;
                s.spawn(move || {
                    let path = super::repo(&format!("workloads/traces/pollux/workload-{w}.csv"));
                    let jobs = pollux::read(&path, cal).unwrap();
                    let opts = ElasticOptions {
                        cluster: ClusterSpec::builtin("pollux-64").unwrap(),
                        policies: POLICIES.iter().map(|p| p.to_string()).collect(),
                        first_seed: 0,
                        seeds: SEEDS,
                        // Pollux's simulator has no run-to-run noise: its policies know the
                        // true step times.
                        engine: EngineConfig {
                            noise_sigma: 0.0,
                            ..Default::default()
                        },
                        versus: vec![],
                        out_dir: None,
                    };
                    let e = run(&opts, &jobs, models, "pollux").unwrap();
                    (jobs, e)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (w, (jobs, e)) in (1..=8usize).zip(experiments) {
        for j in &jobs {
            *counts.entry(j.app.clone()).or_default() += 1;
        }
        for (p, runs) in e.runs.iter().enumerate() {
            let sim = &gold[p][&format!("workload-{w}")];
            let ours: f64 = runs.iter().map(|r| r.summary.mean_jct_s).sum::<f64>() / SEEDS as f64;
            let theirs = sim.values().sum::<f64>() / sim.len() as f64;
            means[p][w - 1] = (ours, theirs);
            for r in runs {
                for j in &r.jobs {
                    let app = j.name.rsplit_once('-').unwrap().0.to_string();
                    let e = apps[p].entry(app).or_default();
                    e.0 += j.jct_s / SEEDS as f64;
                    e.1 += sim[&j.name] / SEEDS as f64;
                }
            }
        }
    }
    let diff = |(ours, theirs): (f64, f64)| 100.0 * (ours / theirs - 1.0);
    eprintln!("mean JCT, minutes: Pollux's simulator / this replay ({SEEDS} seeds)");
    eprintln!("| workload | {} |", POLLUX_HEADER);
    for w in 0..8 {
        let cells: Vec<String> = means
            .iter()
            .map(|m| {
                let (o, t) = m[w];
                format!("{:.1} | {:.1} | {:+.0}%", t / 60.0, o / 60.0, diff((o, t)))
            })
            .collect();
        eprintln!("| {} | {} |", w + 1, cells.join(" | "));
    }
    for (p, name) in POLICIES.iter().enumerate() {
        let per: Vec<String> = apps[p]
            .iter()
            .map(|(a, &x)| format!("{a} {:+.0}%", diff(x)))
            .collect();
        eprintln!("{name} per application: {}", per.join(", "));
    }
    for (w, ((&t, &o), &x)) in means[0].iter().zip(&means[1]).zip(&means[2]).enumerate() {
        for (name, m) in POLICIES.iter().zip([t, o, x]) {
            assert!(
                diff(m).abs() <= WORKLOAD_TOLERANCE_PCT,
                "workload {}: {name} {:+.1}% from Pollux's simulator",
                w + 1,
                diff(m)
            );
        }
        // The simulator's ordering: Pollux below Tiresias and Optimus on every workload.
        assert!(
            x.0 < t.0 && x.0 < o.0,
            "workload {}: {x:?} {t:?} {o:?}",
            w + 1
        );
    }
    for (p, name) in POLICIES.iter().enumerate() {
        for (app, &x) in &apps[p] {
            if counts[app] >= APP_MIN_JOBS {
                assert!(
                    diff(x).abs() <= APP_TOLERANCE_PCT,
                    "{name} on {app} ({} jobs): {:+.1}% from Pollux's simulator",
                    counts[app],
                    diff(x)
                );
            }
        }
    }
}

const POLLUX_HEADER: &str =
    "Tiresias sim | ours | diff | Optimus sim | ours | diff | Pollux sim | ours | diff";
