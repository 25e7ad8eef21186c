//! `profiler sweep --slurm`: the sweep's whole-core CPU levels as Slurm jobs, measured under
//! Slurm's cgroups, merged into one matrix with the node of every cell.

use crate::cluster::Cluster;
use profiler::matrix::{CellSource, load_matrix};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const PROFILER: &str = env!("CARGO_BIN_EXE_profiler");
const INPUT_PIPELINE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/input-pipeline.toml");

fn profiler(c: &Cluster, args: &[&str]) -> Command {
    let mut cmd = c.cmd(PROFILER);
    cmd.args(args);
    cmd
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The shipped input-pipeline job at 1 and 2 cores through Slurm: the rate rises with CPU as
/// in a local sweep (it doubles on a quiet machine; the bound leaves room for a host's slow
/// spell), and every measured cell names the node.
pub fn input_pipeline_through_slurm(c: &Cluster) {
    let (r1, r2) = sweep_1_and_2_cores(c);
    assert!(
        r2 / r1 > 1.2,
        "2/1 CPU rate ratio {:.2} ({r2:.1} / {r1:.1} samples/s)",
        r2 / r1
    );
}

/// One `sweep --slurm` of input-pipeline at 1 and 2 cores; the measured rates.
fn sweep_1_and_2_cores(c: &Cluster) -> (f64, f64) {
    let out_file = c.dir().join("input-pipeline.matrix.jsonl");
    let started = Instant::now();
    let out = profiler(
        c,
        &[
            "sweep",
            "--job",
            INPUT_PIPELINE,
            "--slurm",
            "--slurm-skip-fractional",
            "-o",
        ],
    )
    .arg(&out_file)
    .output()
    .expect("profiler runs");
    let log = text(&out);
    assert!(out.status.success(), "sweep --slurm failed:\n{log}");
    let m = load_matrix(&out_file).expect("merged matrix loads");
    assert_eq!(m.header.axes.cpu, vec![2.0, 1.0], "{log}");
    let top = *m
        .header
        .axes
        .memory_bytes
        .iter()
        .max()
        .expect("memory levels");
    let measured = |cpu: f64| {
        m.cells
            .iter()
            .find(|x| x.cpu == cpu && x.memory_bytes == top && x.source == CellSource::Measured)
            .unwrap_or_else(|| panic!("no measured cell at cpu {cpu}:\n{log}"))
    };
    let (c1, c2) = (measured(1.0), measured(2.0));
    for cell in [c1, c2] {
        assert_eq!(cell.node.as_deref(), Some(c.node().as_str()), "{cell:?}");
        // Each job launched its point again, as a local sweep does: the passes asked for, and
        // narrowing passes where a cell is wider than the precision, which may take half the
        // time of the passes before them (`NARROWING_SHARE`): two more at most.
        let launches = cell.throughput.as_ref().map_or(0, |t| t.launches.len());
        assert!((2..=5).contains(&launches), "{cell:?}");
    }
    // The merged matrix holds the spread pooled over both jobs' launches.
    let spread = m
        .header
        .launch_spread
        .as_ref()
        .expect("the spread is recorded");
    assert!(spread.launches >= 4, "{spread:?}");
    // The memory axis below the top level is modelled, at both CPU levels.
    let levels = m.header.axes.memory_bytes.len();
    assert_eq!(m.cells.len(), 2 * levels, "{log}");
    // Telemetry as in a local cell: the job's CPU from its process tree (the profiler's own
    // left out), its memory from the step's memory cgroup, no throttling under a cpuset.
    let used = |cell: &profiler::matrix::Cell| {
        let t = cell.telemetry.as_ref().expect("telemetry");
        assert_eq!(t.throttled_s_per_s, 0.0, "{t:?}");
        let anon = t
            .anon_peak_bytes
            .expect("anonymous memory from the step's cgroup");
        assert!((1 << 20..1 << 30).contains(&anon), "{t:?}");
        assert!(t.mapped_hot_bytes.is_some(), "{t:?}");
        t.cpu_cores_used
    };
    let (u1, u2) = (used(c1), used(c2));
    assert!((0.6..=1.05).contains(&u1), "CPU used at 1 core: {u1}");
    assert!(
        u2 > u1 && u2 <= 2.05,
        "CPU used at 2 cores: {u2} (1 core: {u1})"
    );
    let (r1, r2) = (c1.samples_per_s().unwrap(), c2.samples_per_s().unwrap());
    eprintln!(
        "sweep --slurm of input-pipeline: {r1:.1} samples/s at 1 core, \
         {r2:.1} at 2, using {u1:.2} and {u2:.2} cores ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    (r1, r2)
}

/// Fractional levels need the profiler's own quota: refused, with the way out named.
pub fn fractional_levels_are_refused(c: &Cluster) {
    let out = profiler(c, &["sweep", "--job", INPUT_PIPELINE, "--slurm", "-o"])
        .arg(c.dir().join("refused.matrix.jsonl"))
        .output()
        .expect("profiler runs");
    let log = text(&out);
    assert!(!out.status.success(), "{log}");
    assert!(log.contains("levels 0.5 are fractional"), "{log}");
    assert!(log.contains("--slurm-skip-fractional"), "{log}");
}

/// A step whose cgroup does not hold the point's cores refuses to measure; a plain capped
/// sweep inside a Slurm job refuses to make cgroups of its own.
pub fn steps_check_their_caps(c: &Cluster) {
    let out_file = c.dir().join("mismatch.matrix.jsonl");
    let step_cpu = ["--slurm-step-cpu", "2", "-o", &out_file.to_string_lossy()];
    let (ok, log) = sweep_in_a_step(c, "mismatch", &step_cpu);
    assert!(!ok, "{log}");
    assert!(
        log.contains("refusing to measure cpu = 2") && log.contains("allows 1 core(s)"),
        "{log}"
    );
    assert!(
        !out_file.exists(),
        "a refused step wrote {}",
        out_file.display()
    );

    let (ok, log) = sweep_in_a_step(c, "capped", &[]);
    assert!(!ok, "{log}");
    assert!(log.contains("whose cgroups Slurm owns"), "{log}");
}

/// Runs `profiler sweep --job INPUT_PIPELINE ARGS` as a one-core Slurm step: whether it
/// succeeded, and srun's messages with the step's own output. The step writes its output to
/// files (`--output`, `--error`) rather than through srun's forwarding, which can drop the
/// output of a task that exits at once.
fn sweep_in_a_step(c: &Cluster, name: &str, args: &[&str]) -> (bool, String) {
    let stdout = c.dir().join(format!("{name}.step.out"));
    let stderr = c.dir().join(format!("{name}.step.err"));
    let out = c
        .cmd("srun")
        .args(["-n1", "-c1", "--mem=2G"])
        .arg(format!("--output={}", stdout.display()))
        .arg(format!("--error={}", stderr.display()))
        .args([PROFILER, "sweep", "--job", INPUT_PIPELINE])
        .args(args)
        .output()
        .expect("srun runs");
    let step = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
    let log = format!("{}{}{}", text(&out), step(&stdout), step(&stderr));
    (out.status.success(), log)
}

/// Ctrl-C of `sweep --slurm` cancels its jobs and says how to resume.
pub fn interrupt_cancels_the_jobs(c: &Cluster) {
    let out_file = c.dir().join("interrupted.matrix.jsonl");
    let mut child = profiler(
        c,
        &[
            "sweep",
            "--job",
            INPUT_PIPELINE,
            "--slurm",
            "--slurm-skip-fractional",
            "-o",
        ],
    )
    .arg(&out_file)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("profiler starts");
    let running = wait_until(Duration::from_secs(60), || a_job_is_running(c));
    assert!(running, "no job started running");
    let out = interrupt(&mut child);
    let log = text(&out);
    assert_eq!(out.status.code(), Some(130), "{log}");
    assert!(log.contains("--resume"), "{log}");
    let gone = wait_until(Duration::from_secs(30), || {
        c.run(
            "squeue",
            &["-h", "-t", "pending,running,completing", "-o", "%i"],
        )
        .trim()
        .is_empty()
    });
    assert!(gone, "jobs left after Ctrl-C: {}", c.run("squeue", &[]));
}

/// A job that outgrows the memory Slurm gave it: its cell is infeasible and says the OOM killer
/// took it, as in a local sweep, not a failure.
pub fn an_oom_in_a_job_is_an_infeasible_cell(c: &Cluster) {
    let dir = c.dir().join("oom");
    std::fs::create_dir_all(&dir).unwrap();
    // Reports progress for a second, then touches 512 MiB, four times what Slurm allows it.
    let script = "import json,os,time\nf=open(os.environ['PROFILER_PROGRESS_FILE'],'a')\nfor i in range(1,40):\n    f.write(json.dumps({'samples':i*10,'t':time.time()})+'\\n'); f.flush(); time.sleep(0.05)\nx=bytearray(512<<20)\nfor i in range(0,len(x),4096): x[i]=1\ntime.sleep(30)\n";
    std::fs::write(dir.join("hog.py"), script).unwrap();
    let spec = dir.join("hog.toml");
    std::fs::write(
        &spec,
        "schema_version = 1\nname = \"hog\"\ncommand = [\"python3\", \"hog.py\"]\n\
         [throughput]\nprotocol = \"progress-file\"\n[measure]\nwarmup_s = 0.2\nwindow_s = 0.5\n\
         steady_windows = 50\nmax_s = 20\nstartup_timeout_s = 20\n[sweep]\ncpu = [1]\n",
    )
    .unwrap();
    let out_file = dir.join("hog.matrix.jsonl");
    let out = profiler(c, &["sweep", "--job"])
        .arg(&spec)
        .args(["--slurm", "--slurm-mem", "128", "-o"])
        .arg(&out_file)
        .output()
        .expect("profiler runs");
    let log = text(&out);
    assert!(out.status.success(), "sweep --slurm failed:\n{log}");
    let m = load_matrix(&out_file).expect("merged matrix loads");
    let cell = m.cells.first().expect("one cell");
    assert_eq!(cell.source, CellSource::Infeasible, "{cell:?}\n{log}");
    assert!(
        cell.note.as_deref().unwrap_or("").contains("OOM-killed"),
        "{cell:?}"
    );
    assert_eq!(cell.node.as_deref(), Some(c.node().as_str()), "{cell:?}");
}

/// An interrupted `sweep --slurm`, run again with `--resume`, keeps the levels already merged,
/// submits only the others, and ends with the whole matrix.
pub fn resume_finishes_an_interrupted_sweep(c: &Cluster) {
    let out_file = c.dir().join("resumed.matrix.jsonl");
    let args = [
        "sweep",
        "--job",
        INPUT_PIPELINE,
        "--slurm",
        "--slurm-skip-fractional",
        "--launches",
        "1",
        "-o",
    ];
    let mut child = profiler(c, &args)
        .arg(&out_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("profiler starts");
    // The highest level runs first, alone; once its cells are merged, the next job runs.
    let merged_one = wait_until(Duration::from_secs(240), || {
        load_matrix(&out_file).is_ok_and(|m| !m.cells.is_empty()) && a_job_is_running(c)
    });
    assert!(merged_one, "the first level never finished");
    let out = interrupt(&mut child);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let kept = load_matrix(&out_file).expect("the interrupted matrix loads");
    let kept_levels: Vec<f64> = kept.cells.iter().map(|x| x.cpu).collect();
    assert!(kept_levels.iter().all(|&cpu| cpu == 2.0), "{kept_levels:?}");
    let out = profiler(c, &args)
        .arg(&out_file)
        .arg("--resume")
        .output()
        .expect("profiler runs");
    let log = text(&out);
    assert!(out.status.success(), "--resume failed:\n{log}");
    assert!(log.contains("resuming"), "{log}");
    assert!(
        !log.contains("cpu 2: submitted"),
        "the merged level was submitted again:\n{log}"
    );
    let m = load_matrix(&out_file).expect("the resumed matrix loads");
    for cell in &kept.cells {
        assert!(m.cells.contains(cell), "{cell:?} was not kept");
    }
    for cpu in [2.0, 1.0] {
        assert!(
            m.cells
                .iter()
                .any(|x| x.cpu == cpu && x.source == CellSource::Measured),
            "no measured cell at {cpu} CPUs:\n{log}"
        );
    }
}

fn a_job_is_running(c: &Cluster) -> bool {
    !c.run("squeue", &["-h", "-t", "running", "-o", "%i"])
        .trim()
        .is_empty()
}

/// Ctrl-C to a running `profiler sweep --slurm`, and what it printed until it exited.
fn interrupt(child: &mut std::process::Child) -> Output {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    wait_output(child, Duration::from_secs(30))
}

/// Whether `ok` held within `limit`, asked every 200 ms.
pub(crate) fn wait_until(limit: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

fn wait_output(child: &mut std::process::Child, limit: Duration) -> Output {
    let t = Instant::now();
    while t.elapsed() < limit {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if child.try_wait().expect("wait").is_none() {
        let _ = child.kill();
        panic!("profiler did not exit within {limit:?} of SIGINT");
    }
    let mut out = Output {
        status: child.wait().expect("status"),
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    use std::io::Read;
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_end(&mut out.stdout);
    }
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_end(&mut out.stderr);
    }
    out
}
