use super::*;
use crate::harness::sweep::Silent;
use std::path::Path;

/// A GPU inventory that answers what it is told.
struct FakeGpus {
    facts: Result<GpuFacts, String>,
    gpm: Result<f64, String>,
}

impl GpuInventory for FakeGpus {
    fn facts(&self) -> Result<GpuFacts, String> {
        self.facts.clone()
    }
    fn gpm_sm_activity(&self, _index: u32) -> Result<f64, String> {
        self.gpm.clone()
    }
}

fn h100(gpm: bool, mig: bool) -> GpuFacts {
    GpuFacts {
        driver_version: "550.54.15".into(),
        nvml_version: "12.550.54.15".into(),
        cuda_driver_version: "12.4".into(),
        devices: vec![DeviceFacts {
            index: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            uuid: "GPU-0f2c".into(),
            memory_total_bytes: 80 << 30,
            compute_capability: "9.0".into(),
            gpm_supported: gpm,
            mig_enabled: mig,
        }],
    }
}

fn no_gpu() -> FakeGpus {
    FakeGpus {
        facts: Err("libnvidia-ml.so.1 not found".into()),
        gpm: Err("unreachable".into()),
    }
}

#[test]
fn no_driver_fails_with_the_reason_and_skips_gpm() {
    let gpus = no_gpu();
    let facts = gpus.facts();
    let driver = nvml_facts::driver_check(&facts);
    assert_eq!(driver.verdict, Verdict::Fail);
    assert!(driver.facts[0].contains("libnvidia-ml.so.1 not found"));
    assert!(driver.fix.as_deref().unwrap().contains("nvidia-smi"));
    assert_eq!(nvml_facts::gpm_check(&facts, &gpus).verdict, Verdict::Skip);
}

#[test]
fn an_h100_passes_and_lists_its_gpu() {
    let gpus = FakeGpus {
        facts: Ok(h100(true, false)),
        gpm: Ok(37.5),
    };
    let facts = gpus.facts();
    let driver = nvml_facts::driver_check(&facts);
    assert_eq!(driver.verdict, Verdict::Pass, "{driver:?}");
    assert!(driver.facts[0].contains("driver 550.54.15"));
    assert!(driver.facts[1].contains("GPU 0: NVIDIA H100 80GB HBM3, 80 GiB"));
    let gpm = nvml_facts::gpm_check(&facts, &gpus);
    assert_eq!(gpm.verdict, Verdict::Pass);
    assert!(gpm.facts[0].contains("37.5%"));
}

#[test]
fn mig_and_missing_gpm_warn_and_broken_gpm_fails() {
    let mig = Ok(h100(true, true));
    assert_eq!(nvml_facts::driver_check(&mig).verdict, Verdict::Warn);
    let old = FakeGpus {
        facts: Ok(h100(false, false)),
        gpm: Err("not supported".into()),
    };
    let check = nvml_facts::gpm_check(&old.facts(), &old);
    assert_eq!(check.verdict, Verdict::Warn);
    assert!(check.fix.unwrap().contains("Hopper"));
    let broken = FakeGpus {
        facts: Ok(h100(true, false)),
        gpm: Err("Insufficient Permissions".into()),
    };
    let check = nvml_facts::gpm_check(&broken.facts(), &broken);
    assert_eq!(check.verdict, Verdict::Fail);
    assert!(check.facts[0].contains("Insufficient Permissions"));
    let nan = FakeGpus {
        facts: Ok(h100(true, false)),
        gpm: Ok(f64::NAN),
    };
    assert_eq!(
        nvml_facts::gpm_check(&nan.facts(), &nan).verdict,
        Verdict::Fail
    );
}

fn resnet18() -> crate::spec::LoadedSpec {
    crate::spec::load_spec(&Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/resnet18.toml"))
        .expect("the shipped spec loads")
}

#[test]
fn the_short_sweep_keeps_the_lowest_and_the_highest_level_that_fit() {
    let mut spec = resnet18();
    assert_eq!(
        short_sweep::shorten(&mut spec, 16.0),
        vec![2.0, 16.0],
        "resnet18.toml sweeps 2..16 CPUs"
    );
    assert!(spec.spec.sweep.memory_pct_of_dataset.is_none());
    assert!(spec.spec.measure.max_s <= 45.0 && spec.spec.measure.warmup_s <= 20.0);
    assert!(spec.spec.name.starts_with("doctor-"));
    assert_eq!(
        short_sweep::shorten(&mut resnet18(), 6.0),
        vec![2.0, 6.0],
        "levels above the machine's CPUs are left out"
    );
    assert_eq!(short_sweep::shorten(&mut resnet18(), 2.0), vec![2.0]);
    assert_eq!(
        short_sweep::shorten(&mut resnet18(), 1.0),
        vec![1.0],
        "a machine smaller than every level is swept at what it has"
    );
}

#[test]
fn without_a_gpu_the_sweep_is_skipped_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let opts = DoctorOptions {
        job: Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/resnet18.toml"),
        sweep: true,
        output_dir: dir.path().into(),
        cgroup_parent: "profiler-test-doctor".into(),
    };
    let report = run_doctor(&opts, &no_gpu(), &mut Silent, &AtomicBool::new(false));
    let names: Vec<&str> = report.checks.iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        [
            "machine kind",
            "NVIDIA driver and NVML",
            "GPM (per-SM activity)",
            "cgroups",
            "cgroup caps",
            "host speed",
            "PyTorch",
            "GPU sweep"
        ]
    );
    let sweep = report.checks.last().unwrap();
    assert_eq!(sweep.verdict, Verdict::Skip);
    assert!(
        sweep.facts[0].contains("no GPU on this machine"),
        "{sweep:?}"
    );
    assert!(report.failed(), "no driver is a failure on a GPU check");
    let text = render(&report);
    assert!(text.contains("FAIL  NVIDIA driver and NVML"), "{text}");
    assert!(text.contains("not ready: "), "{text}");
    assert!(
        !dir.path().join("doctor-resnet18.matrix.jsonl").exists(),
        "a skipped sweep writes nothing"
    );
}

#[test]
fn a_missing_spec_fails_the_sweep_check_with_what_to_copy() {
    let dir = tempfile::tempdir().unwrap();
    let opts = DoctorOptions {
        job: dir.path().join("workloads/resnet18.toml"),
        sweep: true,
        output_dir: dir.path().into(),
        cgroup_parent: "profiler-test-doctor".into(),
    };
    let gpus = FakeGpus {
        facts: Ok(h100(true, false)),
        gpm: Ok(0.0),
    };
    let report = run_doctor(&opts, &gpus, &mut Silent, &AtomicBool::new(false));
    let sweep = report.checks.last().unwrap();
    assert_eq!(sweep.verdict, Verdict::Fail);
    assert!(sweep.fix.as_deref().unwrap().contains("copy workloads/"));
    let torch = report.checks.iter().find(|c| c.name == "PyTorch").unwrap();
    assert_eq!(torch.verdict, Verdict::Skip);
}

#[test]
fn the_report_passes_only_when_nothing_failed_or_was_skipped() {
    let pass = Check::pass("a", vec!["fine".into()]);
    let report = Report {
        checks: vec![pass.clone()],
    };
    assert!(!report.failed());
    assert!(render(&report).contains("ready: this machine can profile GPU jobs"));
    let report = Report {
        checks: vec![
            pass,
            Check::with("b", Verdict::Skip, vec!["no GPU".into()], "later"),
        ],
    };
    let text = render(&report);
    assert!(!report.failed());
    assert!(text.contains("1 could not run here"), "{text}");
    assert!(text.contains("what to do: later"), "{text}");
}
