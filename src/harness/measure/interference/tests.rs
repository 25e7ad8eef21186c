use super::*;
use proptest::prelude::*;
use std::process::{Child, Command};

/// A fixture proc tree: the files the kernel would show under /proc, in a temp dir.
struct ProcTree {
    dir: tempfile::TempDir,
}

/// Per CPU: (busy ticks, idle ticks).
type Ticks = (u64, u64);

impl ProcTree {
    fn new() -> Self {
        ProcTree {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// Writes `/proc/stat` with one line per CPU. Busy ticks are split over user, system,
    /// irq, softirq and steal, idle ticks over idle and iowait; guest time (already part of
    /// user) is set too, so counting it twice would show.
    fn stat(&self, cpus: &[Ticks]) {
        let line = |name: String, (busy, idle): Ticks| {
            let (user, system, irq, softirq, steal) = (busy / 2, busy / 4, busy / 16, busy / 16, 0);
            let system = system + (busy - user - system - irq - softirq - steal);
            let (idle, iowait) = (idle - idle / 10, idle / 10);
            format!(
                "{name} {user} 0 {system} {idle} {iowait} {irq} {softirq} {steal} {} 0\n",
                user / 2
            )
        };
        let total = cpus.iter().fold((0, 0), |a, c| (a.0 + c.0, a.1 + c.1));
        let mut text = line("cpu ".into(), total);
        for (i, &c) in cpus.iter().enumerate() {
            text.push_str(&line(format!("cpu{i}"), c));
        }
        text.push_str("intr 12 0 0 3\nctxt 99\nbtime 1700000000\nprocs_running 2\n");
        self.raw_stat(&text);
    }

    fn raw_stat(&self, text: &str) {
        std::fs::write(self.dir.path().join(PROC_STAT), text).expect("write stat");
    }

    fn pressure(&self, some_total_us: u64) {
        let dir = self.dir.path().join("pressure");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(
            dir.join("cpu"),
            format!(
                "some avg10=1.00 avg60=2.00 avg300=3.00 total={some_total_us}\n\
                 full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
            ),
        )
        .expect("write pressure");
    }

    fn host(&self, cpus: &[u32]) -> HostCpu {
        HostCpu::with_ticks_per_s(self.dir.path(), cpus, 100)
    }

    /// Snapshots of `cpus` before and after a window of `seconds`, the counters going from
    /// `from` to `to`.
    fn window(
        &self,
        cpus: &[u32],
        from: &[Ticks],
        to: &[Ticks],
        seconds: f64,
    ) -> (HostSnapshot, HostSnapshot) {
        let host = self.host(cpus);
        self.stat(from);
        let before = host.snapshot().expect("snapshot");
        self.stat(to);
        let mut after = host.snapshot().expect("snapshot");
        after.at = before.at + Duration::from_secs_f64(seconds);
        (before, after)
    }
}

fn job(cores: f64, throttled_s_per_s: f64, cap: f64, seconds: f64) -> JobWindow {
    JobWindow {
        cpu_ns: (cores * seconds * 1e9) as u64,
        throttled_ns: (throttled_s_per_s * seconds * 1e9) as u64,
        cap_cores: cap,
        profiler_ns: 0,
        profiler_total_ns: 0,
        run_wait_ns: None,
        pressure_ns: None,
    }
}

/// Judges a 2 s window on CPU 0 (of a 2-CPU machine) where CPU 0 was busy for `busy` cores
/// and idle for the rest, the job using `job_cores` of it.
fn one_cpu(busy: f64, job_cores: f64, throttled: f64, cap: f64) -> WindowLoad {
    one_cpu_judged(busy, job(job_cores, throttled, cap, 2.0))
}

/// Judges `job` over a 2 s window on CPU 0 (of a 2-CPU machine) busy for `busy` cores.
fn one_cpu_judged(busy: f64, job: JobWindow) -> WindowLoad {
    let tree = ProcTree::new();
    let busy_ticks = (busy * 200.0).round() as u64;
    let (a, b) = tree.window(
        &[0],
        &[(1000, 5000), (700, 900)],
        &[(1000 + busy_ticks, 5000 + 200 - busy_ticks), (900, 900)],
        2.0,
    );
    judge(&a, &b, job).expect("judged")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn a_job_alone_at_its_cap_is_not_disturbed() {
    let l = one_cpu(1.0, 1.0, 0.0, 1.0);
    assert!(!l.disturbed(), "{l:?}");
    assert!(close(l.job_cores, 1.0) && close(l.other_cores, 0.0) && close(l.idle_cores, 0.0));
    assert!(close(l.seconds, 2.0));
    // The other CPU's counters do not count: only the job's CPUs are summed.
    let idle_machine = one_cpu(0.02, 0.02, 0.0, 1.0);
    assert!(!idle_machine.disturbed() && close(idle_machine.idle_cores, 0.98));
}

#[test]
fn a_hog_on_the_jobs_cpu_disturbs_it() {
    let l = one_cpu(1.0, 0.4, 0.0, 1.0);
    assert!(l.disturbed(), "{l:?}");
    assert!(close(l.other_cores, 0.6), "{l:?}");
    // Two CPUs, the job capped at 2 and a hog on one of them.
    let tree = ProcTree::new();
    let (a, b) = tree.window(&[0, 1], &[(0, 0), (0, 0)], &[(200, 0), (200, 0)], 2.0);
    let l = judge(&a, &b, job(1.5, 0.0, 2.0, 2.0)).expect("judged");
    assert!(l.disturbed() && close(l.other_cores, 0.5), "{l:?}");
}

#[test]
fn the_profilers_own_sampling_is_not_other_load() {
    // A job given both CPUs of the host gets 1.8 cores; the profiler used 0.2 beside it.
    let tree = ProcTree::new();
    let (a, b) = tree.window(&[0, 1], &[(0, 0), (0, 0)], &[(200, 0), (200, 0)], 2.0);
    let mut window = job(1.8, 0.0, 2.0, 2.0);
    window.profiler_ns = 400_000_000;
    let l = judge(&a, &b, window).expect("judged");
    assert!(!l.disturbed() && close(l.other_cores, 0.0), "{l:?}");
    // A hog beside the profiler still disturbs the job.
    let mut window = job(1.2, 0.0, 2.0, 2.0);
    window.profiler_ns = 400_000_000;
    let l = judge(&a, &b, window).expect("judged");
    assert!(l.disturbed() && close(l.other_cores, 0.6), "{l:?}");
}

/// Judges a 2 s window of a job on CPU 0 at its 1-CPU cap, with CPU 1 (the rest of a
/// 2-CPU profiler) busy for `busy_elsewhere` cores, the profiler's own `profiler` included.
fn at_cap_beside(busy_elsewhere: f64, profiler: f64) -> WindowLoad {
    let tree = ProcTree::new();
    let host = tree.host(&[0]).with_rest_of(&[0, 1]);
    let busy = (busy_elsewhere * 200.0).round() as u64;
    tree.stat(&[(1000, 5000), (700, 900)]);
    let a = host.snapshot().expect("snapshot");
    tree.stat(&[(1200, 5000), (700 + busy, 900 + 200 - busy)]);
    let mut b = host.snapshot().expect("snapshot");
    b.at = a.at + Duration::from_secs(2);
    let mut window = job(1.0, 0.0, 1.0, 2.0);
    window.profiler_total_ns = (profiler * 2e9) as u64;
    judge(&a, &b, window).expect("judged")
}

#[test]
fn others_busy_on_the_rest_of_the_machine_disturb_a_job_at_its_cap() {
    // A memory copy on the other core: the job's own counters look perfect.
    let l = at_cap_beside(1.0, 0.0);
    assert_eq!(l.disturbed_by, Some(DisturbedBy::BusyElsewhere), "{l:?}");
    assert!(close(l.elsewhere_cores.unwrap(), 1.0) && close(l.other_cores, 0.0));
    // The profiler's own sampling there is not other load.
    let l = at_cap_beside(0.7, 0.6);
    assert!(
        !l.disturbed() && close(l.elsewhere_cores.unwrap(), 0.1),
        "{l:?}"
    );
    // A little background (a daemon, the kernel's writeback) is not either.
    assert!(!at_cap_beside(0.3, 0.0).disturbed());
    // Without the rest sampled (the job has every CPU) there is nothing to judge.
    assert_eq!(one_cpu(1.0, 1.0, 0.0, 1.0).elsewhere_cores, None);
}

#[test]
fn the_rest_threshold_grows_with_the_machine() {
    // 15 other CPUs: 3 busy cores are background, 4 (over a quarter of them) are not.
    let tree = ProcTree::new();
    let host = tree.host(&[0]).with_rest_of(&(0..16).collect::<Vec<_>>());
    let judged = |busy_cores: u64| {
        let idle: Vec<Ticks> = (0..16).map(|_| (0, 0)).collect();
        tree.stat(&idle);
        let a = host.snapshot().expect("snapshot");
        let after: Vec<Ticks> = (0..16u64)
            .map(|c| match c {
                0 => (200, 0),
                c if c <= busy_cores => (200, 0),
                _ => (0, 200),
            })
            .collect();
        tree.stat(&after);
        let mut b = host.snapshot().expect("snapshot");
        b.at = a.at + Duration::from_secs(2);
        judge(&a, &b, job(1.0, 0.0, 1.0, 2.0)).expect("judged")
    };
    assert!(!judged(3).disturbed());
    assert_eq!(judged(4).disturbed_by, Some(DisturbedBy::BusyElsewhere));
}

#[test]
fn an_io_bound_job_leaving_its_cpus_idle_is_not_disturbed() {
    // 0.4 cores used, 0.02 by others, the rest idle: the job waited on its own.
    let l = one_cpu(0.42, 0.4, 0.0, 1.0);
    assert!(!l.disturbed(), "{l:?}");
    assert!(close(l.idle_cores, 0.58));
    // Idle time short of the shortfall, but others used next to nothing: still its own doing.
    let l = one_cpu(0.95, 0.88, 0.0, 1.0);
    assert!(!l.disturbed(), "{l:?}");
}

#[test]
fn others_on_capacity_the_job_left_idle_do_not_disturb_it() {
    // Capped at 1.5 cores on 2 CPUs: the job used 1, others 0.4, 0.6 stayed idle. It could
    // have had the idle time, so its shortfall is its own.
    let tree = ProcTree::new();
    let (a, b) = tree.window(&[0, 1], &[(0, 0), (0, 0)], &[(140, 60), (140, 60)], 2.0);
    let l = judge(&a, &b, job(1.0, 0.0, 1.5, 2.0)).expect("judged");
    assert!(!l.disturbed(), "{l:?}");
    assert!(
        close(l.other_cores, 0.4) && close(l.idle_cores, 0.6),
        "{l:?}"
    );
    // Capped at 2: 0.6 idle no longer covers the 1-core shortfall.
    assert!(
        judge(&a, &b, job(1.0, 0.0, 2.0, 2.0))
            .expect("judged")
            .disturbed()
    );
}

#[test]
fn a_job_throttled_at_its_cap_is_not_disturbed() {
    // Capped at half a core beside a hog: the job gets its half, the hog the rest.
    let l = one_cpu(1.0, 0.5, 0.4, 0.5);
    assert!(!l.disturbed() && close(l.other_cores, 0.5), "{l:?}");
    // Below its cap but held back by its quota (bursts), not by the hog.
    let l = one_cpu(1.0, 0.3, 0.3, 0.5);
    assert!(!l.disturbed(), "{l:?}");
    // The same without throttling: two hogs left it a third of the core.
    let l = one_cpu(1.0, 0.33, 0.0, 0.5);
    assert!(l.disturbed(), "{l:?}");
}

#[test]
fn a_small_shortfall_is_not_disturbance() {
    // 0.93 of a 1-core cap: within the 0.1-core margin.
    assert!(!one_cpu(1.0, 0.93, 0.0, 1.0).disturbed());
    // 7 of 8 cores is within 10% of the cap.
    let tree = ProcTree::new();
    let (a, b) = tree.window(&[0, 1, 2, 3, 4, 5, 6, 7], &[(0, 0); 8], &[(200, 0); 8], 2.0);
    assert!(
        !judge(&a, &b, job(7.3, 0.0, 8.0, 2.0))
            .expect("judged")
            .disturbed()
    );
    assert!(
        judge(&a, &b, job(6.0, 0.0, 8.0, 2.0))
            .expect("judged")
            .disturbed()
    );
}

#[test]
fn pressure_is_the_share_of_the_window_with_a_waiting_task() {
    let tree = ProcTree::new();
    let host = tree.host(&[0]);
    tree.stat(&[(0, 0)]);
    tree.pressure(1_000_000);
    let a = host.snapshot().expect("snapshot");
    assert_eq!(a.pressure_some_us, Some(1_000_000));
    tree.stat(&[(200, 0)]);
    tree.pressure(1_500_000);
    let mut b = host.snapshot().expect("snapshot");
    b.at = a.at + Duration::from_secs(2);
    let l = judge(&a, &b, job(0.4, 0.0, 1.0, 2.0)).expect("judged");
    assert_eq!(l.pressure_pct.map(|p| (p * 1e6).round() / 1e6), Some(25.0));
}

#[test]
fn a_kernel_without_pressure_gives_none() {
    let tree = ProcTree::new();
    tree.stat(&[(10, 10)]);
    let s = tree.host(&[0]).snapshot().expect("snapshot");
    assert_eq!(s.pressure_some_us, None);
    let mut later = s.clone();
    later.at += Duration::from_secs(1);
    let l = judge(&s, &later, job(0.0, 0.0, 1.0, 1.0)).expect("judged");
    assert_eq!(l.pressure_pct, None);
}

#[test]
fn malformed_files_are_errors_naming_the_file_and_line() {
    let tree = ProcTree::new();
    tree.raw_stat("cpu  1 2 3 4\ncpu0 1 2 x 4 5\ncpu1 1 2 3 4\n");
    let e = tree
        .host(&[0])
        .snapshot()
        .expect_err("malformed")
        .to_string();
    let path = tree.dir.path().join(PROC_STAT);
    assert!(e.starts_with(&format!("{}:2: ", path.display())), "{e}");
    assert!(e.contains("cpu0 1 2 x"), "{e}");
    // A line of another CPU is not read.
    assert!(tree.host(&[1]).snapshot().is_ok());

    tree.raw_stat("cpu0 1 2 3\n");
    let e = tree.host(&[0]).snapshot().expect_err("short").to_string();
    assert!(
        e.contains(":1: expected at least 4 tick counts, got 3"),
        "{e}"
    );

    tree.raw_stat("cpu0 1 2 3 4\ncpu1 1 2 3 4\n");
    let e = tree.host(&[0, 3]).snapshot().expect_err("missing");
    assert!(matches!(e, HostCpuError::MissingCpu { cpu: 3, .. }), "{e}");

    tree.raw_stat("cpu0 1 2 3 4\ncpu0 1 2 3 4\n");
    let e = tree.host(&[0]).snapshot().expect_err("twice").to_string();
    assert!(e.contains(":2: CPU 0 listed twice"), "{e}");

    tree.raw_stat("cpu0 1 2 3 4\n");
    let dir = tree.dir.path().join("pressure");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("cpu"), "some avg10=0.00 total=-5\n").expect("write");
    let e = tree
        .host(&[0])
        .snapshot()
        .expect_err("pressure")
        .to_string();
    assert!(e.contains("pressure/cpu:1: `total=`"), "{e}");

    let missing = HostCpu::new(tree.dir.path().join("nowhere"), &[0]);
    let e = missing.snapshot().expect_err("no file");
    assert!(matches!(&e, HostCpuError::Read { path, .. } if path.ends_with("nowhere/stat")));
}

#[test]
fn windows_that_cannot_be_judged_are_none() {
    let tree = ProcTree::new();
    let (a, b) = tree.window(&[0], &[(100, 100)], &[(300, 100)], 2.0);
    let j = job(0.4, 0.0, 1.0, 2.0);
    assert!(judge(&a, &b, j).is_some());
    // Zero length, reversed, too short.
    assert!(judge(&a, &a, j).is_none());
    assert!(judge(&b, &a, j).is_none());
    let mut short = b.clone();
    short.at = a.at + Duration::from_millis(50);
    assert!(judge(&a, &short, j).is_none());
    // A counter that went backwards (or wrapped).
    let (a2, b2) = tree.window(&[0], &[(100, 100)], &[(50, 400)], 2.0);
    assert!(judge(&a2, &b2, j).is_none());
    // More time than one CPU has in 2 s.
    let (a3, b3) = tree.window(&[0], &[(0, 0)], &[(400, 400)], 2.0);
    assert!(judge(&a3, &b3, j).is_none());
    // Re-pinned between the snapshots.
    let mut other = b.clone();
    other.cpus = vec![1];
    assert!(judge(&a, &other, j).is_none());
}

#[test]
fn a_fractional_cap_beyond_the_cpus_counts_as_all_of_them() {
    let tree = ProcTree::new();
    let (a, b) = tree.window(&[0], &[(0, 0)], &[(200, 0)], 2.0);
    // Capped at 4 cores but pinned to one, which it had to itself.
    assert!(
        !judge(&a, &b, job(1.0, 0.0, 4.0, 2.0))
            .expect("judged")
            .disturbed()
    );
    // A nonsense cap is taken as the CPUs'.
    let l = judge(&a, &b, job(0.3, 0.0, f64::NAN, 2.0)).expect("judged");
    assert!(l.disturbed(), "{l:?}");
}

#[test]
fn pinned_cpus_are_the_first_whole_cores() {
    assert_eq!(pinned_cpus(&[4, 5, 6, 7], 2.5), vec![4, 5, 6]);
    assert_eq!(pinned_cpus(&[4, 5, 6, 7], 0.5), vec![4]);
    assert_eq!(pinned_cpus(&[4, 5], 9.0), vec![4, 5]);
    assert_eq!(pinned_cpus(&[4, 5], f64::NAN), vec![4, 5]);
}

fn load(disturbed: bool, other: f64) -> Option<WindowLoad> {
    Some(WindowLoad {
        seconds: 2.0,
        job_cores: 1.0,
        other_cores: other,
        idle_cores: 0.5,
        pressure_pct: None,
        steal_cores: 0.0,
        run_wait_cores: None,
        job_pressure_pct: None,
        elsewhere_cores: None,
        disturbed_by: disturbed.then_some(DisturbedBy::OtherProcesses),
    })
}

#[test]
fn the_tracker_discards_disturbed_windows_a_bounded_number_of_times() {
    let mut t = InterferenceTracker::new(2);
    assert_eq!(t.summary(), None, "nothing judged yet");
    assert!(!t.push(load(false, 0.0)));
    // 2 x 2 re-measurements.
    for _ in 0..4 {
        assert!(t.push(load(true, 1.0)));
    }
    assert_eq!(t.discarded(), 4);
    let s = t.summary().expect("summary");
    assert!(!s.disturbed && s.discarded_windows == 4 && s.other_cores == 0.0);
    assert_eq!(t.note(), None);
    // Out of re-measurements: kept, and the cell is disturbed.
    assert!(!t.push(load(true, 1.0)));
    let s = t.summary().expect("summary");
    assert!(s.disturbed);
    assert!(
        close(s.other_cores, 0.5),
        "mean over the 2 windows used: {s:?}"
    );
    assert!(t.note().expect("note").contains("1 of the windows"));
    // Once the disturbed window is older than the windows the estimate uses, the cell is clean.
    assert!(!t.push(load(false, 0.0)));
    assert!(!t.push(None));
    let s = t.summary().expect("summary");
    assert!(!s.disturbed && s.other_cores == 0.0, "{s:?}");
}

#[test]
fn a_tracker_with_only_unjudged_windows_in_use_falls_back_to_all() {
    let mut t = InterferenceTracker::new(1);
    assert!(t.push(load(true, 2.0)));
    assert!(!t.push(None));
    let s = t.summary().expect("summary of the judged window");
    assert!(close(s.other_cores, 2.0) && !s.disturbed && s.discarded_windows == 1);
    let mut none = InterferenceTracker::new(3);
    none.push(None);
    assert_eq!(none.summary(), None);
}

fn snapshot(busy_ns: u64, idle_ns: u64, cpus: usize, pressure: Option<u64>) -> HostSnapshot {
    HostSnapshot {
        at: Instant::now(),
        busy_ns,
        idle_ns,
        steal_ns: 0,
        pressure_some_us: pressure,
        cpus: (0..cpus as u32).collect(),
        tick_ns: 10_000_000,
        rest: None,
    }
}

proptest! {
    #[test]
    fn judged_windows_are_finite_and_never_negative(
        b0 in any::<u64>(), i0 in any::<u64>(), db in any::<u64>(), di in any::<u64>(),
        p0 in proptest::option::of(any::<u64>()), p1 in proptest::option::of(any::<u64>()),
        cpus in 1usize..64, ms in 0u64..100_000,
        cpu_ns in any::<u64>(), throttled_ns in any::<u64>(),
        cap in prop_oneof![
            Just(f64::NAN), Just(f64::INFINITY), Just(-1.0), Just(0.0), 0.001f64..128.0
        ],
        rest in proptest::option::of((any::<u64>(), any::<u64>(), 1usize..64)),
        profiler_total_ns in any::<u64>(),
    ) {
        let mut a = snapshot(b0, i0, cpus, p0);
        let mut b = snapshot(b0.wrapping_add(db), i0.wrapping_add(di), cpus, p1);
        b.at = a.at + Duration::from_millis(ms);
        if let Some((r0, dr, rn)) = rest {
            let others: Vec<u32> = (0..rn as u32).map(|c| c + cpus as u32).collect();
            a.rest = Some(RestSnapshot { busy_ns: r0, cpus: others.clone() });
            b.rest = Some(RestSnapshot { busy_ns: r0.wrapping_add(dr), cpus: others });
        }
        let j = JobWindow { cpu_ns, throttled_ns, cap_cores: cap, profiler_ns: 0, profiler_total_ns, run_wait_ns: None, pressure_ns: None };
        if let Some(l) = judge(&a, &b, j) {
            if let Some(e) = l.elsewhere_cores {
                let rn = rest.map_or(0, |r| r.2) as f64;
                prop_assert!(e.is_finite() && (0.0..=rn).contains(&e), "{l:?}");
            }
            prop_assert_eq!(l.elsewhere_cores.is_some(), rest.is_some() && b.rest.as_ref().unwrap().busy_ns >= a.rest.as_ref().unwrap().busy_ns);
            if l.disturbed_by == Some(DisturbedBy::BusyElsewhere) {
                return Ok(());
            }
            for v in [l.seconds, l.job_cores, l.other_cores, l.idle_cores] {
                prop_assert!(v.is_finite() && v >= 0.0, "{l:?}");
            }
            prop_assert!(l.pressure_pct.is_none_or(|p| (0.0..=100.0).contains(&p)), "{l:?}");
            prop_assert!(l.other_cores <= cpus as f64 && l.idle_cores <= cpus as f64);
            let n = cpus as f64;
            let cap = if cap.is_finite() && cap > 0.0 { cap.min(n) } else { n };
            // The rule's third clause: idle time that covers the shortfall is never disturbance.
            if l.idle_cores >= cap - l.job_cores {
                prop_assert!(!l.disturbed(), "{l:?}");
            }
            if l.disturbed() {
                prop_assert!(l.job_cores < cap && l.other_cores > OTHER_CORES, "{l:?}");
            }
        }
    }

    #[test]
    fn plausible_windows_are_judged(
        cpus in 1usize..16, busy_share in 0.0f64..=1.0, seconds in 0.2f64..30.0,
        job_share in 0.0f64..=1.0, cap_share in 0.01f64..=1.0,
    ) {
        let n = cpus as f64;
        let wall_ns = seconds * 1e9;
        let busy = (busy_share * n * wall_ns) as u64;
        let idle = (n * wall_ns) as u64 - busy;
        let a = snapshot(5, 7, cpus, None);
        let mut b = snapshot(5 + busy, 7 + idle, cpus, None);
        b.at = a.at + Duration::from_secs_f64(seconds);
        let cap = cap_share * n;
        let cpu_ns = (busy as f64 * job_share) as u64;
        let j = JobWindow { cpu_ns, throttled_ns: 0, cap_cores: cap, profiler_ns: 0, profiler_total_ns: 0, run_wait_ns: None, pressure_ns: None };
        let l = judge(&a, &b, j);
        prop_assert!(l.is_some());
        let l = l.unwrap();
        prop_assert!((l.job_cores + l.other_cores + l.idle_cores - n).abs() < 1e-6 * n + 1e-6);
        if l.idle_cores >= cap - l.job_cores {
            prop_assert!(!l.disturbed(), "idle time covers the shortfall: {l:?}");
        }
    }
}

/// Kills the hog when the test ends, however it ends.
struct Hog(Child);

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first CPU this process may run on.
fn first_allowed_cpu() -> io::Result<usize> {
    // SAFETY: cpu_set_t is plain data (all zeroes is the empty set); the kernel writes at most
    // size_of::<cpu_set_t>() bytes into it, and CPU_ISSET reads inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        (0..libc::CPU_SETSIZE as usize)
            .find(|&c| libc::CPU_ISSET(c, &set))
            .ok_or_else(|| io::Error::other("no CPU allowed"))
    }
}

fn pin(pid: u32, cpu: usize) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(io::Error::other)?;
    // SAFETY: as above; CPU_SET writes inside the set, which the kernel only reads.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// On the real kernel: a busy loop pinned to one CPU shows as a core of other processes' time
/// there, and a job capped at a core that got 0.4 of it is disturbed.
#[test]
fn a_real_hog_shows_on_its_cpu() {
    if !nix::unistd::Uid::effective().is_root() {
        assert!(
            !crate::test_support::under_ci(),
            "CI must run the host interference test as root"
        );
        // Straight to stderr: the test harness hides eprintln! output of passing tests.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIPPED: interference::a_real_hog_shows_on_its_cpu: needs root\n"),
        );
        return;
    }
    let cpu = first_allowed_cpu().expect("affinity");
    let hog = Hog(Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .expect("sh starts"));
    pin(hog.0.id(), cpu).expect("pin the hog");
    // Let it migrate onto the CPU.
    std::thread::sleep(Duration::from_millis(300));
    let host = HostCpu::new(PROC_ROOT, &[cpu as u32]);
    let before = host.snapshot().expect("snapshot");
    std::thread::sleep(Duration::from_secs(2));
    let after = host.snapshot().expect("snapshot");
    drop(hog);
    let seconds = after.at.duration_since(before.at).as_secs_f64();
    let nobody = judge(&before, &after, job(0.0, 0.0, 1.0, seconds)).expect("judged");
    assert!(
        (0.85..=1.05).contains(&nobody.other_cores) && nobody.idle_cores < 0.1,
        "a hog on CPU {cpu} is about one core of other processes' time: {nobody:?}"
    );
    let starved = judge(&before, &after, job(0.4, 0.0, 1.0, seconds)).expect("judged");
    assert!(starved.disturbed(), "{starved:?}");
    assert!((0.45..=0.65).contains(&starved.other_cores), "{starved:?}");
}

/// A 2 s window on CPU 0, busy for `busy` cores, the job using `job_cores` of its 1-core cap
/// and its tasks waiting `wait` cores on a run queue while the profiler ran `profiler` cores.
fn waiting(busy: f64, job_cores: f64, wait: f64, profiler: f64) -> WindowLoad {
    let mut j = job(job_cores, 0.0, 1.0, 2.0);
    j.run_wait_ns = Some((wait * 2e9) as u64);
    j.profiler_ns = (profiler * 2e9) as u64;
    one_cpu_judged(busy, j)
}

/// The job got half its core, which was idle for less than the other half; what else ran
/// there is too little for the per-CPU rule (0.12 cores), but the job's own tasks waited half
/// a core on its run queue: it was kept off its CPU.
#[test]
fn run_queue_wait_below_the_cap_disturbs_where_the_counters_say_little() {
    let l = waiting(0.62, 0.5, 0.5, 0.0);
    assert_eq!(l.disturbed_by, Some(DisturbedBy::RunQueueWait), "{l:?}");
    assert!(close(l.run_wait_cores.unwrap(), 0.5), "{l:?}");
    // The same with no wait is undisturbed, and a hog's full share is caught by the counters.
    assert!(!waiting(0.62, 0.5, 0.0, 0.0).disturbed());
    let l = waiting(1.0, 0.63, 0.6, 0.0);
    assert_eq!(l.disturbed_by, Some(DisturbedBy::OtherProcesses), "{l:?}");
}

/// More threads than its cap: the job waits behind its own threads but runs at its cap.
#[test]
fn a_job_oversubscribing_its_own_cap_is_not_disturbed() {
    let l = waiting(1.0, 0.97, 3.0, 0.01);
    assert!(!l.disturbed(), "{l:?}");
}

/// Wait while the profiler ran on the job's CPUs is not judged (its sampling is part of every
/// measurement), nor is wait while
/// the job's CPUs sat idle (its tasks were pinned onto each other), nor is a bursty job's wait
/// behind its own threads below its cap on CPUs nothing else used.
#[test]
fn wait_the_profiler_or_idle_cpus_explain_is_not_disturbance() {
    let l = waiting(1.0, 0.7, 0.6, 0.3);
    assert!(!l.disturbed(), "{l:?}");
    let l = waiting(0.6, 0.6, 0.5, 0.0);
    assert!(!l.disturbed(), "{l:?}");
    let l = waiting(0.85, 0.78, 0.9, 0.05);
    assert!(!l.disturbed(), "{l:?}");
}

/// Steal time is counted as other processes' time, and recorded on its own.
#[test]
fn steal_is_other_load_and_recorded() {
    let tree = ProcTree::new();
    tree.raw_stat("cpu0 100 0 100 1000 0 0 0 0 0 0\n");
    let host = tree.host(&[0]);
    let a = host.snapshot().unwrap();
    tree.raw_stat("cpu0 180 0 100 1000 0 0 0 120 0 0\n");
    let mut b = host.snapshot().unwrap();
    b.at = a.at + Duration::from_secs(2);
    let l = judge(&a, &b, job(0.4, 0.0, 1.0, 2.0)).expect("judged");
    assert!(
        close(l.steal_cores, 0.6) && close(l.other_cores, 0.6),
        "{l:?}"
    );
    assert_eq!(l.disturbed_by, Some(DisturbedBy::OtherProcesses));
}

/// A cell that stays disturbed says by what, in its summary and its note.
#[test]
fn a_disturbed_cell_says_what_disturbed_it() {
    let mut t = InterferenceTracker::new(2);
    let w = waiting(0.62, 0.5, 0.8, 0.0);
    for _ in 0..10 {
        t.push(Some(w));
    }
    let s = t.summary().unwrap();
    assert!(s.disturbed, "{s:?}");
    assert_eq!(
        s.disturbed_by.as_deref(),
        Some(DisturbedBy::RunQueueWait.describe())
    );
    let note = t.note().unwrap();
    assert!(
        note.contains("waiting for a CPU")
            && note.contains("waited 0.80 cores")
            && note.contains("used 0.12 cores"),
        "{note}"
    );
}

#[test]
fn a_cell_disturbed_from_elsewhere_says_so() {
    let mut t = InterferenceTracker::new(1);
    let busy = WindowLoad {
        elsewhere_cores: Some(0.98),
        disturbed_by: Some(DisturbedBy::BusyElsewhere),
        ..load(false, 0.0).unwrap()
    };
    assert!(t.push(Some(busy)) && t.push(Some(busy)));
    assert!(!t.push(Some(busy)), "re-measurements run out");
    let s = t.summary().expect("summary");
    assert!(s.disturbed && s.elsewhere_cores == Some(0.98), "{s:?}");
    assert_eq!(
        s.disturbed_by.as_deref(),
        Some("other processes busy on the machine's other CPUs")
    );
    let note = t.note().expect("note");
    assert!(
        note.contains("0.98 cores of the machine's other CPUs") && !note.contains("waited"),
        "{note}"
    );
}
