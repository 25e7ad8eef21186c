//! `profiler replay --grid --slurm`: the same grid as a job array gives the same summary table,
//! byte for byte, as a local run; Ctrl-C while it waits cancels the array and the merge job.

use crate::cluster::Cluster;
use std::io::{BufRead, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PROFILER: &str = env!("CARGO_BIN_EXE_profiler");
/// 100 small synthetic scenarios (also run locally by `tests/replay/grid.rs`).
const GRID_100: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/grid-100.toml");

/// Straight to stderr: the test harness hides eprintln! output of passing tests.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Job ids still known to squeue (pending, running or completing) among `ids`.
fn queued(c: &Cluster, ids: &[&str]) -> String {
    let out = c
        .cmd("squeue")
        .args(["-h", "-o", "%i %T", "-j", &ids.join(",")])
        .output()
        .expect("squeue runs");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

pub fn grid_as_job_array_matches_the_local_run(c: &Cluster) {
    let d = tempfile::tempdir_in("/tmp").unwrap();
    let (local, array) = (d.path().join("local"), d.path().join("array"));
    let t = Instant::now();
    let out = Command::new(PROFILER)
        .args(["replay", "--grid", GRID_100, "--out"])
        .arg(&local)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let local_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let out = c
        .cmd(PROFILER)
        .args(["replay", "--grid", GRID_100, "--slurm", "--chunk", "10"])
        .args(["--partition", "local", "--mem-per-task", "500M", "--out"])
        .arg(&array)
        .output()
        .unwrap();
    let array_s = t.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let logs = |dir: &Path| {
        std::fs::read_dir(dir.join("slurm"))
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "out"))
                    .map(|e| {
                        format!(
                            "{}:\n{}",
                            e.path().display(),
                            std::fs::read_to_string(e.path()).unwrap_or_default()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    };
    assert!(
        out.status.success(),
        "--slurm failed: {stderr}\n{}",
        logs(&array)
    );
    assert!(
        stderr.contains("10 tasks of up to 10 scenarios (100 in all)"),
        "{stderr}"
    );
    say(&format!(
        "grid of 100 scenarios: local {local_s:.2} s, Slurm array of 10 tasks + merge {array_s:.2} s"
    ));

    let csv = |dir: &Path| std::fs::read(dir.join("summary.csv")).unwrap();
    let (a, b) = (csv(&local), csv(&array));
    assert_eq!(String::from_utf8_lossy(&a).lines().count(), 101);
    assert!(a == b, "local and Slurm summaries differ");
    for i in 0..10 {
        assert!(array.join(format!("parts/part-{i:05}.parquet")).exists());
        assert!(array.join(format!("slurm/task-{i}.out")).exists());
    }
    for f in ["mean_jct_vs_load.synergy-1.20-70-10.png", "summary.parquet"] {
        assert!(array.join(f).exists(), "{f}");
    }
}

pub fn ctrl_c_cancels_the_array_and_the_merge(c: &Cluster) {
    let d = tempfile::tempdir_in("/tmp").unwrap();
    // Scenarios far too long to finish before the interrupt.
    let grid = d.path().join("slow.toml");
    std::fs::write(
        &grid,
        "clusters = [\"synergy-100\"]\nloads = [3000]\nseeds = [0, 1, 2, 3]\n\
         schemes = [\"fifo+proportional\"]\n[settings]\njobs = 5000000\n",
    )
    .unwrap();
    let mut child = c
        .cmd(PROFILER)
        .args(["replay", "--grid"])
        .arg(&grid)
        .args(["--slurm", "--chunk", "1", "--mem-per-task", "500M", "--out"])
        .arg(d.path().join("out"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (mut array, mut merge, mut seen) = (String::new(), String::new(), String::new());
    for line in stderr.by_ref().lines() {
        let line = line.unwrap();
        seen += &line;
        seen.push('\n');
        if let Some(rest) = line.strip_prefix("submitted array job ") {
            array = rest.split(':').next().unwrap().to_owned();
        }
        if let Some(rest) = line.strip_prefix("submitted merge job ") {
            merge = rest.split(' ').next().unwrap().to_owned();
            break;
        }
    }
    assert!(!array.is_empty() && !merge.is_empty(), "{seen}");
    // Let a task start running.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !queued(c, &[&array]).contains("RUNNING") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        queued(c, &[&array]).contains("RUNNING"),
        "{}",
        queued(c, &[&array])
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{seen}{rest}");
    assert!(
        rest.contains(&format!(
            "interrupted: cancelled Slurm jobs {array} {merge}"
        )),
        "{rest}"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !queued(c, &[&array, &merge]).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(queued(c, &[&array, &merge]), "", "jobs left after Ctrl-C");
}

/// A task that fails (here a scenario past its horizon) cancels the merge, and the submitting
/// command fails saying so and where the logs are.
pub fn a_failed_task_fails_the_submission(c: &Cluster) {
    let d = tempfile::tempdir_in("/tmp").unwrap();
    let grid = d.path().join("failing.toml");
    std::fs::write(
        &grid,
        "clusters = [\"synergy-1\"]\nloads = [1]\nseeds = [0, 1]\nschemes = [\"fifo+tune\"]\n\
         [settings]\njobs = 3\nhorizon = \"1s\"\n",
    )
    .unwrap();
    let out = c
        .cmd(PROFILER)
        .args(["replay", "--grid"])
        .arg(&grid)
        .args(["--slurm", "--chunk", "1", "--mem-per-task", "500M", "--out"])
        .arg(d.path().join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("ended CANCELLED") && stderr.contains("failed or was cancelled"),
        "{stderr}"
    );
    let log = std::fs::read_to_string(d.path().join("out/slurm/task-0.out")).unwrap();
    assert!(log.contains("scenario 0 (synergy-1/load=1/"), "{log}");
    assert!(!d.path().join("out/summary.csv").exists());
}
