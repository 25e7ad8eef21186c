//! Property tests of the replay engine: invariants of every round, and the fast path against
//! re-deciding every round.

use super::*;
use proptest::prelude::*;
use std::sync::Mutex;

fn cluster(kind: u8) -> ClusterSpec {
    let text = match kind % 3 {
        0 => "[[group]]\ncount = 2\ngpus = 8\ncpus = 24\nmemory_gb = 500\n",
        1 => {
            "[[group]]\ncount = 1\ngpus = 8\ncpus = 24\nmemory_gb = 500\n[[group]]\ncount = 2\ngpus = 4\ncpus = 8\nmemory_gb = 128\n"
        }
        _ => "[[group]]\ncount = 3\ngpus = 4\ncpus = 40\nmemory_gb = 1000\n",
    };
    ClusterSpec::from_toml(text, Path::new("p.toml")).unwrap()
}

/// One synthetic replay (`fast`: the engine's fast path), every round audited independently
/// of the engine's own check.
#[allow(clippy::too_many_arguments)]
fn replayed(
    seed: u64,
    kind: u8,
    pol: usize,
    mech: usize,
    sem: Semantics,
    jobs: u64,
    jobs_per_hour: f64,
    fast: bool,
) -> (EngineOutput, Vec<String>) {
    let spec = cluster(kind);
    let cl = spec.build().unwrap();
    let profiles = ProfileSet::builtin_zoo();
    let policy = (policy::ALL[pol].2)();
    let mechanism = (mechanism::ALL[mech].2)();
    let violations = Mutex::new(Vec::new());
    let audit = |t: f64, _: &[JobState], ps: &[Placement]| {
        let mut used = vec![(0u32, 0.0f64, 0.0f64); cl.servers.len()];
        for p in ps {
            used[p.server].0 += p.gpus;
            used[p.server].1 += p.cpus;
            used[p.server].2 += p.mem_gb;
        }
        for (s, u) in used.iter().enumerate() {
            let srv = &cl.servers[s];
            if u.0 > srv.gpus || u.1 > srv.cpus + 1e-6 || u.2 > srv.mem_gb + 1e-6 {
                violations
                    .lock()
                    .unwrap()
                    .push(format!("t={t} server {s}: {u:?}"));
            }
        }
    };
    let cfg = EngineConfig {
        fast,
        ..audited_config(
            &cl,
            &profiles,
            policy.as_ref(),
            mechanism.as_ref(),
            sem,
            &audit,
        )
    };
    let w = SyntheticSpec {
        jobs_per_hour,
        duration: DurationDist::Exponential(60.0),
        gpu_demand: vec![(1, 0.6), (2, 0.2), (4, 0.15), (8, 0.05)],
        seed,
        max_jobs: Some(jobs),
        ..Default::default()
    };
    let mut generator =
        Synthetic::new(&w, &profiles, cl.reference_share(), cl.total_gpus, sem).unwrap();
    let out = simulate(&cfg, &mut generator, None).unwrap();
    (out, violations.into_inner().unwrap())
}

/// Everything a replay reports of a job, floats as bits (equal means identical).
fn job_bits(j: &JobState) -> Vec<u64> {
    let f = |x: f64| x.to_bits();
    let o = |x: Option<f64>| x.map_or(u64::MAX, f64::to_bits);
    vec![
        j.spec.id,
        o(j.finish),
        o(j.first_start),
        f(j.remaining),
        f(j.attained_gpu_s),
        f(j.attained_dominant_s),
        f(j.contention_sum),
        u64::from(j.rounds_active),
        u64::from(j.rounds_run),
        j.synergy.done_iters,
        f(j.synergy.speedup),
        u64::from(j.synergy.priority),
    ]
}

/// A round's row without its wall time.
fn row_bits(r: &RoundRow) -> Vec<u64> {
    let f = |x: f64| x.to_bits();
    vec![
        f(r.t),
        r.active as u64,
        r.running as u64,
        u64::from(r.gpus),
        f(r.cpus),
        f(r.mem_gb),
        f(r.gpu_use),
        f(r.cpu_use),
        f(r.mem_use),
        r.lp_bound.map_or(0, f),
        r.lp_rounded.map_or(0, f),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn invariants(seed in 0u64..1000, kind in 0u8..3, pol in 0usize..policy::ALL.len(), mech in 0usize..mechanism::ALL.len(), synergy in any::<bool>(), jobs in 5u64..40) {
        let sem = if synergy { Semantics::Synergy } else { Semantics::Exact };
        let (out, violations) = replayed(seed, kind, pol, mech, sem, jobs, 8.0, true);
        let out = out.jobs;
        // No server over-allocated in any dimension in any round.
        prop_assert!(violations.is_empty(), "{violations:?}");
        // Each job finishes exactly once.
        prop_assert_eq!(out.len() as u64, jobs);
        let mut ids: Vec<u64> = out.iter().map(|j| j.spec.id).collect();
        ids.dedup();
        prop_assert_eq!(ids.len() as u64, jobs);
        for j in &out {
            let finish = j.finish.expect("finished");
            prop_assert!(j.remaining == 0.0);
            // Never faster than alone at its best allocation, for the work it has: under
            // Synergy's semantics the whole iterations the work floors to.
            let work = match sem {
                Semantics::Exact => j.spec.work_samples,
                Semantics::Synergy => j.synergy.total_iters as f64 * j.synergy.samples_per_iter,
            };
            let best = work / j.best_rate;
            prop_assert!(finish - j.spec.arrival_s >= best * (1.0 - 1e-9), "job {} took {} < best {}", j.spec.id, finish - j.spec.arrival_s, best);
        }
        // Same seed, same output.
        let (again, _) = replayed(seed, kind, pol, mech, sem, jobs, 8.0, true);
        let again = again.jobs;
        let a: Vec<_> = out.iter().map(|j| (j.spec.id, j.finish, j.first_start)).collect();
        let b: Vec<_> = again.iter().map(|j| (j.spec.id, j.finish, j.first_start)).collect();
        prop_assert_eq!(a, b);
    }

    /// The fast path (order kept across rounds, decisions reused while nothing the
    /// mechanism saw changed) gives exactly what re-keying, re-sorting and re-deciding
    /// every round gives: every job's every counter and every round's row, bit for bit,
    /// from light load to queues many times the cluster.
    #[test]
    fn fast_path_equals_round_by_round(seed in 0u64..1000, kind in 0u8..3, pol in 0usize..policy::ALL.len(), mech in 0usize..mechanism::ALL.len(), synergy in any::<bool>(), jobs in 5u64..80, jobs_per_hour in 2.0f64..60.0) {
        let sem = if synergy { Semantics::Synergy } else { Semantics::Exact };
        let (fast, _) = replayed(seed, kind, pol, mech, sem, jobs, jobs_per_hour, true);
        let (slow, _) = replayed(seed, kind, pol, mech, sem, jobs, jobs_per_hour, false);
        prop_assert_eq!(fast.jobs.len() as u64, jobs);
        let a: Vec<_> = fast.jobs.iter().map(job_bits).collect();
        let b: Vec<_> = slow.jobs.iter().map(job_bits).collect();
        prop_assert_eq!(a, b);
        let a: Vec<_> = fast.rounds.iter().map(row_bits).collect();
        let b: Vec<_> = slow.rounds.iter().map(row_bits).collect();
        prop_assert_eq!(a, b);
        prop_assert_eq!(fast.lp_failures, slow.lp_failures);
        prop_assert_eq!(fast.end_s.to_bits(), slow.end_s.to_bits());
    }
}
