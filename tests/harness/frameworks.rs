//! Real training scripts under real caps: the scripts in `workloads/frameworks/` run the current
//! releases of PyTorch, tqdm, Hugging Face transformers and Keras (a virtual environment set up
//! once by `scripts/python-env.sh`) and print what those frameworks print. Each sweep reads that
//! output with a preset and is checked against the script's own record of its progress: every
//! optimizer step appends `<unix time> <cumulative samples>` to `$TRUTH_FILE`, and a cell's
//! samples/s must be within 3% of that record's rate over the interval the cell measured
//! (`measured_unix_s`), swept at 2 and 1 CPUs: plain PyTorch live (PyTorch sizes its threads at
//! start, so the live check relaunches the 1-CPU cell as a fresh start), the others on a fresh
//! launch a point (the live check's verdict is the same for every script that sizes itself).
//!
//! Without the Python environment (no network) the tests skip with `SKIPPED:` on stderr; under
//! CI they fail instead. `cargo test --test harness frameworks -- --nocapture --test-threads 1`
//! prints the table of docs/findings/framework-scripts.md.

use super::*;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::OnceLock;

/// Largest relative difference allowed between a steady cell and the script's own record.
const TRUTH_TOLERANCE: f64 = 0.03;
/// The same for a cell that says it is unsteady (its windows still varied after `max_s`): its
/// rate is over windows whose edges the job's bursts cut.
const UNSTEADY_TRUTH_TOLERANCE: f64 = 0.05;

/// The Python of the framework environment, or why there is none (set up once per test binary).
pub(crate) fn venv_python() -> Result<PathBuf, String> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/python-env.sh");
            let started = Instant::now();
            let out = Command::new(&script)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("{}: {e}", script.display()))?;
            if !out.status.success() {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let tail: String = stderr
                    .chars()
                    .rev()
                    .take(2000)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                return Err(format!("{} {}: ...{tail}", script.display(), out.status));
            }
            let stdout = String::from_utf8_lossy(&out.stdout);
            let python = stdout
                .lines()
                .last()
                .map(PathBuf::from)
                .filter(|p| p.is_file())
                .ok_or_else(|| {
                    format!("{} printed no python path: {stdout:?}", script.display())
                })?;
            eprintln!(
                "python-env: {} ({:.1} s)",
                python.display(),
                started.elapsed().as_secs_f64()
            );
            Ok(python)
        })
        .clone()
}

/// The framework environment's Python; skips the test where it cannot be set up, except under
/// CI, where that fails the test.
macro_rules! require_python {
    ($test:expr) => {
        match venv_python() {
            Ok(python) => python,
            Err(why) => {
                if under_ci() {
                    panic!(
                        "{}: CI must run the framework tests, but the Python environment could not be set up: {why}",
                        $test
                    );
                }
                let _ = writeln!(
                    std::io::stderr(),
                    "SKIPPED: {}: no Python environment: {why}",
                    $test
                );
                return;
            }
        }
    };
}

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads/frameworks")
        .join(name)
        .display()
        .to_string()
}

/// A training script and how its output is read.
struct Job<'a> {
    /// Names the spec, the cgroups and the table's rows.
    name: &'a str,
    /// Arguments after the python.
    args: Vec<String>,
    /// `[throughput]` lines after `protocol = "log"`.
    throughput: &'a str,
    /// Samples per optimizer step.
    batch: u64,
}

/// Writes the spec of `job` swept over `cpus` in `mode`, its progress recorded in `truth`. One
/// round a launch: what these tests read is each cell against the script's count, and rounds
/// are tested on the input pipeline (`cpu_cap_scales_the_input_pipeline_rate`, `live`).
fn job_spec(
    dir: &Path,
    python: &Path,
    job: &Job,
    mode: &str,
    cpus: &[f64],
    truth: &Path,
) -> LoadedSpec {
    let command: Vec<String> = std::iter::once(python.display().to_string())
        .chain(job.args.iter().cloned())
        .map(|a| format!("{a:?}"))
        .collect();
    let text = format!(
        r#"schema_version = 1
name = "{name}"
command = [{command}]
gpus = 0
batch_size_per_gpu = {batch}
[env]
TRUTH_FILE = "{truth}"
[throughput]
protocol = "log"
{throughput}
[measure]
warmup_s = 4
settle_s = 2
window_s = 1.5
steady_windows = 4
steady_cv = 0.08
max_s = 14
startup_timeout_s = 150
stop_grace_s = 5
launches = 1
rounds = 1
[sweep]
cpu = {cpus:?}
mode = "{mode}"
"#,
        name = job.name,
        command = command.join(", "),
        batch = job.batch,
        truth = truth.display(),
        throughput = job.throughput,
    );
    let path = dir.join(format!("{}-{mode}.toml", job.name));
    std::fs::write(&path, &text).unwrap();
    parse_spec(&text, &path).expect("test spec is valid")
}

/// The script's own record, one launch after another: (Unix time, cumulative samples) per step.
/// Every launch counts from zero, so a count that goes down starts the next launch.
fn read_truth(path: &Path) -> Vec<Vec<(f64, f64)>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut launches: Vec<Vec<(f64, f64)>> = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace().map(str::parse::<f64>);
        let (Some(Ok(t)), Some(Ok(s))) = (it.next(), it.next()) else {
            continue;
        };
        match launches.last_mut() {
            Some(l) if l.last().is_some_and(|&(_, prev)| s >= prev) => l.push((t, s)),
            _ => launches.push(vec![(t, s)]),
        }
    }
    launches
}

/// The record's samples/s over `[t0, t1]` less the spans `left_out` (the windows the cell's
/// rate leaves out): samples done in the interval less those done in the spans, over its
/// seconds less theirs, in the launch that ran then.
fn truth_rate(
    launches: &[Vec<(f64, f64)>],
    [t0, t1]: [f64; 2],
    left_out: &[[f64; 2]],
) -> Option<f64> {
    let launch = launches.iter().rev().find(|l| l[0].0 <= t0)?;
    let done_by = |t: f64| {
        launch
            .iter()
            .take_while(|&&(tt, _)| tt <= t)
            .last()
            .map(|&(_, s)| s)
    };
    // The launch ran through the interval.
    if launch.last()?.0 < t1 - 1.0 {
        return None;
    }
    let (mut samples, mut seconds) = (done_by(t1)? - done_by(t0)?, t1 - t0);
    for &[a, b] in left_out {
        samples -= done_by(b)? - done_by(a)?;
        seconds -= b - a;
    }
    Some(samples / seconds)
}

/// One measured cell next to the script's record.
#[derive(Debug, Clone)]
struct Row {
    job: String,
    mode: String,
    cpu: f64,
    matrix: f64,
    truth: f64,
    measured_s: f64,
    /// The cell's note says its windows never settled.
    unsteady: bool,
    /// Disturbed windows the sweep discarded; the record is compared over the windows kept.
    discarded: u32,
}

impl Row {
    fn error(&self) -> f64 {
        self.matrix / self.truth - 1.0
    }
}

/// Sweeps `job` in `mode` over 1 and 2 CPUs and returns each cell with the script's record.
fn sweep_against_truth(
    python: &Path,
    job: &Job,
    mode: &str,
    cpus: &[f64],
) -> (Vec<Row>, SweepOutcome) {
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.txt");
    let spec = job_spec(dir.path(), python, job, mode, cpus, &truth);
    let out = dir.path().join("m.matrix.jsonl");
    let started = Instant::now();
    let outcome = sweep(spec, out, &format!("profiler-test-fw-{}", job.name));
    let launches = read_truth(&truth);
    eprintln!(
        "{} {mode}: {} launches in {:.0} s{}",
        job.name,
        outcome.launches,
        started.elapsed().as_secs_f64(),
        outcome
            .matrix
            .header
            .live_check
            .as_ref()
            .map_or(String::new(), |c| format!(
                "; live check at {} CPUs: re-capped {:.1}, fresh {:.1} samples/s: {}",
                c.cpu, c.live_samples_per_s, c.relaunch_samples_per_s, c.outcome
            ))
    );
    assert_eq!(
        launches.len() as u32,
        outcome.launches,
        "one record per launch in {}",
        truth.display()
    );
    let mut rows = Vec::new();
    for &cpu in cpus {
        let c = cell(&outcome.matrix.cells, cpu);
        assert_eq!(
            c.source,
            CellSource::Measured,
            "{} {mode} at {cpu} CPUs: {:?}",
            job.name,
            c.note
        );
        let t = c.throughput.as_ref().expect("measured");
        // A cell measured on several launches (a live check's fresh launches beside the live
        // one) lists each with the interval it measured: each is compared with the record
        // over its own interval, less the windows its rate left out. Its interference is its
        // first launch's.
        for (i, l) in c.launches().into_iter().enumerate() {
            let (rate, span) = (l.samples_per_s, l.measured_unix_s);
            let span = span.expect("a measured launch records its interval");
            let truth = truth_rate(&launches, span, &l.left_out_unix_s).unwrap_or_else(|| {
                panic!(
                    "{} {mode} at {cpu} CPUs, launch {i}: the record does not cover {span:?}",
                    job.name
                )
            });
            let first = i == 0;
            let row = Row {
                job: job.name.into(),
                mode: if first {
                    mode.into()
                } else {
                    format!("{mode}, launch {i}")
                },
                cpu,
                matrix: rate,
                truth,
                measured_s: t.measured_s,
                unsteady: c.note.as_deref().is_some_and(|n| n.starts_with("unsteady")),
                discarded: (c.interference.as_ref())
                    .filter(|_| first)
                    .map_or(0, |i| i.discarded_windows),
            };
            eprintln!(
                "| {} | {} | {} | {:.1} | {:.1} | {:+.1}% | {:.1} s | other load {}, {} windows discarded |{}",
                row.job,
                row.cpu,
                row.mode,
                row.matrix,
                row.truth,
                row.error() * 100.0,
                row.measured_s,
                c.interference
                    .as_ref()
                    .map_or("?".into(), |i| format!("{:.2} cores", i.other_cores)),
                row.discarded,
                c.note
                    .as_deref()
                    .map_or(String::new(), |n| format!(" note: {n}"))
            );
            rows.push(row);
        }
    }
    (rows, outcome)
}

/// Every cell within [`TRUTH_TOLERANCE`] of the script's own rate ([`UNSTEADY_TRUTH_TOLERANCE`]
/// where the cell says it is unsteady).
fn assert_rows_match_truth(rows: &[Row]) {
    let mut bad = String::new();
    for r in rows {
        if r.error().abs()
            >= if r.unsteady {
                UNSTEADY_TRUTH_TOLERANCE
            } else {
                TRUTH_TOLERANCE
            }
        {
            let _ = writeln!(
                bad,
                "{} {} at {} CPUs: matrix {:.2} samples/s, script's own count {:.2} ({:+.1}%)",
                r.job,
                r.mode,
                r.cpu,
                r.matrix,
                r.truth,
                r.error() * 100.0
            );
        }
    }
    assert!(bad.is_empty(), "cells off the script's own rate:\n{bad}");
}

/// Sweeps `job` at 2 and 1 CPUs, a fresh launch a point, and checks every cell against the
/// script's record: two launches are what a reading of the script's output needs. These scripts
/// size their worker pools at start, as plain PyTorch does, so a live sweep's check would
/// relaunch them too (`plain_torch_live_sweep_gives_the_relaunched_curve` checks that verdict).
fn check_job(python: &Path, job: &Job) {
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let (rows, _) = sweep_against_truth(python, job, "relaunch", &[1.0, 2.0]);
    assert_rows_match_truth(&rows);
}

/// A small ImageFolder (1,024 training JPEGs), made by the script's first run.
fn imagefolder() -> String {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("frameworks-imagefolder")
        .display()
        .to_string()
}

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn pytorch_imagenet_example_reads_as_its_own_count() {
    require_caps!("pytorch_imagenet_example_reads_as_its_own_count");
    let python = require_python!("pytorch_imagenet_example_reads_as_its_own_count");
    let job = Job {
        name: "imagenet-example",
        args: vec![
            script("imagenet_example.py"),
            imagefolder(),
            "--synthetic".into(),
            "1024".into(),
            "--image-size".into(),
            "32".into(),
            "-b".into(),
            "8".into(),
            "-p".into(),
            "5".into(),
        ],
        throughput: "format = \"pytorch-imagenet\"",
        batch: 8,
    };
    check_job(&python, &job);
}

#[test]
fn tqdm_loop_reads_as_its_own_count() {
    require_caps!("tqdm_loop_reads_as_its_own_count");
    let python = require_python!("tqdm_loop_reads_as_its_own_count");
    let job = Job {
        name: "tqdm-loop",
        args: args(&[&script("tqdm_loop.py"), "--batch-size", "8"]),
        throughput: "format = \"tqdm\"",
        batch: 8,
    };
    check_job(&python, &job);
}

/// A Lightning script with Lightning's defaults, `rich` installed: Rich's bar, drawn only on a
/// terminal, read by the `lightning` preset, which runs the job under a pseudo-terminal.
#[test]
fn lightning_default_rich_bar_reads_as_its_own_count() {
    require_caps!("lightning_default_rich_bar_reads_as_its_own_count");
    let python = require_python!("lightning_default_rich_bar_reads_as_its_own_count");
    let job = Job {
        name: "lightning-rich",
        args: args(&[&script("lightning_fit.py"), "--batch-size", "8"]),
        throughput: "format = \"lightning\"",
        batch: 8,
    };
    check_job(&python, &job);
}

/// Lightning without rich draws its tqdm bar (forced here with `TQDMProgressBar`), through a
/// pipe as always (`terminal = false`): the same preset reads it.
#[test]
fn lightning_tqdm_bar_reads_as_its_own_count() {
    require_caps!("lightning_tqdm_bar_reads_as_its_own_count");
    let python = require_python!("lightning_tqdm_bar_reads_as_its_own_count");
    let job = Job {
        name: "lightning-tqdm",
        args: args(&[
            &script("lightning_fit.py"),
            "--batch-size",
            "8",
            "--bar",
            "tqdm",
        ]),
        throughput: "format = \"lightning\"\nterminal = false",
        batch: 8,
    };
    check_job(&python, &job);
}

/// `disable_tqdm=True`: only the Trainer's log lines (transformers 5 quotes their values), read
/// as fractional epochs of 20 steps.
#[test]
fn hf_trainer_log_lines_read_as_its_own_count() {
    require_caps!("hf_trainer_log_lines_read_as_its_own_count");
    let python = require_python!("hf_trainer_log_lines_read_as_its_own_count");
    let job = Job {
        name: "hf-trainer-logs",
        args: args(&[
            &script("hf_trainer.py"),
            "--no-bar",
            "--batch-size",
            "16",
            "--samples",
            "320",
        ]),
        throughput: "format = \"hf-trainer\"\nepoch_length = 20",
        batch: 16,
    };
    check_job(&python, &job);
}

/// With the Trainer's tqdm bar (global steps) on stderr and its log lines on stdout.
#[test]
fn hf_trainer_bar_reads_as_its_own_count() {
    require_caps!("hf_trainer_bar_reads_as_its_own_count");
    let python = require_python!("hf_trainer_bar_reads_as_its_own_count");
    let job = Job {
        name: "hf-trainer-bar",
        args: args(&[&script("hf_trainer.py"), "--batch-size", "16"]),
        throughput: "format = \"hf-trainer\"",
        batch: 16,
    };
    check_job(&python, &job);
}

#[test]
fn keras_progbar_reads_as_its_own_count() {
    require_caps!("keras_progbar_reads_as_its_own_count");
    let python = require_python!("keras_progbar_reads_as_its_own_count");
    let job = Job {
        name: "keras-fit",
        args: args(&[&script("keras_fit.py"), "--batch-size", "16"]),
        throughput: "format = \"keras\"",
        batch: 16,
    };
    check_job(&python, &job);
}

/// What this checks: a live sweep of a job that sizes its threads at start (PyTorch's default
/// thread pool, two DataLoader workers) gives the curve a relaunched sweep gives. Re-capping
/// such a job from 2 CPUs to 1 leaves it two spinning OpenMP threads on one core (far slower
/// than a fresh start); the sweep's live check must catch that and measure every point again on
/// a fresh launch of its own. Every cell is checked against the script's
/// own count (within 5%). The two sweeps' curves are compared level by level, each cell a
/// fresh launch of its own. Fresh launches differ, so within `BETWEEN_LAUNCHES` (40%): a
/// re-capped cell kept by mistake is ten times off. In one run of the whole suite, launches at
/// 2 CPUs measured 105 and 138 samples/s, and at 1 CPU 84 and 69: their ratios were 68% apart.
#[test]
fn plain_torch_live_sweep_gives_the_relaunched_curve() {
    require_caps!("plain_torch_live_sweep_gives_the_relaunched_curve");
    let python = require_python!("plain_torch_live_sweep_gives_the_relaunched_curve");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let job = Job {
        name: "plain-torch",
        args: args(&[
            &script("plain_torch.py"),
            "--batch-size",
            "32",
            "--print-every",
            "1",
        ]),
        throughput: r"regex = 'samples (?P<samples>\d+)'",
        batch: 32,
    };
    let (relaunched, first) = sweep_against_truth(&python, &job, "relaunch", &[1.0, 2.0]);
    let (live, outcome) = sweep_against_truth(&python, &job, "live", &[1.0, 2.0]);
    assert_rows_match_truth(&[relaunched, live].concat());
    let check = outcome.matrix.header.live_check.clone();
    let caught = check.as_ref().is_some_and(|c| {
        c.outcome == profiler::matrix::LiveCheckOutcome::Relaunch
            && c.live_samples_per_s < 0.5 * c.relaunch_samples_per_s
    });
    assert!(
        caught,
        "the live check missed the re-capped slowdown: {check:?}"
    );
    // The cell that stands was measured again on a fresh launch of its own.
    let check = check.expect("checked");
    let kept = cell(&outcome.matrix.cells, check.cpu);
    let rate = kept.samples_per_s().expect("a rate");
    assert!(crate::live::one_visit_a_launch(kept), "{kept:?}");
    // Two launches' levels, so no bound on their gap: the kept rate only has to lie nearer the
    // check's fresh start than the re-capped rate, which is several times off.
    let log_gap = |other: f64| (rate / other).ln().abs();
    assert!(
        log_gap(check.relaunch_samples_per_s) < log_gap(check.live_samples_per_s),
        "the fresh cell stands: {rate} against the check's fresh start {} and its re-capped {}",
        check.relaunch_samples_per_s,
        check.live_samples_per_s
    );
    // The curves, level by level: each cell of either sweep stands on a fresh launch of its
    // own, so two launches of one level are compared. (A ratio of two levels would not cancel
    // a spell here, being two launches too, and would add their spreads.)
    for cpu in [1.0, 2.0] {
        let rate = |o: &SweepOutcome| cell(&o.matrix.cells, cpu).samples_per_s().expect("a rate");
        let (l, r) = (rate(&outcome), rate(&first));
        eprintln!("{cpu} CPU(s): live sweep {l:.1}, relaunched {r:.1} samples/s");
        assert!(
            (l / r - 1.0).abs() < BETWEEN_LAUNCHES,
            "the live sweep's curve is off the relaunched one at {cpu} CPU(s): {l:.1} against \
             {r:.1} samples/s; live check: {check:?}"
        );
    }
}
