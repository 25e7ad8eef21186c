//! The host's speed on the job's own CPUs. On a rented VM the host slows a virtual CPU in
//! spells of seconds; a reference measured on another CPU, or a second earlier, does not see
//! them. A probe does: one process per CPU, pinned to it, runs [`kernel::Kernel`] for a burst
//! of [`BURST`] every [`PERIOD`] under `SCHED_IDLE` in a cgroup marked idle, and reports its
//! work per second of its own CPU time. It takes no more than its bursts, 2% of a CPU, also
//! from a CPU-bound job (waking, it still gets its 2 ms: `tests/harness/host_probe.rs`).
//! Where the job is throttled (a fractional CPU level) the probe runs in the job's idle half
//! and its speed follows the job's; at a whole busy core it gets little time and says
//! little.
//!
//! A probe in the root cgroup under `SCHED_IDLE` alone is not idle beside a capped job (on
//! Linux 6.18 it took half of a CPU from a job capped at one): the idle cgroup is what keeps it
//! out of the job's way, so there is no probe without one.

pub mod kernel;

use crate::harness::cgroup::{CapsError, RunCgroup};
use std::ffi::CString;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use thiserror::Error;

/// How long the probe runs in each period: 2% of a CPU. A probe using all idle time made a
/// half-core job 9.9% faster (the virtual CPU never halts between the job's turns); 2-ms
/// bursts moved it by +2.1% [-3.5%, +8.0%] (`scripts/idle-probe.py ab`).
pub const BURST: std::time::Duration = std::time::Duration::from_millis(2);
pub const PERIOD: std::time::Duration = std::time::Duration::from_millis(100);
/// Least probe CPU time over a span for its speed to stand for the span (a few bursts).
const MIN_CPU_S: f64 = 0.004;
/// Most bursts kept: ten a second a CPU, hours of a sweep.
const MAX_BURSTS: usize = 4_000_000;

#[derive(Debug, Error)]
pub enum HostProbeError {
    #[error("the probe's idle cgroup: {0}")]
    Cgroup(#[from] CapsError),
    #[error("starting the probe: {0}")]
    Start(#[source] std::io::Error),
}

/// What a probe process writes after each burst: cumulative counters, so a lost record loses
/// nothing but its own timing.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Record {
    cpu: u64,
    unix_s: f64,
    work: u64,
    cpu_s: f64,
}

const RECORD: usize = std::mem::size_of::<Record>();

/// One burst: when it ended, on which CPU, the work done and the probe's CPU seconds since the
/// CPU's previous record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Burst {
    pub cpu: u32,
    pub unix_s: f64,
    pub work: f64,
    pub cpu_s: f64,
}

/// The running probe; dropping it stops its processes and removes its cgroup.
pub struct HostProbe {
    children: Vec<libc::pid_t>,
    reader: Option<JoinHandle<()>>,
    bursts: Arc<Mutex<Vec<Burst>>>,
    /// Held so that it outlives the processes in it.
    _cgroup: RunCgroup,
}

impl HostProbe {
    /// Starts one probe process on each of `cpus`, in `cgroup`, which is made idle first.
    pub fn start(cgroup: RunCgroup, cpus: &[u32]) -> Result<HostProbe, HostProbeError> {
        cgroup.make_idle()?;
        HostProbe::fork(cgroup, cpus, Duty::Probe)
    }

    /// Starts a CPU-bound process running the probe's kernel without pause on `cpu`, in
    /// `cgroup` (whose caps it gets): a reference job whose rate, the work of its records over
    /// wall time, is the host's speed times the CPU it is given.
    pub fn start_busy(cgroup: RunCgroup, cpu: u32) -> Result<HostProbe, HostProbeError> {
        HostProbe::fork(cgroup, &[cpu], Duty::Busy)
    }

    fn fork(cgroup: RunCgroup, cpus: &[u32], duty: Duty) -> Result<HostProbe, HostProbeError> {
        let procs: Vec<CString> = (cgroup.procs_files().iter())
            .filter_map(|p| CString::new(p.as_os_str().as_bytes()).ok())
            .collect();
        let (read_end, write_end) = pipe().map_err(HostProbeError::Start)?;
        let mut probe = HostProbe {
            children: Vec::new(),
            reader: None,
            bursts: Arc::new(Mutex::new(Vec::new())),
            _cgroup: cgroup,
        };
        for &cpu in cpus {
            let kernel = kernel::Kernel::new();
            // SAFETY: the child calls only async-signal-safe functions (`child` allocates
            // nothing: its kernel and paths were made before the fork) and never returns.
            match unsafe { libc::fork() } {
                -1 => return Err(HostProbeError::Start(std::io::Error::last_os_error())),
                0 => unsafe { child(kernel, cpu, &procs, write_end, duty) },
                pid => probe.children.push(pid),
            }
        }
        // SAFETY: the write end is ours and no longer used here: the reader sees the end of
        // the pipe once every child has gone.
        unsafe { libc::close(write_end) };
        let bursts = Arc::clone(&probe.bursts);
        // SAFETY: the read end is ours alone from here.
        let file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(read_end) });
        probe.reader = Some(std::thread::spawn(move || read_records(file, &bursts)));
        Ok(probe)
    }

    /// The bursts so far that ended inside `span` (Unix seconds), in the order they arrived:
    /// a measurement's, without copying the whole sweep's.
    pub fn bursts_within(&self, span: [f64; 2]) -> Vec<Burst> {
        (self.bursts.lock().iter())
            .flat_map(|b| b.iter())
            .filter(|b| span[0] <= b.unix_s && b.unix_s <= span[1])
            .copied()
            .collect()
    }
}

/// The bursts of `bursts` on `cpus` that ended inside `span`.
fn on_within<'a>(
    bursts: &'a [Burst],
    cpus: &'a [u32],
    span: [f64; 2],
) -> impl Iterator<Item = &'a Burst> {
    (bursts.iter())
        .filter(move |b| cpus.contains(&b.cpu) && span[0] <= b.unix_s && b.unix_s <= span[1])
}

/// The work per CPU-second of `bursts` on `cpus` ending inside `span`.
pub fn speed_over(bursts: &[Burst], cpus: &[u32], span: [f64; 2]) -> Option<f64> {
    let (work, cpu_s) =
        on_within(bursts, cpus, span).fold((0.0, 0.0), |(w, c), b| (w + b.work, c + b.cpu_s));
    (cpu_s >= MIN_CPU_S && work > 0.0).then(|| work / cpu_s)
}

/// The variance of the log of [`speed_over`]'s speed that is the probe's own noise. A burst's
/// log speed is noisier the less CPU time it got (a burst the job preempted after a fraction
/// of its 2 ms), as `σ² / cpu_s`; bursts 100 ms apart share the host's spell, so the squared
/// difference of successive bursts' log speeds on one CPU, over `1/c1 + 1/c2`, estimates
/// `σ²`, and the speed over the span, their work over their CPU time, has `σ² / Σ cpu_s`.
/// `None` with fewer than two successive pairs.
pub fn noise_over(bursts: &[Burst], cpus: &[u32], span: [f64; 2]) -> Option<f64> {
    let inside: Vec<&Burst> = on_within(bursts, cpus, span)
        .filter(|b| b.work > 0.0 && b.cpu_s > 0.0)
        .collect();
    let (mut scaled, mut pairs) = (0.0, 0usize);
    for &cpu in cpus {
        let mut on: Vec<&&Burst> = inside.iter().filter(|b| b.cpu == cpu).collect();
        on.sort_by(|a, b| a.unix_s.total_cmp(&b.unix_s));
        for w in on.windows(2) {
            let d = (w[1].work / w[1].cpu_s).ln() - (w[0].work / w[0].cpu_s).ln();
            scaled += d * d / (1.0 / w[0].cpu_s + 1.0 / w[1].cpu_s);
            pairs += 1;
        }
    }
    if pairs < 2 {
        return None;
    }
    let total: f64 = inside.iter().map(|b| b.cpu_s).sum();
    Some(scaled / pairs as f64 / total)
}

impl Drop for HostProbe {
    fn drop(&mut self) {
        for &pid in &self.children {
            // SAFETY: plain syscalls on our own children.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

fn pipe() -> std::io::Result<(libc::c_int, libc::c_int)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// Turns each CPU's cumulative records into bursts until every probe has gone.
fn read_records(mut file: std::fs::File, bursts: &Mutex<Vec<Burst>>) {
    let mut last: std::collections::HashMap<u64, Record> = Default::default();
    let mut buf = [0u8; RECORD];
    while file.read_exact(&mut buf).is_ok() {
        // SAFETY: `Record` is plain old data of exactly `RECORD` bytes.
        let r: Record = unsafe { std::ptr::read_unaligned(buf.as_ptr().cast()) };
        if let Some(prev) = last.insert(r.cpu, r) {
            let burst = Burst {
                cpu: r.cpu as u32,
                unix_s: r.unix_s,
                work: r.work.saturating_sub(prev.work) as f64,
                cpu_s: (r.cpu_s - prev.cpu_s).max(0.0),
            };
            if let Ok(mut b) = bursts.lock()
                && b.len() < MAX_BURSTS
            {
                b.push(burst);
            }
        }
    }
}

/// What a forked process runs: the probe's bursts under `SCHED_IDLE`, or the kernel without
/// pause at normal priority (a reference job), recording each [`PERIOD`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Duty {
    Probe,
    Busy,
}

/// The probe process: joins its cgroup, pins itself to `cpu`, goes `SCHED_IDLE` (a probe) and
/// runs bursts (or runs throughout, busy) until its parent goes or the pipe closes.
///
/// # Safety
/// Call only in a child just forked; it never returns.
unsafe fn child(
    mut kernel: kernel::Kernel,
    cpu: u32,
    procs: &[CString],
    out: libc::c_int,
    duty: Duty,
) -> ! {
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        let pid = libc::getpid();
        for file in procs {
            if !write_pid(file, pid) {
                libc::_exit(1);
            }
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        let param = libc::sched_param { sched_priority: 0 };
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
            || (duty == Duty::Probe && libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) != 0)
        {
            libc::_exit(1);
        }
        let period = PERIOD.as_nanos() as i64;
        let burst = match duty {
            Duty::Probe => BURST.as_nanos() as i64,
            Duty::Busy => period,
        };
        let mut work = 0u64;
        loop {
            let start = now(libc::CLOCK_MONOTONIC);
            while now(libc::CLOCK_MONOTONIC) - start < burst {
                let (w, acc) = kernel.run(64);
                work += w;
                std::hint::black_box(acc);
            }
            let record = Record {
                cpu: cpu as u64,
                unix_s: now(libc::CLOCK_REALTIME) as f64 * 1e-9,
                work,
                cpu_s: now(libc::CLOCK_THREAD_CPUTIME_ID) as f64 * 1e-9,
            };
            let bytes = (&record as *const Record).cast::<libc::c_void>();
            if libc::write(out, bytes, RECORD) != RECORD as isize {
                libc::_exit(0);
            }
            let left = period - (now(libc::CLOCK_MONOTONIC) - start);
            if left > 0 {
                let ts = libc::timespec {
                    tv_sec: left / 1_000_000_000,
                    tv_nsec: left % 1_000_000_000,
                };
                libc::nanosleep(&ts, std::ptr::null_mut());
            }
        }
    }
}

/// Nanoseconds on `clock`.
unsafe fn now(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Writes `pid` in decimal to the file `path` (a `cgroup.procs`), without allocating.
unsafe fn write_pid(path: &CString, pid: libc::pid_t) -> bool {
    let mut digits = [0u8; 20];
    let (mut n, mut at) = (pid as u64, digits.len());
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let len = digits.len() - at;
        let ok = libc::write(fd, digits[at..].as_ptr().cast(), len) == len as isize;
        libc::close(fd);
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn burst(cpu: u32, t: f64, work: f64, cpu_s: f64) -> Burst {
        Burst {
            cpu,
            unix_s: t,
            work,
            cpu_s,
        }
    }

    /// The speed over a span is the work over the CPU time of the bursts of those CPUs that
    /// end inside it; too little CPU time says nothing.
    #[test]
    fn speed_is_work_over_cpu_time_inside_the_span() {
        let b = [
            burst(0, 1.0, 100.0, 0.002),
            burst(0, 1.1, 50.0, 0.002),
            burst(1, 1.1, 1000.0, 0.002),
            burst(0, 2.5, 400.0, 0.002),
        ];
        assert_eq!(speed_over(&b, &[0], [0.5, 1.2]), Some(150.0 / 0.004));
        assert_eq!(speed_over(&b, &[0, 1], [0.5, 1.2]), Some(1150.0 / 0.006));
        assert_eq!(speed_over(&b, &[0], [2.0, 3.0]), None);
        assert_eq!(speed_over(&b, &[2], [0.0, 3.0]), None);
    }

    /// The noise of a span's speed is half the successive bursts' squared log difference,
    /// over as many bursts as the span holds; a steady probe has none.
    #[test]
    fn noise_is_the_successive_bursts_spread_over_their_count() {
        let alternating: Vec<Burst> = (0..10)
            .map(|i| {
                burst(
                    0,
                    i as f64 * 0.1,
                    if i % 2 == 0 { 100.0 } else { 110.0 },
                    0.002,
                )
            })
            .collect();
        let d = (110f64 / 100.0).ln();
        let expected = d * d / 2.0 / 10.0;
        let noise = noise_over(&alternating, &[0], [0.0, 1.0]).unwrap();
        assert!((noise - expected).abs() < 1e-12, "{noise} {expected}");
        // A burst cut short is as noisy as its CPU time is short: ten bursts of which every
        // other got a tenth of the time, whose log speeds differ by `d` as before, say less
        // than ten full ones.
        let cut: Vec<Burst> = (0..10)
            .map(|i| match i % 2 {
                0 => burst(0, i as f64 * 0.1, 100.0, 0.002),
                _ => burst(0, i as f64 * 0.1, 11.0, 0.0002),
            })
            .collect();
        let short = noise_over(&cut, &[0], [0.0, 1.0]).unwrap();
        let per = d * d / (1.0 / 0.002 + 1.0 / 0.0002);
        assert!((short - per / (5.0 * 0.0022)).abs() < 1e-12, "{short}");
        let steady: Vec<Burst> = (0..10)
            .map(|i| burst(0, i as f64 * 0.1, 100.0, 0.002))
            .collect();
        assert_eq!(noise_over(&steady, &[0], [0.0, 1.0]), Some(0.0));
        assert_eq!(noise_over(&steady[..2], &[0], [0.0, 1.0]), None);
        assert_eq!(noise_over(&steady, &[1], [0.0, 1.0]), None);
    }
}
