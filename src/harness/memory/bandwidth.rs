//! Storage and memory read bandwidth of this machine, measured as the cache model's inputs.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use thiserror::Error;

/// Errors of the bandwidth measurements.
#[derive(Debug, Error)]
pub enum BandwidthError {
    #[error("no files given to measure storage read bandwidth")]
    NoFiles,
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("read 0 bytes from the given files (all empty, or a budget of 0)")]
    NothingRead,
    #[error(
        "storage bandwidth: of {read} bytes read, only {from_storage} came from storage (the page \
         cache kept the rest despite the eviction): the figure would be the page cache's"
    )]
    ServedFromPageCache { read: u64, from_storage: u64 },
}
/// Sequential read bandwidth of storage, bytes/s: evicts `files` from the page cache
/// ([`crate::harness::memory::page_cache::evict`]), then reads them in order until
/// `budget_bytes` have been read (or the files end) and divides by the time the reads took.
/// Files are not evicted again afterwards.
pub fn measure_storage_read_bandwidth(
    files: &[PathBuf],
    budget_bytes: u64,
) -> Result<f64, BandwidthError> {
    if files.is_empty() {
        return Err(BandwidthError::NoFiles);
    }
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BandwidthError::Io { path, source }
    };
    // Evict every file (the page cache's one eviction: dirty pages written back first), then
    // read them one at a time: a dataset of tens of thousands of files must never be held
    // open at once (the open-file limit is often 1,024).
    crate::harness::memory::page_cache::evict(files);

    let mut buf = vec![0u8; 1 << 20];
    let mut total: u64 = 0;
    let storage_before = storage_read_bytes();
    let start = Instant::now();
    'files: for path in files {
        if total >= budget_bytes {
            break;
        }
        let mut file = File::open(path).map_err(io_err(path))?;
        while total < budget_bytes {
            let want = (budget_bytes - total).min(buf.len() as u64) as usize;
            let n = match file.read(&mut buf[..want]) {
                Ok(0) => continue 'files,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_err(path)(e)),
            };
            total += n as u64;
        }
    }
    let elapsed = start.elapsed().max(Duration::from_nanos(1));
    if total == 0 {
        return Err(BandwidthError::NothingRead);
    }
    // On a block device, whose reads the kernel counts per thread, check that the bytes came
    // from storage and not from a page cache that kept them (tmpfs and network file systems
    // have no such count).
    let on_block_device = crate::harness::memory::dataset::block_device_of(&files[0]).is_some();
    if let (true, Some(before), Some(after)) =
        (on_block_device, storage_before, storage_read_bytes())
    {
        let from_storage = after.saturating_sub(before);
        if from_storage < total / 2 {
            return Err(BandwidthError::ServedFromPageCache {
                read: total,
                from_storage,
            });
        }
    }
    Ok(total as f64 / elapsed.as_secs_f64())
}

/// Bytes this thread has caused to be fetched from storage (`read_bytes` of
/// `/proc/thread-self/io`), where the kernel accounts them.
fn storage_read_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/io").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("read_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Size of the buffer [`measure_memory_read_bandwidth_per_core`] scans: larger than the last-level
/// cache of current server CPUs, so the scan is served from DRAM.
pub const MEMORY_PROBE_BYTES: usize = 256 << 20;

/// Single-thread memory read bandwidth, bytes/s: sums a [`MEMORY_PROBE_BYTES`] buffer of `u64`s
/// twice and keeps the faster pass. Takes a few hundred milliseconds in an optimised build
/// (unoptimised builds are much slower and underestimate the bandwidth).
pub fn measure_memory_read_bandwidth_per_core() -> f64 {
    let words = MEMORY_PROBE_BYTES / std::mem::size_of::<u64>();
    // Non-zero contents, so every page is really backed (a zeroed allocation may map the shared
    // zero page, which would stay in cache).
    let buf: Vec<u64> = (0..words as u64).collect();
    let mut best = Duration::MAX;
    for _ in 0..2 {
        let data = std::hint::black_box(buf.as_slice());
        let start = Instant::now();
        let sum = data.iter().fold(0u64, |acc, &w| acc.wrapping_add(w));
        std::hint::black_box(sum);
        best = best.min(start.elapsed());
    }
    let secs = best.max(Duration::from_nanos(1)).as_secs_f64();
    (words * std::mem::size_of::<u64>()) as f64 / secs
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn storage_bandwidth_of_temp_file_is_positive_finite() {
        let mut f = tempfile::NamedTempFile::new().expect("temp file");
        let chunk = vec![7u8; 1 << 20];
        for _ in 0..8 {
            f.write_all(&chunk).expect("write");
        }
        // Dirty pages survive POSIX_FADV_DONTNEED; sync so the eviction can take effect.
        f.as_file().sync_all().expect("sync");
        let path = f.path().to_path_buf();
        let bw =
            measure_storage_read_bandwidth(std::slice::from_ref(&path), 4 << 20).expect("measure");
        assert!(bw.is_finite() && bw > 0.0, "{bw}");
        // Budget larger than the file: reads the whole file, still fine.
        let bw = measure_storage_read_bandwidth(&[path], 1 << 30).expect("measure");
        assert!(bw.is_finite() && bw > 0.0, "{bw}");
    }

    /// The child half of [`storage_bandwidth_holds_one_file_open_at_a_time`].
    #[test]
    #[ignore = "run under a low open-file limit by storage_bandwidth_holds_one_file_open_at_a_time"]
    fn storage_bandwidth_of_many_files_child() {
        let dir = std::env::var_os("PROFILER_MANY_FILES_DIR").expect("PROFILER_MANY_FILES_DIR");
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("read dir")
            .map(|e| e.expect("entry").path())
            .collect();
        files.sort();
        let bw = measure_storage_read_bandwidth(&files, u64::MAX).expect("measure");
        assert!(bw.is_finite() && bw > 0.0, "{bw}");
    }

    /// Datasets of tens of thousands of files (an ImageFolder) are measured under the usual
    /// limit of 1,024 open files: here 300 files under a limit of 64, in a child process so the
    /// limit binds nothing else.
    #[test]
    fn storage_bandwidth_holds_one_file_open_at_a_time() {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().expect("temp dir");
        for i in 0..300 {
            let path = dir.path().join(format!("{i:04}.bin"));
            let mut f = File::create(&path).expect("create");
            f.write_all(&[i as u8; 4096]).expect("write");
            f.sync_all().expect("sync");
        }
        let mut child = std::process::Command::new(std::env::current_exe().expect("test binary"));
        child
            .args([
                "--exact",
                "harness::memory::bandwidth::tests::storage_bandwidth_of_many_files_child",
            ])
            .args(["--ignored", "--test-threads=1"])
            .env("PROFILER_MANY_FILES_DIR", dir.path());
        // SAFETY: setrlimit is async-signal-safe and touches only the child.
        unsafe {
            child.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 64,
                    rlim_max: 64,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                    Ok(())
                } else {
                    Err(io::Error::last_os_error())
                }
            });
        }
        let out = child.output().expect("run the child test");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn storage_bandwidth_errors() {
        assert!(matches!(
            measure_storage_read_bandwidth(&[], 1),
            Err(BandwidthError::NoFiles)
        ));
        let missing = PathBuf::from("/nonexistent/definitely/not/here");
        assert!(matches!(
            measure_storage_read_bandwidth(&[missing], 1),
            Err(BandwidthError::Io { .. })
        ));
        let empty = tempfile::NamedTempFile::new().expect("temp file");
        assert!(matches!(
            measure_storage_read_bandwidth(&[empty.path().to_path_buf()], 1 << 20),
            Err(BandwidthError::NothingRead)
        ));
    }

    #[test]
    fn memory_bandwidth_is_positive_finite() {
        let bw = measure_memory_read_bandwidth_per_core();
        assert!(bw.is_finite() && bw > 0.0, "{bw}");
    }
}
