//! `profiler doctor` as a user runs it: on a machine without a GPU it must say so, skip the GPU
//! sweep, and still check the cgroups for real (a CPU-bound process held to a 0.5-CPU cap).

use super::*;

#[test]
fn doctor_checks_the_cgroups_and_says_when_there_is_no_gpu() {
    require_caps!("doctor_checks_the_cgroups_and_says_when_there_is_no_gpu");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(PROFILER)
        .args(["doctor", "--cgroup-parent", "profiler-test-doctor", "--job"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/resnet18.toml"))
        .arg("--output-dir")
        .arg(out_dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("profiler runs");
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert!(text.contains("PASS  cgroups\n"), "{text}");
    assert!(
        text.contains("PASS  cgroup caps\n"),
        "a 0.5-CPU cap must hold a CPU-bound process to 0.5 CPU:\n{text}"
    );
    // The host's speed beside a capped process: a pass on a quiet host, a warning in a
    // spell, with the spreads measured either way.
    assert!(
        text.contains("PASS  host speed\n") || text.contains("WARN  host speed\n"),
        "{text}"
    );
    assert!(
        text.contains("the probe's speed beside it spread ±"),
        "{text}"
    );
    let no_gpu = text.contains("FAIL  NVIDIA driver and NVML");
    if no_gpu {
        assert!(
            text.contains("SKIP  GPU sweep\n      no GPU on this machine"),
            "{text}"
        );
        assert!(text.contains("not ready: "), "{text}");
        assert!(!out.status.success(), "a failed check is exit status 1");
        assert_eq!(
            std::fs::read_dir(out_dir.path()).unwrap().count(),
            0,
            "a skipped sweep writes nothing"
        );
    }
    assert_eq!(
        out.status.success(),
        !text.lines().any(|l| l.starts_with("FAIL ")),
        "exit status 0 exactly when no check failed:\n{text}"
    );
    // Nothing left behind in the profiler's parent cgroup.
    let parents = profiler::harness::cgroup::parent_dirs_of("profiler-test-doctor").unwrap();
    assert!(parents.iter().all(|p| !p.exists()), "{parents:?}");
}
