//! The job's reads replayed under one memory level's page cache, to count what storage reads
//! per sample there. What a cache of a given size costs depends on more than which samples it
//! holds: where preceding pages are cached the kernel takes a `pread` for a stream and reads
//! ahead past it, and what it reads ahead may be evicted before use. Neither is in a hit
//! ratio; both are in the kernel, so the replay asks it.
//!
//! Readers forked from the profiler (as many as the job had reading its dataset) read every
//! sample once an epoch in a fresh random order, each its share, in a memory cgroup whose limit
//! leaves the page cache the room the level leaves the job, under the job's storage cap. A
//! first epoch fills the cache, a second is counted. The cap changes what the kernel reads
//! ahead and keeps: without it, or with the first epoch at full speed, the replay of an h5py
//! loader's reads counted less than the loader read.

mod reader;

use crate::harness::cgroup::{CapsError, CgroupRoot, RunCgroup};
use crate::harness::memory::page_cache::evict;
use crate::matrix::ReadAccess;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use thiserror::Error;

/// One sample: `len` bytes at `offset` of file `file`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sample {
    pub file: u32,
    pub offset: u64,
    pub len: u64,
}

/// Errors of a replay.
#[derive(Debug, Error)]
pub enum ReplayError {
    #[error("replay cgroup: {0}")]
    Cgroup(#[from] CapsError),
    #[error("cannot {what} for the replay: {source}")]
    Sys {
        what: &'static str,
        #[source]
        source: nix::Error,
    },
    #[error("{0}: not a path a reader can open")]
    Path(PathBuf),
    #[error("the dataset has no samples to replay")]
    Empty,
    #[error("a replay reader {0}")]
    Reader(String),
    #[error("the replay took longer than {0:?}")]
    Timeout(Duration),
    #[error("interrupted")]
    Interrupted,
}

/// What a replay reads and how.
#[derive(Debug, Clone)]
pub struct ReplaySetup {
    pub files: Vec<PathBuf>,
    pub sizes: Vec<u64>,
    pub samples: u64,
    pub readers: usize,
    pub access: ReadAccess,
    /// The job's storage cap: block device and bytes/s.
    pub read_cap: Option<((u64, u64), u64)>,
    /// The longest a level's replay may take.
    pub timeout: Duration,
}

/// The samples of a dataset of `sizes` files holding `samples` samples: a file per sample
/// where there are at least as many files, else each file cut into samples of the dataset's
/// mean sample size (at least one a file).
pub(crate) fn samples_of(sizes: &[u64], samples: u64) -> Vec<Sample> {
    let total: u64 = sizes.iter().sum();
    if samples == 0 || total == 0 {
        return Vec::new();
    }
    let per_file = sizes.len() as u64 >= samples;
    let sample_bytes = (total / samples).max(1);
    let mut out = Vec::new();
    for (file, &size) in sizes.iter().enumerate() {
        if size == 0 {
            continue;
        }
        let n = if per_file {
            1
        } else {
            (size / sample_bytes).max(1)
        };
        let len = size / n;
        out.extend((0..n).map(|j| Sample {
            file: file as u32,
            offset: j * len,
            len,
        }));
    }
    out
}

/// A fresh random order of `n` samples (Fisher-Yates), seeded.
fn shuffled(n: usize, seed: u64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// Replays the dataset's reads with `room` bytes of page cache: storage bytes read in the
/// counted epoch over the bytes of its samples.
pub fn replay_level(
    root: &CgroupRoot,
    setup: &ReplaySetup,
    room: u64,
    seed: u64,
    cancel: &AtomicBool,
) -> Result<f64, ReplayError> {
    let samples = samples_of(&setup.sizes, setup.samples);
    if samples.is_empty() {
        return Err(ReplayError::Empty);
    }
    let files: Vec<CString> = (setup.files.iter())
        .map(|p| CString::new(p.as_os_str().as_bytes()).map_err(|_| ReplayError::Path(p.clone())))
        .collect::<Result<_, _>>()?;
    let orders = [
        shuffled(samples.len(), seed),
        shuffled(samples.len(), seed ^ 0x9e37_79b9),
    ];
    let largest = samples.iter().map(|s| s.len).max().unwrap_or(0) as usize;
    let mut buf = vec![1u8; largest.max(1)];
    let readers = setup.readers.max(1);

    evict(&setup.files);
    let run = root.create_launch("replay", 0)?;
    let sys = |what| move |source| ReplayError::Sys { what, source };
    let (ready_r, ready_w) = nix::unistd::pipe().map_err(sys("make a pipe"))?;
    let (go_r, go_w) = nix::unistd::pipe().map_err(sys("make a pipe"))?;
    let mut pids = Vec::with_capacity(readers);
    for reader in 0..readers {
        let job = reader::ReaderJob {
            files: &files,
            samples: &samples,
            orders: &orders,
            reader,
            readers,
            access: setup.access,
            buf: buf.as_mut_ptr(),
            ready: ready_w.as_raw_fd(),
            go: go_r.as_raw_fd(),
        };
        // SAFETY: the child runs `reader::run`, which allocates nothing and calls only
        // async-signal-safe functions before it exits.
        match unsafe { fork() }.map_err(sys("fork a reader"))? {
            ForkResult::Child => unsafe { reader::run(&job) },
            ForkResult::Parent { child } => {
                pids.push(child);
                if let Err(e) = run.add_process(child.as_raw() as u32) {
                    reap(&run, &pids);
                    return Err(e.into());
                }
            }
        }
    }
    let deadline = Instant::now() + setup.timeout;
    let result = (|| {
        let step = Step {
            ready: &ready_r,
            go: &go_w,
            pids: &pids,
            deadline,
            timeout: setup.timeout,
            cancel,
        };
        step.await_readers()?;
        let held = run.counters().memory_usage_bytes;
        run.set_memory_limit(Some(held + room))?;
        if let Some((device, bps)) = setup.read_cap {
            run.set_read_bps(device, Some(bps))?;
        }
        step.release()?;
        step.await_readers()?;
        let before = run.counters().read_bytes;
        step.release()?;
        step.await_exit()?;
        let read = run.counters().read_bytes.saturating_sub(before);
        let taken: u64 = samples.iter().map(|s| s.len).sum();
        Ok(read as f64 / taken as f64)
    })();
    reap(&run, &pids);
    drop(buf);
    result
}

/// The parent's side of the readers' two steps.
struct Step<'a> {
    ready: &'a OwnedFd,
    go: &'a OwnedFd,
    pids: &'a [Pid],
    deadline: Instant,
    timeout: Duration,
    cancel: &'a AtomicBool,
}

impl Step<'_> {
    /// Waits for a byte from every reader, watching for one that died, a cancel and the
    /// deadline.
    fn await_readers(&self) -> Result<(), ReplayError> {
        let mut heard = 0;
        while heard < self.pids.len() {
            self.check()?;
            let mut fd = libc::pollfd {
                fd: self.ready.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd for the duration of the call.
            match unsafe { libc::poll(&mut fd, 1, 250) } {
                0 => continue,
                n if n < 0 => match nix::Error::last() {
                    nix::Error::EINTR => continue,
                    e => {
                        return Err(ReplayError::Sys {
                            what: "poll",
                            source: e,
                        });
                    }
                },
                _ => {}
            }
            let mut byte = [0u8; 1];
            match nix::unistd::read(self.ready, &mut byte) {
                Ok(1) => heard += 1,
                Ok(_) | Err(nix::Error::EINTR) => {}
                Err(e) => {
                    return Err(ReplayError::Sys {
                        what: "read",
                        source: e,
                    });
                }
            }
        }
        Ok(())
    }

    fn release(&self) -> Result<(), ReplayError> {
        let bytes = vec![1u8; self.pids.len()];
        let mut done = 0;
        while done < bytes.len() {
            match nix::unistd::write(self.go, &bytes[done..]) {
                Ok(n) => done += n,
                Err(nix::Error::EINTR) => {}
                Err(e) => {
                    return Err(ReplayError::Sys {
                        what: "write",
                        source: e,
                    });
                }
            }
        }
        Ok(())
    }

    /// Waits until every reader has exited, each with success.
    fn await_exit(&self) -> Result<(), ReplayError> {
        let mut left: Vec<Pid> = self.pids.to_vec();
        while !left.is_empty() {
            self.check_time()?;
            let mut still = Vec::new();
            for pid in left {
                match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::StillAlive) => still.push(pid),
                    Ok(status) => exit_ok(status)?,
                    Err(nix::Error::EINTR) => still.push(pid),
                    Err(e) => {
                        return Err(ReplayError::Sys {
                            what: "wait",
                            source: e,
                        });
                    }
                }
            }
            left = still;
            if !left.is_empty() {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }

    /// Fails where a reader has exited before its time.
    fn check(&self) -> Result<(), ReplayError> {
        self.check_time()?;
        for &pid in self.pids {
            match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(_) => {}
                Ok(status) => {
                    exit_ok(status)?;
                    return Err(ReplayError::Reader("exited before it had read".into()));
                }
            }
        }
        Ok(())
    }

    fn check_time(&self) -> Result<(), ReplayError> {
        if self.cancel.load(Ordering::SeqCst) {
            return Err(ReplayError::Interrupted);
        }
        if Instant::now() > self.deadline {
            return Err(ReplayError::Timeout(self.timeout));
        }
        Ok(())
    }
}

fn exit_ok(status: WaitStatus) -> Result<(), ReplayError> {
    match status {
        WaitStatus::Exited(_, 0) => Ok(()),
        WaitStatus::Exited(_, code) => Err(ReplayError::Reader(format!(
            "could not read the dataset (exit status {code})"
        ))),
        WaitStatus::Signaled(_, signal, _) => Err(ReplayError::Reader(format!(
            "was killed by {signal:?} (SIGKILL under a memory limit: the level leaves the \
             page cache too little room for the readers)"
        ))),
        other => Err(ReplayError::Reader(format!("stopped: {other:?}"))),
    }
}

/// Kills what is left of the readers and collects them.
fn reap(run: &RunCgroup, pids: &[Pid]) {
    run.kill_all(Duration::from_secs(5));
    for &pid in pids {
        let _ = waitpid(pid, Some(WaitPidFlag::WNOHANG));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_file_is_cut_into_samples_of_the_mean_size() {
        let s = samples_of(&[10_000], 4);
        assert_eq!(s.len(), 4);
        assert!(s.iter().all(|x| x.len == 2500 && x.file == 0));
        assert_eq!(s[3].offset, 7500);
    }

    #[test]
    fn a_file_per_sample_is_read_whole() {
        let s = samples_of(&[100, 0, 300], 2);
        assert_eq!(
            s,
            vec![
                Sample {
                    file: 0,
                    offset: 0,
                    len: 100
                },
                Sample {
                    file: 2,
                    offset: 0,
                    len: 300
                },
            ]
        );
    }

    proptest! {
        /// Samples stay inside their files, never overlap, and cover a file but for less than
        /// one sample's worth.
        #[test]
        fn samples_tile_their_files(
            sizes in proptest::collection::vec(0u64..5_000_000, 1..20),
            samples in 1u64..5_000,
        ) {
            let s = samples_of(&sizes, samples);
            for (f, &size) in sizes.iter().enumerate() {
                let mine: Vec<&Sample> = s.iter().filter(|x| x.file as usize == f).collect();
                let mut end = 0;
                for x in &mine {
                    prop_assert!(x.offset >= end && x.offset + x.len <= size);
                    end = x.offset + x.len;
                }
                if size > 0 {
                    let len = mine[0].len;
                    prop_assert!(size - end < len.max(1));
                }
            }
        }

        #[test]
        fn an_order_is_a_permutation(n in 0usize..3000, seed in any::<u64>()) {
            let mut o = shuffled(n, seed);
            o.sort_unstable();
            prop_assert_eq!(o, (0..n as u32).collect::<Vec<_>>());
        }
    }
}
