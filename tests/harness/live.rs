//! Live re-capping proven per job: a job that sizes itself from the CPUs it sees at start is
//! caught by the live check and the sweep relaunches; one that follows its cap keeps re-capping.
//! Also: a stopped job gets SIGTERM before SIGKILL.

use super::*;

/// A job in the way of OpenMP: one worker process per CPU it sees at start, in lock-step, each
/// spinning at a barrier until all have finished their chunk. Re-capped to fewer cores than
/// workers, spinners burn the time the others need. With `--independent` the workers do not
/// wait for each other (a data-parallel job of independent shards), so a re-capped job does
/// the work a fresh one would. `--chunk=N` sets the work between barriers: the shorter it is
/// against the scheduler's time slice, the more of each slice a re-capped worker spins away
/// (at the default a re-capped lock-step job keeps 70-85% of a fresh one's rate, a difference
/// the check catches; at a quarter of it, under a third). With `--timed` a chunk is 4 ms of the
/// worker's own CPU time instead, so the rate counts the CPU the job gets: a shared VM's host
/// can run the same instructions 1.8 times faster from one launch to the next (seen on a
/// 2-core VM with no steal time reported), which no comparison of two launches survives, but
/// the CPU time a cap gives stays what it is. On SIGTERM it appends a line to `stopped.txt` (a checkpoint)
/// before exiting.
const WORKERS_JOB: &str = r#"
import json, multiprocessing as mp, os, signal, sys, time
n = int(next((a[10:] for a in sys.argv if a.startswith('--workers=')), len(os.sched_getaffinity(0))))
lockstep = '--independent' not in sys.argv
size = int(next((a[8:] for a in sys.argv if a.startswith('--chunk=')), 20000))
timed = '--timed' in sys.argv
report_every = max(1, 100000 // size)
counts = mp.Array('q', n, lock=False)
def chunk():
    if timed:
        end = time.thread_time() + 0.004
        while time.thread_time() < end:
            pass
        return
    x = 0
    for i in range(size):
        x += i * i
def step(i):
    chunk()
    counts[i] += 1
    mine = counts[i]
    while lockstep and min(counts[:]) < mine:
        pass
    return mine
def worker(i):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        step(i)
def stop(*_):
    with open('stopped.txt', 'a') as f:
        f.write('stopped by SIGTERM\n')
    for p in procs:
        p.terminate()
    sys.exit(0)
procs = [mp.Process(target=worker, args=(i,), daemon=True) for i in range(1, n)]
for p in procs:
    p.start()
signal.signal(signal.SIGTERM, stop)
progress = open(os.environ['PROFILER_PROGRESS_FILE'], 'a')
while True:
    if step(0) % report_every == 0:
        progress.write(json.dumps({'samples': sum(counts[:]), 't': time.time()}) + '\n')
        progress.flush()
"#;

/// One launch a point (`launches = 1`): the launches these tests count are the live check's.
fn workers_spec(dir: &Path, name: &str, args: &str, sweep: &str) -> LoadedSpec {
    std::fs::write(dir.join("workers.py"), WORKERS_JOB).unwrap();
    let text = format!(
        "schema_version = 1\nname = \"{name}\"\ncommand = [\"python3\", \"workers.py\"{args}]\n\
         [throughput]\nprotocol = \"progress-file\"\n[measure]\nwarmup_s = 1\nsettle_s = 1\n\
         window_s = 0.5\nsteady_windows = 4\nsteady_cv = 0.08\nmax_s = 8\nstartup_timeout_s = 20\n\
         stop_grace_s = 5\nlaunches = 1\n[sweep]\n{sweep}\n"
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, &text).unwrap();
    parse_spec(&text, &path).expect("test spec is valid")
}

/// Whether no launch measured `cell` more than once: each of its visits (a fresh launch's one
/// measurement, where the probe ran) is on a launch of its own.
pub(crate) fn one_visit_a_launch(cell: &Cell) -> bool {
    let launches: std::collections::BTreeSet<u32> = cell.visits.iter().map(|v| v.launch).collect();
    launches.len() == cell.visits.len()
}

fn rate(cells: &[Cell], cpu: f64) -> f64 {
    let c = cell(cells, cpu);
    c.samples_per_s()
        .unwrap_or_else(|| panic!("no rate at {cpu}: {c:?}"))
}

#[test]
fn a_job_that_sizes_itself_at_start_is_caught_and_relaunched() {
    require_caps!("a_job_that_sizes_itself_at_start_is_caught_and_relaunched");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let live = workers_spec(
        dir.path(),
        "lockstep",
        r#", "--chunk=5000""#,
        "cpu = [2, 1]\nmode = \"live\"",
    );
    let out = dir.path().join("live.matrix.jsonl");
    let outcome = sweep(live, out.clone(), "profiler-test-live-check");
    let m = load_matrix(&out).unwrap();
    let check = m.header.live_check.expect("the live check is recorded");
    eprintln!("live check: {check:?}");
    assert_eq!(
        check.outcome,
        profiler::matrix::LiveCheckOutcome::Relaunch,
        "{check:?}"
    );
    assert!(
        check.live_samples_per_s < 0.8 * check.relaunch_samples_per_s,
        "{check:?}"
    );
    // The check comes first: a launch started at 2 CPUs re-capped down to 1 and back, and a
    // fresh launch at 1 re-capped up to 2. Each keeps what it measured before its first re-cap,
    // which is every point of this grid: no launch more.
    assert_eq!(
        outcome.launches, 2,
        "the launch started at the reference and the check's"
    );
    // The cells that stand are the fresh launches': none was visited twice on one launch, and
    // the 1-CPU rate is a fresh start's, well above the re-capped one.
    let cells = &m.cells;
    assert!(cells.iter().all(one_visit_a_launch), "{cells:?}");
    assert!(
        rate(cells, 1.0) > 1.2 * check.live_samples_per_s,
        "{cells:?}"
    );
    assert!(rate(cells, 2.0) > 0.0);
    assert_no_runs_under("profiler-test-live-check");
}

/// A job of two workers whatever the CPUs it sees (`--workers=2`), which do not wait for each
/// other, follows its cap: at 1 CPU the two share one core, at 2 each has one, whether the
/// launch started there or was re-capped there, so the live check keeps live mode. Its chunks
/// are timed (`--timed`): the rates count the CPU time each launch gets, not how fast a shared
/// host runs it. The check compares the 1-CPU rate over the 2-CPU rate of the same launch, one
/// launch started at each level, so a host that ran one launch slower does not decide it. (A
/// job of one worker per CPU it saw at start would not pass: started at 1 CPU and re-capped up
/// to 2 it keeps one worker, and its ratio is 1 where the launch started at 2 measures 0.5.)
#[test]
fn a_job_that_follows_its_cap_keeps_live_mode_and_gets_sigterm() {
    require_caps!("a_job_that_follows_its_cap_keeps_live_mode_and_gets_sigterm");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let spec = workers_spec(
        dir.path(),
        "independent",
        r#", "--independent", "--timed", "--workers=2""#,
        "cpu = [2, 1]\nmode = \"live\"",
    );
    let out = dir.path().join("m.matrix.jsonl");
    let outcome = sweep(spec, out.clone(), "profiler-test-live-ok");
    let m = load_matrix(&out).unwrap();
    let check = m.header.live_check.expect("the live check is recorded");
    eprintln!("live check: {check:?}");
    assert_eq!(check.cpu, 1.0, "checked at the lowest level");
    assert_eq!(
        check.outcome,
        profiler::matrix::LiveCheckOutcome::Live,
        "{check:?}"
    );
    // The check first: 2 -> 1 -> 2 re-capped, then 1 fresh re-capped up to 2; then the first
    // pass's second round, 2 -> 1 -> 2, on a launch of its own. Every launch is stopped with
    // SIGTERM.
    assert_eq!(outcome.launches, 3);
    let stopped = std::fs::read_to_string(dir.path().join("stopped.txt")).unwrap_or_default();
    assert_eq!(stopped.lines().count(), 3, "SIGTERM first: {stopped:?}");
    // Every launch's visits stand, and half the CPU time gives half the rate.
    let one = cell(&m.cells, 1.0);
    let launches: std::collections::BTreeSet<u32> = one.visits.iter().map(|v| v.launch).collect();
    assert_eq!(launches.len(), 3, "{one:?}");
    let relative = one.relative.as_ref().expect("a relative rate");
    assert!((0.35..0.7).contains(&relative.rate), "{relative:?}");
}
