//! A sweep loses nothing, leaks nothing and never panics: failures early in a sweep, broken
//! measurements, interrupted and killed profilers, sweeps side by side.

use super::*;

/// A job that reports 100 samples/s on the progress file until killed.
const STEADY_JOB: &str = "import json,os,time\nf=open(os.environ['PROFILER_PROGRESS_FILE'],'a')\ni=0\nwhile True:\n    i+=1\n    f.write(json.dumps({'samples':i*5,'t':time.time()})+'\\n'); f.flush(); time.sleep(0.05)\n";

/// A spec with short measurements; `command` is a TOML array, `tail` goes after `[sweep]`.
fn quick_spec(
    dir: &Path,
    name: &str,
    command: &str,
    dataset: Option<&Path>,
    tail: &str,
) -> LoadedSpec {
    std::fs::write(dir.join("steady.py"), STEADY_JOB).unwrap();
    let dataset = dataset
        .map(|d| format!("[dataset]\npath = \"{}\"\n", d.display()))
        .unwrap_or_default();
    let text = format!(
        "schema_version = 1\nname = \"{name}\"\ncommand = {command}\n{dataset}[throughput]\nprotocol = \"progress-file\"\n[measure]\nwarmup_s = 0.5\nsettle_s = 0.2\nwindow_s = 0.5\nsteady_windows = 3\nsteady_cv = 0.5\nmax_s = 3\nstartup_timeout_s = 10\n[sweep]\n{tail}\n"
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, &text).unwrap();
    parse_spec(&text, &path).expect("test spec is valid")
}

#[test]
fn levels_relative_to_the_dataset_stay_resumable_when_the_first_launch_dies() {
    require_caps!("levels_relative_to_the_dataset_stay_resumable_when_the_first_launch_dies");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let data = dataset();
    let spec = quick_spec(
        dir.path(),
        "dies-early",
        r#"["/bin/sh", "-c", "echo broken >&2; exit 1"]"#,
        Some(&data),
        "cpu = [1]\nmemory_pct_of_dataset = [150, 50]\nmemory = \"measure\"\nmode = \"relaunch\"",
    );
    let out = dir.path().join("m.matrix.jsonl");
    let opts = options(spec, out.clone(), "profiler-test-dies-early");
    let outcome = run_sweep(&opts, &mut Silent, &AtomicBool::new(false)).expect("sweep runs");
    let on_disk = load_matrix(&out).expect("the file loads");
    let levels = &on_disk.header.axes.memory_bytes;
    assert_eq!(levels.len(), 2, "{:?}", on_disk.header);
    assert!(levels.iter().all(|&b| b > 0), "{levels:?}");
    assert_eq!(on_disk.cells.len(), 2, "{:?}", on_disk.cells);
    for c in &on_disk.cells {
        assert_eq!(c.source, CellSource::Failed, "{c:?}");
        assert!(levels.contains(&c.memory_bytes), "{c:?} not on {levels:?}");
    }
    assert!(
        on_disk
            .header
            .provenance
            .as_deref()
            .unwrap_or("")
            .contains("resident memory"),
        "{:?}",
        on_disk.header.provenance
    );
    assert_eq!(outcome.matrix.cells, on_disk.cells);
    let resumed = run_sweep(
        &SweepOptions {
            resume: true,
            ..opts
        },
        &mut Silent,
        &AtomicBool::new(false),
    )
    .expect("the file resumes");
    assert_eq!(resumed.launches, 0, "nothing left to run");
}

#[test]
fn without_a_storage_measurement_no_lower_level_is_modelled() {
    require_caps!("without_a_storage_measurement_no_lower_level_is_modelled");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // A dataset with no file: its storage bandwidth cannot be measured.
    let empty = dir.path().join("empty-dataset");
    std::fs::create_dir(&empty).unwrap();
    let spec = quick_spec(
        dir.path(),
        "no-storage",
        r#"["python3", "steady.py"]"#,
        Some(&empty),
        "cpu = [1]\nmemory_gib = [1, 0.5]",
    );
    let out = dir.path().join("m.matrix.jsonl");
    let outcome = run_sweep(
        &options(spec, out.clone(), "profiler-test-no-storage"),
        &mut Silent,
        &AtomicBool::new(false),
    )
    .expect("sweep runs");
    let cells = load_matrix(&out).unwrap().cells;
    assert_eq!(cells, outcome.matrix.cells);
    assert!(
        cells.iter().any(|c| c.source == CellSource::Measured),
        "{cells:?}"
    );
    let modelled: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.source == CellSource::Modelled)
        .collect();
    assert!(
        modelled.is_empty(),
        "modelled without a model: {modelled:?}"
    );
}

#[test]
fn no_caps_exits_non_zero_with_the_reason_when_the_run_fails() {
    let dir = tempfile::tempdir().unwrap();
    quick_spec(
        dir.path(),
        "no-caps-fails",
        r#"["/bin/sh", "-c", "echo 'CUDA error: out of luck' >&2; exit 3"]"#,
        None,
        "cpu = [1]",
    );
    let run = |name: &str| {
        Command::new(PROFILER)
            .arg("sweep")
            .arg("--job")
            .arg(dir.path().join(format!("{name}.toml")))
            .arg("--no-caps")
            .arg("-o")
            .arg(dir.path().join(format!("{name}.matrix.jsonl")))
            .output()
            .unwrap()
    };
    let failed = run("no-caps-fails");
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(!failed.status.success(), "{stderr}");
    assert!(
        stderr.contains("exited with status 3") && stderr.contains("out of luck"),
        "{stderr}"
    );
    quick_spec(
        dir.path(),
        "no-caps-works",
        r#"["python3", "steady.py"]"#,
        None,
        "cpu = [1]",
    );
    let worked = run("no-caps-works");
    let stdout = String::from_utf8_lossy(&worked.stdout);
    assert!(
        worked.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&worked.stderr)
    );
    assert!(stdout.contains("samples/s"), "{stdout}");
}
