//! Interference: a CPU hog beside a sweep, in another cgroup on the job's CPU, is seen; the
//! disturbed windows are measured again once it is gone, and a cell it never leaves is marked.

use super::*;
use profiler::harness::sweep::SweepObserver;
use profiler::matrix::render_summary;
use std::process::Child;

/// A CPU-bound job that follows its cap: one process, progress every 20 ms of work.
const SPIN_JOB: &str = "import json,os,time\nf=open(os.environ['PROFILER_PROGRESS_FILE'],'a')\ni=0\nwhile True:\n    x=0\n    for k in range(20000): x+=k*k\n    i+=1\n    if i%5==0:\n        f.write(json.dumps({'samples':i,'t':time.time()})+'\\n'); f.flush()\n";

fn spin_spec(dir: &Path) -> LoadedSpec {
    std::fs::write(dir.join("spin.py"), SPIN_JOB).unwrap();
    let text = "schema_version = 1\nname = \"spin\"\ncommand = [\"python3\", \"spin.py\"]\n\
                [throughput]\nprotocol = \"progress-file\"\n[measure]\nwarmup_s = 1\n\
                window_s = 0.5\nsteady_windows = 4\nsteady_cv = 0.08\nmax_s = 20\n\
                startup_timeout_s = 20\n[sweep]\ncpu = [1]\n";
    let path = dir.join("spin.toml");
    std::fs::write(&path, text).unwrap();
    parse_spec(text, &path).expect("test spec is valid")
}

/// A busy loop pinned to the first CPU the profiler's cgroups use (where a 1-CPU job runs),
/// outside the job's cgroup, for `seconds`.
fn hog(seconds: f64) -> Child {
    let cpu = CgroupRoot::open("profiler-test-hog-probe")
        .expect("cgroups")
        .cpus()[0];
    Command::new("taskset")
        .args(["-c", &cpu.to_string(), "python3", "-c"])
        .arg(format!(
            "import time\nend=time.time()+{seconds}\nwhile time.time()<end: pass"
        ))
        .spawn()
        .expect("taskset and python3 run")
}

/// Starts a hog when the sweep starts measuring.
struct HogAtMeasure {
    seconds: f64,
    hog: Option<Child>,
}

impl SweepObserver for HogAtMeasure {
    fn status(&mut self, message: &str) {
        if message.ends_with("measuring") && self.hog.is_none() {
            self.hog = Some(hog(self.seconds));
        }
    }
}

impl Drop for HogAtMeasure {
    fn drop(&mut self) {
        if let Some(h) = &mut self.hog {
            let _ = h.kill();
            let _ = h.wait();
        }
    }
}

fn measure_spin(dir: &Path, name: &str, observer: &mut dyn SweepObserver) -> Cell {
    let out = dir.join(format!("{name}.matrix.jsonl"));
    let outcome = run_sweep(
        &options(spin_spec(dir), out, "profiler-test-disturbed"),
        observer,
        &AtomicBool::new(false),
    )
    .expect("sweep runs");
    let c = outcome.matrix.cells[0].clone();
    eprintln!(
        "{name}: {:?} samples/s, {:?}, note {:?}",
        c.samples_per_s(),
        c.interference,
        c.note
    );
    c
}

#[test]
fn a_hog_beside_a_sweep_is_detected_and_its_windows_measured_again() {
    require_caps!("a_hog_beside_a_sweep_is_detected_and_its_windows_measured_again");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();

    let quiet = measure_spin(dir.path(), "quiet", &mut Silent);
    let q = quiet
        .interference
        .clone()
        .expect("interference is recorded");
    assert!(!q.disturbed, "no false alarm on a quiet machine: {q:?}");
    let quiet_rate = quiet.samples_per_s().expect("measured");

    // A hog for the first 3 s of the measurement: its windows are discarded, and the cell is
    // measured again once it is gone.
    let mut passing = HogAtMeasure {
        seconds: 3.0,
        hog: None,
    };
    let cell = measure_spin(dir.path(), "passing", &mut passing);
    let i = cell.interference.clone().expect("interference is recorded");
    assert!(i.discarded_windows > 0, "the hog was not seen: {i:?}");
    assert!(!i.disturbed, "{i:?}");
    // A window the hog shared would add half a core to the other load of the windows used (a
    // quarter of them at least) and pull the rate down (the hog takes half the job's CPU). The
    // rate check is one-sided: a higher rate than a quiet launch's is launch-to-launch
    // variation (up to 20% on a busy 2-core VM), never the hog. Quiet launches before and
    // after bracket that variation.
    assert!(
        i.other_cores < 0.1,
        "a window the hog shared was used: {i:?}"
    );
    let rate = cell.samples_per_s().expect("measured");
    let quiet_after = measure_spin(dir.path(), "quiet-after", &mut Silent)
        .samples_per_s()
        .expect("measured");
    let slowest_quiet = quiet_rate.min(quiet_after);
    assert!(
        rate > 0.8 * slowest_quiet,
        "re-measured {rate:.1} vs undisturbed {quiet_rate:.1} and {quiet_after:.1} samples/s: \
         a disturbed window was kept"
    );

    // A hog that never leaves: the cell is kept, marked disturbed, and shown so.
    let mut staying = HogAtMeasure {
        seconds: 60.0,
        hog: None,
    };
    let out = dir.path().join("staying.matrix.jsonl");
    let outcome = run_sweep(
        &options(
            spin_spec(dir.path()),
            out.clone(),
            "profiler-test-disturbed",
        ),
        &mut staying,
        &AtomicBool::new(false),
    )
    .expect("sweep runs");
    drop(staying);
    let cell = &outcome.matrix.cells[0];
    let i = cell.interference.clone().expect("interference is recorded");
    assert!(i.disturbed, "{i:?}");
    assert!(i.other_cores > 0.3, "{i:?}");
    assert!(
        cell.note.as_deref().unwrap_or("").contains("disturbed"),
        "{:?}",
        cell.note
    );
    assert!(cell.samples_per_s().unwrap() < 0.8 * quiet_rate);
    let shown = render_summary(&load_matrix(&out).unwrap());
    assert!(shown.contains("disturbed"), "{shown}");
    assert_no_runs_under("profiler-test-disturbed");
}
