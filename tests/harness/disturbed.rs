//! Interference: a CPU hog beside a sweep, in another cgroup on the job's CPU, is seen; the
//! disturbed windows are measured again once it is gone, and a cell it never leaves is marked.

use super::*;
use profiler::harness::sweep::SweepObserver;
use profiler::matrix::render_summary;
use std::process::Child;

/// A CPU-bound job that follows its cap: one process, progress every 20 ms of work.
const SPIN_JOB: &str = "import json,os,time\nf=open(os.environ['PROFILER_PROGRESS_FILE'],'a')\ni=0\nwhile True:\n    x=0\n    for k in range(20000): x+=k*k\n    i+=1\n    if i%5==0:\n        f.write(json.dumps({'samples':i,'t':time.time()})+'\\n'); f.flush()\n";

/// The same work in four processes sharing one counter: at a 1-CPU cap, more runnable tasks
/// than CPUs, each waiting behind the others on the run queue.
const SPIN4_JOB: &str = "import json,os,time,multiprocessing as mp\nc=mp.Value('q',0)\ndef work(report):\n    f=open(os.environ['PROFILER_PROGRESS_FILE'],'a') if report else None\n    last=time.time()\n    while True:\n        x=0\n        for k in range(20000): x+=k*k\n        with c.get_lock():\n            c.value+=1\n            n=c.value\n        if f and time.time()-last>0.05:\n            f.write(json.dumps({'samples':n,'t':time.time()})+'\\n'); f.flush(); last=time.time()\nfor _ in range(3): mp.Process(target=work,args=(False,),daemon=True).start()\nwork(True)\n";

fn spin_spec(dir: &Path) -> LoadedSpec {
    spin_spec_of(dir, "spin.py", SPIN_JOB)
}

fn spin_spec_of(dir: &Path, script: &str, source: &str) -> LoadedSpec {
    std::fs::write(dir.join(script), source).unwrap();
    let text = "schema_version = 1\nname = \"spin\"\ncommand = [\"python3\", \"SCRIPT\"]\n\
                [throughput]\nprotocol = \"progress-file\"\n[measure]\nwarmup_s = 1\n\
                window_s = 0.5\nsteady_windows = 4\nsteady_cv = 0.08\nmax_s = 20\n\
                startup_timeout_s = 20\nlaunches = 1\n[sweep]\ncpu = [1]\n"
        .replace("SCRIPT", script);
    let path = dir.join("spin.toml");
    std::fs::write(&path, &text).unwrap();
    parse_spec(&text, &path).expect("test spec is valid")
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
    measure(spin_spec(dir), dir, name, observer)
}

fn measure(spec: LoadedSpec, dir: &Path, name: &str, observer: &mut dyn SweepObserver) -> Cell {
    let out = dir.join(format!("{name}.matrix.jsonl"));
    let outcome = run_sweep(
        &options(spec, out, "profiler-test-disturbed"),
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

/// A live sweep of the spin job at 0.5 and 1 CPU: two passes (the second the live check's fresh
/// launch), two blocks a launch (a host's spell may move the reference of one beyond its drift
/// bound, which leaves that block out too).
fn live_spin_spec(dir: &Path) -> LoadedSpec {
    std::fs::write(dir.join("spin.py"), SPIN_JOB).unwrap();
    let text = "schema_version = 1\nname = \"spin\"\ncommand = [\"python3\", \"spin.py\"]\n\
                [throughput]\nprotocol = \"progress-file\"\n[measure]\nwarmup_s = 1\n\
                settle_s = 0.5\nwindow_s = 0.5\nsteady_windows = 4\nsteady_cv = 0.08\n\
                max_s = 8\nstartup_timeout_s = 20\nlaunches = 2\nrounds = 2\n\
                [sweep]\ncpu = [0.5, 1]\nmode = \"live\"\n";
    let path = dir.join("spin-live.toml");
    std::fs::write(&path, text).unwrap();
    parse_spec(text, &path).expect("test spec is valid")
}

/// Starts a hog that stays when the live check's fresh launch starts.
struct HogFromCheckLaunch {
    hog: Option<Hogs>,
    started_unix_s: f64,
}

impl SweepObserver for HogFromCheckLaunch {
    fn status(&mut self, message: &str) {
        if message.starts_with("live check")
            && message.contains("a fresh launch")
            && self.hog.is_none()
        {
            self.started_unix_s = profiler::harness::measure::job_output::now_unix_s();
            self.hog = Some(Hogs(vec![hog(300.0)]));
        }
    }
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

    // A hog for the first 3 s of the measurement: its windows are discarded, and the cell is
    // measured again once it is gone. The windows kept show what ran beside the job: a window
    // the hog shared would add half a core to their other load (a quarter of them at least).
    let mut passing = HogAtMeasure {
        seconds: 3.0,
        hog: None,
    };
    let cell = measure_spin(dir.path(), "passing", &mut passing);
    drop(passing);
    let i = cell.interference.clone().expect("interference is recorded");
    assert!(i.discarded_windows > 0, "the hog was not seen: {i:?}");
    assert!(!i.disturbed, "{i:?}");
    assert!(
        i.other_cores < 0.1,
        "a window the hog shared was used: {i:?}"
    );
}

/// A hog that stays, from the live check's fresh launch on: every block it touched is left
/// out and marked, the live check it kept from concluding is unproven after two fresh launches,
/// and the 0.5-CPU cell's rate relative to its 1-CPU reference rests on its quiet visits, about
/// the half a 0.5-CPU cap leaves a CPU-bound job. Read against a reference the hog halved, it
/// would be about 1. The reference's absolute rate is its quiet visits'.
#[test]
fn a_hog_that_stays_leaves_its_blocks_out_and_the_check_unproven() {
    require_caps!("a_hog_that_stays_leaves_its_blocks_out_and_the_check_unproven");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("staying.matrix.jsonl");
    let mut staying = HogFromCheckLaunch {
        hog: None,
        started_unix_s: f64::INFINITY,
    };
    let outcome = run_sweep(
        &options(
            live_spin_spec(dir.path()),
            out.clone(),
            "profiler-test-disturbed",
        ),
        &mut staying,
        &AtomicBool::new(false),
    )
    .expect("sweep runs");
    let hog_started = staying.started_unix_s;
    drop(staying);
    let m = &outcome.matrix;
    let blocks = &m.header.blocks;
    for b in blocks {
        eprintln!(
            "block {}: {:?}, disturbed {}, drifted {}",
            b.index, b.span_unix_s, b.disturbed, b.drifted
        );
    }
    assert!(
        hog_started.is_finite(),
        "the live check made its fresh launch"
    );
    let (before, after): (Vec<_>, Vec<_>) =
        blocks.iter().partition(|b| b.span_unix_s[1] < hog_started);
    assert!(
        !before.is_empty() && before.iter().all(|b| !b.disturbed),
        "{blocks:?}"
    );
    assert!(
        after.len() >= 2 && after.iter().all(|b| b.disturbed),
        "{blocks:?}"
    );
    for c in &m.cells {
        for v in &c.visits {
            eprintln!(
                "{} CPU: launch {}, {:.1} samples/s over {:?}{}",
                c.cpu,
                v.launch,
                v.samples_per_s,
                v.measured_unix_s,
                if v.disturbed { ", disturbed" } else { "" }
            );
        }
    }
    let check = m.header.live_check.clone().expect("the check is recorded");
    assert_eq!(
        check.outcome,
        profiler::matrix::LiveCheckOutcome::Unproven,
        "{check:?}"
    );
    assert!(check.reason.contains("disturbed"), "{}", check.reason);

    let low = (m.cells.iter())
        .find(|c| c.cpu == 0.5 && c.source == CellSource::Measured)
        .expect("the 0.5-CPU cell is measured");
    let r = low
        .relative
        .clone()
        .expect("the 0.5-CPU cell has a relative rate");
    eprintln!("0.5 CPU relative to 1 CPU: {r:?}");
    let quiet = low.visits.iter().filter(|v| !v.disturbed).count();
    assert_eq!(r.blocks as usize, quiet, "{r:?}");
    // The quiet visits: a host's spell moves them (0.37-0.52 over five runs on a 2-core VM),
    // but not to the 1 the hogged visits give (the hog halves the reference and leaves the
    // capped cell its half core).
    assert!((0.3..0.7).contains(&r.rate), "{r:?}");
    // The reference's visits under the hog are kept in the record and marked, and its rate
    // is the quiet launch's alone.
    let reference = (m.cells.iter())
        .find(|c| c.cpu == 1.0)
        .expect("the reference is measured");
    let hogged = |v: &&profiler::matrix::Visit| v.measured_unix_s[0] > hog_started;
    assert!(
        reference.visits.iter().filter(hogged).count() >= 2
            && reference.visits.iter().filter(hogged).all(|v| v.disturbed),
        "{:?}",
        reference.visits
    );
    assert_eq!(reference.launches().len(), 1, "{reference:?}");
    let shown = render_summary(&load_matrix(&out).unwrap());
    assert!(
        shown.contains("disturbed") && shown.contains("unproven"),
        "{shown}"
    );
    assert_no_runs_under("profiler-test-disturbed");
}

/// Processes killed when dropped.
struct Hogs(Vec<Child>);

impl Drop for Hogs {
    fn drop(&mut self) {
        for h in &mut self.0 {
            let _ = h.kill();
            let _ = h.wait();
        }
    }
}

/// A busy loop pinned to each of `cpus`, until dropped.
fn cpu_hogs(cpus: &[u32]) -> Hogs {
    Hogs(
        cpus.iter()
            .map(|cpu| {
                Command::new("taskset")
                    .args(["-c", &cpu.to_string(), "python3", "-c", "while True: pass"])
                    .spawn()
                    .expect("taskset and python3 run")
            })
            .collect(),
    )
}

/// A memory-bandwidth hog pinned to each of `cpus`: copies between two 128 MiB buffers, far
/// beyond any cache, until dropped.
fn bandwidth_hogs(cpus: &[u32]) -> Hogs {
    Hogs(
        cpus.iter()
            .map(|cpu| {
                Command::new("taskset")
                    .args(["-c", &cpu.to_string(), "python3", "-c"])
                    .arg("a=bytearray(1<<27)\nb=bytearray(1<<27)\nwhile True: b[:]=a")
                    .spawn()
                    .expect("taskset and python3 run")
            })
            .collect(),
    )
}

/// What a cell disturbed by a hog must show: a rate within 10% of the slower of two quiet
/// launches around it (a hog only slows a job; a higher rate is launch-to-launch variation),
/// or the disturbed mark with what disturbed it. Never an unmarked cell more than 10% off.
fn assert_close_or_marked(what: &str, cell: &Cell, quiet: [f64; 2]) {
    let rate = cell.samples_per_s().expect("measured");
    let i = cell.interference.clone().expect("interference is recorded");
    let slowest = quiet[0].min(quiet[1]);
    eprintln!(
        "{what}: {rate:.1} vs quiet {:.1} and {:.1} samples/s, {i:?}",
        quiet[0], quiet[1]
    );
    if i.disturbed {
        let by = i.disturbed_by.as_deref().unwrap_or("");
        assert!(
            !by.is_empty(),
            "{what}: marked without saying by what: {i:?}"
        );
        let note = cell.note.as_deref().unwrap_or("");
        assert!(note.contains(by), "{what}: the note names it: {note}");
    } else {
        assert!(
            rate >= 0.9 * slowest,
            "{what}: an unmarked cell {:.0}% below the slower quiet launch: {i:?}",
            100.0 * (1.0 - rate / slowest)
        );
    }
}

#[test]
fn a_cpu_hog_on_every_core_and_a_bandwidth_hog_leave_no_unmarked_cell_off() {
    require_caps!("a_cpu_hog_on_every_core_and_a_bandwidth_hog_leave_no_unmarked_cell_off");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let cpus = CgroupRoot::open("profiler-test-hog-probe")
        .expect("cgroups")
        .cpus()
        .to_vec();
    let quiet = |name: &str| {
        measure_spin(dir.path(), name, &mut Silent)
            .samples_per_s()
            .expect("measured")
    };
    let before = quiet("quiet-before");

    // A busy loop on every core for the whole cell: the job at 1 CPU gets about half of it.
    let hogs = cpu_hogs(&cpus);
    let hogged = measure_spin(dir.path(), "every-core", &mut Silent);
    drop(hogs);
    let i = hogged
        .interference
        .clone()
        .expect("interference is recorded");
    assert!(i.disturbed, "a hog on every core is felt: {i:?}");
    let after = quiet("quiet-after");
    assert_close_or_marked("cpu hog on every core", &hogged, [before, after]);

    // Memory bandwidth taken on the cores the job does not run on (all but its first).
    if cpus.len() < 2 {
        eprintln!("SKIPPED: the bandwidth hog needs a core the job does not use");
        return;
    }
    let hogs = bandwidth_hogs(&cpus[1..]);
    let cell = measure_spin(dir.path(), "bandwidth", &mut Silent);
    drop(hogs);
    let again = quiet("quiet-last");
    assert_close_or_marked("memory-bandwidth hog", &cell, [after, again]);
    assert_no_runs_under("profiler-test-disturbed");
}

/// Four spinning processes at a 1-CPU cap wait behind each other on the run queue all the
/// time, but the job runs at its cap: its own oversubscription is not disturbance.
#[test]
fn a_job_oversubscribing_its_own_cap_is_not_marked() {
    require_caps!("a_job_oversubscribing_its_own_cap_is_not_marked");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let cell = measure(
        spin_spec_of(dir.path(), "spin4.py", SPIN4_JOB),
        dir.path(),
        "oversubscribed",
        &mut Silent,
    );
    let i = cell.interference.clone().expect("interference is recorded");
    assert!(
        i.run_wait_cores.is_some_and(|w| w > 1.0),
        "four tasks on one CPU wait for it: {i:?}"
    );
    assert!(!i.disturbed && i.discarded_windows == 0, "{i:?}");
    assert_no_runs_under("profiler-test-disturbed");
}
