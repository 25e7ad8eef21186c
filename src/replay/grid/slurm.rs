//! Runs a grid as a Slurm job array: task `I` replays scenarios `I*K .. (I+1)*K` (`--chunk K`)
//! with `profiler replay --grid GRID --chunk K --chunk-index I --out OUT` and writes
//! `OUT/parts/part-I.parquet`; a merge job that depends on the whole array (`afterok`) stacks
//! the parts into the same `summary.{csv,parquet}` and plots a local run writes. The submitting
//! command waits for the merge job (`sbatch --wait`); Ctrl-C or SIGTERM while it waits cancels
//! both jobs (`scancel`).
//!
//! The batch scripts are written to `OUT/slurm/` (with the tasks' logs), so a run can be
//! inspected or resubmitted by hand. Nodes must see the same paths: the profiler binary, the
//! grid file and everything it names, and `OUT`.

use super::super::ReplayError;
use super::error::GridError;
use super::expand::chunk_count;
use crate::slurm::scancel;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How to submit.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmOptions {
    /// `--partition` for both jobs; `None`: the cluster's default.
    pub partition: Option<String>,
    /// Scenarios per array task.
    pub chunk: usize,
    /// CPUs per task (`--cpus-per-task`); each task replays that many scenarios at once.
    pub cpus_per_task: usize,
    /// Memory per task (`--mem`, Slurm's syntax: `2G`, `500M`). Without one, a cluster with no
    /// default memory per CPU gives each task the whole node, and tasks run one at a time.
    pub mem: Option<String>,
    /// The profiler binary the tasks run (default: this one).
    pub profiler: PathBuf,
}

/// The jobs of one submission.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    pub array_job: String,
    pub merge_job: String,
    pub tasks: usize,
}

/// A shell word: single-quoted, with quotes inside escaped.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn path_word(p: &Path) -> String {
    quote(&p.to_string_lossy())
}

/// The array's batch script (`#SBATCH` lines, then the task's command).
pub fn array_script(grid: &Path, out: &Path, tasks: usize, opts: &SlurmOptions) -> String {
    let mut s = String::from("#!/bin/sh\n#SBATCH --job-name=profiler-grid\n");
    s += &format!("#SBATCH --array=0-{}\n", tasks.saturating_sub(1));
    s += &format!("#SBATCH --cpus-per-task={}\n", opts.cpus_per_task);
    if let Some(m) = &opts.mem {
        s += &format!("#SBATCH --mem={m}\n");
    }
    s += &format!(
        "#SBATCH --output={}\n",
        out.join("slurm").join("task-%a.out").display()
    );
    if let Some(p) = &opts.partition {
        s += &format!("#SBATCH --partition={p}\n");
    }
    s += &format!(
        "exec {} replay --grid {} --chunk {} --chunk-index \"$SLURM_ARRAY_TASK_ID\" --threads {} --out {}\n",
        path_word(&opts.profiler),
        path_word(grid),
        opts.chunk,
        opts.cpus_per_task,
        path_word(out)
    );
    s
}

/// The merge job's batch script.
pub fn merge_script(grid: &Path, out: &Path, opts: &SlurmOptions) -> String {
    let mut s = String::from("#!/bin/sh\n#SBATCH --job-name=profiler-grid-merge\n");
    s += &format!(
        "#SBATCH --output={}\n",
        out.join("slurm").join("merge.out").display()
    );
    if let Some(p) = &opts.partition {
        s += &format!("#SBATCH --partition={p}\n");
    }
    if let Some(m) = &opts.mem {
        s += &format!("#SBATCH --mem={m}\n");
    }
    s += &format!(
        "exec {} replay --grid {} --chunk {} --merge-parts --out {}\n",
        path_word(&opts.profiler),
        path_word(grid),
        opts.chunk,
        path_word(out)
    );
    s
}

/// Sets the returned flag on SIGINT, SIGTERM or SIGHUP (instead of dying), so that the jobs can
/// be cancelled first.
pub fn cancel_on_signals() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    Ok(flag)
}

fn slurm_err(what: &str) -> impl FnOnce(std::io::Error) -> GridError + '_ {
    move |e| GridError::Slurm(format!("{what}: {e} (is Slurm installed and on PATH?)"))
}

/// `sbatch --parsable` prints `JOBID` or `JOBID;CLUSTER`.
fn job_id(line: &str) -> Result<String, GridError> {
    let id = line.trim().split(';').next().unwrap_or("").trim();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(GridError::Slurm(format!(
            "sbatch printed {line:?}, not a job id"
        )));
    }
    Ok(id.to_owned())
}

/// Values that go into `#SBATCH` lines: a partition list or a memory size, nothing that could
/// end the line or the option.
fn check_value(what: &str, v: &str) -> Result<(), GridError> {
    if v.is_empty()
        || !v
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.,-".contains(&b))
    {
        return Err(GridError::Slurm(format!(
            "{what} {v:?}: expected letters, digits and _ . , - only"
        )));
    }
    Ok(())
}

/// Where a submission's files go: everything absolute, since tasks may start anywhere.
struct Layout {
    grid: PathBuf,
    out: PathBuf,
    /// The batch scripts and the tasks' logs.
    slurm_dir: PathBuf,
    array_sh: PathBuf,
    merge_sh: PathBuf,
}

impl Layout {
    /// Creates `OUT/slurm/` and clears the parts of an earlier run (so that they are not merged
    /// into this one).
    fn prepare(grid: &Path, out: &Path) -> Result<Layout, GridError> {
        let grid = std::path::absolute(grid).map_err(ReplayError::io(grid))?;
        std::fs::create_dir_all(out).map_err(ReplayError::io(out))?;
        let out = std::path::absolute(out).map_err(ReplayError::io(out))?;
        let slurm_dir = out.join("slurm");
        std::fs::create_dir_all(&slurm_dir).map_err(ReplayError::io(&slurm_dir))?;
        let parts = out.join("parts");
        if parts.exists() {
            std::fs::remove_dir_all(&parts).map_err(ReplayError::io(&parts))?;
        }
        Ok(Layout {
            grid,
            array_sh: slurm_dir.join("array.sh"),
            merge_sh: slurm_dir.join("merge.sh"),
            out,
            slurm_dir,
        })
    }

    /// Writes the array's and the merge job's batch scripts.
    fn write_scripts(&self, tasks: usize, opts: &SlurmOptions) -> Result<(), GridError> {
        std::fs::write(
            &self.array_sh,
            array_script(&self.grid, &self.out, tasks, opts),
        )
        .map_err(ReplayError::io(&self.array_sh))?;
        std::fs::write(&self.merge_sh, merge_script(&self.grid, &self.out, opts))
            .map_err(ReplayError::io(&self.merge_sh))?;
        Ok(())
    }
}

/// Submits the array and the merge job, then waits for the merge to finish. `log` gets one
/// line per step (job ids, where the logs go).
pub fn submit_and_wait(
    grid: &Path,
    total: usize,
    out: &Path,
    opts: &SlurmOptions,
    cancel: &AtomicBool,
    log: &mut dyn FnMut(&str),
) -> Result<Submission, GridError> {
    if let Some(p) = &opts.partition {
        check_value("partition", p)?;
    }
    if let Some(m) = &opts.mem {
        check_value("memory per task", m)?;
    }
    let layout = Layout::prepare(grid, out)?;
    let tasks = chunk_count(total, opts.chunk);
    layout.write_scripts(tasks, opts)?;

    let array_job = submit_array(&layout.array_sh)?;
    log(&format!(
        "submitted array job {array_job}: {tasks} tasks of up to {} scenarios ({total} in all); \
         logs in {}",
        opts.chunk,
        layout.slurm_dir.display()
    ));
    let merge_job = submit_merge(&layout.merge_sh, &array_job)?;
    log(&format!(
        "submitted merge job {merge_job} (after array {array_job} succeeds); waiting (Ctrl-C cancels both)"
    ));
    let (state, exit_code) = wait_for_merge(&array_job, &merge_job, &layout, cancel)?;
    if state != "COMPLETED" {
        return Err(GridError::Slurm(format!(
            "the merge job {merge_job} ended {state} (exit code {exit_code}): a task of array \
             {array_job} failed or was cancelled (the merge then never runs), or the merge \
             failed; see the logs in {}",
            layout.slurm_dir.display()
        )));
    }
    Ok(Submission {
        array_job,
        merge_job,
        tasks,
    })
}

/// Submits the job array; its job id.
fn submit_array(array_sh: &Path) -> Result<String, GridError> {
    let submitted = Command::new("sbatch")
        .arg("--parsable")
        .arg(array_sh)
        .stderr(Stdio::inherit())
        .output()
        .map_err(slurm_err("sbatch"))?;
    if !submitted.status.success() {
        return Err(GridError::Slurm(format!(
            "sbatch {} failed ({})",
            array_sh.display(),
            submitted.status
        )));
    }
    job_id(&String::from_utf8_lossy(&submitted.stdout))
}

/// Submits the merge job, to run once `array_job` has succeeded; its job id. Cancels the array
/// when the merge cannot be submitted (nothing would merge its parts).
fn submit_merge(merge_sh: &Path, array_job: &str) -> Result<String, GridError> {
    let merged = Command::new("sbatch")
        .arg("--parsable")
        .arg(format!("--dependency=afterok:{array_job}"))
        .arg("--kill-on-invalid-dep=yes")
        .arg(merge_sh)
        .stderr(Stdio::inherit())
        .output();
    match merged {
        Ok(o) if o.status.success() => job_id(&String::from_utf8_lossy(&o.stdout)),
        Ok(o) => Err(GridError::Slurm(format!(
            "sbatch {} failed ({})",
            merge_sh.display(),
            o.status
        ))),
        Err(e) => Err(slurm_err("sbatch")(e)),
    }
    .inspect_err(|_| scancel(&[array_job]))
}

/// Waits until the merge job reaches a terminal state and returns it with its exit code;
/// cancels both jobs when `cancel` is set meanwhile.
fn wait_for_merge(
    array_job: &str,
    merge_job: &str,
    layout: &Layout,
    cancel: &AtomicBool,
) -> Result<(String, String), GridError> {
    // Polled here rather than with `sbatch --wait`, whose own polling backs off to tens of
    // seconds: a short grid would wait longer on the poll than on its jobs.
    let mut pause = Duration::from_millis(250);
    loop {
        if cancel.load(Ordering::SeqCst) {
            scancel(&[array_job, merge_job]);
            return Err(GridError::Interrupted(format!("{array_job} {merge_job}")));
        }
        match job_state(merge_job)? {
            Some((state, exit)) if TERMINAL.contains(&state.as_str()) => return Ok((state, exit)),
            Some(_) => {}
            None => {
                return Err(GridError::Slurm(format!(
                    "the merge job {merge_job} is no longer known to Slurm; see {} and the \
                     logs in {}",
                    layout.out.join("summary.csv").display(),
                    layout.slurm_dir.display()
                )));
            }
        }
        // Sleep in short steps, so that Ctrl-C is acted on at once.
        let until = std::time::Instant::now() + pause;
        while std::time::Instant::now() < until && !cancel.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
        }
        pause = (pause * 2).min(Duration::from_secs(5));
    }
}

/// Job states after which a job never runs again.
const TERMINAL: &[&str] = &[
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
];

/// `(JobState, ExitCode)` of a job from `scontrol show job -o`, or `None` once Slurm has
/// forgotten it.
fn job_state(id: &str) -> Result<Option<(String, String)>, GridError> {
    let out = Command::new("scontrol")
        .args(["show", "job", "-o", id])
        .stderr(Stdio::null())
        .output()
        .map_err(slurm_err("scontrol"))?;
    if !out.status.success() {
        return Ok(None);
    }
    Ok(parse_job_state(&String::from_utf8_lossy(&out.stdout)))
}

fn parse_job_state(line: &str) -> Option<(String, String)> {
    let field = |k: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .map(str::to_owned)
    };
    Some((field("JobState=")?, field("ExitCode=").unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> SlurmOptions {
        SlurmOptions {
            partition: Some("debug".into()),
            chunk: 7,
            cpus_per_task: 2,
            mem: Some("3G".into()),
            profiler: "/opt/bin/profiler".into(),
        }
    }

    #[test]
    fn scripts_name_every_path_and_the_chunking() {
        let s = array_script(Path::new("/g/it's.toml"), Path::new("/o"), 15, &opts());
        assert!(s.starts_with("#!/bin/sh\n"), "{s}");
        assert!(s.contains("#SBATCH --array=0-14\n"), "{s}");
        assert!(s.contains("#SBATCH --partition=debug\n"), "{s}");
        assert!(s.contains("#SBATCH --cpus-per-task=2\n"), "{s}");
        assert!(s.contains("#SBATCH --mem=3G\n"), "{s}");
        assert!(s.contains("#SBATCH --output=/o/slurm/task-%a.out\n"), "{s}");
        assert!(
            s.contains(
                "exec '/opt/bin/profiler' replay --grid '/g/it'\\''s.toml' --chunk 7 \
                 --chunk-index \"$SLURM_ARRAY_TASK_ID\" --threads 2 --out '/o'\n"
            ),
            "{s}"
        );
        let m = merge_script(Path::new("/g/x.toml"), Path::new("/o"), &opts());
        assert!(m.contains("--chunk 7 --merge-parts --out '/o'"), "{m}");
        assert!(m.contains("#SBATCH --output=/o/slurm/merge.out"), "{m}");
    }

    #[test]
    fn sbatch_values_cannot_break_the_script() {
        assert!(check_value("partition", "gpu,debug").is_ok());
        assert!(check_value("memory per task", "2G").is_ok());
        for bad in ["", "a b", "x\n#SBATCH --uid=0", "$(id)"] {
            assert!(check_value("partition", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn job_state_from_scontrol() {
        let line = "JobId=14 JobName=profiler-grid-merge UserId=root(0) JobState=FAILED \
                    Reason=NonZeroExitCode Dependency=(null) ExitCode=1:0 RunTime=00:00:01";
        assert_eq!(parse_job_state(line), Some(("FAILED".into(), "1:0".into())));
        assert_eq!(parse_job_state("JobId=14 JobName=x"), None);
    }

    #[test]
    fn job_ids_from_sbatch() {
        assert_eq!(job_id("123\n").unwrap(), "123");
        assert_eq!(job_id("45;cluster\n").unwrap(), "45");
        assert!(job_id("").is_err());
        assert!(job_id("Submitted batch job 5").is_err());
    }
}
