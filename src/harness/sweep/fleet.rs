//! `profiler sweep --slurm`: the sweep's whole-core CPU levels as Slurm jobs, one job per level
//! (`sbatch -n1 -c C --mem=M`), each running `profiler sweep --slurm-step-cpu C` under the caps
//! of Slurm's own cgroups. The submitting profiler follows the jobs, appends each level's cells
//! to the matrix as it finishes, and cancels the jobs (scancel) when interrupted.
//!
//! The highest level runs first, alone: it fixes the memory levels (relative to the job's
//! resident size, known after its warm-up), which the other levels are then given, so every
//! level's cells share one memory axis. The other levels run as Slurm schedules them.
//! The profiler binary, the spec, its dataset and the output directory must be on a file
//! system the nodes share.

use crate::harness::sweep::plan::cpu_text;
use crate::harness::sweep::{SweepError, SweepObserver, SweepOptions, SweepOutcome};
use crate::matrix::{CellKey, Matrix, MatrixWriter, load_matrix};
use crate::slurm::scancel;
use crate::spec::{CpuAxis, MemoryAxis};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::units::GIB_BYTES as GIB;
const MIB: u64 = 1 << 20;

/// How to submit the jobs.
#[derive(Debug, Clone)]
pub struct SlurmOptions {
    /// `--partition`.
    pub partition: Option<String>,
    /// Further sbatch arguments, passed as given (`--slurm-arg=--account=x`).
    pub extra_args: Vec<String>,
    /// Memory each job asks for, MB; by default the top memory level (fixed levels), or twice
    /// the dataset + 1 GiB (levels relative to the dataset), or 4 GiB (no memory axis).
    pub mem_mb: Option<u64>,
    /// Leave fractional CPU levels out instead of refusing the sweep.
    pub skip_fractional: bool,
    /// The profiler the jobs run (this binary by default; must be visible on the nodes).
    pub profiler: PathBuf,
    /// How often the jobs' states are polled.
    pub poll: Duration,
}

/// A submitted level.
struct Job {
    id: String,
    cpu: f64,
    level_file: PathBuf,
    slurm_log: PathBuf,
    last_state: String,
}

/// Runs the sweep of `opts` through Slurm. Every finished level's cells are in `opts.output`
/// when this returns, also on error or interruption.
pub fn run_fleet_sweep(
    opts: &SweepOptions,
    slurm: &SlurmOptions,
    observer: &mut dyn SweepObserver,
    cancel: &AtomicBool,
) -> Result<SweepOutcome, SweepError> {
    let started = Instant::now();
    let levels = whole_core_levels(opts, slurm, observer)?;
    let level_dir = opts.output.with_extension("slurm");
    std::fs::create_dir_all(&level_dir).map_err(|source| SweepError::Logs {
        path: level_dir.clone(),
        source,
    })?;
    let mem_mb = slurm.mem_mb.unwrap_or_else(|| default_mem_mb(opts));
    let mut fleet = Merged::default();
    let done_levels = match opts.resume && opts.output.exists() {
        true => fleet.resume(opts, observer)?,
        false => HashSet::new(),
    };
    let done_cells = fleet.matrix.as_ref().map_or(0, |m| m.cells.len());
    observer.planned(planned_cells(opts, &levels, &fleet), done_cells);
    let mut pending: Vec<f64> = levels
        .iter()
        .copied()
        .filter(|c| !done_levels.contains(&milli(*c)))
        .collect();
    let mut running: Vec<Job> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let ctx = Ctx {
        opts,
        slurm,
        mem_mb,
        level_dir: &level_dir,
    };
    loop {
        if cancel.load(Ordering::SeqCst) {
            cancel_all(&running);
            return Err(SweepError::Interrupted {
                cells: fleet.matrix.as_ref().map_or(0, |m| m.cells.len()),
                path: opts.output.clone(),
            });
        }
        if let Err(e) = ctx.submit_pending(&mut pending, &mut running, &fleet, observer) {
            cancel_all(&running);
            return Err(e);
        }
        if running.is_empty() {
            break;
        }
        std::thread::sleep(slurm.poll);
        for job in follow(&mut running, observer) {
            match collect(&job) {
                Ok(level) => fleet.merge(level, &levels, opts, observer)?,
                Err(why) => {
                    observer.warn(&why);
                    failures.push(why);
                }
            }
        }
        if !failures.is_empty() && fleet.memory_levels.is_none() {
            // The first level failed: the others would have no memory axis to share.
            break;
        }
    }
    if !failures.is_empty() {
        return Err(SweepError::Slurm(format!(
            "{} of {} level(s) failed; the others are saved in {} (--resume retries the rest):\n{}",
            failures.len(),
            levels.len(),
            opts.output.display(),
            failures.join("\n")
        )));
    }
    let mut matrix = fleet
        .matrix
        .ok_or_else(|| SweepError::Slurm("no level was run".into()))?;
    // Each job held its own level's spread between launches; the merged matrix holds the
    // spread pooled over all levels, as a local sweep does.
    if let Some(spread) = crate::harness::sweep::hold_pooled_spread(&mut matrix.cells) {
        matrix.header.launch_spread = Some(spread);
        crate::matrix::rewrite_matrix(&opts.output, &matrix)?;
    }
    Ok(SweepOutcome {
        matrix,
        path: opts.output.clone(),
        launches: levels.len() as u32,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// Cells the sweep will have: every level at every memory level and parameter combination.
fn planned_cells(opts: &SweepOptions, levels: &[f64], fleet: &Merged) -> usize {
    let sweep = &opts.spec.spec.sweep;
    let n_mem = fleet.memory_levels.as_ref().map_or_else(
        || {
            (sweep.memory_gib.as_ref().map(Vec::len))
                .or(sweep.memory_pct_of_dataset.as_ref().map(Vec::len))
                .unwrap_or(1)
        },
        Vec::len,
    );
    let params = crate::harness::sweep::plan::param_combinations(&sweep.params).len();
    levels.len() * n_mem * params
}

/// The spec's whole-core CPU levels, largest first. Fractional ones are an error, or left out
/// with a warning under `--slurm-skip-fractional`; so is a CPU search, and a measured memory
/// axis.
fn whole_core_levels(
    opts: &SweepOptions,
    slurm: &SlurmOptions,
    observer: &mut dyn SweepObserver,
) -> Result<Vec<f64>, SweepError> {
    let spec = &opts.spec.spec;
    let CpuAxis::Levels(all_levels) = &spec.sweep.cpu else {
        return Err(SweepError::Plan(format!(
            "{}: --slurm needs sweep.cpu as a list of levels (a CPU search picks levels as it goes)",
            opts.spec.path.display()
        )));
    };
    if opts.memory_axis.unwrap_or(spec.sweep.memory) == MemoryAxis::Measure {
        return Err(SweepError::Plan(
            "--slurm measures the top memory level under Slurm's memory limit and models the \
             rest; --memory measure needs the profiler's own caps (run it locally)"
                .into(),
        ));
    }
    let (mut levels, fractional): (Vec<f64>, Vec<f64>) = all_levels
        .iter()
        .partition(|c| c.fract() == 0.0 && **c >= 1.0);
    if !fractional.is_empty() {
        let list = fractional
            .iter()
            .map(|c| cpu_text(*c))
            .collect::<Vec<_>>()
            .join(", ");
        if !slurm.skip_fractional || levels.is_empty() {
            return Err(SweepError::Plan(format!(
                "{}: sweep.cpu levels {list} are fractional: Slurm allocates whole cores, so they \
                 need the profiler's own CFS quota; run them with a local `profiler sweep`, or \
                 pass --slurm-skip-fractional to leave them out",
                opts.spec.path.display()
            )));
        }
        observer.warn(&format!(
            "{}: fractional CPU levels {list} left out (Slurm allocates whole cores; sweep them locally)",
            spec.name
        ));
    }
    levels.sort_by(|a, b| b.total_cmp(a));
    levels.dedup();
    Ok(levels)
}

/// Cancels every running level's Slurm job.
fn cancel_all(running: &[Job]) {
    scancel(&running.iter().map(|j| j.id.as_str()).collect::<Vec<_>>());
}

/// Looks at the running jobs: says where one's Slurm state changed, and takes out and
/// returns those that finished.
fn follow(running: &mut Vec<Job>, observer: &mut dyn SweepObserver) -> Vec<Job> {
    let mut finished = Vec::new();
    for mut job in std::mem::take(running) {
        let state = job_state(&job.id);
        if state.finished {
            finished.push(job);
            continue;
        }
        if state.text != job.last_state {
            observer.status(&format!(
                "cpu {}: Slurm job {} {}",
                cpu_text(job.cpu),
                job.id,
                state.text
            ));
            job.last_state = state.text;
        }
        running.push(job);
    }
    finished
}

/// The levels' cells merged into one matrix, appended to the output as each level finishes.
#[derive(Default)]
struct Merged {
    writer: Option<MatrixWriter>,
    matrix: Option<Matrix>,
    /// The memory levels every level shares, largest first, once the first level fixed them.
    memory_levels: Option<Vec<u64>>,
}

impl Merged {
    /// Goes on with the matrix at the output; returns the CPU levels it has cells of.
    fn resume(
        &mut self,
        opts: &SweepOptions,
        observer: &mut dyn SweepObserver,
    ) -> Result<HashSet<u64>, SweepError> {
        let name = &opts.spec.spec.name;
        let (w, m) = MatrixWriter::resume(&opts.output)?;
        if m.header.job.name != *name {
            return Err(SweepError::Plan(format!(
                "--resume: {} holds a matrix of job {:?}, not {:?}",
                opts.output.display(),
                m.header.job.name,
                name
            )));
        }
        let mut mem = m.header.axes.memory_bytes.clone();
        mem.sort_unstable_by(|a, b| b.cmp(a));
        self.memory_levels = (!mem.is_empty()).then_some(mem);
        let done = m.cells.iter().map(|c| milli(c.cpu)).collect();
        observer.status(&format!(
            "resuming: {} cell(s) already in {}",
            m.cells.len(),
            opts.output.display()
        ));
        self.writer = Some(w);
        self.matrix = Some(m);
        Ok(done)
    }

    /// Appends a finished level's new cells (the first level also fixes the memory levels and
    /// the header, with every CPU level of the sweep).
    fn merge(
        &mut self,
        level: Matrix,
        levels: &[f64],
        opts: &SweepOptions,
        observer: &mut dyn SweepObserver,
    ) -> Result<(), SweepError> {
        if self.memory_levels.is_none() {
            let mut mem = level.header.axes.memory_bytes.clone();
            mem.sort_unstable_by(|a, b| b.cmp(a));
            self.memory_levels = Some(mem);
        }
        let m = self.matrix.get_or_insert_with(|| {
            let mut header = level.header.clone();
            header.axes.cpu = levels.to_vec();
            Matrix {
                header,
                cells: Vec::new(),
            }
        });
        if self.writer.is_none() {
            let (w, kept) = MatrixWriter::create(&opts.output, &m.header)?;
            if let Some(kept) = kept {
                observer.warn(&format!(
                    "{} existed; its cells are kept in {} (use --resume to continue a sweep)",
                    opts.output.display(),
                    kept.display()
                ));
            }
            self.writer = Some(w);
        }
        let w = self.writer.as_mut().expect("just created");
        let have: HashSet<CellKey> = m.cells.iter().map(|c| c.key()).collect();
        for cell in level.cells {
            if have.contains(&cell.key()) {
                continue;
            }
            w.append(&cell)?;
            observer.cell_done(&cell);
            m.cells.push(cell);
        }
        Ok(())
    }
}

struct Ctx<'a> {
    opts: &'a SweepOptions,
    slurm: &'a SlurmOptions,
    mem_mb: u64,
    level_dir: &'a Path,
}

impl Ctx<'_> {
    /// Submits the pending levels that may start now: all of them once the memory levels are
    /// fixed, else one at a time (the highest first), since the first fixes them.
    fn submit_pending(
        &self,
        pending: &mut Vec<f64>,
        running: &mut Vec<Job>,
        fleet: &Merged,
        observer: &mut dyn SweepObserver,
    ) -> Result<(), SweepError> {
        let fixed = fleet.memory_levels.is_some() || self.opts.spec.spec.sweep.memory_gib.is_some();
        let may_start = if fixed {
            pending.len()
        } else {
            pending.len().min(usize::from(running.is_empty()))
        };
        for cpu in pending.drain(..may_start) {
            let job = self.submit(cpu, fleet.memory_levels.as_deref())?;
            observer.status(&format!(
                "cpu {}: submitted Slurm job {} (-c {} --mem={}M)",
                cpu_text(cpu),
                job.id,
                cpu_text(cpu),
                self.mem_mb
            ));
            running.push(job);
        }
        Ok(())
    }

    fn submit(&self, cpu: f64, memory_levels: Option<&[u64]>) -> Result<Job, SweepError> {
        let name = &self.opts.spec.spec.name;
        let c = cpu_text(cpu);
        let level_file = absolute(&self.level_dir.join(format!("{name}.cpu{c}.matrix.jsonl")));
        let _ = std::fs::remove_file(&level_file);
        let slurm_log = absolute(&self.level_dir.join(format!("{name}.cpu{c}.%j.out")));
        let mut step = vec![
            "exec".to_string(),
            self.slurm.profiler.display().to_string(),
            "sweep".into(),
            "--job".into(),
            absolute(&self.opts.spec.path).display().to_string(),
            "--output".into(),
            level_file.display().to_string(),
            "--slurm-step-cpu".into(),
            c.clone(),
            "--memory".into(),
            "model".into(),
        ];
        if let Some(levels) = memory_levels {
            step.push("--slurm-memory-levels".into());
            step.push(
                levels
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        // The spec's or the command line's: each step measures its own spread.
        step.push("--launches".into());
        step.push(self.opts.spec.spec.measure.launches.to_string());
        if let Some(b) = self.opts.spec.spec.measure.launches_budget_s {
            step.push("--launches-budget".into());
            step.push(b.to_string());
        }
        if let Some(mode) = self.opts.mode {
            step.push("--mode".into());
            step.push(
                match mode {
                    crate::spec::SweepMode::Live => "live",
                    crate::spec::SweepMode::Relaunch => "relaunch",
                }
                .into(),
            );
        }
        let wrap = step
            .iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ");
        let mut cmd = Command::new("sbatch");
        cmd.args(["--parsable", "-N1", "-n1"])
            .arg(format!("--job-name=profiler-{name}-cpu{c}"))
            .arg(format!("--cpus-per-task={c}"))
            .arg(format!("--mem={}M", self.mem_mb))
            .arg(format!("--output={}", slurm_log.display()));
        if let Some(p) = &self.slurm.partition {
            cmd.arg(format!("--partition={p}"));
        }
        cmd.args(&self.slurm.extra_args).arg("--wrap").arg(&wrap);
        let out = cmd
            .output()
            .map_err(|e| SweepError::Slurm(format!("cannot run sbatch: {e}")))?;
        if !out.status.success() {
            return Err(SweepError::Slurm(format!(
                "sbatch for cpu {c} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let id = stdout
            .trim()
            .split(';')
            .next()
            .unwrap_or_default()
            .to_string();
        if id.is_empty() || !id.chars().all(|ch| ch.is_ascii_digit()) {
            return Err(SweepError::Slurm(format!(
                "sbatch printed no job id: {stdout:?}"
            )));
        }
        let slurm_log = PathBuf::from(slurm_log.display().to_string().replace("%j", &id));
        Ok(Job {
            id,
            cpu,
            level_file,
            slurm_log,
            last_state: String::new(),
        })
    }
}

/// The node this process runs on: Slurm's name for it inside a job, else the host name.
pub fn node_name() -> String {
    if let Ok(n) = std::env::var("SLURMD_NODENAME")
        && !n.is_empty()
    {
        return n;
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Why a capped local sweep must not run here: inside a Slurm job, whose cgroups Slurm owns
/// (the profiler's own would take the job's processes out of Slurm's confinement).
pub fn inside_slurm_job() -> Option<String> {
    let id = std::env::var("SLURM_JOB_ID")
        .ok()
        .filter(|s| !s.is_empty())?;
    Some(format!(
        "this runs inside Slurm job {id}, whose cgroups Slurm owns: a sweep would move the job out \
         of them. Submit it with `profiler sweep --slurm` (from a login node), or check the spec \
         with --no-caps"
    ))
}

/// The spec files a `--job` argument names: the path itself, or the files of its directory
/// whose names match a pattern with `*` and `?` (`'workloads/*.toml'`), sorted.
pub fn expand_specs(arg: &Path) -> Result<Vec<PathBuf>, SweepError> {
    let text = arg.to_string_lossy();
    let Some(name) = arg.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Ok(vec![arg.to_path_buf()]);
    };
    if !name.contains(['*', '?']) {
        return Ok(vec![arg.to_path_buf()]);
    }
    if text[..text.len() - name.len()].contains(['*', '?']) {
        return Err(SweepError::Plan(format!(
            "--job {text}: only the file name may have wildcards"
        )));
    }
    let dir = match arg.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let pattern = format!(
        "^{}$",
        regex::escape(&name)
            .replace(r"\*", ".*")
            .replace(r"\?", ".")
    );
    let re = regex::Regex::new(&pattern).expect("escaped pattern");
    let entries = std::fs::read_dir(&dir).map_err(|source| SweepError::Logs {
        path: dir.clone(),
        source,
    })?;
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.path().is_file() && re.is_match(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    found.sort();
    if found.is_empty() {
        return Err(SweepError::Plan(format!("--job {text}: no file matches")));
    }
    Ok(found)
}

/// Progress of one of several sweeps run at once, as lines prefixed with the job's name.
pub struct PrefixedLines {
    pub prefix: String,
}

impl SweepObserver for PrefixedLines {
    fn status(&mut self, message: &str) {
        eprintln!("{}: {message}", self.prefix);
    }
    fn cell_done(&mut self, cell: &crate::matrix::Cell) {
        let rate = cell.samples_per_s().map_or_else(
            || cell.source.as_str().to_string(),
            |r| format!("{r:.1} samples/s"),
        );
        eprintln!(
            "{}: cell cpu {} mem {:.2} GiB{}: {rate}",
            self.prefix,
            cpu_text(cell.cpu),
            cell.memory_bytes as f64 / GIB as f64,
            cell.node
                .as_ref()
                .map(|n| format!(" on {n}"))
                .unwrap_or_default()
        );
    }
    fn warn(&mut self, message: &str) {
        eprintln!("{}: warning: {message}", self.prefix);
    }
}

/// Runs several fleet sweeps at once (one thread each, all following their own Slurm jobs).
pub fn run_fleet_sweeps(
    sweeps: &[SweepOptions],
    slurm: &SlurmOptions,
    cancel: &AtomicBool,
) -> Vec<Result<SweepOutcome, SweepError>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = sweeps
            .iter()
            .map(|opts| {
                s.spawn(move || {
                    let mut obs = PrefixedLines {
                        prefix: opts.spec.spec.name.clone(),
                    };
                    run_fleet_sweep(opts, slurm, &mut obs, cancel)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(SweepError::Slurm("a sweep thread panicked".into())))
            })
            .collect()
    })
}

/// A finished job's cells, or why there are none.
fn collect(job: &Job) -> Result<Matrix, String> {
    let why = |what: String| {
        let tail = crate::harness::process::launch::tail_of_file(&job.slurm_log, 2000);
        format!(
            "cpu {} (Slurm job {}): {what}; job output {}:\n{}",
            cpu_text(job.cpu),
            job.id,
            job.slurm_log.display(),
            tail.trim_end()
        )
    };
    let m = load_matrix(&job.level_file).map_err(|e| why(e.to_string()))?;
    if !m.cells.iter().any(|c| milli(c.cpu) == milli(job.cpu)) {
        return Err(why("no cell measured".into()));
    }
    Ok(m)
}

struct State {
    text: String,
    finished: bool,
}

/// A job's state from squeue (`squeue -t all` still lists finished jobs for MinJobAge).
fn job_state(id: &str) -> State {
    let out = Command::new("squeue")
        .args(["-h", "-t", "all", "-j", id, "-o", "%T %R"])
        .output();
    let text = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        // "Invalid job id": the job ended and left the controller's memory.
        Ok(_) => String::new(),
        // squeue itself could not run: keep waiting.
        Err(_) => {
            return State {
                text: "state unknown (squeue failed)".into(),
                finished: false,
            };
        }
    };
    let state = text.split_whitespace().next().unwrap_or("");
    let finished = !matches!(
        state,
        "PENDING"
            | "RUNNING"
            | "CONFIGURING"
            | "COMPLETING"
            | "SUSPENDED"
            | "REQUEUED"
            | "RESIZING"
            | "SIGNALING"
            | "STAGE_OUT"
    );
    let text = match state {
        // squeue's %R already wraps a pending job's reason in parentheses.
        "PENDING" => format!("pending {}", text.split_once(' ').map_or("", |x| x.1)),
        "RUNNING" => format!("running on {}", text.split_once(' ').map_or("", |x| x.1)),
        "" => "ended".into(),
        s => s.to_lowercase(),
    };
    State { text, finished }
}

fn default_mem_mb(opts: &SweepOptions) -> u64 {
    let sweep = &opts.spec.spec.sweep;
    let bytes = if let Some(gib) = &sweep.memory_gib {
        gib.iter().fold(0.0f64, |a, b| a.max(*b)) as u64 * GIB
    } else if sweep.memory_pct_of_dataset.is_some() {
        let dataset = opts
            .spec
            .spec
            .dataset
            .as_ref()
            .and_then(|d| d.bytes)
            .or_else(|| {
                opts.spec
                    .dataset_path
                    .as_deref()
                    .and_then(|p| crate::harness::memory::dataset::measure_dataset(p).ok())
                    .map(|d| d.bytes)
            })
            .unwrap_or(0);
        2 * dataset + GIB
    } else {
        4 * GIB
    };
    bytes.div_ceil(MIB)
}

fn milli(cpu: f64) -> u64 {
    (cpu * 1000.0).round() as u64
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Quotes `s` for the job's shell (sbatch --wrap).
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-=,:+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expand_specs_matches_file_names_in_order() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["b.toml", "a.toml", "c.txt"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let got = expand_specs(&dir.path().join("*.toml")).unwrap();
        let names: Vec<_> = got
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.toml", "b.toml"]);
        assert_eq!(
            expand_specs(Path::new("x/one.toml")).unwrap(),
            [PathBuf::from("x/one.toml")]
        );
        let e = expand_specs(&dir.path().join("*.nope")).unwrap_err();
        assert!(e.to_string().contains("no file matches"), "{e}");
    }

    #[test]
    fn shell_quote_keeps_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("/a/b.toml"), "/a/b.toml");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
