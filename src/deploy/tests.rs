//! The deploy's round loop driven end to end on the simulated backend and clock.

use super::DeployError;
use super::backend::{DeployJob, Grant};
use super::grants::carve;
use super::journal::{Journal, JournalHeader};
use super::sim::{JumpClock, SimBackend};
use super::work::DeployObserver;
use super::{DeployOptions, DeployProgress, run_rounds};
use crate::replay::cluster::ClusterSpec;
use crate::replay::engine::JobState;
use crate::replay::runner::{run_scheme, schemes_by_name};
use crate::replay::{ReplayOptions, Scenario, Semantics, Unobserved, WorkloadSpec};
use crate::spec::parse_spec;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

struct Quiet;
impl DeployObserver for Quiet {}
impl DeployProgress for Quiet {}

/// Jobs arriving over the first rounds of a 2-GPU server, long ones first, so that SRTF
/// preempts them when short ones arrive.
const TRACE: &str = "\
0,resnet18,0.0,40000,1
1,gnmt,10.0,30000,1
2,resnet50,200.0,2000,1
3,alexnet,350.0,1500,1
4,lstm,400.0,9000,1
5,transformer,900.0,800,1
";

fn options(dir: &std::path::Path, scheme: &str) -> DeployOptions {
    let trace = dir.join("trace.csv");
    std::fs::write(&trace, TRACE).unwrap();
    let cluster: ClusterSpec =
        toml::from_str("[[group]]\ncount = 1\ngpus = 2\ncpus = 6\nmemory_gb = 100\n").unwrap();
    let (p, m) = scheme.split_once('+').unwrap();
    DeployOptions {
        replay: ReplayOptions {
            cluster,
            workload: WorkloadSpec::SynergyCsv(trace),
            schemes: vec![(p.into(), m.into())],
            semantics: Semantics::Exact,
            round_s: 60.0,
            ..ReplayOptions::default()
        },
        jobs_dir: dir.to_owned(),
        cgroup_parent: "profiler".into(),
        gpu_ids: Vec::new(),
        slurm: None,
        resume: false,
        checks: super::DeployChecks::default(),
        library: Vec::new(),
    }
}

fn spec() -> Arc<crate::spec::LoadedSpec> {
    spec_with("")
}

/// The simulated jobs' spec with more keys at its end.
fn spec_with(more: &str) -> Arc<crate::spec::LoadedSpec> {
    let text = format!(
        "schema_version = 1\nname = \"sim\"\ncommand = [\"true\"]\n\
         [throughput]\nprotocol = \"progress-file\"\n[sweep]\ncpu = [1]\n{more}"
    );
    Arc::new(parse_spec(&text, std::path::Path::new("sim.toml")).unwrap())
}

/// The trace's jobs run at their matrices' rates on the simulated backend.
struct SimJobs<'s> {
    scenario: &'s Scenario,
    spec: Arc<crate::spec::LoadedSpec>,
    /// Each started job's profile and GPUs, by id.
    profiles_of: RefCell<HashMap<u64, (usize, u32)>>,
}

impl<'s> SimJobs<'s> {
    fn new(scenario: &'s Scenario) -> Self {
        SimJobs {
            scenario,
            spec: spec(),
            profiles_of: RefCell::default(),
        }
    }

    fn job(&self, s: &JobState) -> Result<DeployJob, DeployError> {
        self.profiles_of
            .borrow_mut()
            .insert(s.spec.id, (s.profile as usize, s.spec.gpus));
        Ok(DeployJob {
            id: s.spec.id,
            model: s.spec.model.clone(),
            work_samples: s.spec.work_samples,
            spec: Arc::clone(&self.spec),
        })
    }

    fn rate(&self, job: &DeployJob, g: &Grant) -> f64 {
        let (profile, gpus) = self.profiles_of.borrow()[&job.id];
        self.scenario.profiles.get(profile).rate(
            gpus,
            g.cpus,
            g.mem_bytes as f64 / 1e9,
            Semantics::Exact,
        )
    }
}

type Catalog<'c> = dyn Fn(&JobState) -> Result<DeployJob, DeployError> + 'c;

/// `opts`' first scheme deployed on the simulated backend: its result, whether (and when) it
/// was interrupted, and the backend's calls.
fn sim_deploy(
    opts: &DeployOptions,
    scenario: &Scenario,
    catalog: &Catalog,
    rate: &dyn Fn(&DeployJob, &Grant) -> f64,
    fail_at: &[(u64, f64)],
    cancel: &AtomicBool,
    journal: Option<Journal>,
) -> (crate::replay::RunResult, Option<f64>, super::sim::Calls) {
    let schemes = schemes_by_name(&opts.replay.schemes).unwrap();
    let clock = JumpClock::default();
    clock.0.set(
        journal
            .as_ref()
            .and_then(Journal::resumes_at)
            .unwrap_or(0.0),
    );
    let mut backend = SimBackend::new(clock.clone(), rate);
    backend.fail_at = fail_at.iter().copied().collect();
    let calls = backend.calls.clone();
    let slices = carve(&scenario.cluster, &[0, 1, 2, 3, 4, 5], &[]).unwrap();
    let (result, interrupted) = run_rounds(
        opts,
        scenario,
        &schemes[0],
        &mut backend,
        &mut clock.clone(),
        slices,
        journal,
        catalog,
        &Quiet,
        cancel,
    )
    .unwrap();
    let calls = calls.borrow().clone();
    (result, interrupted, calls)
}

/// The deploy of `opts`' scheme on jobs running at their matrices' rates: its result, the
/// replay's, and the backend's calls.
fn deploy_and_replay(
    opts: &DeployOptions,
    fail_at: &[(u64, f64)],
    cancel: &AtomicBool,
) -> (
    crate::replay::RunResult,
    Option<f64>,
    crate::replay::RunResult,
    super::sim::Calls,
) {
    let scenario = Scenario::load(&opts.replay).unwrap();
    let schemes = schemes_by_name(&opts.replay.schemes).unwrap();
    let replayed = run_scheme(&opts.replay, &scenario, 0, &schemes[0], &Unobserved).unwrap();
    let sim = SimJobs::new(&scenario);
    let catalog = |s: &JobState| sim.job(s);
    let rate = |job: &DeployJob, g: &Grant| sim.rate(job, g);
    let (deployed, interrupted, calls) =
        sim_deploy(opts, &scenario, &catalog, &rate, fail_at, cancel, None);
    (deployed, interrupted, replayed, calls)
}

#[test]
fn a_deploy_of_jobs_running_at_their_matrix_rates_is_the_replay_job_for_job() {
    let dir = tempfile::tempdir().unwrap();
    for scheme in [
        "fifo+proportional",
        "fifo+tune",
        "srtf+proportional",
        "srtf+tune",
    ] {
        let opts = options(dir.path(), scheme);
        let (deployed, interrupted, replayed, calls) =
            deploy_and_replay(&opts, &[], &AtomicBool::new(false));
        assert_eq!(interrupted, None);
        assert_eq!(deployed.jobs.len(), 6, "{scheme}");
        assert_eq!(replayed.jobs.len(), 6, "{scheme}");
        for (d, r) in deployed.jobs.iter().zip(&replayed.jobs) {
            assert_eq!(d.id, r.id);
            let (df, rf) = (d.finish_s.unwrap(), r.finish_s.unwrap());
            assert!(
                (df - rf).abs() < 1e-6 * rf.max(1.0),
                "{scheme}: job {} finished at {df} deployed, {rf} replayed",
                d.id
            );
            assert_eq!(d.start_s, r.start_s, "{scheme}: job {}", d.id);
            assert_eq!(d.failure, None);
        }
        let (dm, rm) = (deployed.summary.makespan_s, replayed.summary.makespan_s);
        assert!(
            (dm - rm).abs() < 1e-6 * rm,
            "{scheme}: makespan {dm} vs {rm}"
        );
        assert_eq!(calls.starts, 6, "{scheme}: every job started once");
        assert_eq!(calls.stops, 6, "{scheme}: every job stopped once");
        if scheme.starts_with("srtf") {
            assert!(
                calls.suspends > 0 && calls.regrants >= calls.suspends,
                "{scheme}: short arrivals preempt the long jobs, which resume: {calls:?}"
            );
        }
    }
}

#[test]
fn a_job_that_fails_is_a_failed_row_and_the_others_finish() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(dir.path(), "fifo+proportional");
    // Job 2 fails halfway through its work.
    let work = {
        let scenario = Scenario::load(&opts.replay).unwrap();
        scenario.trace_jobs().unwrap()[2].work_samples
    };
    let (deployed, _, _, calls) =
        deploy_and_replay(&opts, &[(2, work / 2.0)], &AtomicBool::new(false));
    let failed = &deployed.jobs[2];
    assert_eq!(failed.finish_s, None);
    let why = failed.failure.as_deref().unwrap();
    assert!(
        why.starts_with("failed after") && why.contains("exited with status 1"),
        "{why}"
    );
    assert!(
        deployed
            .jobs
            .iter()
            .filter(|j| j.id != 2)
            .all(|j| j.finish_s.is_some())
    );
    assert_eq!(deployed.summary.unfinished, 1);
    assert_eq!(calls.stops, 6);
}

#[test]
fn an_interrupted_deploy_stops_every_job_and_keeps_the_finished_ones() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(dir.path(), "fifo+proportional");
    let cancel = AtomicBool::new(false);
    // Interrupt once three jobs have started: the backend's start sets the flag.
    let scenario = Scenario::load(&opts.replay).unwrap();
    let started = std::cell::Cell::new(0);
    let catalog = |s: &JobState| {
        started.set(started.get() + 1);
        if started.get() == 3 {
            cancel.store(true, Ordering::SeqCst);
        }
        Ok::<_, DeployError>(DeployJob {
            id: s.spec.id,
            model: s.spec.model.clone(),
            work_samples: s.spec.work_samples,
            spec: spec(),
        })
    };
    let rate = |_: &DeployJob, _: &Grant| 50.0;
    let (result, interrupted, calls) =
        sim_deploy(&opts, &scenario, &catalog, &rate, &[], &cancel, None);
    let t = interrupted.expect("interrupted");
    assert!(t > 0.0);
    assert_eq!(calls.starts, 3);
    assert_eq!(calls.stops, 3, "every started job stopped: {calls:?}");
    // The third start waited for a slot: a job had finished, and its row keeps its finish.
    let finished: Vec<f64> = result.jobs.iter().filter_map(|j| j.finish_s).collect();
    assert!(
        !finished.is_empty(),
        "no job finished before the interruption"
    );
    assert!(finished.iter().all(|&f| f <= t), "{finished:?} after {t}");
}

#[test]
fn a_resumed_deploy_takes_its_journal_and_ends_as_one_never_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    for scheme in ["fifo+tune", "srtf+proportional"] {
        let opts = options(dir.path(), scheme);
        let scenario = Scenario::load(&opts.replay).unwrap();
        let header = JournalHeader::new(scheme, 60.0, scenario.trace_jobs().unwrap());
        let path = dir.path().join(format!("{scheme}.jsonl"));
        let sim = SimJobs::new(&scenario);
        let rate = |job: &DeployJob, g: &Grant| sim.rate(job, g);
        let never = AtomicBool::new(false);
        let catalog = |s: &JobState| sim.job(s);
        let (whole, _, _) = sim_deploy(&opts, &scenario, &catalog, &rate, &[], &never, None);

        // Interrupted once four jobs have started: the rounds it finished are in the journal.
        let cancel = AtomicBool::new(false);
        let started = std::cell::Cell::new(0);
        let stopping = |s: &JobState| {
            started.set(started.get() + 1);
            if started.get() == 4 {
                cancel.store(true, Ordering::SeqCst);
            }
            sim.job(s)
        };
        let journal = Journal::open(&path, &header, false).unwrap();
        let (first, at, _) = sim_deploy(
            &opts,
            &scenario,
            &stopping,
            &rate,
            &[],
            &cancel,
            Some(journal),
        );
        let at = at.expect("interrupted");
        assert!(first.jobs.iter().any(|j| j.finish_s.is_none()), "{scheme}");

        let journal = Journal::open(&path, &header, true).unwrap();
        let rounds = journal.pending.len();
        assert!(
            rounds > 0 && journal.resumes_at().unwrap() <= at,
            "{scheme}"
        );
        let (resumed, again, calls) = sim_deploy(
            &opts,
            &scenario,
            &catalog,
            &rate,
            &[],
            &never,
            Some(journal),
        );
        assert_eq!(again, None);
        assert!(
            calls.starts < 6 + 4,
            "{scheme}: jobs finished before the interruption are not run again: {calls:?}"
        );
        assert_eq!(resumed.jobs.len(), whole.jobs.len(), "{scheme}");
        for (r, w) in resumed.jobs.iter().zip(&whole.jobs) {
            let (rf, wf) = (r.finish_s.unwrap(), w.finish_s.unwrap());
            assert!(
                (rf - wf).abs() < 1e-6 * wf.max(1.0),
                "{scheme}: job {} finished at {rf} resumed, {wf} uninterrupted",
                r.id
            );
        }
        // The resumed deploy's journal holds every round, and a resume of it runs nothing.
        let journal = Journal::open(&path, &header, true).unwrap();
        assert!(journal.pending.len() > rounds, "{scheme}");
        let (done, _, calls) = sim_deploy(
            &opts,
            &scenario,
            &catalog,
            &rate,
            &[],
            &never,
            Some(journal),
        );
        assert_eq!(calls.starts, 0, "{scheme}: {calls:?}");
        assert_eq!(
            done.summary.makespan_s, whole.summary.makespan_s,
            "{scheme}"
        );
    }
}

/// Jobs that pay a start-up at each start, and again at each restart to resize (they size
/// themselves to their CPUs), deployed: the replay that charges the same start-ups gives the
/// deploy's result job for job; one that charges none does not.
#[test]
fn the_replay_charges_the_start_ups_a_deploy_pays() {
    let dir = tempfile::tempdir().unwrap();
    let sizes_itself = "mode = \"relaunch\"\n[deploy]\nstartup_s = 7\n";
    for scheme in ["fifo+tune", "srtf+tune", "srtf+proportional"] {
        let opts = options(dir.path(), scheme);
        let mut scenario = Scenario::load(&opts.replay).unwrap();
        let schemes = schemes_by_name(&opts.replay.schemes).unwrap();
        let free = run_scheme(&opts.replay, &scenario, 0, &schemes[0], &Unobserved).unwrap();
        let cost = crate::replay::profile::StartCost {
            startup_s: 7.0,
            restarts_to_resize: true,
        };
        let models: Vec<String> = (scenario.profiles.profiles.iter())
            .map(|p| p.model.clone())
            .collect();
        for m in &models {
            scenario.profiles.set_start_cost(m, cost);
        }
        let charged = run_scheme(&opts.replay, &scenario, 0, &schemes[0], &Unobserved).unwrap();
        let mut sim = SimJobs::new(&scenario);
        sim.spec = spec_with(sizes_itself);
        let catalog = |s: &JobState| sim.job(s);
        let rate = |job: &DeployJob, g: &Grant| sim.rate(job, g);
        let never = AtomicBool::new(false);
        let (deployed, _, calls) = sim_deploy(&opts, &scenario, &catalog, &rate, &[], &never, None);
        let mut differs = false;
        assert_eq!(deployed.jobs.len(), charged.jobs.len());
        assert_eq!(charged.jobs.len(), free.jobs.len());
        for ((d, c), f) in deployed.jobs.iter().zip(&charged.jobs).zip(&free.jobs) {
            let (df, cf) = (d.finish_s.unwrap(), c.finish_s.unwrap());
            assert!(
                (df - cf).abs() < 1e-6 * cf.max(1.0),
                "{scheme}: job {} finished at {df} deployed, {cf} replayed with start-ups",
                d.id
            );
            differs |= (df - f.finish_s.unwrap()).abs() > 1.0;
        }
        assert!(differs, "{scheme}: start-ups change the finishes");
        if scheme.ends_with("tune") {
            assert!(calls.regrants > 0, "{scheme}: {calls:?}");
        }
    }
}

#[test]
fn the_replay_of_a_deploy_holds_its_rates_and_leaves_the_engine_no_gap() {
    let dir = tempfile::tempdir().unwrap();
    for scheme in ["fifo+proportional", "srtf+tune"] {
        let opts = options(dir.path(), scheme);
        let scenario = Scenario::load(&opts.replay).unwrap();
        let schemes = schemes_by_name(&opts.replay.schemes).unwrap();
        let header = JournalHeader::new(scheme, 60.0, scenario.trace_jobs().unwrap());
        let path = dir.path().join(format!("{scheme}.jsonl"));
        let sim = SimJobs::new(&scenario);
        // gnmt and lstm run at 70% of their matrices: the deploy is slower than its replay.
        let rate = |job: &DeployJob, g: &Grant| {
            let slow = ["gnmt", "lstm"].contains(&job.model.as_str());
            sim.rate(job, g) * if slow { 0.7 } else { 1.0 }
        };
        let catalog = |s: &JobState| sim.job(s);
        let journal = Journal::open(&path, &header, false).unwrap();
        let never = AtomicBool::new(false);
        let (deployed, _, _) = sim_deploy(
            &opts,
            &scenario,
            &catalog,
            &rate,
            &[],
            &never,
            Some(journal),
        );
        let replayed = run_scheme(&opts.replay, &scenario, 0, &schemes[0], &Unobserved).unwrap();
        let (_, rounds) = super::journal::read_journal(&path).unwrap();
        let rounds: Vec<_> = rounds.into_iter().collect();
        let observed =
            super::observed::Observed::from_rounds(scenario.trace_jobs().unwrap(), &rounds);
        let of_deploy = crate::replay::runner::run_scheme_measured(
            &opts.replay,
            &scenario,
            0,
            &schemes[0],
            &Unobserved,
            Some(&observed),
        )
        .unwrap();
        let mean = |r: &crate::replay::RunResult| r.summary.mean_jct_s;
        let (d, o, r) = (mean(&deployed), mean(&of_deploy), mean(&replayed));
        assert!(
            d > r * 1.05,
            "{scheme}: the slow kinds make the deploy slower: {d} vs {r}"
        );
        // The engine's part: rates it did not see (a job's first round, at a grant it held
        // once) come from its kind's or its matrix's.
        assert!(
            ((d - o) / r).abs() < 0.03,
            "{scheme}: deploy {d}, replay of the deploy {o}, replay {r}"
        );
        assert!(
            (o - r) / r > 0.03,
            "{scheme}: the matrices' part {o} vs {r}"
        );
        let ratios = super::replay_of_deploy::ratios_for_tests(&scenario, &observed);
        for k in &ratios {
            let want = if ["gnmt", "lstm"].contains(&k.model.as_str()) {
                0.7
            } else {
                1.0
            };
            assert!((k.ratio - want).abs() < 1e-6, "{scheme}: {k:?}");
        }
        assert!(
            ratios.iter().any(|k| k.model == "gnmt"),
            "{scheme}: {ratios:?}"
        );
    }
}
