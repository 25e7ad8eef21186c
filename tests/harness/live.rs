//! Live re-capping proven per job: a job that sizes itself from the CPUs it sees at start is
//! caught by the live check and the sweep relaunches; one that follows its cap keeps re-capping.
//! Also: a stopped job gets SIGTERM before SIGKILL.

use super::*;

/// A job in the way of OpenMP: one worker process per CPU it sees at start, in lock-step, each
/// spinning at a barrier until all have finished their chunk. Re-capped to fewer cores than
/// workers, spinners burn the time the others need. `--workers N` fixes the count instead.
/// On SIGTERM it appends a line to `stopped.txt` (a checkpoint) before exiting.
const LOCKSTEP_JOB: &str = r#"
import json, multiprocessing as mp, os, signal, sys, time
n = int(sys.argv[2]) if len(sys.argv) > 2 else len(os.sched_getaffinity(0))
counts = mp.Array('q', n, lock=False)
def chunk():
    x = 0
    for i in range(20000):
        x += i * i
def worker(i):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        chunk()
        counts[i] += 1
        mine = counts[i]
        while min(counts[:]) < mine:
            pass
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
counts_0 = 0
while True:
    chunk()
    counts[0] += 1
    mine = counts[0]
    while min(counts[:]) < mine:
        pass
    if mine % 5 == 0:
        progress.write(json.dumps({'samples': mine * n, 't': time.time()}) + '\n')
        progress.flush()
"#;

fn lockstep_spec(dir: &Path, name: &str, args: &str, sweep: &str) -> LoadedSpec {
    std::fs::write(dir.join("lockstep.py"), LOCKSTEP_JOB).unwrap();
    let text = format!(
        "schema_version = 1\nname = \"{name}\"\ncommand = [\"python3\", \"lockstep.py\"{args}]\n\
         [throughput]\nprotocol = \"progress-file\"\n[measure]\nwarmup_s = 1\nsettle_s = 1\n\
         window_s = 0.5\nsteady_windows = 4\nsteady_cv = 0.08\nmax_s = 8\nstartup_timeout_s = 20\n\
         stop_grace_s = 5\n[sweep]\n{sweep}\n"
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, &text).unwrap();
    parse_spec(&text, &path).expect("test spec is valid")
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
    let live = lockstep_spec(dir.path(), "lockstep", "", "cpu = [2, 1]\nmode = \"live\"");
    let out = dir.path().join("live.matrix.jsonl");
    let outcome = run_sweep(
        &options(live, out.clone(), "profiler-test-live-check"),
        &mut Silent,
        &AtomicBool::new(false),
    )
    .expect("live sweep runs");
    let header = load_matrix(&out).unwrap().header;
    let check = header.live_check.expect("the live check is recorded");
    eprintln!("live check: {check:?}");
    assert_eq!(check.outcome, "relaunch", "{check:?}");
    assert!(
        check.live_samples_per_s < 0.8 * check.relaunch_samples_per_s,
        "{check:?}"
    );
    assert_eq!(outcome.launches, 2, "the live launch and the check's");

    let reference = lockstep_spec(
        dir.path(),
        "lockstep",
        "",
        "cpu = [2, 1]\nmode = \"relaunch\"",
    );
    let out_ref = dir.path().join("relaunch.matrix.jsonl");
    run_sweep(
        &options(reference, out_ref.clone(), "profiler-test-live-check"),
        &mut Silent,
        &AtomicBool::new(false),
    )
    .expect("relaunch sweep runs");
    // The live sweep's 1-CPU cell is the fresh launch's, and agrees with a relaunched sweep
    // (the re-capped rate is a quarter of it). Two fresh launches of this job differ by 10% and
    // more on a 2-core machine, so the bound is 25%. (Lock-step spinning makes this job very
    // sensitive to anything else on the machine, so the 2-CPU cells of two sweeps are not
    // compared.)
    let (a, b) = (outcome.matrix.cells, load_matrix(&out_ref).unwrap().cells);
    let (l, r) = (rate(&a, 1.0), rate(&b, 1.0));
    eprintln!("1 CPU: live sweep {l:.1}, relaunched sweep {r:.1} samples/s");
    assert!((l / r - 1.0).abs() < 0.25, "1 CPU: {l} vs {r}");
    assert!(rate(&a, 2.0) > 0.0);
    assert_no_runs_under("profiler-test-live-check");
}

/// The rates at 0.5 and 0.25 CPUs must be a half and a quarter of the rate at 1 CPU. Two
/// fresh launches of this job can differ by 10-20% on a shared 2-core machine (something else
/// on the job's core takes from a full-core cap, not from a half-core one), so a ratio out of
/// bounds is measured once more: a cap that is not applied fails both attempts.
#[test]
fn a_job_that_follows_its_cap_keeps_live_mode_and_gets_sigterm() {
    require_caps!("a_job_that_follows_its_cap_keeps_live_mode_and_gets_sigterm");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    for attempt in 1..=2 {
        let dir = tempfile::tempdir().unwrap();
        // One worker whatever the CPUs: re-capping is valid.
        let spec = lockstep_spec(
            dir.path(),
            "single",
            r#", "--workers", "1""#,
            "cpu = [1, 0.5, 0.25]\nmode = \"live\"",
        );
        let out = dir.path().join("m.matrix.jsonl");
        let outcome = run_sweep(
            &options(spec, out.clone(), "profiler-test-live-ok"),
            &mut Silent,
            &AtomicBool::new(false),
        )
        .expect("sweep runs");
        let m = load_matrix(&out).unwrap();
        let check = m.header.live_check.expect("the live check is recorded");
        eprintln!("attempt {attempt}: live check: {check:?}");
        assert_eq!(check.outcome, "live", "{check:?}");
        assert_eq!(check.cpu, 0.25, "checked at the lowest level");
        // 1 -> 0.25 re-capped, 0.25 fresh for the check, then 0.5 on a launch of its own.
        assert_eq!(outcome.launches, 3);
        let stopped = std::fs::read_to_string(dir.path().join("stopped.txt")).unwrap_or_default();
        assert_eq!(
            stopped.lines().count(),
            3,
            "every launch is stopped with SIGTERM first: {stopped:?}"
        );
        let (r1, r05, r025) = (
            rate(&m.cells, 1.0),
            rate(&m.cells, 0.5),
            rate(&m.cells, 0.25),
        );
        let (half, quarter) = (r05 / r1, r025 / r1);
        let report = format!(
            "1 CPU {r1:.1}, 0.5 CPU {r05:.1} ({half:.3}), 0.25 CPU {r025:.1} ({quarter:.3}) \
             samples/s; interference {:?}",
            m.cells
                .iter()
                .map(|c| (c.cpu, c.interference.clone()))
                .collect::<Vec<_>>()
        );
        eprintln!("{report}");
        if (0.4..0.6).contains(&half) && (0.18..0.32).contains(&quarter) {
            return;
        }
        assert!(attempt < 2, "the rates do not follow the caps: {report}");
    }
}
