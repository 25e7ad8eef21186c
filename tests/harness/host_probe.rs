//! The probe of the host's speed on real cgroups: it takes its bursts and no more, on an idle
//! CPU and beside a thread spinning on a busy one (its idle cgroup and `SCHED_IDLE` do not keep
//! it from waking into its 2 ms there: it costs a CPU-bound job up to 2%), reports a speed
//! where it runs, and leaves no process or cgroup behind.

use profiler::harness::cgroup::CgroupRoot;
use profiler::harness::measure::host_probe::{BURST, HostProbe, PERIOD, speed_over};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Spins on CPU `cpu` at normal priority until `stop` is set.
fn spin_on(cpu: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        // SAFETY: plain syscalls on this thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
        let mut x = 0u64;
        while !stop.load(Ordering::Relaxed) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
        }
    })
}

#[test]
fn the_probe_takes_only_idle_time_and_leaves_nothing_behind() {
    require_caps!("the_probe_takes_only_idle_time_and_leaves_nothing_behind");
    let _machine = crate::MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let root = CgroupRoot::open("profiler-test-host-probe").expect("cgroup root");
    let cpus = root.cpus().to_vec();
    if cpus.len() < 2 {
        eprintln!("SKIPPED: the probe test needs two CPUs");
        return;
    }
    let (busy, idle) = (cpus[0], cpus[1]);
    let cgroup = root.create_launch("host-probe", 0).expect("probe cgroup");
    let procs = cgroup.procs_files();
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = spin_on(busy as usize, Arc::clone(&stop));
    let probe = HostProbe::start(cgroup, &[busy, idle]).expect("start the probe");
    let start = now();
    std::thread::sleep(Duration::from_secs(3));
    let end = now();
    let bursts = probe.bursts_within([start, end]);
    stop.store(true, Ordering::Relaxed);
    spinner.join().unwrap();

    let cpu_share = |cpu: u32| {
        (bursts.iter())
            .filter(|b| b.cpu == cpu)
            .map(|b| b.cpu_s)
            .sum::<f64>()
            / (end - start)
    };
    let duty = BURST.as_secs_f64() / PERIOD.as_secs_f64();
    // On the idle CPU the probe runs its bursts; beside a spinning thread, no more than them.
    assert!(
        (0.5 * duty..2.0 * duty).contains(&cpu_share(idle)),
        "probe on the idle CPU: {:.4} of it (duty {duty})",
        cpu_share(idle)
    );
    assert!(
        cpu_share(busy) < 1.5 * duty,
        "probe beside a busy CPU's spinner: {:.4} of it",
        cpu_share(busy)
    );
    let speed = speed_over(&bursts, &[idle], [start, end]).expect("a speed on the idle CPU");
    assert!(speed.is_finite() && speed > 1e6, "{speed} instructions/s");

    drop(probe);
    for file in procs {
        assert!(
            !file.exists()
                || std::fs::read_to_string(&file)
                    .unwrap_or_default()
                    .trim()
                    .is_empty(),
            "{} still holds processes",
            file.display()
        );
    }
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}
