//! `profiler replay`: cluster-scheduling replay with Synergy's (OSDI'22) policies and
//! mechanisms. See `docs/REPLAY.md` for the model, the semantics and every difference from
//! Synergy's simulator.
//!
//! The CLI builds a [`ReplayOptions`] (see [`cli::ReplayArgs`]) and calls [`run`].

pub mod bounds;
pub mod cli;
pub mod cluster;
pub mod elastic;
pub mod engine;
pub mod error;
pub mod grid;
pub mod input;
pub mod job;
pub mod mechanism;
pub mod metrics;
pub mod plot;
pub mod policy;
pub mod profile;
pub mod report;
pub mod tables;
pub mod workload;
pub mod zoo;

pub use error::ReplayError;
pub use profile::Semantics;

use cluster::{Cluster, ClusterSpec};
use engine::{EngineConfig, RoundRow, simulate, simulate_into};
use job::JobSpec;
use metrics::{JobRecord, Summary};
use profile::ProfileSet;
use std::collections::HashMap;
use std::path::PathBuf;
use workload::synthetic::{Synthetic, SyntheticSpec};
use workload::{Assigner, Binder, WideJobs};

/// Where the jobs come from.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadSpec {
    Synthetic(SyntheticSpec),
    /// Synergy's replay CSV (`job_id, model, arrival_s, total_iterations, gpu_demand`).
    SynergyCsv(PathBuf),
    /// `philly_jobs.csv` (Pollux's Philly-derived list).
    PhillyCsv(PathBuf),
    /// Raw Philly `cluster_job_log` JSON.
    PhillyJson(PathBuf),
    /// Alibaba openb-2023 pod list.
    Alibaba(PathBuf),
    /// Our canonical trace (written by `--record`).
    Canonical(PathBuf),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOptions {
    pub cluster: ClusterSpec,
    /// Directory or file of `*.matrix.jsonl`; `None`: the built-in Synergy zoo.
    pub profiles: Option<PathBuf>,
    pub workload: WorkloadSpec,
    /// (policy, mechanism) pairs; more than one runs them in parallel on the same workload.
    pub schemes: Vec<(String, String)>,
    pub semantics: Semantics,
    pub round_s: f64,
    /// Time of the first round (`None`: 0); Synergy's static traces start at 1 s.
    pub first_round_s: Option<f64>,
    pub window: Option<(u64, u64)>,
    /// Class split and seed for model assignment to Philly/Alibaba jobs.
    pub split: [f64; 3],
    pub seed: u64,
    pub wide_jobs: WideJobs,
    /// Throughput multiplier of a job spread over servers, for every model (`None`: each
    /// profile's own, 1 for Synergy's zoo).
    pub spread_penalty: Option<f64>,
    pub record: Option<PathBuf>,
    pub max_rounds: u64,
    /// Simulated-time limit, seconds (see [`engine::EngineConfig::horizon_s`]).
    pub horizon_s: f64,
    /// Write per-job and per-round CSVs and PNG + SVG plots here.
    pub out_dir: Option<PathBuf>,
    /// Write each job's row to `out_dir` as it finishes and keep only the active jobs in
    /// memory (for millions of jobs); the per-job table is then in finishing order.
    pub stream: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            cluster: ClusterSpec::synergy(16),
            profiles: None,
            workload: WorkloadSpec::Synthetic(SyntheticSpec::default()),
            schemes: vec![("fifo".into(), "proportional".into())],
            semantics: Semantics::Exact,
            round_s: 300.0,
            first_round_s: None,
            window: None,
            split: [20.0, 70.0, 10.0],
            seed: 0,
            wide_jobs: WideJobs::Error,
            spread_penalty: None,
            record: None,
            max_rounds: 50_000_000,
            horizon_s: bounds::DEFAULT_HORIZON_S,
            out_dir: None,
            stream: false,
        }
    }
}

/// One scheme's results.
#[derive(Debug, Clone)]
pub struct RunResult {
    pub summary: Summary,
    /// Every job's record, by id; empty when they were streamed to the output directory.
    pub jobs: Vec<JobRecord>,
    pub rounds: Vec<RoundRow>,
    /// JCTs of every finished job, ascending (the JCT CDF).
    pub finished_jct_s: Vec<f64>,
    /// Whether the per-job table was written as jobs finished ([`ReplayOptions::stream`]).
    pub streamed: bool,
}

#[derive(Debug, Clone)]
pub struct ReplaySummary {
    pub cluster: String,
    pub profiles: String,
    pub workload: String,
    pub semantics: Semantics,
    pub skipped_wide_jobs: u64,
    /// Cluster GPUs, cores, GB.
    pub totals: (u32, f64, f64),
    pub runs: Vec<RunResult>,
}

/// Jobs loaded from a trace, or the synthetic spec to generate them lazily per run.
enum Loaded {
    Jobs(Vec<JobSpec>),
    Synthetic(SyntheticSpec),
}

/// Where each trace job came from: the trace, and job id -> line.
type Origins = Option<(PathBuf, HashMap<u64, usize>)>;

fn load_workload(
    opts: &ReplayOptions,
    cluster: &Cluster,
    profiles: &ProfileSet,
) -> Result<(Loaded, u64, Origins), ReplayError> {
    let path = match &opts.workload {
        WorkloadSpec::Synthetic(s) => return Ok((Loaded::Synthetic(s.clone()), 0, None)),
        WorkloadSpec::SynergyCsv(p)
        | WorkloadSpec::PhillyCsv(p)
        | WorkloadSpec::PhillyJson(p)
        | WorkloadSpec::Alibaba(p)
        | WorkloadSpec::Canonical(p) => p.clone(),
    };
    let mut binder = Binder::new(profiles, cluster.total_gpus, path.clone(), opts.wide_jobs);
    let assigner = || {
        Assigner::new(
            profiles,
            opts.split,
            opts.seed,
            cluster.reference_share(),
            opts.semantics,
        )
    };
    let jobs = match &opts.workload {
        WorkloadSpec::SynergyCsv(_) => workload::synergy_csv::read(&path, &mut binder)?,
        WorkloadSpec::Canonical(_) => workload::canonical::read(&path, &mut binder)?,
        WorkloadSpec::PhillyCsv(_) => {
            workload::philly::read_csv(&path, &mut binder, &mut assigner()?)?
        }
        WorkloadSpec::PhillyJson(_) => {
            workload::philly::read_json(&path, &mut binder, &mut assigner()?)?
        }
        WorkloadSpec::Alibaba(_) => workload::alibaba::read(&path, &mut binder, &mut assigner()?)?,
        WorkloadSpec::Synthetic(_) => unreachable!("handled above"),
    };
    if jobs.is_empty() {
        return Err(ReplayError::parse(
            &path,
            1,
            "the trace has no jobs to replay",
        ));
    }
    let origins = std::mem::take(&mut binder.origins);
    Ok((
        Loaded::Jobs(jobs),
        binder.skipped_wide,
        Some((path, origins)),
    ))
}

/// Checks the round length, horizon and window against [`bounds`] ([`run`] does this first).
pub fn check_options(opts: &ReplayOptions) -> Result<(), ReplayError> {
    let opt = |r: Result<f64, String>| r.map(|_| ()).map_err(ReplayError::Options);
    opt(bounds::in_range(
        "round length (s)",
        opts.round_s,
        bounds::MIN_ROUND_S,
        bounds::MAX_ROUND_S,
    ))?;
    opt(bounds::positive(
        "horizon (s)",
        opts.horizon_s,
        bounds::MAX_TIME_S,
    ))?;
    if opts.horizon_s / opts.round_s > bounds::MAX_HORIZON_ROUNDS {
        return Err(ReplayError::Options(format!(
            "a horizon of {} s is more than {} rounds of {} s; shorten it or lengthen the rounds",
            opts.horizon_s,
            bounds::MAX_HORIZON_ROUNDS,
            opts.round_s
        )));
    }
    if let Some((a, b)) = opts.window {
        if a > b {
            return Err(ReplayError::Options(format!("window {a}..{b} is empty")));
        }
        if b > bounds::MAX_JOB_ID {
            return Err(ReplayError::Options(format!(
                "window {a}..{b}: job ids above {} are not supported",
                bounds::MAX_JOB_ID
            )));
        }
    }
    Ok(())
}

/// Names the trace line of each job a horizon error lists.
fn with_origins(e: ReplayError, origins: &Origins) -> ReplayError {
    match (e, origins) {
        (
            ReplayError::Horizon {
                horizon_s,
                count,
                mut jobs,
            },
            Some((path, lines)),
        ) => {
            for j in &mut jobs {
                j.origin = lines.get(&j.job_id).map(|&l| (path.clone(), l));
            }
            ReplayError::Horizon {
                horizon_s,
                count,
                jobs,
            }
        }
        (e, _) => e,
    }
}

/// Progress of a replay, per scheme `k` (index into the options' schemes). The CLI draws bars
/// from it; [`run`] reports to no one.
pub trait ReplayObserver: Sync {
    /// Scheme `k` starts; it is complete when `total` jobs have finished, where that is known.
    fn scheme_started(&self, _k: usize, _label: &str, _total: Option<u64>) {}
    /// Jobs finished so far by scheme `k` (of the window, when there is one).
    fn jobs_finished(&self, _k: usize, _finished: u64) {}
    fn scheme_done(&self, _k: usize) {}
}

struct Unobserved;
impl ReplayObserver for Unobserved {}

/// Runs an elastic replay (`--elastic`): every policy with every seed on the trace's jobs.
pub fn run_elastic(
    run: &elastic::experiment::ElasticRun,
) -> Result<elastic::experiment::ElasticExperiment, ReplayError> {
    elastic::experiment::run_trace(run)
}

/// Runs the replay: every scheme on the identical workload (in parallel when several).
pub fn run(opts: &ReplayOptions) -> Result<ReplaySummary, ReplayError> {
    run_observed(opts, &Unobserved)
}

/// [`run`], reporting progress to `observer`.
pub fn run_observed(
    opts: &ReplayOptions,
    observer: &dyn ReplayObserver,
) -> Result<ReplaySummary, ReplayError> {
    let cluster = opts.cluster.build()?;
    let mut profiles = match &opts.profiles {
        Some(p) => ProfileSet::load(p)?,
        None => ProfileSet::builtin_zoo(),
    };
    if let Some(penalty) = opts.spread_penalty {
        if !(penalty > 0.0 && penalty <= 1.0) {
            return Err(ReplayError::Options(format!(
                "--spread-penalty {penalty}: expected a throughput multiplier in (0, 1]"
            )));
        }
        profiles.set_placement_penalty(penalty);
    }
    if opts.schemes.is_empty() {
        return Err(ReplayError::Options(
            "no policy/mechanism pair to run".into(),
        ));
    }
    let mut schemes = Vec::new();
    for (p, m) in &opts.schemes {
        let policy = policy::by_name(p).ok_or_else(|| {
            ReplayError::Options(format!("unknown policy {p:?}; known: {}", policy::names()))
        })?;
        let mech = mechanism::by_name(m).ok_or_else(|| {
            ReplayError::Options(format!(
                "unknown mechanism {m:?}; known: {}",
                mechanism::names()
            ))
        })?;
        schemes.push((policy, mech));
    }
    check_options(opts)?;
    let (mut loaded, skipped, origins) = load_workload(opts, &cluster, &profiles)?;
    // A synthetic workload with a window and no job count: arrivals go on for as many jobs
    // again as the window holds after it, then stop, so that a policy that starves long jobs
    // under overload (SRTF) still lets the window finish.
    if let (Loaded::Synthetic(s), Some((a, b))) = (&mut loaded, opts.window)
        && s.max_jobs.is_none()
    {
        s.max_jobs = Some(b + 1 + (b - a + 1));
    }
    if let (Loaded::Synthetic(s), None) = (&loaded, opts.window)
        && s.max_jobs.is_none()
    {
        return Err(ReplayError::Options(
            "a synthetic workload needs --jobs N or --window A..B to know when to stop".into(),
        ));
    }
    if let (Loaded::Jobs(jobs), Some((_, b))) = (&loaded, opts.window)
        && !jobs.iter().any(|j| j.id >= b)
    {
        return Err(ReplayError::Options(format!(
            "window ends at job {b} but the trace has no job with that id or a later one"
        )));
    }
    if let (Loaded::Jobs(jobs), Some((a, b))) = (&loaded, opts.window)
        && !jobs.iter().any(|j| (a..=b).contains(&j.id))
    {
        return Err(ReplayError::Options(format!(
            "window {a}..{b} holds no job of the trace, so there would be nothing to measure"
        )));
    }
    let workload_name = match &opts.workload {
        WorkloadSpec::Synthetic(s) => format!(
            "synthetic: {} jobs/h, seed {}, split {:?}, GPUs {:?}",
            s.jobs_per_hour, s.seed, s.split, s.gpu_demand
        ),
        WorkloadSpec::SynergyCsv(p)
        | WorkloadSpec::PhillyCsv(p)
        | WorkloadSpec::PhillyJson(p)
        | WorkloadSpec::Alibaba(p)
        | WorkloadSpec::Canonical(p) => p.display().to_string(),
    };

    let total_jobs = match (&loaded, opts.window) {
        (_, Some((a, b))) => Some(b - a + 1),
        (Loaded::Jobs(jobs), None) => Some(jobs.len() as u64),
        (Loaded::Synthetic(s), None) => s.max_jobs,
    };
    let run_one = |k: usize| -> Result<RunResult, ReplayError> {
        let (policy, mech) = &schemes[k];
        observer.scheme_started(k, &format!("{}+{}", policy.name(), mech.name()), total_jobs);
        let progress = |finished: u64| observer.jobs_finished(k, finished);
        let cfg = EngineConfig {
            cluster: &cluster,
            profiles: &profiles,
            policy: policy.as_ref(),
            mechanism: mech.as_ref(),
            semantics: opts.semantics,
            round_s: opts.round_s,
            window: opts.window,
            horizon_s: opts.horizon_s,
            max_rounds: opts.max_rounds,
            first_round_s: opts.first_round_s,
            audit: None,
            progress: Some(&progress),
            fast: true,
        };
        let mut recorder = match (&opts.record, k) {
            (Some(p), 0) => Some(workload::canonical::Recorder::create(p)?),
            _ => None,
        };
        let stream_to = match (&opts.out_dir, opts.stream) {
            (Some(dir), true) => Some(tables::JobTableWriter::create(
                dir,
                &format!("{}-{}.jobs", policy.name(), mech.name()),
            )?),
            (None, true) => {
                return Err(ReplayError::Options(
                    "--stream writes each job's row to the output directory: give --out DIR".into(),
                ));
            }
            _ => None,
        };
        let started = std::time::Instant::now();
        let mut tally = metrics::JobTally::new(opts.window);
        let mut writer = stream_to;
        let mut sink = |job: engine::JobState| -> Result<(), ReplayError> {
            let record = metrics::job_record(&job);
            tally.add(&record);
            match &mut writer {
                Some(w) => w.push(record),
                None => Ok(()),
            }
        };
        let mut simulate_with = |arrivals: &mut dyn Iterator<Item = JobSpec>| {
            if opts.stream {
                simulate_into(&cfg, arrivals, recorder.as_mut(), &mut sink)
            } else {
                simulate(&cfg, arrivals, recorder.as_mut())
            }
        };
        let out = match &loaded {
            Loaded::Jobs(jobs) => {
                simulate_with(&mut jobs.iter().cloned()).map_err(|e| with_origins(e, &origins))?
            }
            Loaded::Synthetic(s) => {
                let mut generator = Synthetic::new(
                    s,
                    &profiles,
                    cluster.reference_share(),
                    cluster.total_gpus,
                    opts.semantics,
                )?;
                simulate_with(&mut generator)?
            }
        };
        let wall_s = started.elapsed().as_secs_f64();
        observer.scheme_done(k);
        if let Some(r) = recorder {
            r.finish()?;
        }
        // What the sink did not take: every job, or those still active at the end.
        let jobs = metrics::job_records(&out);
        for r in &jobs {
            tally.add(r);
        }
        let (jobs, streamed) = match writer {
            Some(mut w) => {
                for r in jobs {
                    w.push(r)?;
                }
                w.finish()?;
                (Vec::new(), true)
            }
            None => (jobs, false),
        };
        let mut summary = tally.summary(policy.name(), mech.name(), &out.rounds, &cluster);
        summary.lp_failures = out.lp_failures;
        summary.wall_s = wall_s;
        Ok(RunResult {
            summary,
            jobs,
            rounds: out.rounds,
            finished_jct_s: tally.finished_jcts(),
            streamed,
        })
    };
    let runs: Vec<RunResult> = if schemes.len() == 1 {
        vec![run_one(0)?]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..schemes.len())
                .map(|k| s.spawn(move || run_one(k)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(ReplayError::Internal("a replay thread panicked".into()))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })?
    };
    let summary = ReplaySummary {
        cluster: format!(
            "{} ({} servers, {} GPUs, {} cores, {} GB)",
            cluster.name,
            cluster.servers.len(),
            cluster.total_gpus,
            cluster.total_cpus,
            cluster.total_mem_gb
        ),
        profiles: profiles.origin.clone(),
        workload: workload_name,
        semantics: opts.semantics,
        skipped_wide_jobs: skipped,
        totals: (cluster.total_gpus, cluster.total_cpus, cluster.total_mem_gb),
        runs,
    };
    if let Some(dir) = &opts.out_dir {
        tables::write_tables(&summary.runs, dir)?;
        plot::write_plots(&summary, dir)?;
    }
    Ok(summary)
}
