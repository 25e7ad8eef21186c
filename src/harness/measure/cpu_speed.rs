//! How fast the machine's CPUs run while a cell is measured: the CPU time of a fixed loop.
//!
//! A virtual machine's CPUs slow down when other guests load the host cores they share, and the
//! guest may see no steal time for it: its tasks are charged the time the host took. The same
//! deterministic replay took 1.6-1.7 times the CPU time half an hour apart on a 2-core VM
//! (`profiler replay --elastic pollux --elastic-trace pollux:workloads/traces/pollux/workload-7.csv
//! --first 80`, run again a few times over an hour, and compare its user time). A cell measured
//! in such a spell is slower for a reason none of the job's counters shows; the loop's CPU time,
//! compared between the cells of a sweep, shows it.

use nix::time::{ClockId, clock_gettime};
use std::time::{Duration, Instant};

/// Iterations of the reference loop: a few milliseconds of one core.
const ITERATIONS: u64 = 2_000_000;
/// The least time between two samples in a cell: the loop then takes well under 1% of a core.
const EVERY: Duration = Duration::from_secs(1);

fn thread_cpu_ns() -> Option<u64> {
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).ok()?;
    Some(t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
}

/// The CPU time of one run of the reference loop (a chain of multiplies, each waiting for the
/// last), ns: CPU time, so time the thread waited for a CPU does not count.
pub fn reference_loop_ns() -> Option<f64> {
    let t0 = thread_cpu_ns()?;
    let mut x = std::hint::black_box(0x9e37_79b9_7f4a_7c15u64);
    for i in 0..ITERATIONS {
        x = (x ^ i).wrapping_mul(0xff51_afd7_ed55_8ccd).rotate_left(17);
    }
    std::hint::black_box(x);
    let t1 = thread_cpu_ns()?;
    Some(t1.saturating_sub(t0) as f64).filter(|ns| *ns > 0.0)
}

/// Runs the reference loop through a cell, at most once every [`EVERY`]; the cell's figure is
/// the median run, which one preempted run does not move.
#[derive(Debug, Default)]
pub struct SpeedSampler {
    last: Option<Instant>,
    runs_ns: Vec<f64>,
}

impl SpeedSampler {
    pub fn sample(&mut self) {
        if self.last.is_some_and(|t| t.elapsed() < EVERY) {
            return;
        }
        self.last = Some(Instant::now());
        if let Some(ns) = reference_loop_ns() {
            self.runs_ns.push(ns);
        }
    }

    /// The median run's CPU time, ns; none before the first run.
    pub fn median_ns(&self) -> Option<f64> {
        (!self.runs_ns.is_empty()).then(|| crate::stats::median(&self.runs_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
    use nix::unistd::Pid;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn pin_to(cpu: usize) {
        let mut set = CpuSet::new();
        set.set(cpu).unwrap();
        sched_setaffinity(Pid::from_raw(0), &set).unwrap();
    }

    /// The loop measures how fast a CPU runs, not how much of it the profiler gets: sharing
    /// its CPU with a spinning thread doubles its wall time and leaves its CPU time alone.
    #[test]
    fn the_loop_counts_cpu_time_not_the_time_it_waited_for_a_cpu() {
        let allowed = sched_getaffinity(Pid::from_raw(0)).unwrap();
        let cpu = (0..CpuSet::count()).find(|&c| allowed.is_set(c).unwrap_or(false));
        let cpu = cpu.expect("some CPU is allowed");
        // The fastest of five runs alone.
        let alone = std::thread::spawn(move || {
            pin_to(cpu);
            (0..5)
                .map(|_| reference_loop_ns().unwrap())
                .fold(f64::INFINITY, f64::min)
        })
        .join()
        .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let hog = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                pin_to(cpu);
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        // Longer than a scheduler slice, so the two threads take turns within one run.
        let shared = std::thread::spawn(move || {
            pin_to(cpu);
            let wall = Instant::now();
            let runs: Vec<f64> = (0..20).map(|_| reference_loop_ns().unwrap()).collect();
            (runs, wall.elapsed().as_nanos() as f64)
        })
        .join()
        .unwrap();
        stop.store(true, Ordering::Relaxed);
        hog.join().unwrap();
        let (runs, wall) = shared;
        let cpu_total: f64 = runs.iter().sum();
        assert!(
            wall > 1.5 * cpu_total,
            "the hog took no time from the loop: {wall:.0} ns wall for {cpu_total:.0} ns of CPU"
        );
        let mut sorted = runs.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        assert!(
            median < 1.5 * alone,
            "the loop's CPU time counted the wait: {median:.0} ns shared, {alone:.0} ns alone"
        );
    }

    #[test]
    fn the_median_run_is_the_cells_figure() {
        let mut s = SpeedSampler::default();
        assert_eq!(s.median_ns(), None);
        s.runs_ns = vec![5.0, 1.0, 100.0];
        assert_eq!(s.median_ns(), Some(5.0));
        s.runs_ns.push(7.0);
        assert_eq!(s.median_ns(), Some(6.0));
        s.sample();
        assert_eq!(s.runs_ns.len(), 5, "the first sample runs at once");
        s.sample();
        assert_eq!(s.runs_ns.len(), 5, "the next waits a second");
    }
}
