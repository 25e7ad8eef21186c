//! Progress read from what unmodified training scripts print: the shipped example specs under
//! `workloads/progress-shapes/` run `emit.py`, which prints each preset's shape at a known rate
//! (through a pipe for three of them, tqdm's bar on stderr), swept live over 0.5 and 1 core.

use super::{MACHINE, Silent, options, passes, sweep};
use profiler::harness::sweep::run_sweep;
use profiler::matrix::CellSource;
use profiler::spec::{load_spec, parse_spec};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

fn shapes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/progress-shapes")
}

/// Samples/s the spec's job produces: emit.py's `--rate` (iterations/s) x the batch.
fn known_rate(command: &str, batch: u64) -> f64 {
    let rate: f64 = command
        .split_whitespace()
        .skip_while(|w| *w != "--rate")
        .nth(1)
        .and_then(|r| r.trim_matches('"').parse().ok())
        .expect("emit.py --rate N in the command");
    rate * batch as f64
}

/// Sweeps the shipped spec for `format` and checks every cell against the known rate.
fn sweep_shape(format: &str) {
    require_caps!(format!("presets: {format}"));
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let mut spec = load_spec(&shapes_dir().join(format!("{format}.toml"))).expect("shipped spec");
    // One launch walking one round (1 CPU, 0.5, 1 again): what is read here is each preset's
    // lines at a known rate, which more launches and rounds only repeat.
    spec.spec.measure.launches = 1;
    spec.spec.measure.rounds = 1;
    let known = known_rate(
        &spec.spec.command.join(" "),
        spec.spec.batch_size_per_gpu.expect("batch"),
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.matrix.jsonl");
    let outcome = sweep(spec, out, &format!("profiler-test-{format}"));
    // The launch re-capped live between the two levels.
    assert_eq!((outcome.launches, passes(&outcome)), (1, 1));
    assert_eq!(outcome.matrix.cells.len(), 2);
    for c in &outcome.matrix.cells {
        assert_eq!(c.source, CellSource::Measured, "{:?}", c.note);
        let rate = c.samples_per_s().expect("measured");
        eprintln!(
            "{format}: {} CPU: {rate:.1} samples/s (known {known})",
            c.cpu
        );
        // The job paces itself by the clock, so only reading its output can be off; 10% holds
        // on a loaded machine (a late wake-up is caught up by the next iterations).
        assert!(
            (rate / known - 1.0).abs() < 0.10,
            "{format} at {} CPU: measured {rate:.1} samples/s, known {known}",
            c.cpu
        );
    }
}

#[test]
fn pytorch_imagenet_output_through_a_pipe_gives_the_known_rate() {
    sweep_shape("pytorch-imagenet");
}

#[test]
fn a_tqdm_bar_on_stderr_gives_the_known_rate() {
    sweep_shape("tqdm");
}

#[test]
fn hf_trainer_output_through_a_pipe_gives_the_known_rate() {
    sweep_shape("hf-trainer");
}

#[test]
fn keras_redrawn_progbar_through_a_pipe_gives_the_known_rate() {
    sweep_shape("keras");
}

/// A Python job piping its output, uncapped (no root needed); `env` is extra spec text.
fn piped_python(dir: &Path, env: &str) -> profiler::matrix::Cell {
    let text = format!(
        r#"schema_version = 1
name = "buffered"
command = ["python3 {emit} --format pytorch-imagenet --rate 20 | cat"]
shell = true
gpus = 0
batch_size_per_gpu = 8
{env}
[throughput]
protocol = "log"
format = "pytorch-imagenet"
[measure]
warmup_s = 0.5
window_s = 0.5
steady_windows = 3
steady_cv = 0.1
max_s = 4
startup_timeout_s = 4
[sweep]
cpu = [1]
"#,
        emit = shapes_dir().join("emit.py").display()
    );
    let path = dir.join("buffered.toml");
    let spec = parse_spec(&text, &path).unwrap();
    let mut opts = options(spec, dir.join("buffered.matrix.jsonl"), "unused");
    opts.caps = false;
    let outcome = run_sweep(&opts, &mut Silent, &AtomicBool::new(false)).expect("sweep runs");
    outcome.matrix.cells[0].clone()
}

#[test]
fn python_output_is_unbuffered_unless_the_spec_says_otherwise() {
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // The profiler sets PYTHONUNBUFFERED=1: lines arrive as they are printed.
    let cell = piped_python(dir.path(), "");
    assert_eq!(cell.source, CellSource::Measured, "{:?}", cell.note);
    // With it unset (empty), Python fills an 8 KiB buffer first (about 17 s of these lines):
    // no progress within the start-up time-out, and the note says what to do.
    let cell = piped_python(dir.path(), "[env]\nPYTHONUNBUFFERED = \"\"");
    assert_eq!(cell.source, CellSource::Failed);
    let note = cell.note.unwrap_or_default();
    assert!(
        note.contains("no progress") && note.contains("PYTHONUNBUFFERED=1"),
        "{note}"
    );
}

/// Keeps the warnings a sweep gives.
#[derive(Default)]
struct Warnings(Vec<String>);
impl profiler::harness::sweep::SweepObserver for Warnings {
    fn warn(&mut self, message: &str) {
        self.0.push(message.to_string());
    }
}

#[test]
fn unusable_values_are_skipped_with_a_warning_and_never_reach_the_matrix() {
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // Good lines at 100 samples/s among a NaN, an infinity and a zero time per iteration.
    let text = r#"schema_version = 1
name = "nan"
command = ["while :; do echo 'speed 100 samples/s'; echo 'speed nan samples/s'; echo 'speed inf it/s'; echo 'speed 0 s/it'; sleep 0.1; done"]
shell = true
gpus = 0
batch_size_per_gpu = 4
[throughput]
protocol = "log"
regex = 'speed (?P<rate>\S+) (?P<unit>\S+)'
[measure]
warmup_s = 0.5
window_s = 0.5
steady_windows = 3
steady_cv = 0.05
max_s = 4
startup_timeout_s = 4
[sweep]
cpu = [1]
"#;
    let path = dir.path().join("nan.toml");
    let spec = parse_spec(text, &path).unwrap();
    let mut opts = options(spec, dir.path().join("nan.matrix.jsonl"), "unused");
    opts.caps = false;
    let mut warnings = Warnings::default();
    let outcome = run_sweep(&opts, &mut warnings, &AtomicBool::new(false)).expect("sweep runs");
    let c = &outcome.matrix.cells[0];
    assert_eq!(c.source, CellSource::Measured, "{:?}", c.note);
    let rate = c.samples_per_s().unwrap();
    assert!((rate - 100.0).abs() < 5.0, "{rate}");
    // One warning per kind (not a number; zero), not one per line.
    assert_eq!(warnings.0.len(), 2, "{:?}", warnings.0);
    assert!(
        warnings.0.iter().any(|w| w.contains("\"nan\"")),
        "{:?}",
        warnings.0
    );
    // What a matrix file would hold (a --no-caps run writes none).
    let written = outcome.matrix.to_jsonl();
    assert!(
        !written.contains("NaN") && !written.contains("\"samples_per_s\":null"),
        "{written}"
    );
}

/// A shell job uncapped (no root needed) read by `throughput`, given 2 s to report progress.
fn silent_cell(dir: &Path, command: &str, throughput: &str) -> profiler::matrix::Cell {
    let text = format!(
        r#"schema_version = 1
name = "silent"
command = [{command:?}]
shell = true
gpus = 0
batch_size_per_gpu = 8
[throughput]
protocol = "log"
{throughput}
[measure]
warmup_s = 0.5
window_s = 0.5
max_s = 3
startup_timeout_s = 2
[sweep]
cpu = [1]
"#
    );
    let path = dir.join("silent.toml");
    let spec = parse_spec(&text, &path).unwrap();
    let mut opts = options(spec, dir.join("silent.matrix.jsonl"), "unused");
    opts.caps = false;
    let outcome = run_sweep(&opts, &mut Silent, &AtomicBool::new(false)).expect("sweep runs");
    outcome.matrix.cells[0].clone()
}

#[test]
fn a_job_whose_lines_match_no_preset_is_told_so_not_blamed_on_buffering() {
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // Lines arrive, in a shape the preset does not read.
    let cell = silent_cell(
        dir.path(),
        "while :; do echo 'iter 3 loss 1.0'; sleep 0.1; done",
        "format = \"pytorch-imagenet\"",
    );
    assert_eq!(cell.source, CellSource::Failed);
    let note = cell.note.unwrap_or_default();
    assert!(
        note.contains("no progress within")
            && note.contains("no line matched the preset `pytorch-imagenet`")
            && note.contains("(last line seen: `iter 3 loss 1.0`)"),
        "{note}"
    );
    assert!(!note.contains("buffer"), "{note}");
    // Nothing where it is read; the other stream has output.
    let cell = silent_cell(
        dir.path(),
        "while :; do echo 'Epoch: [0][ 1/10]' >&2; sleep 0.1; done",
        "format = \"pytorch-imagenet\"\nstream = \"stdout\"",
    );
    let note = cell.note.unwrap_or_default();
    assert!(
        note.contains("no output at all from the job")
            && note.contains("stderr.log, which is not read")
            && note.contains("stream = \"both\""),
        "{note}"
    );
}
