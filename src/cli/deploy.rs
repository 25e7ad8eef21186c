//! Arguments of `profiler deploy`.

use super::replay::{TraceFormat, parse_schemes, trace_workload};
use crate::deploy::DeployOptions;
use crate::replay::cluster::ClusterSpec;
use crate::replay::{ReplayError, ReplayOptions, Semantics};
use std::path::PathBuf;

pub const EXAMPLES: &str = "\
Examples:
  # The shipped trace on one server carved out of this machine: the jobs swept here first
  # (into results/deploy/matrices/), then FIFO and SRTF under the proportional share and Tune,
  # deployed and replayed, and the comparison
  profiler deploy --profile --trace workloads/deploy/trace.csv --compare \\
      fifo+proportional,fifo+tune,srtf+proportional,srtf+tune --out results/deploy/

  # One scheme, the jobs' cgroups under /profiler-deploy
  profiler deploy --trace workloads/deploy/trace.csv --policy srtf --mechanism tune \\
      --cgroup-parent profiler-deploy --out results/srtf-tune/

The deploy runs in real time: a job arriving at 120 s in the trace is started 120 s after the
deploy starts. Rounds are --round-s long (30 s by default: the jobs of a deploy run minutes, not
hours). Jobs left out of a round are frozen in place (cgroup freezer) and thawed when placed
again; a job placed again with other CPUs or memory is re-capped while it runs.

Before the first round the deploy checks its matrices: each one's machine kind against this
machine's (a matrix of another kind stops it, unless --allow-other-machine), then a spot check
measures each job kind briefly near the proportional share and stops where its matrix's rate
is outside the interval (--no-spot-check skips it). Both are in checks.txt under --out.

Ctrl-C, SIGTERM or a crash loses at most the round in progress: every finished round is in
journal/ under --out, and `--resume` with the same options goes on from there.

Writes to --out: the deploy's tables (<policy>-<mechanism>.jobs/.rounds, summary; CSV and
Parquet, as `profiler replay` writes them), the replay's under replay/, compare.csv, and each
job's output under logs/.

Where a job kind's matrix holds predicted cells (`profiler predict`, `sweep --predict`) and the
deploy ran it at one of them for two rounds or more, those rounds become a measured cell and the
rest of its matrix is predicted again: fed-back/<model>.matrix.jsonl and feedback.txt under
--out. Deploy with --profiles pointing there to use them.";

/// Run a replay's schedule on real jobs of this machine, and compare it with the replay.
#[derive(clap::Args, Debug, Clone, PartialEq)]
#[command(after_long_help = EXAMPLES)]
pub struct DeployArgs {
    /// The trace to deploy (the formats `profiler replay --trace` reads).
    #[arg(long)]
    pub trace: PathBuf,
    #[arg(long, value_enum, default_value_t = TraceFormat::Auto)]
    pub trace_format: TraceFormat,
    /// Job specs (`*.toml`), one per model of the trace: the spec whose `model` (or `name`)
    /// is the trace's runs its jobs.
    #[arg(long, default_value = "workloads/deploy/jobs")]
    pub jobs: PathBuf,
    /// The matrices the replay and the mechanisms read, one per model (default:
    /// workloads/deploy/matrices, or OUT/matrices with --profile).
    #[arg(long)]
    pub profiles: Option<PathBuf>,
    /// Sweep every job spec of --jobs on this machine first, into --profiles, where its matrix
    /// is missing or of another machine kind (minutes per job).
    #[arg(long)]
    pub profile: bool,
    /// Deploy with matrices measured on another kind of machine (a warning in the output and
    /// checks.txt) instead of stopping.
    #[arg(long)]
    pub allow_other_machine: bool,
    /// Skip the spot check: each job kind measured briefly at one allocation before the first
    /// round, against its matrix.
    #[arg(long)]
    pub no_spot_check: bool,
    /// Cluster TOML (or a built-in name); its servers are carved out of this machine's CPUs.
    #[arg(long, default_value = "workloads/deploy/cluster.toml")]
    pub cluster: String,
    #[arg(long, default_value = "fifo")]
    pub policy: String,
    #[arg(long, default_value = "proportional")]
    pub mechanism: String,
    /// Deploy several POLICY+MECHANISM pairs, one after the other (overrides --policy and
    /// --mechanism).
    #[arg(long, value_delimiter = ',')]
    pub compare: Vec<String>,
    /// Round (lease) length, seconds.
    #[arg(long, default_value_t = 30.0)]
    pub round_s: f64,
    /// GPU devices the cluster's GPUs are, in server order (`0,1,2,3`); default: emulated
    /// accelerator slots.
    #[arg(long, value_delimiter = ',')]
    pub gpus: Vec<u32>,
    #[command(flatten)]
    pub cgroup_parent: super::CgroupParentArg,
    /// Output directory.
    #[arg(long, short = 'o', default_value = "results/deploy")]
    pub out: PathBuf,
    /// Run each placed job as a Slurm job (`srun` with the round's whole CPUs and memory;
    /// suspended and resumed with `scontrol`) instead of in a cgroup of this machine.
    #[arg(long)]
    pub slurm: bool,
    /// Slurm partition for --slurm.
    #[arg(long, requires = "slurm")]
    pub partition: Option<String>,
    /// The Slurm node of each server of the cluster, in order (--slurm; default: Slurm
    /// chooses).
    #[arg(long, value_delimiter = ',', requires = "slurm")]
    pub slurm_nodes: Vec<String>,
    /// One more argument for every srun (repeat it: `--slurm-arg=--account=prof`).
    #[arg(long, requires = "slurm", allow_hyphen_values = true)]
    pub slurm_arg: Vec<String>,
    /// Folders of matrices (one per machine kind, as `profiler predict --library` reads
    /// them) that a matrix with predicted cells leans on when the deploy feeds its rates back
    /// into it (OUT/fed-back/), besides the shipped zoo and the other --profiles.
    #[arg(long, value_name = "DIR")]
    pub library: Vec<PathBuf>,
    /// Go on from where an interrupted or crashed deploy into the same --out stopped: the
    /// rounds it finished are taken from its journal (journal/ in --out), and the jobs it was
    /// running start again, their count going on where their specs say they resume.
    #[arg(long)]
    pub resume: bool,
}

impl DeployArgs {
    pub fn to_options(&self) -> Result<DeployOptions, ReplayError> {
        let replay = ReplayOptions {
            cluster: ClusterSpec::resolve(&self.cluster)?,
            profiles: Some(self.profiles_dir()),
            workload: trace_workload(&self.trace, self.trace_format)?,
            schemes: parse_schemes(&self.policy, &self.mechanism, &self.compare)?,
            semantics: Semantics::Exact,
            round_s: self.round_s,
            out_dir: Some(self.out.clone()),
            ..ReplayOptions::default()
        };
        Ok(DeployOptions {
            replay,
            jobs_dir: self.jobs.clone(),
            cgroup_parent: self.cgroup_parent.name.clone(),
            gpu_ids: self.gpus.clone(),
            slurm: self.slurm.then(|| crate::deploy::slurm::SlurmTarget {
                partition: self.partition.clone(),
                nodes: self.slurm_nodes.clone(),
                extra_args: self.slurm_arg.clone(),
            }),
            resume: self.resume,
            checks: crate::deploy::DeployChecks {
                profile: self.profile,
                allow_other_machine: self.allow_other_machine,
                spot_check: !self.no_spot_check,
            },
            library: self.library.clone(),
        })
    }

    /// `--profiles`, or its default: the shipped matrices, or OUT/matrices where `--profile`
    /// makes them.
    pub fn profiles_dir(&self) -> PathBuf {
        match (&self.profiles, self.profile) {
            (Some(p), _) => p.clone(),
            (None, true) => self.out.join("matrices"),
            (None, false) => PathBuf::from("workloads/deploy/matrices"),
        }
    }
}
