//! `profiler deploy` on this machine: the local backend caps, freezes, thaws and removes a real
//! job, and a deploy killed outright leaves nothing once the next one starts.

use crate::{INPUT_PIPELINE, MACHINE, PROFILER, dataset};
use profiler::deploy::backend::{Backend, DeployJob, Grant, Reported};
use profiler::deploy::journal::RoundRecord;
use profiler::deploy::local::LocalBackend;
use profiler::harness::cgroup::parent_dirs_of;
use profiler::spec::{LoadedSpec, parse_spec};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The input pipeline as a deployed job: fixed workers, a 5 ms emulated accelerator step.
fn job_spec(dir: &Path, name: &str) -> LoadedSpec {
    job_spec_with(dir, name, "")
}

/// [`job_spec`] with more `[sweep]` keys.
fn job_spec_with(dir: &Path, name: &str, sweep: &str) -> LoadedSpec {
    let text = format!(
        r#"schema_version = 1
name = "{name}"
command = ["{bin}", "train", "--data", "{{dataset}}", "--workers", "2", "--batch", "16", "--crop", "112", "--prefetch", "1", "--step-ms", "5"]
batch_size_per_gpu = 16
[dataset]
path = "{data}"
[throughput]
protocol = "progress-file"
[sweep]
cpu = [1]
{sweep}
"#,
        bin = INPUT_PIPELINE,
        data = dataset().display(),
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, &text).unwrap();
    parse_spec(&text, &path).expect("test spec is valid")
}

/// The run cgroups under `parent` (directories whose name holds `job`) that exist now.
fn job_cgroups(parent: &str) -> Vec<PathBuf> {
    parent_dirs_of(parent)
        .unwrap()
        .iter()
        .filter_map(|p| std::fs::read_dir(p).ok())
        .flat_map(|d| d.flatten())
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains("-job"))
        })
        .collect()
}

fn samples(backend: &mut LocalBackend, job: &DeployJob, seen: &mut Vec<Reported>) -> f64 {
    backend.poll(job, seen).expect("poll");
    seen.last().map_or(0.0, |r| r.samples)
}

/// One job through everything a deploy does to it, each step checked by the job's own count.
#[test]
fn a_local_job_is_capped_frozen_thawed_and_removed() {
    require_caps!("a_local_job_is_capped_frozen_thawed_and_removed");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let parent = "profiler-test-deploy";
    let epoch = profiler::harness::measure::job_output::now_unix_s();
    let mut backend = LocalBackend::open(parent, dir.path().join("logs"), epoch).unwrap();
    let job = DeployJob {
        id: 7,
        model: "pipeline".into(),
        work_samples: 1e9,
        spec: Arc::new(job_spec(dir.path(), "pipeline")),
    };
    let cpus = backend.cpus().to_vec();
    let grant = |cores: f64, n: usize| Grant {
        server: 0,
        cpus: cores,
        cpu_ids: cpus[..n.min(cpus.len())].to_vec(),
        mem_bytes: 1 << 30,
        gpus: 1,
        gpu_ids: Vec::new(),
    };
    backend.start(&job, &grant(1.0, 1), 0.0).unwrap();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while samples(&mut backend, &job, &mut seen) < 500.0 {
        assert!(Instant::now() < deadline, "no progress in 30 s: {seen:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        !job_cgroups(parent).is_empty(),
        "the job runs in a cgroup of its own"
    );

    backend.suspend(&job).unwrap();
    // What was written before the freeze lands; then nothing, for two seconds.
    std::thread::sleep(Duration::from_millis(300));
    let frozen_at = samples(&mut backend, &job, &mut seen);
    std::thread::sleep(Duration::from_secs(2));
    let after = samples(&mut backend, &job, &mut seen);
    assert_eq!(after, frozen_at, "a frozen job made progress");

    backend.regrant(&job, &grant(2.0, 2)).unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let thawed = samples(&mut backend, &job, &mut seen);
    assert!(
        thawed > after + 100.0,
        "thawed, it runs again: {after} -> {thawed}"
    );

    backend.stop(&job);
    assert!(
        job_cgroups(parent).is_empty(),
        "its cgroup is removed: {:?}",
        job_cgroups(parent)
    );
}

/// The trace, cluster, matrix and job spec of a small deploy in `dir`: `jobs` input-pipeline
/// jobs of `iterations` batches each on one 2-CPU server with two accelerator slots.
fn small_deploy(dir: &Path, jobs: usize, iterations: u64) -> Vec<String> {
    let jobs_dir = dir.join("jobs");
    let profiles = dir.join("matrices");
    std::fs::create_dir_all(&jobs_dir).unwrap();
    std::fs::create_dir_all(&profiles).unwrap();
    job_spec(&jobs_dir, "input-pipeline");
    let matrix = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("matrices/examples/input-pipeline.measured.matrix.jsonl");
    std::fs::copy(&matrix, profiles.join("input-pipeline.matrix.jsonl")).unwrap();
    let trace: String = (0..jobs)
        .map(|i| format!("{i},input-pipeline,{}.0,{iterations},1\n", i * 2))
        .collect();
    std::fs::write(dir.join("trace.csv"), trace).unwrap();
    std::fs::write(
        dir.join("cluster.toml"),
        "[[group]]\ncount = 1\ngpus = 2\ncpus = 2\nmemory_gb = 1\n",
    )
    .unwrap();
    [
        "deploy",
        "--trace",
        &dir.join("trace.csv").display().to_string(),
        "--jobs",
        &jobs_dir.display().to_string(),
        "--profiles",
        &profiles.display().to_string(),
        "--cluster",
        &dir.join("cluster.toml").display().to_string(),
        "--round-s",
        "4",
        "--cgroup-parent",
        "profiler-test-deploy-kill",
        "--out",
        &dir.join("out").display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// A deploy's jobs table has a row for each of its `n` jobs, each finished and none failed.
fn assert_every_job_finished(jobs: &str, n: usize) {
    assert_eq!(jobs.lines().count(), n + 1, "every job's row: {jobs}");
    let header: Vec<&str> = jobs.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for row in jobs.lines().skip(1) {
        let f: Vec<&str> = row.split(',').collect();
        assert!(!f[col("finish_s")].is_empty(), "unfinished: {row}");
        assert!(f[col("failure")].is_empty(), "failed: {row}");
    }
}

/// SIGKILL gives the deploy no chance to stop its jobs or remove their cgroups: what is left
/// stays until the next deploy under the same parent starts, which kills it and removes the
/// cgroups first.
/// `--resume` then takes the rounds the killed deploy finished from its journal and runs the
/// rest, the jobs it was running going on from their counts.
#[test]
fn a_killed_deploy_leaves_nothing_and_resumes_where_it_was() {
    require_caps!("a_killed_deploy_leaves_nothing_and_resumes_where_it_was");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let parent = "profiler-test-deploy-kill";
    // Three jobs of 500 iterations (8,000 samples, ~15 s at 1 CPU) on two slots: two run,
    // the third waits.
    let mut args = small_deploy(dir.path(), 3, 500);
    // The shipped matrix is another machine's: this test is about the rounds.
    args.extend(["--allow-other-machine".into(), "--no-spot-check".into()]);
    let first_log = dir.path().join("first.log");
    let mut first = std::process::Command::new(PROFILER)
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&first_log).unwrap())
        .spawn()
        .unwrap();
    let pids = || crate::pids_in(&job_cgroups(parent));
    // Two rounds finished, two jobs running in their cgroups, then the deploy killed outright.
    let journal = dir.path().join("out/journal/fifo-proportional.jsonl");
    let rounds = || {
        std::fs::read_to_string(&journal)
            .map(|t| t.lines().count().saturating_sub(1))
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while pids().len() < 2 || rounds() < 2 {
        assert!(
            Instant::now() < deadline,
            "the deploy finished no two rounds with two jobs in 60 s; it said:\n{}",
            std::fs::read_to_string(&first_log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    first.kill().unwrap();
    first.wait().unwrap();
    let (pids, rounds_then) = (pids(), rounds());
    // Its jobs die with it (they were started with a parent-death signal); what they forked,
    // and their cgroups, stay.
    assert!(
        !job_cgroups(parent).is_empty(),
        "the killed deploy's cgroups stay (else this test shows nothing); it said:\n{}",
        std::fs::read_to_string(&first_log).unwrap_or_default()
    );

    let mut resume = args.clone();
    resume.push("--resume".into());
    let out = std::process::Command::new(PROFILER)
        .args(&resume)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "resumed: {rounds_then} round(s) taken from the journal"
        )),
        "{said}"
    );
    for pid in &pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} of the killed deploy still runs"
        );
    }
    assert!(
        job_cgroups(parent).is_empty(),
        "left behind: {:?}",
        job_cgroups(parent)
    );
    let jobs = std::fs::read_to_string(dir.path().join("out/fifo-proportional.jobs.csv")).unwrap();
    assert_every_job_finished(&jobs, 3);
    let header: Vec<&str> = jobs.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    assert!(
        rounds() > rounds_then,
        "the resumed deploy's rounds were added to the journal"
    );
    // The jobs it was running went on from their counts: after the resume, job 0 finished
    // sooner than halfway between going on and starting its work over, at the rate it had
    // before the kill (made to start over, it took 18 s against a bound of 15 s).
    let text = std::fs::read_to_string(&journal).unwrap();
    let records: Vec<RoundRecord> = (text.lines().skip(1))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let before = &records[rounds_then - 1];
    let resumed_at = before.end();
    let left = before.jobs.iter().find(|o| o.id == 0).unwrap().remaining;
    let work = 500.0 * 16.0;
    assert!(left > 0.0 && left < work, "job 0 had made progress: {left}");
    let rate_before = (work - left) / resumed_at;
    let finish0: f64 = {
        let f: Vec<&str> = jobs.lines().nth(1).unwrap().split(',').collect();
        f[col("finish_s")].parse().unwrap()
    };
    let bound = (left + work) / 2.0 / rate_before;
    assert!(
        finish0 - resumed_at < bound,
        "job 0 ran {:.1} s after the resume at {resumed_at} s with {left:.0} of {work} samples \
         left, over the {bound:.1} s halfway to starting over",
        finish0 - resumed_at
    );
}

/// A job whose spec says it sizes itself at start (`mode = "relaunch"`) is started again when
/// its CPU count changes, in a new cgroup, and its count goes on from where it was.
#[test]
fn a_job_that_sizes_itself_is_started_again_and_counts_on() {
    require_caps!("a_job_that_sizes_itself_is_started_again_and_counts_on");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let parent = "profiler-test-deploy-resize";
    let epoch = profiler::harness::measure::job_output::now_unix_s();
    let mut backend = LocalBackend::open(parent, dir.path().join("logs"), epoch).unwrap();
    let job = DeployJob {
        id: 3,
        model: "sized".into(),
        work_samples: 1e9,
        spec: Arc::new(job_spec_with(dir.path(), "sized", "mode = \"relaunch\"")),
    };
    let cpus = backend.cpus().to_vec();
    if cpus.len() < 2 {
        eprintln!("SKIPPED: a_job_that_sizes_itself...: needs 2 CPUs, the profiler has {cpus:?}");
        return;
    }
    let grant = |n: usize| Grant {
        server: 0,
        cpus: n as f64,
        cpu_ids: cpus[..n].to_vec(),
        mem_bytes: 1 << 30,
        gpus: 1,
        gpu_ids: Vec::new(),
    };
    backend.start(&job, &grant(1), 0.0).unwrap();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while samples(&mut backend, &job, &mut seen) < 500.0 {
        assert!(Instant::now() < deadline, "no progress in 30 s: {seen:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // One cgroup, in every hierarchy: its name.
    let names = || {
        let mut n: Vec<String> = (job_cgroups(parent).iter())
            .filter_map(|d| Some(d.file_name()?.to_string_lossy().into_owned()))
            .collect();
        n.sort();
        n.dedup();
        n
    };
    let first = names();
    let before = samples(&mut backend, &job, &mut seen);
    backend.regrant(&job, &grant(2)).unwrap();
    let second = names();
    assert_eq!(
        (first.len(), second.len()),
        (1, 1),
        "{first:?} then {second:?}"
    );
    assert_ne!(first, second, "started again in a cgroup of its own");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut reports = Vec::new();
    while reports.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the new run reported nothing in 30 s"
        );
        backend.poll(&job, &mut reports).unwrap();
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        reports.iter().all(|r| r.samples > before),
        "the count goes on from {before}: {reports:?}"
    );
    backend.stop(&job);
    assert!(job_cgroups(parent).is_empty());
}

/// A deploy whose matrix records no machine kind (or another) stops before its first round,
/// naming both machines. Allowed to go on, its spot check measures the job near the share and
/// stops where the matrix is far off (here four times what the job does), saying which sweep
/// brings the matrix up to date.
#[test]
fn a_deploy_checks_its_matrices_before_the_first_round() {
    require_caps!("a_deploy_checks_its_matrices_before_the_first_round");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut args = small_deploy(dir.path(), 1, 200);
    let run = |args: &[String]| {
        let out = std::process::Command::new(PROFILER)
            .args(args)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, said) = run(&args);
    assert!(!ok, "{said}");
    assert!(said.contains("another kind of machine"), "{said}");
    assert!(
        said.contains("input-pipeline") && said.contains("[unknown]"),
        "{said}"
    );
    let here = profiler::machine::this_machine();
    assert!(
        said.contains(&format!("this machine: {}", here.describe())),
        "{said}"
    );
    assert!(
        !dir.path().join("out/journal").exists(),
        "no round ran: {said}"
    );
    // The same matrix with every rate four times over, allowed to go on.
    let path = dir.path().join("matrices/input-pipeline.matrix.jsonl");
    let mut m = profiler::matrix::load_matrix(&path).unwrap();
    for c in &mut m.cells {
        if let Some(t) = &mut c.throughput {
            t.samples_per_s *= 4.0;
            t.ci95_low *= 4.0;
            t.ci95_high *= 4.0;
            t.launches.clear();
        }
    }
    profiler::matrix::rewrite_matrix(&path, &m).unwrap();
    args.push("--allow-other-machine".into());
    let (ok, said) = run(&args);
    assert!(!ok, "{said}");
    assert!(
        said.contains("--allow-other-machine: deploying with matrices"),
        "{said}"
    );
    let line = (said.lines())
        // The verdict, not the lines the spot check's sweep prints on its way (its warnings).
        .find(|l| l.starts_with("spot check input-pipeline:") && l.contains("its matrix says"))
        .unwrap_or_else(|| panic!("no spot check line: {said}"));
    assert!(line.ends_with("outside the interval"), "{line}");
    // measured ... : R.RRx [lo, hi]: the job does a quarter of what the matrix says, times
    // this machine's speed over the one that measured it (0.35 on a 2-core Emerald Rapids VM).
    let ratio: f64 = line
        .rsplit_once("]: ")
        .and_then(|(head, _)| head.rsplit_once(": "))
        .and_then(|(_, r)| r.split('x').next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no ratio in {line}"));
    assert!(ratio > 0.0 && ratio < 0.5, "{line}");
    assert!(
        said.contains(&format!(
            "profiler sweep --job {}",
            dir.path().join("jobs/input-pipeline.toml").display()
        )),
        "{said}"
    );
    let checks = std::fs::read_to_string(dir.path().join("out/checks.txt")).unwrap();
    assert!(checks.contains(line), "{checks}");
    assert!(!dir.path().join("out/journal").exists(), "{said}");
}

/// `profiler colocate`'s measurement on this machine: three pipeline kinds, two of them given
/// the same CPUs by the deploy's spreading rule. Those two share their CPUs' time beside each
/// other, so each runs at about half its rate alone; the third keeps its own.
#[test]
fn kinds_that_share_cpus_measure_about_half_beside_each_other() {
    use profiler::deploy::colocation::{ColocateOptions, ColocationOptions, grants_on, run_local};
    require_caps!("kinds_that_share_cpus_measure_about_half_beside_each_other");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("jobs");
    std::fs::create_dir(&jobs).unwrap();
    for name in ["a", "b", "c"] {
        job_spec(&jobs, name);
    }
    let parent = "profiler-test-colocate";
    let epoch = profiler::harness::measure::job_output::now_unix_s();
    let cpus = LocalBackend::open(parent, dir.path().join("probe"), epoch)
        .unwrap()
        .cpus()
        .to_vec();
    let each = (cpus.len() / 2).max(1) as f64;
    let kinds: Vec<(String, f64, u64)> = (["a", "b", "c"].iter())
        .map(|m| (m.to_string(), each, 1 << 30))
        .collect();
    let grants = grants_on(&kinds, &cpus);
    assert_eq!(
        grants[0].cpu_ids, grants[2].cpu_ids,
        "a and c share: {grants:?}"
    );
    assert_ne!(grants[0].cpu_ids, grants[1].cpu_ids);
    let opts = ColocateOptions {
        jobs_dir: jobs,
        kinds,
        cgroup_parent: parent.into(),
        out_dir: dir.path().join("out"),
        measure: ColocationOptions {
            warmup_s: 3.0,
            measure_s: 10.0,
            window_s: 2.0,
            repeats: 1,
        },
    };
    let mut said = Vec::new();
    let found = run_local(
        &opts,
        &std::sync::atomic::AtomicBool::new(false),
        &mut |l| said.push(l.to_string()),
    )
    .unwrap();
    let lines: Vec<String> = found.iter().map(|c| c.describe()).collect();
    println!("{}", lines.join("\n"));
    assert_eq!(said.len(), 4, "three alone, then together: {said:?}");
    assert_eq!(found.len(), 3);
    let ratio = |m: &str| found.iter().find(|c| c.model == m).unwrap().ratio();
    for shared in ["a", "c"] {
        let [r, lo, hi] = ratio(shared);
        assert!(
            (0.35..0.7).contains(&r) && lo <= r && r <= hi,
            "{shared}: {r} [{lo}, {hi}]"
        );
    }
    assert!(ratio("b")[0] > 0.8, "b keeps its CPUs: {:?}", ratio("b"));
    let txt = std::fs::read_to_string(opts.out_dir.join("colocation.txt")).unwrap();
    assert_eq!(txt.lines().count(), 3);
    let csv = std::fs::read_to_string(opts.out_dir.join("colocation.csv")).unwrap();
    assert!(csv.lines().count() > 3 * 2 * 4, "{csv}");
    assert!(job_cgroups(parent).is_empty(), "{:?}", job_cgroups(parent));
}
