//! Job specs: what to run, how it reports progress, how to measure and what to sweep.
//! Format documented in `docs/JOB_SPEC.md`; example specs live in `workloads/`.

mod elastic;
pub mod log_format;
mod template;
mod validate;

pub use elastic::{ElasticControl, ElasticSpec, elastic_control};

pub use template::{TemplateError, Vars, render};

use crate::matrix::CacheKind;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use validate::{check_throughput, validate};

/// Spec schema version this build reads.
pub const SPEC_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("{path}: cannot read job spec: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A value that parsed but is not allowed; `line` is where its key is written, when found.
    #[error("{path}:{}{message}", line.map(|l| format!("{l}: ")).unwrap_or_else(|| " ".into()))]
    Invalid {
        path: PathBuf,
        line: Option<usize>,
        message: String,
    },
}

/// A job spec as written in TOML.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    pub schema_version: u32,
    pub name: String,
    pub model: Option<String>,
    /// Argument vector; with `shell = true`, exactly one string run by `/bin/sh -c`.
    pub command: Vec<String>,
    #[serde(default)]
    pub shell: bool,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub working_dir: Option<PathBuf>,
    #[serde(default = "one")]
    pub gpus: u32,
    pub batch_size_per_gpu: Option<u64>,
    pub dataset: Option<DatasetSpec>,
    pub throughput: ThroughputSpec,
    #[serde(default)]
    pub measure: MeasureSpec,
    pub sweep: SweepSpec,
    #[serde(default)]
    pub deploy: DeploySpec,
    /// How an elastic scheme's batch size and slots reach the job.
    pub elastic: Option<ElasticSpec>,
}

/// How `profiler deploy` may start the job again.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeploySpec {
    /// Started again (to resize it, or after `--resume`), the job goes on from where it was,
    /// as from a checkpoint: its count continues. `false`: it starts its work over, and is
    /// re-capped in place rather than restarted to resize.
    pub resumes: bool,
    /// Seconds from its launch to its first progress at its rate (imports, model set-up). The
    /// replay a deploy compares with charges it each time the job starts; the matrix's steady
    /// rates leave it out.
    pub startup_s: f64,
}

impl Default for DeploySpec {
    fn default() -> Self {
        DeploySpec {
            resumes: true,
            startup_s: 0.0,
        }
    }
}

impl JobSpec {
    /// Samples per iteration: `given` (the spec's `samples_per_iteration`), or its batch size
    /// times its GPUs.
    pub fn samples_per_iteration(&self, given: Option<f64>) -> Option<f64> {
        given.or_else(|| {
            self.batch_size_per_gpu
                .map(|b| b as f64 * self.gpus.max(1) as f64)
        })
    }
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    pub path: PathBuf,
    pub bytes: Option<u64>,
    pub samples: Option<u64>,
    /// Command (argv, no shell) that creates the dataset when `path` does not exist.
    pub generate: Option<Vec<String>>,
    /// How the job caches its dataset, which decides the cache model that fills the memory
    /// axis: `page-cache` (the default: files read through the kernel, shuffled every epoch,
    /// as PyTorch's DataLoader does) or `minio` (a cache that never evicts, as Synergy assumes).
    #[serde(default = "reads_through_page_cache")]
    pub cache: CacheKind,
}

fn reads_through_page_cache() -> CacheKind {
    CacheKind::PageCache
}

/// How the job's throughput is read.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "protocol", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ThroughputSpec {
    /// JSON lines `{"samples": N, "t": unix_s}` appended to the file named by
    /// `$PROFILER_PROGRESS_FILE` (recommended).
    ProgressFile,
    /// A regex over stdout lines with named captures (see [`LogSpec`]); `stdout-regex` is
    /// `log` with `stream = "stdout"` and a `regex`.
    StdoutRegex {
        regex: String,
        samples_per_iteration: Option<f64>,
        epoch_length: Option<f64>,
    },
    /// What an unmodified training script prints: a well-known `format` or a `regex`.
    Log(LogSpec),
}

/// `protocol = "log"`: progress read from the job's output.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSpec {
    /// A preset for a well-known output shape (`pytorch-imagenet`, `tqdm`, `hf-trainer`,
    /// `keras`); checked when the spec is loaded.
    pub format: Option<String>,
    /// A regex with named captures instead of a preset.
    pub regex: Option<String>,
    /// Which output to read (default `both`: tqdm bars go to stderr, logs to stdout).
    #[serde(default)]
    pub stream: LogStream,
    /// Samples per iteration; default `batch_size_per_gpu` x `gpus`.
    pub samples_per_iteration: Option<f64>,
    /// Iterations per epoch, where the output does not print it.
    pub epoch_length: Option<f64>,
    /// Run the job under a pseudo-terminal, so that progress bars drawn only on a console
    /// (Rich's) draw as they would there. Default: where the format's library draws only on a
    /// terminal (`lightning`).
    pub terminal: Option<bool>,
}

impl ThroughputSpec {
    /// Whether the job runs under a pseudo-terminal: as the spec says, else as its format
    /// needs.
    pub fn terminal(&self) -> bool {
        match self {
            ThroughputSpec::Log(log) => log.terminal.unwrap_or_else(|| {
                log.format
                    .as_deref()
                    .and_then(log_format::Preset::from_name)
                    .is_some_and(|p| p.draws_only_on_a_terminal())
            }),
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogStream {
    Stdout,
    Stderr,
    #[default]
    Both,
}

/// Warm-up and steady-state rules.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MeasureSpec {
    /// Seconds discarded after the job first reports progress.
    pub warmup_s: f64,
    /// Seconds discarded after a live re-cap, before measuring the new level.
    pub settle_s: f64,
    /// Length of one rate window.
    pub window_s: f64,
    /// Steady once the coefficient of variation of the last `steady_windows` rates is below
    /// `steady_cv`.
    pub steady_windows: usize,
    pub steady_cv: f64,
    /// Time cap for measuring one cell (after warm-up); the cell is recorded with what was
    /// measured and a note that it did not reach steady state.
    pub max_s: f64,
    /// Seconds to wait for the first progress report before the cell fails.
    pub startup_timeout_s: f64,
    /// Also warm up until the job has read its whole dataset once (`dataset.samples` samples
    /// after its first report), and, at a memory level with room for it, for another pass
    /// while the page cache still takes it in (below 98% of it and gaining), so the page cache
    /// holds what it holds in steady state before the first cell of a launch is measured.
    /// Bounded by `startup_timeout_s`.
    pub warmup_pass: bool,
    /// Seconds a stopped job gets between SIGTERM and SIGKILL (to save a checkpoint, flush
    /// its logs).
    pub stop_grace_s: f64,
    /// Passes of launches asked for: the sweep measures its points this many times, each pass
    /// on launches of its own, so that every cell's interval says where a rerun lands; then
    /// it measures the cells still wider than `precision` again. 1 measures each point on one
    /// launch, with intervals that say nothing about reruns, and no narrowing pass.
    pub launches: u32,
    /// Seconds the launches after the first may take, per parameter combination: a pass of
    /// launches starts only while the passes before it took less (0: none, like `launches =
    /// 1`). Every point keeps the launches it has, and the spread pooled over the points still
    /// floors every interval. Default: no bound but `launches`.
    pub launches_budget_s: Option<f64>,
    /// Blocks each live launch measures: it walks the points at the top memory level this many
    /// times, each round in a fresh random order and ending with the reference (the top
    /// cell), so every point is read against a reference measured seconds away. A visit of a
    /// point measured before (on this launch or another) measures `steady_windows` windows and
    /// stops: the spread between visits, not one visit's windows, makes the interval.
    pub rounds: u32,
    /// The relative half-width (of the 95% interval of another sweep's relative rate) the
    /// sweep measures its cells to: after the passes asked for, it measures the reference and
    /// the cells still wider again, pass after pass, until none is or the budget is spent.
    pub precision: f64,
}

impl Default for MeasureSpec {
    fn default() -> Self {
        MeasureSpec {
            warmup_s: 10.0,
            settle_s: 3.0,
            window_s: 2.0,
            steady_windows: 5,
            steady_cv: 0.05,
            max_s: 60.0,
            startup_timeout_s: 300.0,
            warmup_pass: true,
            stop_grace_s: 10.0,
            launches: 2,
            launches_budget_s: None,
            rounds: 2,
            precision: crate::matrix::cell_model::DEFAULT_PRECISION,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryAxis {
    /// Optimistic profiling: measure CPU levels at the largest memory level and one calibration
    /// cell (the lowest level at the highest CPU level), model the rest.
    Model,
    /// Measure every memory level too.
    Measure,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SweepMode {
    /// Keep the job running and change its cgroup limits between points.
    Live,
    /// Start the job afresh for every point.
    Relaunch,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    pub cpu: CpuAxis,
    pub memory_gib: Option<Vec<f64>>,
    pub memory_pct_of_dataset: Option<Vec<f64>>,
    #[serde(default = "default_memory_axis")]
    pub memory: MemoryAxis,
    #[serde(default = "default_mode")]
    pub mode: SweepMode,
    #[serde(default)]
    pub params: BTreeMap<String, Vec<String>>,
    /// Caps the job's storage read bandwidth (MB/s, on the dataset's disk) to emulate slower
    /// storage than this machine's, such as a cluster's network storage.
    pub storage_read_mb_s: Option<f64>,
    /// The job sizes itself (threads, loader workers) from `$PROFILER_CPUS`/`$PROFILER_WORKERS`,
    /// which hold the CPU level it was launched at: every CPU level then gets a fresh launch,
    /// since a running job re-capped to fewer cores would keep the top level's thread count.
    #[serde(default)]
    pub job_reads_cpu_env: bool,
    /// Whether the running job keeps measuring what a fresh start would when its CPU cap is
    /// changed under it. Unset (the default), a live sweep checks it on one point (one extra
    /// launch) and relaunches at every point if it does not; `true` skips the check (the job
    /// resizes its threads itself, or uses one thread); `false` relaunches at every point, like
    /// `mode = "relaunch"` (it sizes thread pools and workers from the CPUs it sees at start,
    /// as PyTorch, OpenMP, MKL and oneDNN do).
    pub adapts_to_caps: Option<bool>,
}

/// `sweep.cpu`: the CPU levels to measure, or a search that chooses them as it measures.
#[derive(Debug, Clone, PartialEq)]
pub enum CpuAxis {
    /// `cpu = [0.5, 1, 2]`: cores.
    Levels(Vec<f64>),
    /// `cpu = { search = "knee", min = 0.5, max = 16 }`.
    Search(CpuSearchSpec),
}

/// A CPU search as written in the spec (see `harness::sweep::cpu_search` for the rules).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuSearchSpec {
    pub search: SearchRuleSpec,
    /// Lowest level, cores (default 1, Synergy's lower bound).
    pub min: Option<f64>,
    /// Highest level, cores (default: every CPU available to the sweep).
    pub max: Option<f64>,
    /// Knee: accepted error and "stops rising" threshold (default 0.05). Synergy: epoch-time
    /// change below which the level is halved (default 0.10).
    pub tolerance: Option<f64>,
    /// Knee only: levels between the ends are multiples of this many cores (default: quarter
    /// cores below 2 cores, whole cores from 2 up).
    pub step: Option<f64>,
    /// Knee only: at most this many levels (default 12).
    pub max_points: Option<usize>,
    /// Predict only: the CPU levels of the whole matrix, cores; the search measures some and
    /// `profiler predict` fills the rest.
    pub levels: Option<Vec<f64>>,
    /// Predict only: a library of matrices to lean on besides the shipped zoo (its machine
    /// kind's folder where it has one), relative to the spec's directory.
    pub library: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SearchRuleSpec {
    Knee,
    Synergy,
    /// Measure the reference, then the level whose prediction is widest, until every
    /// predicted level is within the tolerance.
    Predict,
}

impl<'de> Deserialize<'de> for CpuAxis {
    /// A list or a table, each with the error messages of its own type (a typo in a search's
    /// key is reported as such, not as "matches no variant").
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
        struct Axis;
        impl<'de> serde::de::Visitor<'de> for Axis {
            type Value = CpuAxis;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a list of CPU levels in cores, e.g. [0.5, 1, 2], or a search, e.g. { search = \"knee\", min = 0.5, max = 16 }",
                )
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<CpuAxis, A::Error> {
                Vec::<f64>::deserialize(SeqAccessDeserializer::new(seq)).map(CpuAxis::Levels)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<CpuAxis, A::Error> {
                CpuSearchSpec::deserialize(MapAccessDeserializer::new(map)).map(CpuAxis::Search)
            }
        }
        d.deserialize_any(Axis)
    }
}

fn default_memory_axis() -> MemoryAxis {
    MemoryAxis::Model
}
fn default_mode() -> SweepMode {
    SweepMode::Live
}

/// A spec that parsed and validated, with paths resolved against the spec's directory.
#[derive(Debug, Clone)]
pub struct LoadedSpec {
    pub spec: JobSpec,
    pub path: PathBuf,
    /// Directory the command runs in.
    pub working_dir: PathBuf,
    /// Dataset path, resolved.
    pub dataset_path: Option<PathBuf>,
}

impl LoadedSpec {
    /// Model name schedulers know this job by.
    pub fn model(&self) -> &str {
        self.spec.model.as_deref().unwrap_or(&self.spec.name)
    }

    /// Whether anything the job is started with depends on the CPU level, in which case a
    /// running job cannot be walked through CPU levels (its worker count would be stale).
    /// That is: the command or the environment templates `{cpus}`/`{workers}` or names
    /// `PROFILER_CPUS`/`PROFILER_WORKERS` (a shell command reading them), or the spec says the
    /// job reads them (`sweep.job_reads_cpu_env`).
    pub fn depends_on_cpu_level(&self) -> bool {
        let uses = |s: &String| {
            ["{cpus}", "{workers}", "PROFILER_CPUS", "PROFILER_WORKERS"]
                .iter()
                .any(|name| s.contains(name))
        };
        self.spec.sweep.job_reads_cpu_env
            || self.spec.command.iter().any(uses)
            || self.spec.env.values().any(uses)
    }
}

/// Reads, parses and validates a job spec.
pub fn load_spec(path: &Path) -> Result<LoadedSpec, SpecError> {
    let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse_spec(&text, path)
}

/// Parses spec text; `path` is used for messages and to resolve relative paths.
pub fn parse_spec(text: &str, path: &Path) -> Result<LoadedSpec, SpecError> {
    let spec: JobSpec = toml::from_str(text).map_err(|e| {
        let (line, column) = e
            .span()
            .map(|s| line_column(text, s.start))
            .unwrap_or((1, 1));
        SpecError::Syntax {
            path: path.to_owned(),
            line,
            column,
            message: e.message().trim().to_string(),
        }
    })?;
    let invalid = |message: String| SpecError::Invalid {
        path: path.to_owned(),
        line: key_line(text, &message),
        message,
    };
    validate(&spec).map_err(invalid)?;
    check_throughput(&spec, text, path)?;
    check_templates(&spec, text, path)?;
    let base = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let working_dir = match &spec.working_dir {
        Some(dir) => base.join(dir),
        None => base.to_owned(),
    };
    let dataset_path = spec.dataset.as_ref().map(|d| base.join(&d.path));
    Ok(LoadedSpec {
        spec,
        path: path.to_owned(),
        working_dir,
        dataset_path,
    })
}

/// Renders every templated field with the names a sweep will define, so that a typo such as
/// `{btach}` is reported now, with its line, rather than after the dataset is generated and the
/// first launch is under way.
fn check_templates(spec: &JobSpec, text: &str, path: &Path) -> Result<(), SpecError> {
    let mut known = Vars::new();
    known.insert("gpus".into(), String::new());
    if spec.dataset.is_some() {
        known.insert("dataset".into(), String::new());
    }
    let mut per_point = known.clone();
    for name in ["cpus", "workers", "control_file"]
        .into_iter()
        .chain(spec.sweep.params.keys().map(String::as_str))
    {
        per_point.insert(name.to_string(), String::new());
    }
    // `dataset.generate` runs before any sweep point exists: only {gpus} and {dataset} there.
    let generate = spec
        .dataset
        .iter()
        .flat_map(|d| d.generate.iter().flatten());
    // A restart takes the scheme's batch size and slots too.
    let mut restart = per_point.clone();
    for name in ["batch", "slots"] {
        restart.insert(name.to_string(), String::new());
    }
    let restart_command = (spec.elastic.iter()).flat_map(|e| e.restart_command.iter().flatten());
    let fields = (spec.command.iter().map(|v| ("command", v, &per_point)))
        .chain(spec.env.values().map(|v| ("env", v, &per_point)))
        .chain(generate.map(|v| ("dataset.generate", v, &known)))
        .chain(restart_command.map(|v| ("elastic.restart_command", v, &restart)));
    for (field, value, vars) in fields {
        if let Err(e) = render(value, vars) {
            let (line, column) = text
                .find(value.as_str())
                .map_or((1, 1), |offset| line_column(text, offset));
            return Err(SpecError::Syntax {
                path: path.to_owned(),
                line,
                column,
                message: format!("{field}: {e}"),
            });
        }
    }
    Ok(())
}

/// The line of the key a validation message starts with (`sweep.memory_gib ...` is found as a
/// line `memory_gib = ...`, in a `[sweep]` table or written out in full).
fn key_line(text: &str, message: &str) -> Option<usize> {
    let key: String = message
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        .collect();
    let key = key.trim_end_matches('.');
    let short = key.rsplit('.').next().filter(|k| !k.is_empty())?;
    [key, short]
        .iter()
        .filter_map(|k| assignment_offset(text, k))
        .min()
        .map(|offset| line_column(text, offset).0)
}

/// Byte offset of the first line that assigns `key` (`key = ...`, leading blanks skipped).
fn assignment_offset(text: &str, key: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let rest = line.trim_start();
        if rest
            .strip_prefix(key)
            .is_some_and(|r| r.trim_start().starts_with('='))
        {
            return Some(offset + line.len() - rest.len());
        }
        offset += line.len();
    }
    None
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

/// Names become cgroup and file names: keep them to a safe alphabet.
pub fn is_safe_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(sweep: &str) -> Result<LoadedSpec, SpecError> {
        let text = format!(
            "schema_version = 1\nname = \"x\"\ncommand = [\"true\"]\n[throughput]\nprotocol = \"progress-file\"\n[sweep]\n{sweep}\n"
        );
        parse_spec(&text, Path::new("w/x.toml"))
    }

    fn error(sweep: &str) -> String {
        parse(sweep).unwrap_err().to_string()
    }

    #[test]
    fn a_launch_budget_is_seconds() {
        let with = |budget: &str| {
            let text = format!(
                "schema_version = 1\nname = \"x\"\ncommand = [\"true\"]\n[throughput]\n\
                 protocol = \"progress-file\"\n[measure]\nlaunches_budget_s = {budget}\n\
                 [sweep]\ncpu = [1]\n"
            );
            parse_spec(&text, Path::new("w/x.toml"))
        };
        let spec = with("600").unwrap();
        assert_eq!(spec.spec.measure.launches_budget_s, Some(600.0));
        assert_eq!(
            parse("cpu = [1]").unwrap().spec.measure.launches_budget_s,
            None
        );
        let err = with("-1").unwrap_err().to_string();
        assert!(
            err.contains("measure.launches_budget_s = -1: expected seconds >= 0"),
            "{err}"
        );
        assert!(with("nan").is_err());
    }

    #[test]
    fn cpu_is_a_list_or_a_search() {
        let list = parse("cpu = [0.5, 1, 2]").unwrap();
        assert_eq!(list.spec.sweep.cpu, CpuAxis::Levels(vec![0.5, 1.0, 2.0]));
        let search =
            parse("cpu = { search = \"knee\", min = 0.5, max = 16, tolerance = 0.1, step = 0.5 }")
                .unwrap();
        let CpuAxis::Search(s) = search.spec.sweep.cpu else {
            panic!("a search")
        };
        assert_eq!(s.search, SearchRuleSpec::Knee);
        assert_eq!(
            (s.min, s.max, s.tolerance, s.step),
            (Some(0.5), Some(16.0), Some(0.1), Some(0.5))
        );
        let synergy = parse("[sweep.cpu]\nsearch = \"synergy\"\nmax = 24").unwrap();
        assert!(matches!(
            synergy.spec.sweep.cpu,
            CpuAxis::Search(CpuSearchSpec {
                search: SearchRuleSpec::Synergy,
                ..
            })
        ));
    }

    #[test]
    fn a_bad_search_says_what_is_wrong_with_its_line() {
        let e = error("cpu = { search = \"knee\", mni = 0.5 }");
        assert!(e.starts_with("w/x.toml:7:"), "{e}");
        assert!(e.contains("unknown field `mni`"), "{e}");
        let e = error("cpu = { search = \"bisect\" }");
        assert!(e.contains("knee") && e.contains("synergy"), "{e}");
        let e = error("cpu = \"all\"");
        assert!(
            e.contains("a list of CPU levels") && e.contains("search"),
            "{e}"
        );
        assert!(error("cpu = { search = \"knee\", min = 4, max = 2 }").contains("above max"));
        assert!(error("cpu = { search = \"knee\", min = 0 }").contains("cores >= 0.01"));
        assert!(error("cpu = { search = \"knee\", tolerance = 1.5 }").contains("tolerance"));
        assert!(error("cpu = { search = \"knee\", max_points = 1 }").contains("at least 2"));
        let e = error("cpu = { search = \"synergy\", max = 24, step = 2 }");
        assert!(e.contains("GPU count"), "{e}");
    }

    fn throughput(section: &str) -> Result<LoadedSpec, SpecError> {
        let text = format!(
            "schema_version = 1\nname = \"x\"\ncommand = [\"true\"]\n[throughput]\n{section}\n[sweep]\ncpu = [1]\n"
        );
        parse_spec(&text, Path::new("w/x.toml"))
    }

    #[test]
    fn a_log_format_is_a_known_preset() {
        let ok = throughput("protocol = \"log\"\nformat = \"tqdm\"").unwrap();
        let ThroughputSpec::Log(log) = ok.spec.throughput else {
            panic!("a log spec")
        };
        assert_eq!(
            (log.format.as_deref(), log.stream),
            (Some("tqdm"), LogStream::Both)
        );
        let e = throughput("protocol = \"log\"\nstream = \"stderr\"\nformat = \"tqmd\"")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("w/x.toml:7:1: "), "{e}");
        for name in ["pytorch-imagenet", "tqdm", "hf-trainer", "keras"] {
            assert!(e.contains(&format!("\"{name}\"")), "{e}");
        }
        // Formats that only count iterations need the batch.
        let e = throughput("protocol = \"log\"\nformat = \"keras\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("batch_size_per_gpu"), "{e}");
        throughput("protocol = \"log\"\nformat = \"keras\"\nsamples_per_iteration = 32").unwrap();
        let e = throughput("protocol = \"log\"\nformat = \"keras\"\nregex = 'x'")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not both"), "{e}");
        let e = throughput("protocol = \"log\"\nformat = \"tqdm\"\nstreams = \"both\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `streams`"), "{e}");
    }

    #[test]
    fn a_log_regex_uses_known_captures() {
        let e = throughput("protocol = \"log\"\nregex = '(?P<rat>\\d+)'")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("w/x.toml:6:1: ") && e.contains("unknown capture `rat`"),
            "{e}"
        );
        let e = throughput("protocol = \"log\"\nregex = '(?P<epoch>\\d+) (?P<iteration>\\d+)'\nsamples_per_iteration = 8")
            .unwrap_err()
            .to_string();
        assert!(e.contains("epoch_length"), "{e}");
        throughput("protocol = \"log\"\nregex = '(?P<rate>\\S+) (?P<unit>\\S+)'").unwrap();
        throughput("protocol = \"stdout-regex\"\nregex = '(?P<iteration_time_s>\\S+)'\nsamples_per_iteration = 8").unwrap();
        let e = throughput("protocol = \"log\"\nformat = \"tqdm\"\nepoch_length = 0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("epoch_length = 0"), "{e}");
    }

    #[test]
    fn empty_or_non_positive_axes_are_errors_with_their_line() {
        // Line 7 is `[sweep]`'s first line in `parse`'s text.
        for (sweep, expected) in [
            ("cpu = [1]\nmemory_gib = []", "sweep.memory_gib is empty"),
            ("cpu = [1]\nmemory_gib = [4, 0]", "sweep.memory_gib has 0"),
            ("cpu = [1]\nmemory_gib = [-1]", "sweep.memory_gib has -1"),
            ("cpu = []", "sweep.cpu is empty"),
            ("cpu = [2, 0]", "sweep.cpu has 0"),
            ("cpu = [-0.5]", "sweep.cpu has -0.5"),
        ] {
            let e = error(sweep);
            let line = 7 + sweep.lines().count() - 1;
            assert!(
                e.starts_with(&format!("w/x.toml:{line}: ")),
                "{sweep:?}: {e}"
            );
            assert!(e.contains(expected), "{sweep:?}: {e}");
        }
        let text = "schema_version = 1\nname = \"x\"\ncommand = [\"true\"]\n[dataset]\npath = \"d\"\n[throughput]\nprotocol = \"progress-file\"\n[sweep]\ncpu = [1]\nmemory_pct_of_dataset = []\n";
        let e = parse_spec(text, Path::new("w/x.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("w/x.toml:10: sweep.memory_pct_of_dataset is empty"),
            "{e}"
        );
    }

    #[test]
    fn a_job_sizing_itself_from_the_cpu_env_is_relaunched_per_cpu_level() {
        let plain = parse("cpu = [1, 2]").unwrap();
        assert!(!plain.depends_on_cpu_level());
        let declared = parse("cpu = [1, 2]\njob_reads_cpu_env = true").unwrap();
        assert!(declared.depends_on_cpu_level());
        let text = "schema_version = 1\nname = \"x\"\ncommand = [\"python train.py --workers $PROFILER_WORKERS\"]\nshell = true\n[throughput]\nprotocol = \"progress-file\"\n[sweep]\ncpu = [1, 2]\n";
        let shell = parse_spec(text, Path::new("w/x.toml")).unwrap();
        assert!(shell.depends_on_cpu_level());
    }
}
