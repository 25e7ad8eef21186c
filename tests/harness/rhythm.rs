//! Windows that fit the job's rhythm: a job whose batches arrive in bursts (many loader workers
//! delivering together) is measured over whole bursts, steady with a tight interval, where
//! windows cut by time alone swing with where each burst fell; a job whose epochs start slowly
//! (loader workers started afresh) is measured over whole epochs.

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

/// Epochs of 300 samples of a dataset read once and cached, a report every 0.1 s: 20 samples/s
/// for 1.5 s while the epoch's workers start, then 100 samples/s for 2.7 s. The job gets 300
/// samples every 4.2 s (71.4/s); its 1-s windows swing between 20 and 100/s and never settle,
/// and the last three, which a steady rate would be taken over, give 60-92/s depending on where
/// the measurement stopped.
const SLOW_START_JOB: &str = "import json,os,time\nopen('data/part-0.bin','rb').read()\nf=open(os.environ['PROFILER_PROGRESS_FILE'],'a')\nstart=time.time()\ni=0\nk=0\nwhile True:\n    k+=1\n    i+=2 if (k-1)%42<15 else 10\n    time.sleep(max(0.0, start+k*0.1-time.time()))\n    f.write(json.dumps({'samples':i,'t':time.time()})+'\\n'); f.flush()\n";

#[test]
fn epochs_that_start_slowly_are_measured_whole() {
    require_caps!("epochs_that_start_slowly_are_measured_whole");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("epochs.py"), SLOW_START_JOB).unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/part-0.bin"), vec![7u8; 1 << 16]).unwrap();
    let text = "schema_version = 1\nname = \"epochs\"\ncommand = [\"python3\", \"epochs.py\"]\n\
                [dataset]\npath = \"data\"\nsamples = 300\n\
                [throughput]\nprotocol = \"progress-file\"\n[measure]\nwarmup_s = 2\n\
                window_s = 1\nsteady_windows = 3\nsteady_cv = 0.05\nmax_s = 20\n\
                startup_timeout_s = 20\nlaunches = 1\n[sweep]\ncpu = [1]\n";
    let path = dir.path().join("epochs.toml");
    std::fs::write(&path, text).unwrap();
    let spec = parse_spec(text, &path).expect("test spec is valid");
    let outcome = sweep(
        spec,
        dir.path().join("m.matrix.jsonl"),
        "profiler-test-epochs",
    );
    let c = cell(&outcome.matrix.cells, 1.0);
    let t = c.throughput.as_ref().expect("measured");
    eprintln!("slow-start epochs: {t:?}, note {:?}", c.note);
    // Whole epochs: the ones the unsettled windows went through (four in 20 s), or, where the
    // launch's cold start left the dataset partly cached at the measurement, the one epoch
    // that spans the steady windows. Windows cut by time alone span 3 s.
    let epochs = t.measured_s / 4.2;
    assert!(
        epochs >= 0.97 && (epochs - epochs.round()).abs() < 0.04,
        "over whole epochs: {t:?}"
    );
    assert!(c.note.is_none(), "whole epochs, not unsteady: {:?}", c.note);
    let truth = 300.0 / 4.2;
    assert!(
        (t.samples_per_s / truth - 1.0).abs() < 0.015,
        "{} vs {truth} over whole epochs",
        t.samples_per_s
    );
}
