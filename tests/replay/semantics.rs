//! `--semantics synergy` against Synergy's own simulator: per-job finish times, produced by
//! Synergy's simulator run unmodified (4 servers x 8 GPUs, 24 CPUs, 500 GB, 300 s rounds; `_fair`
//! = proportional, no suffix = greedy, `_tune`, `_opt`): FIFO on the static deployment trace and
//! SRTF on the dynamic one (`workloads/traces/synergy/golden/`); LAS, FTF, DRF and Tetris on both,
//! and all six policies on a multi-GPU trace whose jobs span servers (`tests/data/synergy-golden/`,
//! with how they were made).
//!
//! Finish times in the golden files are whole seconds (rounds start at 1 s for the static trace,
//! at a multiple of 300 s for the others, so every finish is an integer): we demand equality to
//! 1e-6 s.

use super::repo;
use profiler::replay::cluster::ClusterSpec;
use profiler::replay::{ReplayOptions, Semantics, WorkloadSpec, run};
use std::collections::BTreeMap;

/// Golden per-job (model, arrival, finish) by job id.
fn golden(file: &str) -> BTreeMap<u64, (String, f64, f64)> {
    let path = [GOLDEN, "workloads/traces/synergy/golden"]
        .iter()
        .map(|dir| repo(&format!("{dir}/{file}")))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no golden file {file}"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = BTreeMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 7, "{line}");
        out.insert(
            f[0].parse().unwrap(),
            (
                f[1].to_owned(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            ),
        );
    }
    assert_eq!(out.len(), 100, "{file}");
    out
}

/// Our finish time per job id, under `--semantics synergy`.
fn replay(trace: &str, policy: &str, mechanism: &str) -> BTreeMap<u64, f64> {
    let opts = ReplayOptions {
        cluster: ClusterSpec::synergy(4),
        workload: WorkloadSpec::SynergyCsv(trace_path(trace)),
        schemes: vec![(policy.into(), mechanism.into())],
        semantics: Semantics::Synergy,
        // Synergy starts a static trace (`--static`) at 1 s, a replayed one at the first round
        // boundary after the first arrival.
        first_round_s: trace.contains("static").then_some(1.0),
        ..Default::default()
    };
    let r = run(&opts).unwrap();
    r.runs[0]
        .jobs
        .iter()
        .map(|j| (j.id, j.finish_s.expect("every job finishes")))
        .collect()
}

/// Golden files made for this project (the others ship with the deployment traces).
const GOLDEN: &str = "tests/data/synergy-golden";

fn trace_path(trace: &str) -> std::path::PathBuf {
    if trace.starts_with("multigpu") {
        repo(&format!("{GOLDEN}/{trace}"))
    } else {
        repo(&format!("workloads/traces/synergy/{trace}"))
    }
}

/// The cases: (trace, policy, golden file, mechanism).
fn cases() -> Vec<(&'static str, &'static str, String, &'static str)> {
    let traces: [(&str, &str, &[&str]); 3] = [
        (
            "deploy_static_100job.csv",
            "static100",
            &["fifo", "las", "ftf", "drf", "tetris"],
        ),
        (
            "deploy_dynamic_100job.csv",
            "dynamic100",
            &["srtf", "las", "ftf", "drf", "tetris"],
        ),
        (
            "multigpu100.csv",
            "multigpu100",
            &["fifo", "srtf", "las", "ftf", "drf", "tetris"],
        ),
    ];
    let mut out = Vec::new();
    for (trace, prefix, policies) in traces {
        for &policy in policies {
            for (suffix, mech) in [("_fair", "proportional"), ("", "greedy"), ("_tune", "tune")] {
                let file = format!("{prefix}_{}{suffix}.csv", policy.to_uppercase());
                out.push((trace, policy, file, mech));
            }
        }
    }
    out
}

/// Jobs whose finish time equals the golden one, and the first (by golden finish) that differs.
fn compare(
    gold: &BTreeMap<u64, (String, f64, f64)>,
    ours: &BTreeMap<u64, f64>,
) -> (usize, Option<String>) {
    let mut matching = 0;
    let mut first: Option<(f64, String)> = None;
    for (id, (model, arrival, finish)) in gold {
        let f = ours[id];
        if (f - finish).abs() < 1e-6 {
            matching += 1;
        } else if first.as_ref().is_none_or(|(t, _)| finish < t) {
            first = Some((
                *finish,
                format!(
                    "job {id} ({model}, arrives {arrival}): Synergy finishes it at {finish}, we at {f}"
                ),
            ));
        }
    }
    (matching, first.map(|f| f.1))
}

/// Diagnostic: how many jobs match per case, and the earliest job that does not.
/// `cargo test --test replay -- --ignored synergy_golden_report --nocapture`
#[test]
#[ignore]
fn synergy_golden_report() {
    for (trace, policy, file, mech) in cases() {
        let (n, first) = compare(&golden(&file), &replay(trace, policy, mech));
        eprintln!("{file} ({policy}+{mech}): {n}/100 match; first difference: {first:?}");
    }
}

#[test]
fn synergy_semantics_matches_synergy_simulator_job_for_job() {
    let mut failures = Vec::new();
    for (trace, policy, file, mech) in cases() {
        let (n, first) = compare(&golden(&file), &replay(trace, policy, mech));
        eprintln!("{file} ({policy}+{mech}): {n}/100 jobs finish at Synergy's time");
        if n != 100 {
            failures.push(format!(
                "{file}: {n}/100; first: {}",
                first.unwrap_or_default()
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Opt is a different algorithm by design (an LP over the whole cluster, then a feasible
/// rounding; Synergy's Opt is a fluid bound that never places jobs on servers): report the
/// per-job distance and bound it.
#[test]
fn synergy_opt_stays_close_to_synergy_opt() {
    for (trace, policy, file) in [
        ("deploy_static_100job.csv", "fifo", "static100_FIFO_opt.csv"),
        (
            "deploy_dynamic_100job.csv",
            "srtf",
            "dynamic100_SRTF_opt.csv",
        ),
    ] {
        let gold = golden(file);
        let ours = replay(trace, policy, "opt");
        let mut rel: Vec<f64> = gold
            .iter()
            .map(|(id, (_, arrival, finish))| {
                let (g, o) = (finish - arrival, ours[id] - arrival);
                (o - g) / g
            })
            .collect();
        rel.sort_by(f64::total_cmp);
        let mean = rel.iter().sum::<f64>() / rel.len() as f64;
        let mean_abs = rel.iter().map(|x| x.abs()).sum::<f64>() / rel.len() as f64;
        let median = rel[rel.len() / 2];
        let same = rel.iter().filter(|x| x.abs() < 1e-9).count();
        let jct = |m: &dyn Fn(&u64) -> f64| gold.keys().map(m).sum::<f64>() / gold.len() as f64;
        let ours_mean = jct(&|id| ours[id] - gold[id].1);
        let gold_mean = jct(&|id| gold[id].2 - gold[id].1);
        eprintln!(
            "{file}: {same}/100 jobs at Synergy's time; per-job JCT (ours - Synergy)/Synergy mean \
             {mean:+.3}, mean |.| {mean_abs:.3}, median {median:+.3}; mean JCT ours {:.3} h, \
             Synergy {:.3} h",
            ours_mean / 3600.0,
            gold_mean / 3600.0
        );
        assert!(
            mean_abs < 0.5,
            "{file}: mean |relative JCT difference| {mean_abs}"
        );
        assert!(
            median.abs() < 0.25,
            "{file}: median relative JCT difference {median}"
        );
        assert!(
            (ours_mean / gold_mean - 1.0).abs() < 0.15,
            "{file}: mean JCT {ours_mean} vs Synergy's {gold_mean}"
        );
    }
}

/// What Synergy's simulator recorded of each job's placements on the multi-GPU trace
/// (`*.spread.csv`, read after every scheduling call) against what our engine places, job for
/// job: the demand after Synergy's capping at a server, the first round's GPUs per server, the
/// rounds run, the rounds spread over more than one server and the most servers at once.
#[test]
fn synergy_spreads_jobs_across_servers_as_its_simulator_does() {
    use profiler::replay::engine::{JobState, simulate};
    use profiler::replay::mechanism::{self, Placement};
    use profiler::replay::policy;
    use profiler::replay::profile::ProfileSet;
    use profiler::replay::workload::{Binder, WideJobs, synergy_csv};
    use std::sync::Mutex;

    #[derive(Debug, Default, PartialEq)]
    struct Seen {
        demand: (f64, f64, f64),
        first_round_s: Option<f64>,
        first_split: Vec<(usize, u32)>,
        rounds_run: u32,
        rounds_spread: u32,
        max_servers: usize,
    }
    let cluster = ClusterSpec::synergy(4).build().unwrap();
    let profiles = ProfileSet::builtin_zoo();
    let path = trace_path("multigpu100.csv");
    let mut binder = Binder::new(&profiles, cluster.total_gpus, path.clone(), WideJobs::Error);
    let jobs = synergy_csv::read(&path, &mut binder).unwrap();
    let mut failures = Vec::new();
    for pol in ["fifo", "srtf", "las", "ftf", "drf", "tetris"] {
        for (mech, name) in [
            ("proportional", "fair"),
            ("greedy", "greedy"),
            ("tune", "tune"),
        ] {
            let seen: Mutex<BTreeMap<u64, Seen>> = Mutex::new(BTreeMap::new());
            let audit = |t: f64, active: &[JobState], ps: &[Placement]| {
                let mut split: BTreeMap<usize, Vec<(usize, u32)>> = BTreeMap::new();
                for p in ps {
                    split.entry(p.job).or_default().push((p.server, p.gpus));
                }
                let mut seen = seen.lock().unwrap();
                for (j, mut parts) in split {
                    parts.sort_unstable();
                    let job = &active[j];
                    let s = seen.entry(job.spec.id).or_default();
                    if s.first_round_s.is_none() {
                        s.first_round_s = Some(t);
                        s.first_split = parts.clone();
                        s.demand = (job.best_cpu, job.best_mem, job.synergy.speedup_orig);
                    }
                    s.rounds_run += 1;
                    s.rounds_spread += u32::from(parts.len() > 1);
                    s.max_servers = s.max_servers.max(parts.len());
                }
            };
            let (p, m) = (
                policy::by_name(pol).unwrap(),
                mechanism::by_name(mech).unwrap(),
            );
            let cfg = super::audited_config(
                &cluster,
                &profiles,
                p.as_ref(),
                m.as_ref(),
                Semantics::Synergy,
                &audit,
            );
            simulate(&cfg, &mut jobs.iter().cloned(), None).unwrap();
            let seen = seen.into_inner().unwrap();
            let file = format!("multigpu100_{}_{name}.spread.csv", pol.to_uppercase());
            let text = std::fs::read_to_string(repo(&format!("{GOLDEN}/{file}"))).unwrap();
            let mut matched = 0;
            for line in text.lines().skip(1) {
                let f: Vec<&str> = line.split(',').collect();
                let num = |i: usize| f[i].parse::<f64>().unwrap();
                let split: Vec<(usize, u32)> = f[6]
                    .split(';')
                    .map(|p| {
                        let (s, g) = p.trim_start_matches('s').split_once(':').unwrap();
                        (s.parse().unwrap(), g.parse().unwrap())
                    })
                    .collect();
                let id: u64 = f[0].parse().unwrap();
                let ours = &seen[&id];
                let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
                let same = close(ours.demand.0, num(2))
                    && close(ours.demand.1, num(3))
                    && close(ours.demand.2, num(4))
                    && ours.first_round_s == Some(num(5))
                    && ours.first_split == split
                    && ours.rounds_run == f[7].parse::<u32>().unwrap()
                    && ours.rounds_spread == f[8].parse::<u32>().unwrap()
                    && ours.max_servers == f[9].parse::<usize>().unwrap();
                if same {
                    matched += 1;
                } else if failures.len() < 5 {
                    failures.push(format!("{file} job {id}: golden {line}, ours {ours:?}"));
                }
            }
            eprintln!("{file}: {matched}/100 jobs placed as Synergy's simulator placed them");
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
