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
                0 => unsafe { child(kernel, cpu, &procs, write_end) },
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

/// The work per CPU-second of `bursts` on `cpus` ending inside `span`.
pub fn speed_over(bursts: &[Burst], cpus: &[u32], span: [f64; 2]) -> Option<f64> {
    let (work, cpu_s) = (bursts.iter())
        .filter(|b| cpus.contains(&b.cpu) && span[0] <= b.unix_s && b.unix_s <= span[1])
        .fold((0.0, 0.0), |(w, c), b| (w + b.work, c + b.cpu_s));
    (cpu_s >= MIN_CPU_S && work > 0.0).then(|| work / cpu_s)
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

/// The probe process: joins the idle cgroup, pins itself to `cpu`, goes `SCHED_IDLE` and runs
/// bursts until its parent goes or the pipe closes.
///
/// # Safety
/// Call only in a child just forked; it never returns.
unsafe fn child(mut kernel: kernel::Kernel, cpu: u32, procs: &[CString], out: libc::c_int) -> ! {
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
            || libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) != 0
        {
            libc::_exit(1);
        }
        let (burst, period) = (BURST.as_nanos() as i64, PERIOD.as_nanos() as i64);
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
}
