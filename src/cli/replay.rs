//! Command-line arguments of `profiler replay`.

use crate::replay::cluster::ClusterSpec;
use crate::replay::elastic::engine::EngineConfig;
use crate::replay::elastic::experiment::{ElasticOptions, ElasticRun};
use crate::replay::error::ReplayError;
pub use crate::replay::input::{TraceFormat, detect, parse_horizon, parse_split, parse_window};
use crate::replay::profile::Semantics;
use crate::replay::workload::WideJobs;
use crate::replay::workload::synthetic::{DurationDist, SyntheticSpec, parse_gpu_demand};
use crate::replay::{ReplayOptions, WorkloadSpec};
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  # Synergy's default simulation: 128 GPUs, 9 jobs/hour, metrics over jobs 4000..4999
  profiler replay --window 4000..4999 --compare fifo+proportional,fifo+tune,fifo+opt

  # The 32-GPU deployment traces (static: FIFO/makespan, dynamic: SRTF/JCT)
  profiler replay --cluster synergy-deploy --trace workloads/traces/synergy/deploy_static_100job.csv \\
      --compare fifo+proportional,fifo+tune,fifo+opt
  profiler replay --cluster synergy-deploy --trace workloads/traces/synergy/deploy_dynamic_100job.csv \\
      --compare srtf+proportional,srtf+tune,srtf+opt

  # Synergy's own simulator, job for job (a static trace starts at 1 s, as its --static does)
  profiler replay --cluster synergy-deploy --trace workloads/traces/synergy/deploy_static_100job.csv \\
      --semantics synergy --first-round-s 1 --compare fifo+proportional,fifo+greedy,fifo+tune

  # Record the generated workload, then replay it bit-exactly with another scheme
  profiler replay --jobs 2000 --record w.trace.csv
  profiler replay --trace w.trace.csv --policy las --mechanism tune --out results/

  # A heterogeneous cluster and our own measured matrices
  profiler replay --cluster my-cluster.toml --profiles matrices/ --jobs 500

  # Elastic jobs (batch and GPUs change while they run): ONES's scenario, the first 50 jobs
  # of its trace on 64 GPUs (ones-64), every elastic policy, 5 seeds, reductions vs two
  profiler replay --elastic all --elastic-trace ones:workloads/traces/ones/trace_1.csv \\
      --first 50 --seeds 5 --versus tiresias,optimus -o results/ones/

  # Pollux's workload 1 on Pollux's testbed (pollux-64, the default for a pollux trace), no
  # throughput noise, decisions every 60 s, 30 s per restart (the defaults)
  profiler replay --elastic pollux,optimus,tiresias \\
      --elastic-trace pollux:workloads/traces/pollux/workload-1.csv --noise 0

  # Stop after 30 simulated days (default 365d); jobs unfinished then are an error naming
  # them and their trace lines
  profiler replay --trace philly_jobs.csv --horizon 30d

  # A scenario grid (clusters x loads x splits x seeds x schemes, docs/REPLAY.md): locally on
  # every CPU, then the same grid as a Slurm job array of 10 scenarios per task
  profiler replay --grid workloads/grids/load-sweep.toml --out sweep/
  profiler replay --grid workloads/grids/load-sweep.toml --slurm --partition debug --out /shared/sweep/

Cluster TOML:
  [[group]]
  count = 16        # servers
  gpus = 8          # per server
  cpus = 24
  memory_gb = 500
  storage_mb_per_s = 1000   # optional, recorded only

Trace formats (--trace, detected from the first line unless --trace-format is given):
  synergy    job_id,model,arrival_s,total_iterations,gpu_demand (no header)
  philly     philly_jobs.csv: timestamp,duration,num_gpus,gpu_time,cluster
  philly-json  raw Philly cluster_job_log (JSON array; attempts[].detail[].gpus)
  alibaba    openb pod list: name,cpu_milli,memory_mib,num_gpu,...
  canonical  our own, written by --record
Philly and Alibaba jobs name no model: each gets one keeping --split (seeded by --seed).";

/// `what:` then one `name: description` line per registry entry, for `--help`.
fn described<T>(what: &str, registry: &[(&str, &str, T)]) -> String {
    let lines: Vec<String> = registry
        .iter()
        .map(|(name, about, _)| format!("  {name}: {about}"))
        .collect();
    format!("{what}:\n{}", lines.join("\n"))
}

/// The workload of trace `path` in `format` (detected from its first line with `Auto`).
pub fn trace_workload(
    path: &std::path::Path,
    format: TraceFormat,
) -> Result<WorkloadSpec, ReplayError> {
    let fmt = match format {
        TraceFormat::Auto => detect(path)?,
        f => f,
    };
    let p = path.to_owned();
    Ok(match fmt {
        TraceFormat::Synergy | TraceFormat::Auto => WorkloadSpec::SynergyCsv(p),
        TraceFormat::Philly => WorkloadSpec::PhillyCsv(p),
        TraceFormat::PhillyJson => WorkloadSpec::PhillyJson(p),
        TraceFormat::Alibaba => WorkloadSpec::Alibaba(p),
        TraceFormat::Canonical => WorkloadSpec::Canonical(p),
    })
}

/// The (policy, mechanism) pairs to run: each POLICY+MECHANISM of `compare`, or the one pair.
pub fn parse_schemes(
    policy: &str,
    mechanism: &str,
    compare: &[String],
) -> Result<Vec<(String, String)>, ReplayError> {
    if compare.is_empty() {
        return Ok(vec![(policy.to_owned(), mechanism.to_owned())]);
    }
    compare
        .iter()
        .map(|s| {
            s.split_once('+')
                .map(|(p, m)| (p.trim().to_owned(), m.trim().to_owned()))
                .ok_or_else(|| {
                    ReplayError::Options(format!(
                        "--compare {s:?}: expected POLICY+MECHANISM, e.g. srtf+tune"
                    ))
                })
        })
        .collect()
}

/// Replay a cluster schedule with Synergy's policies and mechanisms, or elastic jobs
/// (`--elastic`) with ONES, Pollux and their baselines.
#[derive(clap::Args, Debug, Clone, PartialEq)]
#[command(after_long_help = EXAMPLES)]
pub struct ReplayArgs {
    /// Cluster: built-in `synergy-default` (16 x 8 GPUs, 24 CPUs, 500 GB; the default),
    /// `synergy-deploy` (4 such servers), `synergy-N`, `ones-64` (16 x 4 GPUs, 16 cores, 128 GB;
    /// the default for an ONES trace), `pollux-64` (16 x 4 GPUs, 48 cores, 192 GB; the default
    /// for a Pollux workload), or a TOML file of server groups.
    #[arg(long)]
    pub cluster: Option<String>,
    /// On a cluster whose groups name machine kinds: `by-kind` places each job first on the
    /// kind it gains most on against the other models, `any` ignores kinds (overrides the
    /// cluster file's `kind_placement`).
    #[arg(long, value_enum)]
    pub kind_placement: Option<crate::replay::cluster::KindPlacement>,
    /// The machine kind whose matrix stands in for a model with none of a group's kind
    /// (overrides the cluster file's `kind_fallback`; without either, that is an error).
    #[arg(long, value_name = "KIND")]
    pub kind_fallback: Option<String>,
    /// Directory (or file) of `*.matrix.jsonl` profiles (a model may have one per machine
    /// kind). Default: the built-in Synergy model zoo (matrices/zoo).
    #[arg(long)]
    pub profiles: Option<PathBuf>,
    /// Replay a trace instead of a synthetic workload.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Format of --trace.
    #[arg(long, value_enum, default_value_t = TraceFormat::Auto)]
    pub trace_format: TraceFormat,
    /// Synthetic: Poisson arrival rate.
    #[arg(long, default_value_t = 9.0)]
    pub jobs_per_hour: f64,
    /// Synthetic: number of jobs (default with --window A..B: B + 1 + (B - A + 1), i.e.
    /// arrivals continue for a window's worth of jobs after the window, then stop).
    #[arg(long)]
    pub jobs: Option<u64>,
    /// Synthetic: duration at the proportional share: `synergy` (80% 10^U(1.5,3) min, 20%
    /// 10^U(3,4) min), `fixed:MIN`, `exp:MEAN_MIN`, `loguniform:LO,HI` (exponents of minutes).
    #[arg(long, default_value = "synergy")]
    pub duration: String,
    /// Synthetic: GPU demand distribution, GPUS:WEIGHT list.
    #[arg(long, default_value = "1:1")]
    pub gpu_demand: String,
    /// Image,language,speech split of models (synthetic, Philly, Alibaba).
    #[arg(long, default_value = "20,70,10")]
    pub split: String,
    /// Random seed (synthetic workload, model assignment).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    // The lists come from the registries, so adding a policy or mechanism touches only its file.
    #[arg(
        long,
        default_value = "fifo",
        help = format!("Policy: {}", crate::replay::policy::names()),
        long_help = described("Policy (orders the jobs each round)", crate::replay::policy::ALL),
    )]
    pub policy: String,
    #[arg(
        long,
        default_value = "proportional",
        help = format!("Mechanism: {}", crate::replay::mechanism::names()),
        long_help = described("Mechanism (decides where and with how much CPU and memory)", crate::replay::mechanism::ALL),
    )]
    pub mechanism: String,
    /// Run several POLICY+MECHANISM pairs on the identical workload in parallel and print
    /// ratios against proportional (overrides --policy/--mechanism).
    #[arg(long, value_delimiter = ',')]
    pub compare: Vec<String>,
    /// `exact`: interpolated throughput, exact finish times; `synergy`: Synergy's simulator,
    /// job for job (grid lookup, whole iterations per round, JCT on round boundaries, first-fit
    /// placement, Synergy-Tune's steps, its SRTF key and starvation guard; docs/REPLAY.md).
    #[arg(long, value_enum, default_value_t = Semantics::Exact)]
    pub semantics: Semantics,
    /// Scheduling round (lease) length, seconds.
    #[arg(long, default_value_t = 300.0)]
    pub round_s: f64,
    /// Time of the first round, seconds (default: rounds on multiples of --round-s from 0).
    /// Synergy's simulator starts a static trace (`--static`) at 1 s: pass 1 to reproduce it.
    #[arg(long)]
    pub first_round_s: Option<f64>,
    /// Steady-state window A..B (job ids, inclusive): metrics over these jobs; the replay stops
    /// when they have all finished.
    #[arg(long)]
    pub window: Option<String>,
    /// Jobs wider than the whole cluster: error (default) or skip. Jobs wider than a server
    /// span servers (the fewest that fit them; Synergy's GPU order under --semantics synergy).
    #[arg(long, value_enum, default_value_t = WideJobs::Error)]
    pub wide_jobs: WideJobs,
    /// Throughput multiplier of a job whose GPUs span more than one server, in (0, 1], for every
    /// model: how much the network between servers slows its gradient exchange (0.9: 10%
    /// slower). Default: each profile's own, 1 (free) for Synergy's zoo, as in its simulator.
    #[arg(long, value_name = "FACTOR")]
    pub spread_penalty: Option<f64>,
    /// Write the workload as replayed to this canonical trace (replay it with --trace).
    #[arg(long)]
    pub record: Option<PathBuf>,
    #[arg(
        long,
        value_delimiter = ',',
        help = format!("Elastic policies to run, or `all`: {}", crate::replay::elastic::policy::names()),
        long_help = described(
            "Elastic policies to run (comma-separated, or `all`), each on the same jobs with every seed",
            crate::replay::elastic::policy::ALL,
        ),
    )]
    pub elastic: Vec<String>,
    /// Elastic trace, KIND:PATH: `ones:` ONES's trace (trace_1.csv), `pollux:` one of Pollux's
    /// workloads (workload-N.csv).
    #[arg(long, value_parser = clap::value_parser!(crate::replay::elastic::experiment::ElasticTrace))]
    pub elastic_trace: Option<crate::replay::elastic::experiment::ElasticTrace>,
    /// Elastic: replay only the trace's first N jobs (by arrival); ONES's evaluation uses 50.
    #[arg(long)]
    pub first: Option<usize>,
    /// Elastic: seeds per policy (--seed, --seed + 1, ...); each seed draws the jobs'
    /// throughput noise and the policies' random numbers.
    #[arg(long, default_value_t = crate::replay::elastic::experiment::DEFAULT_SEEDS)]
    pub seeds: u64,
    /// Elastic: seconds between scheduling decisions (Pollux's interval).
    #[arg(long, default_value_t = crate::replay::elastic::engine::DEFAULT_INTERVAL_S)]
    pub interval: f64,
    /// Elastic: seconds of no progress, GPUs held, each time a job starts, resumes or (under a
    /// checkpoint-restart scheduler) changes GPUs or servers; a batch change alone is free.
    #[arg(long, default_value_t = crate::replay::elastic::engine::DEFAULT_RECONFIGURATION_S)]
    pub reconfiguration: f64,
    /// Elastic: seconds of no progress when a scheduler that rescales running jobs in place
    /// (ONES and its variants: pause, re-initialise NCCL, broadcast) changes a running job's GPUs.
    #[arg(long, default_value_t = crate::replay::elastic::engine::DEFAULT_RESCALE_S)]
    pub rescale: f64,
    /// Elastic: sigma of each job's log-normal throughput noise (0: none).
    #[arg(long, default_value_t = crate::replay::elastic::engine::DEFAULT_NOISE_SIGMA)]
    pub noise: f64,
    /// Elastic: add columns with each policy's mean-JCT reduction against these policies.
    #[arg(long, value_delimiter = ',')]
    pub versus: Vec<String>,
    /// Elastic: give each application the CPU and memory sensitivity of its closest Synergy zoo
    /// matrix (cifar10 -> resnet18, imagenet -> resnet50, ...; ncf and yolov3 have none), so
    /// every policy runs at the CPU and memory per GPU it allocates. What `joint` searches;
    /// without it CPU and memory never limit a job.
    #[arg(long)]
    pub elastic_resources: bool,
    /// Write tables as CSV and Parquet twins (summary.{csv,parquet}; per scheme
    /// <policy>-<mechanism>.jobs.{csv,parquet} and .rounds.{csv,parquet}) and plots as PNG and
    /// SVG twins (jct_cdf.{png,svg} for all schemes, <policy>-<mechanism>.utilization.{png,svg}
    /// per scheme) into this directory. Elastic: <policy>.seed<N>.jobs.csv, summary.csv,
    /// summary_by_policy.csv and jct_cdf.{png,svg}.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Write each job's row to --out as it finishes instead of keeping every job in memory:
    /// memory then holds only the jobs still active, for workloads of millions of jobs (the
    /// per-job tables are in finishing order, not by id).
    #[arg(long, requires = "out")]
    pub stream: bool,
    /// Replays on matrices drawn within their cells' 95% intervals that each scheme's verdict
    /// on its gain over the proportional share rests on: a gain whose band holds zero is
    /// printed as no difference. Only where the matrices have intervals (Synergy's zoo has
    /// none); 0 turns it off.
    #[arg(long, default_value_t = crate::replay::verdict::DEFAULT_DRAWS)]
    pub draws: usize,
    /// Safety stop.
    #[arg(long, default_value_t = 50_000_000)]
    pub max_rounds: u64,
    /// Simulated-time limit: a replay with jobs still unfinished at this time stops with an
    /// error naming them (and their trace lines). Seconds, or a number with a unit s, m, h, d,
    /// w: `3600`, `36h`, `365d`.
    #[arg(long, default_value = "365d")]
    pub horizon: String,
    #[command(flatten)]
    pub grid: super::grid::GridArgs,
}

impl ReplayArgs {
    /// Whether this is an elastic replay (`--elastic`).
    pub fn is_elastic(&self) -> bool {
        !self.elastic.is_empty()
    }

    /// The elastic run these arguments ask for; errors for options that belong to the other
    /// replay, or elastic options without `--elastic`.
    pub fn to_elastic(&self) -> Result<ElasticRun, ReplayError> {
        self.to_elastic_with(&crate::replay::elastic::policy::by_name)
    }

    /// [`ReplayArgs::to_elastic`], the policy names checked against `make` (a front end's own
    /// policies beside the built-ins).
    pub fn to_elastic_with(
        &self,
        make: &crate::replay::elastic::policy::Factory,
    ) -> Result<ElasticRun, ReplayError> {
        let opt = |m: String| Err(ReplayError::Options(m));
        let Some(trace) = self.elastic_trace.clone() else {
            return opt(
                "--elastic needs --elastic-trace KIND:PATH (ones:... or pollux:...)".into(),
            );
        };
        for (set, name) in [
            (self.trace.is_some(), "--trace (use --elastic-trace)"),
            (
                !self.compare.is_empty(),
                "--compare (list the policies in --elastic)",
            ),
            (self.window.is_some(), "--window"),
            (self.record.is_some(), "--record"),
            (self.jobs.is_some(), "--jobs (use --first)"),
            (self.first_round_s.is_some(), "--first-round-s"),
            (self.semantics != Semantics::Exact, "--semantics"),
            (self.spread_penalty.is_some(), "--spread-penalty"),
            (self.stream, "--stream"),
        ] {
            if set {
                return opt(format!("{name} does not apply to an elastic replay"));
            }
        }
        if self.first == Some(0) {
            return opt("--first 0 leaves no job to replay".into());
        }
        let policies: Vec<String> = if self.elastic.iter().any(|p| p == "all") {
            if self.elastic.len() > 1 {
                return opt("--elastic all runs every policy; list no others beside it".into());
            }
            crate::replay::elastic::policy::ALL
                .iter()
                .map(|p| p.0.to_owned())
                .collect()
        } else {
            self.elastic.iter().map(|p| p.trim().to_owned()).collect()
        };
        let cluster = self
            .cluster
            .clone()
            .unwrap_or_else(|| trace.kind.default_cluster().to_owned());
        let options = ElasticOptions {
            cluster: ClusterSpec::resolve(&cluster)?,
            policies,
            first_seed: self.seed,
            seeds: self.seeds,
            engine: EngineConfig {
                interval_s: self.interval,
                reconfiguration_s: self.reconfiguration,
                rescale_s: self.rescale,
                noise_sigma: self.noise,
                seed: self.seed,
                horizon_s: parse_horizon(&self.horizon)?,
            },
            versus: self.versus.clone(),
            out_dir: self.out.clone(),
        };
        crate::replay::elastic::experiment::check_with(&options, make)?;
        Ok(ElasticRun {
            options,
            trace,
            first: self.first,
            resources: self.elastic_resources,
        })
    }

    pub fn to_options(&self) -> Result<ReplayOptions, ReplayError> {
        let elastic_only = [
            (self.elastic_trace.is_some(), "--elastic-trace"),
            (self.first.is_some(), "--first"),
            (!self.versus.is_empty(), "--versus"),
            (self.elastic_resources, "--elastic-resources"),
            (
                self.seeds != crate::replay::elastic::experiment::DEFAULT_SEEDS,
                "--seeds",
            ),
            (
                self.interval != crate::replay::elastic::engine::DEFAULT_INTERVAL_S,
                "--interval (the other replay's rounds are --round-s)",
            ),
            (
                self.reconfiguration != crate::replay::elastic::engine::DEFAULT_RECONFIGURATION_S,
                "--reconfiguration",
            ),
            (
                self.rescale != crate::replay::elastic::engine::DEFAULT_RESCALE_S,
                "--rescale",
            ),
            (
                self.noise != crate::replay::elastic::engine::DEFAULT_NOISE_SIGMA,
                "--noise",
            ),
        ];
        for (set, name) in elastic_only {
            if set {
                return Err(ReplayError::Options(format!(
                    "{name} applies to elastic replays only: add --elastic POLICIES"
                )));
            }
        }
        let split = parse_split(&self.split)?;
        let workload = match &self.trace {
            None => WorkloadSpec::Synthetic(SyntheticSpec {
                jobs_per_hour: self.jobs_per_hour,
                duration: DurationDist::parse(&self.duration).map_err(ReplayError::Options)?,
                gpu_demand: parse_gpu_demand(&self.gpu_demand).map_err(ReplayError::Options)?,
                split,
                seed: self.seed,
                max_jobs: self.jobs,
            }),
            Some(p) => trace_workload(p, self.trace_format)?,
        };
        let schemes = parse_schemes(&self.policy, &self.mechanism, &self.compare)?;
        let mut cluster =
            ClusterSpec::resolve(self.cluster.as_deref().unwrap_or("synergy-default"))?;
        if let Some(p) = self.kind_placement {
            cluster.kind_placement = p;
        }
        if let Some(k) = &self.kind_fallback {
            cluster.kind_fallback = Some(k.clone());
        }
        cluster
            .validate()
            .map_err(|(_, m)| ReplayError::Cluster(m))?;
        Ok(ReplayOptions {
            cluster,
            profiles: self.profiles.clone(),
            workload,
            schemes,
            semantics: self.semantics,
            round_s: self.round_s,
            first_round_s: self.first_round_s,
            window: self.window.as_deref().map(parse_window).transpose()?,
            split,
            seed: self.seed,
            wide_jobs: self.wide_jobs,
            spread_penalty: self.spread_penalty,
            record: self.record.clone(),
            max_rounds: self.max_rounds,
            horizon_s: parse_horizon(&self.horizon)?,
            out_dir: self.out.clone(),
            stream: self.stream,
            draws: self.draws,
        })
    }
}
