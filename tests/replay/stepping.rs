//! One round at a time: what each policy and mechanism places on a two-server cluster after
//! the first round (and, for the history-based policies, the second), stepping a [`Replay`].
//!
//! The cluster: 2 servers x (4 GPUs, 12 CPUs, 250 GB), so the proportional share is 3 CPUs and
//! 62.5 GB per GPU as on Synergy's server. Best cases in the zoo: alexnet 12 CPUs / 125 GB,
//! resnet18 9 / 62.5, gnmt 1 / 20.83.

use profiler::replay::cluster::{Cluster, ClusterSpec};
use profiler::replay::engine::{EngineConfig, Replay};
use profiler::replay::job::JobSpec;
use profiler::replay::profile::{ProfileSet, Semantics};
use profiler::replay::{mechanism, policy};
use std::path::Path;

fn two_servers() -> Cluster {
    let toml = "name = \"two\"\n[[group]]\ncount = 2\ngpus = 4\ncpus = 12\nmemory_gb = 250\n";
    ClusterSpec::from_toml(toml, Path::new("two.toml"))
        .unwrap()
        .build()
        .unwrap()
}

/// A one-GPU job arriving at `arrival_s` with `work` samples (large: nothing finishes early).
fn job(id: u64, model: &str, arrival_s: f64, work: f64) -> JobSpec {
    JobSpec {
        id,
        model: model.into(),
        arrival_s,
        gpus: 1,
        work_samples: work,
        cpu_request: None,
        mem_request_gb: None,
    }
}

/// A placement as (job id, server, cores, GB).
type Placed = (u64, usize, f64, f64);

/// Placements of each of the first `rounds` rounds, sorted by job id.
fn step(
    pol: &str,
    mech: &str,
    sem: Semantics,
    jobs: &[JobSpec],
    rounds: usize,
) -> Vec<Vec<Placed>> {
    step_rounds_of(300.0, pol, mech, sem, jobs, rounds)
}

/// [`step`] with rounds of `round_s` seconds.
fn step_rounds_of(
    round_s: f64,
    pol: &str,
    mech: &str,
    sem: Semantics,
    jobs: &[JobSpec],
    rounds: usize,
) -> Vec<Vec<Placed>> {
    let cluster = two_servers();
    let profiles = ProfileSet::builtin_zoo();
    let policy = policy::by_name(pol).unwrap();
    let mechanism = mechanism::by_name(mech).unwrap();
    let cfg = EngineConfig {
        cluster: &cluster,
        profiles: &profiles,
        policy: policy.as_ref(),
        mechanism: mechanism.as_ref(),
        semantics: sem,
        round_s,
        window: None,
        horizon_s: profiler::replay::bounds::DEFAULT_HORIZON_S,
        max_rounds: 1000,
        first_round_s: None,
        audit: None,
        progress: None,
        measured: None,
        fast: true,
    };
    let mut arrivals = jobs.iter().cloned();
    let mut replay = Replay::new(&cfg, &mut arrivals, None).unwrap();
    let mut out = Vec::new();
    for _ in 0..rounds {
        assert!(replay.step_round().unwrap());
        assert!(
            replay.finished().is_empty(),
            "a job finished: make the work larger"
        );
        let mut placed: Vec<Placed> = replay
            .last_placements()
            .iter()
            .map(|p| (replay.active()[p.job].spec.id, p.server, p.cpus, p.mem_gb))
            .collect();
        placed.sort_by_key(|p| p.0);
        out.push(placed);
    }
    out
}

fn ids(placed: &[Placed]) -> Vec<u64> {
    placed.iter().map(|p| p.0).collect()
}

/// Nine equal resnet50 jobs with work growing with the id, arriving in id order; 8 GPUs.
fn nine() -> Vec<JobSpec> {
    (0..9)
        .map(|i| job(i, "resnet50", i as f64, 1e9 * (1.0 + i as f64)))
        .collect()
}

/// Four jobs whose best cases do not all fit: alexnet, resnet18, gnmt, alexnet.
fn four() -> Vec<JobSpec> {
    ["alexnet", "resnet18", "gnmt", "alexnet"]
        .iter()
        .enumerate()
        .map(|(i, m)| job(i as u64, m, 0.0, 1e12))
        .collect()
}

#[test]
fn proportional_gives_every_job_its_share_in_policy_order() {
    for sem in [Semantics::Exact, Semantics::Synergy] {
        let r = step("fifo", "proportional", sem, &nine(), 1);
        // Arrivals at 0..8 s: only job 0 has arrived at t = 0.
        assert_eq!(ids(&r[0]), vec![0], "{sem:?}");
        let mut late: Vec<JobSpec> = nine();
        late.iter_mut().for_each(|j| j.arrival_s = 0.0);
        let r = step("fifo", "proportional", sem, &late, 1);
        assert_eq!(
            ids(&r[0]),
            (0..8).collect::<Vec<_>>(),
            "{sem:?}: FIFO leaves the last out"
        );
        for p in &r[0] {
            assert_eq!((p.2, p.3), (3.0, 62.5), "{sem:?}: job {} got {p:?}", p.0);
        }
        let per_server = |s| r[0].iter().filter(|p| p.1 == s).count();
        assert_eq!((per_server(0), per_server(1)), (4, 4));
    }
}

#[test]
fn srtf_runs_the_shortest_and_the_history_policies_catch_up_in_round_two() {
    let mut jobs = nine();
    jobs.iter_mut().for_each(|j| j.arrival_s = 0.0);
    // Reverse the work: job 0 is now the longest, and SRTF leaves it out.
    let n = jobs.len();
    for (i, j) in jobs.iter_mut().enumerate() {
        j.work_samples = 1e9 * (n - i) as f64;
    }
    for sem in [Semantics::Exact, Semantics::Synergy] {
        let r = step("srtf", "proportional", sem, &jobs, 1);
        assert_eq!(ids(&r[0]), (1..9).collect::<Vec<_>>(), "{sem:?}");
        // LAS, DRF and FTF: the job left out in round one has received nothing (and waited),
        // so it runs in round two (not under Synergy's DRF, a static sort by demand, nor its
        // FTF, which runs the smallest finish-time ratio first).
        let history: &[&str] = match sem {
            Semantics::Exact => &["las", "drf", "ftf"],
            Semantics::Synergy => &["las"],
        };
        for &pol in history {
            let r = step(pol, "proportional", sem, &jobs, 2);
            assert_eq!(r[0].len(), 8, "{pol} {sem:?}");
            let left_out = (0..9).find(|i| !ids(&r[0]).contains(i)).unwrap();
            assert!(
                ids(&r[1]).contains(&left_out),
                "{pol} {sem:?}: job {left_out} waited in round 1 and again in round 2: {:?}",
                ids(&r[1])
            );
        }
    }
}

#[test]
fn tetris_prefers_the_job_whose_best_case_aligns_with_free_resources() {
    // Nine jobs on eight GPUs: one gnmt (best case 1 CPU) and eight alexnets (12 CPUs): the
    // gnmt job has the smallest alignment and waits, though it arrived first.
    let mut jobs = vec![job(0, "gnmt", 0.0, 1e12)];
    jobs.extend((1..9).map(|i| job(i, "alexnet", 0.0, 1e12)));
    let r = step("tetris", "proportional", Semantics::Exact, &jobs, 1);
    assert_eq!(ids(&r[0]), (1..9).collect::<Vec<_>>());
}

#[test]
fn greedy_gives_the_best_case_or_nothing() {
    for sem in [Semantics::Exact, Semantics::Synergy] {
        let r = step("fifo", "greedy", sem, &four(), 1);
        // alexnet takes server 0's 12 CPUs; resnet18 (9 CPUs) and gnmt (1) go to server 1;
        // the second alexnet fits nowhere and waits, though 5 GPUs are free. gnmt asks the
        // least memory of its profile, or the 20 GB Synergy's zoo declares.
        let gnmt_gb = if sem == Semantics::Synergy {
            20.0
        } else {
            20.83
        };
        assert_eq!(
            r[0],
            vec![(0, 0, 12.0, 125.0), (1, 1, 9.0, 62.5), (2, 1, 1.0, gnmt_gb),],
            "{sem:?}"
        );
    }
}

#[test]
fn tune_demotes_a_peer_synergy_style_or_reclaims_only_what_is_needed() {
    // Synergy's Tune: the second alexnet fits nowhere, not even at its share (3 CPUs): server 1
    // (fewest free GPUs) has 2 CPUs left; its jobs by CPUs per GPU: resnet18 (9, excess 6 over
    // its share) covers the missing CPU and is demoted to its share; the alexnet then goes
    // there at its share.
    let r = step("fifo", "tune", Semantics::Synergy, &four(), 1);
    assert_eq!(
        r[0],
        vec![
            (0, 0, 12.0, 125.0),
            (1, 1, 3.0, 62.5),
            (2, 1, 1.0, 20.0),
            (3, 1, 3.0, 62.5),
        ]
    );
    // Our Tune takes back only the one CPU missing: resnet18 keeps 8.
    let r = step("fifo", "tune", Semantics::Exact, &four(), 1);
    assert_eq!(
        r[0],
        vec![
            (0, 0, 12.0, 125.0),
            (1, 1, 8.0, 62.5),
            (2, 1, 1.0, 20.83),
            (3, 1, 3.0, 62.5),
        ]
    );
}

#[test]
fn opt_runs_every_job_within_each_server() {
    for sem in [Semantics::Exact, Semantics::Synergy] {
        let r = step("fifo", "opt", sem, &four(), 1);
        assert_eq!(ids(&r[0]), vec![0, 1, 2, 3], "{sem:?}");
        for s in 0..2 {
            let on: Vec<&Placed> = r[0].iter().filter(|p| p.1 == s).collect();
            assert!(
                on.iter().map(|p| p.2).sum::<f64>() <= 12.0 + 1e-9,
                "{sem:?}: {on:?}"
            );
            assert!(
                on.iter().map(|p| p.3).sum::<f64>() <= 250.0 + 1e-9,
                "{sem:?}: {on:?}"
            );
        }
        // Every job gets at least one core (the smallest CPU level of every profile).
        for p in &r[0] {
            assert!(p.2 >= 1.0 - 1e-9, "{sem:?}: {p:?}");
        }
    }
}

#[test]
fn synergy_starvation_guard_runs_a_job_kept_waiting_1000_hours() {
    // SRTF on 8 GPUs: eight jobs of 2000 h at the share keep a 10000 h job waiting. With rounds
    // of 400,000 s the round at t = 4,000,000 s finds it waiting more than 1000 h: it gets
    // priority 1 and runs from the next round on, ahead of the shorter jobs (Synergy's rule).
    // Under exact semantics there is no guard: it waits until the short jobs finish.
    let profiles = ProfileSet::builtin_zoo();
    let per_s =
        profiles
            .get(profiles.lookup("resnet50").unwrap())
            .rate(1, 3.0, 62.5, Semantics::Synergy);
    let mut jobs = vec![job(0, "resnet50", 0.0, per_s * 10_000.0 * 3600.0)];
    jobs.extend((1..9).map(|i| job(i, "resnet50", 0.0, per_s * 2000.0 * 3600.0)));
    for (sem, runs_in_round_12) in [(Semantics::Synergy, true), (Semantics::Exact, false)] {
        let r = step_rounds_of(400_000.0, "srtf", "proportional", sem, &jobs, 12);
        for (k, placed) in r.iter().enumerate().take(11) {
            assert!(
                !ids(placed).contains(&0),
                "{sem:?} round {}: {:?}",
                k + 1,
                ids(placed)
            );
        }
        assert_eq!(
            ids(&r[11]).contains(&0),
            runs_in_round_12,
            "{sem:?}: {:?}",
            ids(&r[11])
        );
    }
}

#[test]
fn jobs_wider_than_a_free_server_span_the_fewest_servers_or_synergys_gpu_order() {
    // FIFO, proportional, both servers empty: A (3 GPUs), B (2), C (3).
    let mut jobs: Vec<JobSpec> = (0..3).map(|i| job(i, "gnmt", 0.0, 1e12)).collect();
    for (j, g) in jobs.iter_mut().zip([3, 2, 3]) {
        j.gpus = g;
    }
    let sorted = |mut v: Vec<Placed>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v
    };
    // Synergy walks free GPUs in id order: B takes server 0's last GPU and one of server 1.
    let r = step("fifo", "proportional", Semantics::Synergy, &jobs, 1);
    assert_eq!(
        sorted(r[0].clone()),
        vec![
            (0, 0, 9.0, 187.5),
            (1, 0, 3.0, 62.5),
            (1, 1, 3.0, 62.5),
            (2, 1, 9.0, 187.5),
        ]
    );
    // Exact: B fits whole on server 1; C no longer fits on one server and spans both, most of
    // it where there is most room.
    let r = step("fifo", "proportional", Semantics::Exact, &jobs, 1);
    assert_eq!(
        sorted(r[0].clone()),
        vec![
            (0, 0, 9.0, 187.5),
            (1, 1, 6.0, 125.0),
            (2, 0, 3.0, 62.5),
            (2, 1, 6.0, 125.0),
        ]
    );
    // A job as wide as the cluster runs on both servers, under every mechanism.
    let mut wide = vec![job(0, "resnet18", 0.0, 1e12)];
    wide[0].gpus = 8;
    for sem in [Semantics::Exact, Semantics::Synergy] {
        for mech in ["proportional", "greedy", "tune", "opt"] {
            let r = step("fifo", mech, sem, &wide, 1);
            let servers: Vec<usize> = r[0].iter().map(|p| p.1).collect();
            assert_eq!(servers, vec![0, 1], "{mech} {sem:?}: {:?}", r[0]);
        }
    }
}
