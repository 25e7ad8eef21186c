//! The input pipeline as an elastic job: it takes a new batch size from its `--batch-file`
//! while it runs, as an elastic scheduler's decision would reach it at iteration boundaries.

use super::*;

#[test]
fn the_input_pipeline_takes_a_new_batch_size_while_it_runs() {
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (control, progress) = (dir.path().join("batch"), dir.path().join("p.jsonl"));
    let child = Command::new(INPUT_PIPELINE)
        .args(["train", "--data"])
        .arg(dataset())
        .args([
            "--workers",
            "2",
            "--batch",
            "4",
            "--crop",
            "64",
            "--step-ms",
            "50",
        ])
        .args(["--prefetch", "1", "--max-seconds", "9", "--batch-file"])
        .arg(&control)
        .env("PROFILER_PROGRESS_FILE", &progress)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // No file yet: --batch stands. Then the scheme's decision, written as a deploy writes it.
    std::thread::sleep(std::time::Duration::from_secs(4));
    std::fs::write(&control, "batch=16\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("batch 16 from the next batches built"),
        "{stderr}"
    );
    // The job's own count: each iteration's samples, in order.
    let lines = std::fs::read_to_string(&progress).unwrap();
    let counts: Vec<(f64, f64)> = (lines.lines())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["samples"].as_f64().unwrap(), v["t"].as_f64().unwrap())
        })
        .collect();
    let steps: Vec<f64> = counts.windows(2).map(|w| w[1].0 - w[0].0).collect();
    let (first, last) = (&steps[..20], &steps[steps.len() - 20..]);
    assert!(first.iter().all(|s| *s == 4.0), "{first:?}");
    assert!(last.iter().all(|s| *s == 16.0), "{last:?}");
    // The step stays 50 ms, so the rate follows the batch: about four times as many samples a
    // second after the change.
    let rate = |c: &[(f64, f64)]| (c[c.len() - 1].0 - c[0].0) / (c[c.len() - 1].1 - c[0].1);
    let (before, after) = (rate(&counts[..20]), rate(&counts[counts.len() - 20..]));
    assert!(
        (3.0..5.0).contains(&(after / before)),
        "{before} -> {after}"
    );
}
