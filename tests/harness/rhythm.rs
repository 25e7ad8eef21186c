//! Windows that fit the job's rhythm: a job whose batches arrive in bursts (many loader workers
//! delivering together) is measured over whole bursts, steady with a tight interval, where
//! windows cut by time alone swing with where each burst fell.

use super::*;

/// Bursts of 16 steps of 8 samples, 40 ms apart, one burst every 1.3 s: 98.5 samples/s over
/// whole bursts.
const BURSTY_JOB: &str = "import json,os,time\nf=open(os.environ['PROFILER_PROGRESS_FILE'],'a')\nstart=time.time()\ni=0\nk=0\nwhile True:\n    for _ in range(16):\n        i+=1\n        f.write(json.dumps({'samples':i*8,'t':time.time()})+'\\n'); f.flush(); time.sleep(0.04)\n    k+=1\n    time.sleep(max(0.0, start+k*1.3-time.time()))\n";

#[test]
fn bursts_of_progress_are_measured_over_whole_bursts() {
    require_caps!("bursts_of_progress_are_measured_over_whole_bursts");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bursty.py"), BURSTY_JOB).unwrap();
    // Cut by time alone, 1.5-s windows end inside a burst: their rates alternate between
    // about 112 and 68 samples/s (CV 0.18), never within steady_cv = 0.05.
    let text = "schema_version = 1\nname = \"bursty\"\ncommand = [\"python3\", \"bursty.py\"]\n\
                [throughput]\nprotocol = \"progress-file\"\n[measure]\nwarmup_s = 1\n\
                window_s = 1.5\nsteady_windows = 4\nsteady_cv = 0.05\nmax_s = 25\n\
                startup_timeout_s = 20\nlaunches = 1\n[sweep]\ncpu = [1]\n";
    let path = dir.path().join("bursty.toml");
    std::fs::write(&path, text).unwrap();
    let spec = parse_spec(text, &path).expect("test spec is valid");
    let outcome = sweep(
        spec,
        dir.path().join("m.matrix.jsonl"),
        "profiler-test-bursty",
    );
    let c = cell(&outcome.matrix.cells, 1.0);
    let t = c.throughput.as_ref().expect("measured");
    eprintln!("bursty job: {t:?}, note {:?}", c.note);
    assert!(c.note.is_none(), "steady and undisturbed: {:?}", c.note);
    let truth = 16.0 * 8.0 / 1.3;
    assert!(
        (t.samples_per_s / truth - 1.0).abs() < 0.02,
        "{} vs {truth}",
        t.samples_per_s
    );
    let half = (t.ci95_high - t.ci95_low) / 2.0 / t.samples_per_s;
    assert!(half < 0.03, "interval ±{:.1}%", half * 100.0);
}
