//! `profiler replay`: cluster-scheduling replay with Synergy's (OSDI'22) policies and
//! mechanisms. See `docs/REPLAY.md` for the model and the semantics, and
//! `docs/findings/synergy-fidelity.md` for every difference from Synergy's simulator.
//!
//! The CLI builds a [`ReplayOptions`] (see [`crate::cli::replay::ReplayArgs`]) and calls [`run`].

pub mod binding;
pub mod bounds;
pub mod cluster;
pub mod elastic;
pub mod engine;
pub mod error;
pub mod grid;
pub mod input;
pub mod job;
pub mod mechanism;
pub mod metrics;
pub mod model_names;
pub mod plot;
pub mod policy;
pub mod profile;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod semantics;
pub mod tables;
pub mod verdict;
pub mod workload;
pub mod zoo;

pub use error::ReplayError;
pub use profile::Semantics;
pub use runner::{Scheme, run_schemes, schemes_by_name};
pub use scenario::Scenario;

use cluster::ClusterSpec;
use engine::RoundRow;
use metrics::{JobRecord, Summary};
use std::path::PathBuf;
use workload::WideJobs;
use workload::synthetic::SyntheticSpec;

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
    /// Replays on profiles drawn within their cells' intervals that a verdict on a scheme's
    /// gain over the proportional share rests on ([`verdict`]); 0: none.
    pub draws: usize,
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
            draws: verdict::DEFAULT_DRAWS,
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
    /// Each scheme's gain over the proportional share with its band, where the profiles have
    /// intervals ([`verdict`]).
    pub verdicts: Vec<verdict::Verdict>,
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

/// Progress of a replay, per scheme `k` (index into the options' schemes). The CLI draws bars
/// from it; [`run`] reports to no one.
pub trait ReplayObserver: Sync {
    /// Scheme `k` starts; it is complete when `total` jobs have finished, where that is known.
    fn scheme_started(&self, _k: usize, _label: &str, _total: Option<u64>) {}
    /// Jobs finished so far by scheme `k` (of the window, when there is one).
    fn jobs_finished(&self, _k: usize, _finished: u64) {}
    fn scheme_done(&self, _k: usize) {}
}

pub struct Unobserved;
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

/// [`run`], reporting progress to `observer`: the built-in schemes the options name, on the
/// scenario they describe.
pub fn run_observed(
    opts: &ReplayOptions,
    observer: &dyn ReplayObserver,
) -> Result<ReplaySummary, ReplayError> {
    let schemes = runner::schemes_by_name(&opts.schemes)?;
    let scenario = Scenario::load(opts)?;
    runner::run_schemes(opts, &scenario, &schemes, observer)
}
