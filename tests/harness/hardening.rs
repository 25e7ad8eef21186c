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

/// Holds 60 MiB, reports 100 samples/s, and one second after its first report takes 40 MiB
/// more: its footprint after warm-up is short of what it needs.
const GROWING_JOB: &str = "import json,os,time\nkeep=bytearray(60<<20)\nfor i in range(0,len(keep),4096): keep[i]=1\nf=open(os.environ['PROFILER_PROGRESS_FILE'],'a')\nt0=time.time()\nmore=None\ni=0\nwhile True:\n    i+=1\n    if more is None and time.time()-t0>1.0:\n        more=bytearray(40<<20)\n        for j in range(0,len(more),4096): more[j]=1\n    f.write(json.dumps({'samples':i*5,'t':time.time()})+'\\n'); f.flush(); time.sleep(0.05)\n";

#[test]
fn a_first_launch_that_outgrows_its_footprint_sizes_the_levels_again() {
    require_caps!("a_first_launch_that_outgrows_its_footprint_sizes_the_levels_again");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("part-0"), vec![7u8; 1 << 20]).unwrap();
    std::fs::write(dir.path().join("grows.py"), GROWING_JOB).unwrap();
    let mut spec = quick_spec(
        dir.path(),
        "outgrows",
        r#"["python3", "grows.py"]"#,
        Some(&data),
        "cpu = [1]\nmemory_pct_of_dataset = [100]\nmode = \"relaunch\"",
    );
    spec.spec.measure.launches = 1;
    let out = dir.path().join("m.matrix.jsonl");
    let opts = options(spec, out.clone(), "profiler-test-outgrows");
    let outcome = run_sweep(&opts, &mut Silent, &AtomicBool::new(false)).expect("sweep runs");
    let on_disk = load_matrix(&out).expect("the file loads");
    assert_eq!(on_disk.cells.len(), 1, "{:?}", on_disk.cells);
    let cell = &on_disk.cells[0];
    assert_eq!(cell.source, CellSource::Measured, "{:?}", cell.note);
    let provenance = on_disk.header.provenance.clone().unwrap_or_default();
    assert!(provenance.contains("outgrew"), "{provenance}");
    assert!(outcome.launches >= 2, "{} launches", outcome.launches);
    // The level that held it has room for the job's 100 MiB besides the dataset.
    let level = on_disk.header.axes.memory_bytes[0];
    assert_eq!(cell.memory_bytes, level);
    assert!(level > 100 << 20, "{level}");
}

/// Maps its dataset file and reads one random 4 KiB page per sample, 100 samples/s; with
/// `MADV_RANDOM` when its first argument says so.
const MAPPING_JOB: &str = "import json,mmap,os,random,sys,time\nf=open(os.path.join(sys.argv[1],'part-0'),'rb')\nm=mmap.mmap(f.fileno(),0,access=mmap.ACCESS_READ)\nif sys.argv[2]=='random': m.madvise(mmap.MADV_RANDOM)\np=open(os.environ['PROFILER_PROGRESS_FILE'],'a')\ni=0\nwhile True:\n    i+=1\n    _=m[random.randrange(len(m)//4096)*4096]\n    p.write(json.dumps({'samples':i,'t':time.time()})+'\\n'); p.flush(); time.sleep(0.01)\n";

#[test]
fn a_job_that_maps_its_dataset_without_madv_random_gets_read_around_misses() {
    require_caps!("a_job_that_maps_its_dataset_without_madv_random_gets_read_around_misses");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    // On the build tree's disk: a tmpfs has no block device and no read-ahead.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    // Written back before the sweep measures storage by reading it with the cache dropped.
    let mut part = std::fs::File::create(data.join("part-0")).unwrap();
    std::io::Write::write_all(&mut part, &vec![7u8; 8 << 20]).unwrap();
    part.sync_all().unwrap();
    std::fs::write(dir.path().join("maps.py"), MAPPING_JOB).unwrap();
    let Some(read_ahead) = profiler::harness::memory::dataset::read_ahead_bytes(&data) else {
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIPPED: the build tree's disk has no read-ahead to find\n"),
        );
        return;
    };
    for (advice, expect) in [("normal", Some(read_ahead)), ("random", None)] {
        let mut spec = quick_spec(
            dir.path(),
            &format!("maps-{advice}"),
            &format!(
                r#"["python3", "maps.py", "{}", "{advice}"]"#,
                data.display()
            ),
            Some(&data),
            "cpu = [1]\nmemory_pct_of_dataset = [100, 50]",
        );
        spec.spec.measure.launches = 1;
        let out = dir.path().join(format!("{advice}.matrix.jsonl"));
        run_sweep(
            &options(spec, out.clone(), "profiler-test-read-around"),
            &mut Silent,
            &AtomicBool::new(false),
        )
        .expect("sweep runs");
        let header = load_matrix(&out).expect("the file loads").header;
        let inputs = header
            .cache_model
            .expect("a dataset and two levels: the cache model");
        assert_eq!(inputs.read_unit_bytes, expect, "{advice}");
    }
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
    let outcome = sweep(spec, out.clone(), "profiler-test-no-storage");
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
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
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

#[test]
fn a_memory_cap_also_caps_swap() {
    require_caps!("a_memory_cap_also_caps_swap");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let root = CgroupRoot::open("profiler-test-swap").unwrap();
    // Not a run name (no owner token): no other test's reaper touches it.
    let run = root.create_run("swap-check").unwrap();
    let memsw = run.memory_dir().join("memory.memsw.limit_in_bytes");
    let swap_max = run.memory_dir().join("memory.swap.max");
    let read = |p: &Path| std::fs::read_to_string(p).unwrap().trim().to_string();
    let host_swap = std::fs::read_to_string("/proc/swaps")
        .unwrap()
        .lines()
        .skip(1)
        .any(|l| !l.trim().is_empty());
    if memsw.exists() {
        for limit in [64u64 << 20, 32 << 20, 128 << 20] {
            run.set_memory_limit(Some(limit)).unwrap();
            assert_eq!(read(&memsw), limit.to_string(), "memory + swap = memory");
        }
        run.set_memory_limit(None).unwrap();
        assert!(
            read(&memsw).parse::<u64>().unwrap() > 1 << 50,
            "unlimited again"
        );
    } else if swap_max.exists() {
        assert_eq!(read(&swap_max), "0");
    } else {
        assert_eq!(
            root.swap_note().is_some(),
            host_swap,
            "{:?}",
            root.swap_note()
        );
    }
}

/// A process moved into the cgroup directory `dir` (which must allow tasks without setup).
fn sleeper_in(dir: &Path) -> std::process::Child {
    let child = Command::new("sleep").arg("300").spawn().unwrap();
    std::fs::write(dir.join("cgroup.procs"), child.id().to_string()).unwrap();
    child
}

#[test]
fn a_stale_run_is_reaped_in_every_hierarchy_even_when_its_pid_lives() {
    require_caps!("a_stale_run_is_reaped_in_every_hierarchy_even_when_its_pid_lives");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let parent = "profiler-test-reap-any";
    let root = CgroupRoot::open(parent).unwrap();
    // Owned by "this pid" (alive, as a reused pid would be) but by no live profiler: its
    // owner's lock is held by nobody. Left in one hierarchy only, other than memory.
    let name = format!("stale-{}.999999-1", std::process::id());
    let dirs = root.parent_dirs();
    let hierarchy = dirs
        .iter()
        .find(|d| {
            !d.to_string_lossy().contains("memory") && !d.to_string_lossy().contains("cpuset")
        })
        .unwrap_or(&dirs[0]);
    let dir = hierarchy.join(&name);
    std::fs::create_dir(&dir).unwrap();
    let mut sleeper = sleeper_in(&dir);
    drop(root);
    let _root = CgroupRoot::open(parent).unwrap();
    assert!(!dir.exists(), "{} left", dir.display());
    let status = sleeper.wait().unwrap();
    assert!(!status.success(), "the leftover process was killed");
}

#[test]
fn a_live_profilers_runs_are_never_reaped() {
    require_caps!("a_live_profilers_runs_are_never_reaped");
    let parent = "profiler-test-live";
    let a = CgroupRoot::open(parent).unwrap();
    let run = a.create_launch("alive", 1).unwrap();
    let mut sleeper = sleeper_in(run.memory_dir());
    let b = CgroupRoot::open(parent).unwrap();
    let other = b.create_launch("alive", 1).unwrap();
    assert_ne!(
        run.rel_path(),
        other.rel_path(),
        "each run has its own cgroup"
    );
    drop(b);
    assert!(run.memory_dir().exists());
    assert_eq!(sleeper.try_wait().unwrap(), None, "still running");
    drop(other);
    drop(run);
    assert!(sleeper.wait().is_ok());
    drop(a);
}

#[test]
fn own_runs_that_outlive_their_removal_are_removed_later() {
    require_caps!("own_runs_that_outlive_their_removal_are_removed_later");
    let parent = "profiler-test-leftover";
    let root = CgroupRoot::open(parent).unwrap();
    let run = root.create_launch("late", 1).unwrap();
    let token_name = run.name().strip_suffix("-1").unwrap().to_string();
    drop(run);
    // What a run looks like when its last task (a process tearing down a CUDA context) kept
    // the cgroup busy past the run's own removal: empty now, and no handle alive.
    let leftover = |launch: u32| -> Vec<PathBuf> {
        let dirs: Vec<PathBuf> = root
            .parent_dirs()
            .iter()
            .map(|p| p.join(format!("{token_name}-{launch}")))
            .collect();
        for d in &dirs {
            std::fs::create_dir(d).unwrap();
        }
        dirs
    };
    let first = leftover(2);
    let next = root.create_launch("late", 3).unwrap();
    assert!(
        first.iter().all(|d| !d.exists()),
        "removed by the next launch"
    );
    let last = leftover(4);
    drop(next);
    drop(root);
    assert!(
        last.iter().all(|d| !d.exists()),
        "removed when the sweep ends"
    );
}

/// Spec file for a sweep run as a separate `profiler` process.
fn steady_spec_file(dir: &Path, name: &str, command: &str, measure: &str, sweep: &str) -> PathBuf {
    std::fs::write(dir.join("steady.py"), STEADY_JOB).unwrap();
    let text = format!(
        "schema_version = 1\nname = \"{name}\"\ncommand = {command}\n[throughput]\nprotocol = \"progress-file\"\n[measure]\n{measure}\n[sweep]\n{sweep}\n"
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, &text).unwrap();
    parse_spec(&text, &path).expect("test spec is valid");
    path
}

const QUICK_MEASURE: &str = "warmup_s = 0.5\nsettle_s = 0.2\nwindow_s = 0.5\nsteady_windows = 3\nsteady_cv = 0.5\nmax_s = 3\nstartup_timeout_s = 10";
/// Measures until `max_s`: long enough to be interrupted mid-measurement.
const LONG_MEASURE: &str = "warmup_s = 0.5\nwindow_s = 0.5\nsteady_windows = 3\nsteady_cv = 0.000001\nmax_s = 120\nstartup_timeout_s = 10";

fn profiler_sweep(spec: &Path, out: &Path, parent: &str) -> Command {
    let mut c = Command::new(PROFILER);
    c.arg("sweep")
        .arg("--job")
        .arg(spec)
        .arg("-o")
        .arg(out)
        .args(["--cgroup-parent", parent])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Waits until a run cgroup under `parent` holds at least `n` processes; returns their pids.
fn wait_for_job(parent: &str, n: usize) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut pids = pids_in(&runs_under(parent));
        pids.sort_unstable();
        pids.dedup();
        if pids.len() >= n {
            return pids;
        }
        assert!(
            Instant::now() < deadline,
            "the job never started under {parent}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn alive(pid: u32) -> bool {
    procfs::process::Process::new(pid as i32)
        .and_then(|p| p.stat())
        .is_ok_and(|s| s.state != 'Z')
}

/// A job with a grandchild that outlives its parent's process group kill unless the cgroup is
/// killed: `sleep` in the background, then the progress loop.
const JOB_WITH_GRANDCHILD: &str =
    r#"["/bin/sh", "-c", "setsid sleep 300 & exec python3 steady.py"]"#;

#[test]
fn a_second_ctrl_c_still_kills_the_job_and_removes_its_cgroups() {
    require_caps!("a_second_ctrl_c_still_kills_the_job_and_removes_its_cgroups");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let parent = "profiler-test-ctrl-c-twice";
    let spec = steady_spec_file(
        dir.path(),
        "twice",
        JOB_WITH_GRANDCHILD,
        LONG_MEASURE,
        "cpu = [1]",
    );
    let out = dir.path().join("m.matrix.jsonl");
    let child = profiler_sweep(&spec, &out, parent).spawn().unwrap();
    let job = wait_for_job(parent, 2);
    std::thread::sleep(Duration::from_secs(1));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    // Two signals sent at once are delivered as one; the second comes while the sweep is still
    // between polls, before its own cleanup.
    std::thread::sleep(Duration::from_millis(10));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let signalled = Instant::now();
    let output = child.wait_with_output().unwrap();
    let took = signalled.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!(
        "exit {:?} {:.0} ms after the second SIGINT",
        output.status.code(),
        took.as_secs_f64() * 1e3
    );
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_no_runs_under(parent);
    let parents = profiler::harness::cgroup::parent_dirs_of(parent).unwrap();
    let left: Vec<_> = parents.iter().filter(|d| d.exists()).collect();
    assert!(left.is_empty(), "parent cgroups left behind: {left:?}");
    let deadline = Instant::now() + Duration::from_secs(2);
    while job.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<u32> = job.into_iter().filter(|&p| alive(p)).collect();
    assert!(left.is_empty(), "processes left: {left:?}");
}

#[test]
fn a_killed_sweep_leaves_nothing_once_the_next_runs_and_sweeps_side_by_side_coexist() {
    require_caps!(
        "a_killed_sweep_leaves_nothing_once_the_next_runs_and_sweeps_side_by_side_coexist"
    );
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let parent = "profiler-test-kill9";
    let long = steady_spec_file(
        dir.path(),
        "killed",
        JOB_WITH_GRANDCHILD,
        LONG_MEASURE,
        "cpu = [1]",
    );
    let mut first = profiler_sweep(&long, &dir.path().join("killed.matrix.jsonl"), parent)
        .spawn()
        .unwrap();
    let job = wait_for_job(parent, 2);
    std::thread::sleep(Duration::from_secs(1));
    first.kill().unwrap();
    first.wait().unwrap();
    // Two sweeps side by side under the same parent: each reaps what the killed one left and
    // neither disturbs the other.
    let quick = steady_spec_file(
        dir.path(),
        "quick",
        r#"["python3", "steady.py"]"#,
        QUICK_MEASURE,
        "cpu = [1, 0.5]\nmode = \"relaunch\"",
    );
    let outs = [
        dir.path().join("a.matrix.jsonl"),
        dir.path().join("b.matrix.jsonl"),
    ];
    let sweeps: Vec<_> = outs
        .iter()
        .map(|o| profiler_sweep(&quick, o, parent).spawn().unwrap())
        .collect();
    for (s, out) in sweeps.into_iter().zip(&outs) {
        let output = s.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let cells = load_matrix(out).unwrap().cells;
        assert_eq!(cells.len(), 2);
        assert!(
            cells.iter().all(|c| c.source == CellSource::Measured),
            "{cells:?}"
        );
    }
    assert_no_runs_under(parent);
    let left: Vec<u32> = job.into_iter().filter(|&p| alive(p)).collect();
    assert!(
        left.is_empty(),
        "processes of the killed sweep left: {left:?}"
    );
}
