//! `profiler deploy`: a replay's schedule run on real jobs. The replay engine, with its
//! policies and mechanisms, decides every round as it does in a replay; where the replay
//! advances each job by its matrix's rate, the deploy runs the jobs for the round (each in a
//! cgroup of its own with the CPUs and memory its mechanism gave it; jobs left out are
//! suspended in place) and reads from their own output how far they got. It writes the
//! replay's tables, and the replay of the same trace beside them, so the two compare column by
//! column ([`compare`]).

pub mod backend;
pub mod catalog;
pub mod clock;
pub mod colocation;
pub mod compare;
pub mod error;
pub mod feedback;
pub mod grants;
pub mod journal;
pub mod local;
pub mod machines;
pub mod observed;
pub mod profile_jobs;
pub mod replay_of_deploy;
#[cfg(test)]
mod sim;
pub mod slurm;
pub mod spot_check;
#[cfg(test)]
mod tests;
pub mod work;

pub use error::DeployError;

use crate::replay::engine::Replay;
use crate::replay::runner::{Scheme, engine_config, run_result, run_scheme, schemes_by_name};
use crate::replay::{ReplayError, ReplayOptions, ReplaySummary, RunResult, Scenario, Semantics};
use backend::Backend;
use catalog::Catalog;
use clock::{Clock, WallClock};
use error::RoundFailure;
use journal::{Journal, JournalHeader};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use work::{DeployObserver, DeployWork};

/// What to deploy, and where.
#[derive(Debug, Clone)]
pub struct DeployOptions {
    /// The replay to run for real: its cluster, profiles, trace, schemes and round length
    /// (`out_dir` is where both the deploy's and the replay's tables go).
    pub replay: ReplayOptions,
    /// Job specs, one per model of the trace.
    pub jobs_dir: PathBuf,
    /// The profiler-owned parent cgroup the jobs' cgroups go under.
    pub cgroup_parent: String,
    /// GPU devices the cluster's GPUs are (in server order); empty: accelerators are emulated
    /// (each job's GPUs are slots the scheduler counts; CPU-only jobs emulate their own).
    pub gpu_ids: Vec<u32>,
    /// Run the jobs as Slurm jobs there, instead of in cgroups of this machine.
    pub slurm: Option<slurm::SlurmTarget>,
    /// Go on from the journals of an earlier deploy into the same output directory: its
    /// finished rounds are taken as they were, and the rest run.
    pub resume: bool,
    /// Before the first round, what the jobs' matrices are checked against on this machine.
    pub checks: DeployChecks,
    /// Folders of matrices a matrix with predicted cells leans on when the deploy's rates are
    /// fed back into it, besides the shipped zoo and the profiles' own folder.
    pub library: Vec<PathBuf>,
}

/// What a deploy checks its matrices against before its first round (on this machine; a
/// deploy through Slurm runs its jobs elsewhere and checks neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeployChecks {
    /// Sweep every job spec whose matrix in the profiles directory is missing or of another
    /// machine kind first ([`profile_jobs`]).
    pub profile: bool,
    /// Go on with matrices of another machine kind, with a warning, instead of stopping.
    pub allow_other_machine: bool,
    /// Measure each job kind briefly at one allocation and stop where its matrix is outside
    /// the interval ([`spot_check`]).
    pub spot_check: bool,
}

impl Default for DeployChecks {
    fn default() -> Self {
        DeployChecks {
            profile: false,
            allow_other_machine: false,
            spot_check: true,
        }
    }
}

/// A deploy's results: per scheme, the deploy's and the replay's, and both summaries.
#[derive(Debug, Clone)]
pub struct DeploySummary {
    pub deployed: ReplaySummary,
    pub replayed: ReplaySummary,
    /// What the checks before the first round found, a line each (`checks.txt`).
    pub checks: Vec<String>,
    /// What the deploy's rates changed in the matrices that predicted cells, a line each
    /// (`feedback.txt`; [`feedback`]).
    pub feedback: Vec<String>,
    /// Each scheme's replay of its deploy, in the deploy's order, where its journal was
    /// written ([`replay_of_deploy`]).
    pub of_deploy: Vec<Option<replay_of_deploy::SchemeReplay>>,
}

impl DeploySummary {
    /// The comparison's rows, scheme by scheme, with the gap's two parts where made.
    pub fn compare_rows(&self) -> Vec<compare::CompareRow> {
        compare::rows(
            &self.deployed,
            &self.replayed,
            &of_deploy_figures(&self.of_deploy),
        )
    }
}

/// The figures of each scheme's replay of its deploy, for the comparison.
fn of_deploy_figures(
    replays: &[Option<replay_of_deploy::SchemeReplay>],
) -> Vec<Option<compare::OfDeploy>> {
    (replays.iter())
        .map(|r| {
            r.as_ref().map(|r| compare::OfDeploy {
                makespan_s: r.run.summary.makespan_s,
                mean_jct_s: r.run.summary.mean_jct_s,
                restarts: r.restarts,
                slips: r.slips,
            })
        })
        .collect()
}

/// What the screen shows: a scheme starts (`jobs` to run, the replay's makespan for the time
/// left), and after every round what [`DeployObserver`] gets.
pub trait DeployProgress: DeployObserver {
    fn scheme_started(&self, _label: &str, _jobs: usize, _replay_makespan_s: f64) {}
    /// A resumed scheme takes its first `rounds` from its journal and goes on at `t`.
    fn resumed(&self, _rounds: usize, _t: f64) {}
    /// A line of the checks before the first round: a matrix profiled, the machines
    /// compared, a spot check's result.
    fn note(&self, _line: &str) {}
}

/// Runs every scheme of `opts` on real jobs of this machine, one after the other, after its
/// replay. Ctrl-C or SIGTERM (`cancel`) stops the jobs and writes the tables of those that
/// finished.
pub fn run_deploy(
    opts: &DeployOptions,
    progress: &dyn DeployProgress,
    cancel: &AtomicBool,
) -> Result<DeploySummary, DeployError> {
    let schemes = schemes_by_name(&opts.replay.schemes)?;
    deploy_schemes(opts, &schemes, progress, cancel)
}

/// [`run_deploy`] with `schemes` of any origin (the built-ins, or a front end's own: Python
/// plug-ins), in the order given.
pub fn deploy_schemes(
    opts: &DeployOptions,
    schemes: &[Scheme],
    progress: &dyn DeployProgress,
    cancel: &AtomicBool,
) -> Result<DeploySummary, DeployError> {
    if opts.replay.semantics != Semantics::Exact {
        return Err(DeployError::Options(
            "a deploy finishes jobs when they finish: it replays with --semantics exact".into(),
        ));
    }
    let catalog = Catalog::load(&opts.jobs_dir)?;
    let here = (opts.slurm.is_none()).then(crate::machine::this_machine);
    let mut checks = Vec::new();
    if let (true, Some(here), Some(dir)) = (opts.checks.profile, &here, &opts.replay.profiles) {
        let cgroup = &opts.cgroup_parent;
        checks = profile_jobs::profile_jobs(&catalog, dir, here, cgroup, progress, cancel)?;
    }
    let mut scenario = Scenario::load(&opts.replay)?;
    catalog.set_start_costs(&mut scenario.profiles);
    let Some(jobs) = scenario.trace_jobs() else {
        return Err(DeployError::Options(
            "a deploy runs the jobs of a trace: give --trace (record a synthetic workload \
             with `profiler replay --record` first)"
                .into(),
        ));
    };
    if let Some(here) = &here {
        checks = check_matrices(opts, &scenario, &catalog, here, checks, progress, cancel)?;
    }
    catalog.prepare(jobs)?;
    let mut replayed = summary_of(
        &scenario,
        &opts.replay,
        schemes
            .iter()
            .enumerate()
            .map(|(k, s)| run_scheme(&opts.replay, &scenario, k, s, &crate::replay::Unobserved))
            .collect::<Result<Vec<_>, ReplayError>>()?,
    );
    let mean_jct = |o: &ReplayOptions, s: &Scenario, k: usize| {
        let run = run_scheme(o, s, k, &schemes[k], &crate::replay::Unobserved)?;
        Ok(run.summary.mean_jct_s)
    };
    replayed.verdicts =
        crate::replay::verdict::verdicts(&opts.replay, &scenario, &replayed.runs, &mean_jct)?;
    let mut runs = Vec::new();
    for (k, scheme) in schemes.iter().enumerate() {
        let replay = &replayed.runs[k].summary;
        progress.scheme_started(
            &format!("{}+{}", replay.policy, replay.mechanism),
            jobs.len(),
            replay.makespan_s,
        );
        let outcome = deploy_scheme(opts, &scenario, scheme, &catalog, progress, cancel);
        let (run, interrupted_at) = outcome?;
        runs.push(run);
        if let Some(t) = interrupted_at {
            let deployed = summary_of(&scenario, &opts.replay, runs);
            let out = write(opts, &deployed, &replayed, &[])?;
            return Err(DeployError::Interrupted {
                t,
                finished: deployed.runs.iter().map(|r| r.finished_jct_s.len()).sum(),
                out,
            });
        }
    }
    let deployed = summary_of(&scenario, &opts.replay, runs);
    let of_deploy = match &opts.replay.out_dir {
        Some(dir) => (schemes.iter().zip(&deployed.runs).enumerate())
            .map(|(k, (scheme, run))| {
                replay_of_deploy::replay_scheme(&opts.replay, &scenario, k, scheme, dir, run)
            })
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    write(opts, &deployed, &replayed, &of_deploy)?;
    let feedback = match &opts.replay.out_dir {
        // The tables are written: a matrix that cannot be fed back is a line, not a failure.
        Some(dir) => feedback::feed_back_matrices(dir, &scenario, &opts.library)
            .unwrap_or_else(|e| vec![format!("the deploy's rates were not fed back: {e}")]),
        None => Vec::new(),
    };
    for line in &feedback {
        progress.note(line);
    }
    Ok(DeploySummary {
        deployed,
        replayed,
        checks,
        feedback,
        of_deploy,
    })
}

/// The machine check and the spot check, before the first round: the lines they report after
/// `profiled` (what `--profile` did), written to `checks.txt` in the output directory whatever
/// they find.
fn check_matrices(
    opts: &DeployOptions,
    scenario: &Scenario,
    catalog: &Catalog,
    here: &crate::matrix::MachineInfo,
    profiled: Vec<String>,
    progress: &dyn DeployProgress,
    cancel: &AtomicBool,
) -> Result<Vec<String>, DeployError> {
    let mut models: Vec<&str> = (scenario.trace_jobs().unwrap_or_default().iter())
        .map(|j| j.model.as_str())
        .collect();
    models.sort_unstable();
    models.dedup();
    let mut lines = profiled;
    lines.push(format!("this machine: {}", here.describe()));
    let save = |lines: &[String]| -> Result<(), DeployError> {
        let Some(dir) = &opts.replay.out_dir else {
            return Ok(());
        };
        std::fs::create_dir_all(dir).map_err(DeployError::io(dir))?;
        let path = dir.join("checks.txt");
        std::fs::write(&path, lines.join("\n") + "\n").map_err(DeployError::io(&path))
    };
    match machines::check(
        &scenario.profiles,
        &models,
        here,
        opts.checks.allow_other_machine,
    ) {
        Ok(Some(warning)) => {
            progress.note(&warning);
            lines.push(warning);
        }
        Ok(None) => lines.push(format!(
            "every matrix is of this machine's kind ({})",
            here.kind_key()
        )),
        Err(e) => {
            lines.push(e.to_string());
            save(&lines)?;
            return Err(e);
        }
    }
    if !opts.checks.spot_check {
        lines.push("spot check: not run (--no-spot-check)".into());
        save(&lines)?;
        return Ok(lines);
    }
    let out_dir = (opts.replay.out_dir.clone())
        .unwrap_or_else(std::env::temp_dir)
        .join("spot-check");
    let mut far = Vec::new();
    for model in &models {
        let (Some(spec), Some(i)) = (catalog.spec_of(model), scenario.profiles.lookup(model))
        else {
            continue;
        };
        let input = spot_check::SpotInput {
            model,
            spec,
            matrix_path: std::path::Path::new(&scenario.profiles.get(i).source),
            share_per_gpu: scenario.cluster.reference_share(),
            out_dir: &out_dir,
            cgroup_parent: &opts.cgroup_parent,
        };
        let mut observer = crate::harness::sweep::fleet::PrefixedLines {
            prefix: format!("spot check {model}"),
        };
        let result = spot_check::spot_check(&input, &mut observer, cancel)?;
        let line = format!("spot check {}", result.describe());
        progress.note(&line);
        lines.push(line);
        if !result.agrees() {
            far.push(result);
        }
    }
    save(&lines)?;
    if far.is_empty() {
        return Ok(lines);
    }
    Err(DeployError::SpotCheck {
        report: far
            .iter()
            .map(|r| format!("  {}", r.describe()))
            .collect::<Vec<_>>()
            .join("\n"),
        commands: far
            .iter()
            .map(spot_check::SpotCheck::sweep_command)
            .collect::<Vec<_>>()
            .join("\n"),
    })
}

fn summary_of(scenario: &Scenario, opts: &ReplayOptions, runs: Vec<RunResult>) -> ReplaySummary {
    let c = &scenario.cluster;
    ReplaySummary {
        cluster: c.describe(),
        profiles: scenario.profiles.origin.clone(),
        workload: scenario.workload_name.clone(),
        semantics: opts.semantics,
        skipped_wide_jobs: scenario.skipped_wide_jobs,
        totals: (c.total_gpus, c.total_cpus, c.total_mem_gb),
        runs,
        verdicts: Vec::new(),
    }
}

/// Writes the deploy's tables to the output directory and the replay's to `replay/` in it,
/// with the comparison; returns where, in words.
fn write(
    opts: &DeployOptions,
    deployed: &ReplaySummary,
    replayed: &ReplaySummary,
    of_deploy: &[Option<replay_of_deploy::SchemeReplay>],
) -> Result<String, DeployError> {
    let Some(dir) = &opts.replay.out_dir else {
        return Ok("no output directory (--out)".into());
    };
    crate::replay::tables::write_tables(&deployed.runs, dir)?;
    crate::replay::tables::write_tables(&replayed.runs, &dir.join("replay"))?;
    let replays: Vec<_> = of_deploy.iter().flatten().map(|r| r.run.clone()).collect();
    if !replays.is_empty() {
        crate::replay::tables::write_tables(&replays, &dir.join("replay-of-deploy"))?;
        replay_of_deploy::write_ratios(of_deploy, dir)?;
    }
    let rows = compare::rows(deployed, replayed, &of_deploy_figures(of_deploy));
    compare::write(&rows, dir)?;
    Ok(dir.display().to_string())
}

/// Deploys one scheme; returns its result and, where it was interrupted, when.
fn deploy_scheme(
    opts: &DeployOptions,
    scenario: &Scenario,
    scheme: &Scheme,
    catalog: &Catalog,
    progress: &dyn DeployProgress,
    cancel: &AtomicBool,
) -> Result<(RunResult, Option<f64>), DeployError> {
    let label = format!("{}-{}", scheme.0.name(), scheme.1.name());
    let log_dir = match &opts.replay.out_dir {
        Some(d) => d.join("logs").join(&label),
        None => std::env::temp_dir().join(format!("profiler-deploy-{}", std::process::id())),
    };
    let journal = match &opts.replay.out_dir {
        Some(dir) => {
            let header = JournalHeader::new(
                &format!("{}+{}", scheme.0.name(), scheme.1.name()),
                opts.replay.round_s,
                scenario.trace_jobs().unwrap_or_default(),
            );
            let path = dir.join("journal").join(format!("{label}.jsonl"));
            Some(Journal::open(&path, &header, opts.resume)?)
        }
        None => None,
    };
    let resumes_at = journal.as_ref().and_then(Journal::resumes_at);
    if let (Some(j), Some(t)) = (&journal, resumes_at) {
        progress.resumed(j.pending.len(), t);
    }
    let start = resumes_at.or(opts.replay.first_round_s).unwrap_or(0.0);
    let mut clock = WallClock::starting_at(start);
    let epoch = crate::harness::measure::job_output::now_unix_s() - clock.now();
    let (mut backend, cpus): (Box<dyn Backend>, Vec<u32>) = match &opts.slurm {
        None => {
            let local = local::LocalBackend::open(&opts.cgroup_parent, log_dir, epoch)?;
            let cpus = local.cpus().to_vec();
            (Box::new(local), cpus)
        }
        Some(target) => {
            // Slurm places each job's CPUs on its node; the ids only count them.
            let total: f64 = scenario.cluster.servers.iter().map(|s| s.cpus.ceil()).sum();
            let backend = slurm::SlurmBackend::new(target.clone(), log_dir, epoch)?;
            (Box::new(backend), (0..total as u32).collect())
        }
    };
    let slices = grants::carve(&scenario.cluster, &cpus, &opts.gpu_ids)?;
    run_rounds(
        opts,
        scenario,
        scheme,
        backend.as_mut(),
        &mut clock,
        slices,
        journal,
        &|s| catalog.job(s),
        progress,
        cancel,
    )
}

/// The engine's rounds for `scheme`, made on `backend`: what [`deploy_scheme`] runs, and
/// what tests run on a simulated backend and clock.
#[allow(clippy::too_many_arguments)]
pub fn run_rounds(
    opts: &DeployOptions,
    scenario: &Scenario,
    scheme: &Scheme,
    backend: &mut dyn Backend,
    clock: &mut dyn Clock,
    slices: Vec<grants::ServerSlice>,
    journal: Option<Journal>,
    catalog: &dyn Fn(&crate::replay::engine::JobState) -> Result<backend::DeployJob, DeployError>,
    progress: &dyn DeployProgress,
    cancel: &AtomicBool,
) -> Result<(RunResult, Option<f64>), DeployError> {
    let jobs = scenario.trace_jobs().unwrap_or_default();
    let started = std::time::Instant::now();
    let cfg = engine_config(&opts.replay, scenario, scheme, None);
    let mut work = DeployWork::new(backend, clock, cancel, progress, slices, catalog);
    if let Some(journal) = journal {
        work = work.with_journal(journal);
    }
    let mut arrivals = jobs.iter().cloned();
    let mut failure = None;
    let out = {
        let mut replay = Replay::new(&cfg, &mut arrivals, None)?;
        replay.set_work(&mut work);
        loop {
            match replay.step_round() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        replay.finish()
    };
    let interrupted_at = work.now();
    work.stop_all();
    let mut result = run_result(
        out,
        opts.replay.window,
        scheme,
        &scenario.cluster,
        started.elapsed().as_secs_f64(),
    );
    for job in &mut result.jobs {
        job.failure = work.failures().get(&job.id).cloned();
    }
    match failure {
        None => Ok((result, None)),
        Some(ReplayError::RoundWork { source, .. }) => match source.downcast::<RoundFailure>() {
            Ok(f) => match *f {
                RoundFailure::Interrupted => Ok((result, Some(interrupted_at))),
                RoundFailure::Deploy(e) => Err(e),
            },
            Err(other) => Err(DeployError::Options(other.to_string())),
        },
        Some(e) => Err(e.into()),
    }
}
