//! Cache models used by optimistic profiling to fill the memory axis.
//!
//! Synergy (OSDI'22) measures a job along the CPU axis only, with all memory available (so the
//! whole dataset sits in the page cache), and *models* the memory axis:
//!
//! ```text
//! epoch_time(c, x) = max(T_cpu(c), h(x) * D / B_mem(c) + (1 - h(x)) * D / B_disk)
//! ```
//!
//! * `D`: dataset size in bytes ([`CacheModelInputs::dataset_bytes`]);
//! * `x`: the part of the dataset the cache can hold, `min(1, cache / D)`, where the page cache
//!   available to the job is `memory_limit - job_resident` (clamped at 0);
//! * `h(x)`: the hit ratio, the part of each epoch's reads served from the cache, which depends
//!   on how the job's data loader caches ([`CacheKind`]):
//!   * [`CacheKind::Minio`] (Synergy's assumption, its MinIO cache): a fixed subset stays
//!     cached and is never evicted, so `h(x) = x`;
//!   * [`CacheKind::PageCache`]: the job reads files through the kernel's page cache, which
//!     evicts the least recently used pages, and visits the dataset in a fresh random order every
//!     epoch (PyTorch's `DataLoader(shuffle=True)`). Then `h(x) = x + (1 - x) ln(1 - x)`, far
//!     below `x` (25% of the dataset cached gives 3.4% hits, 50% gives 15%); see
//!     [`page_cache_hit_ratio`] for the derivation;
//! * `B_disk`: storage read bandwidth ([`measure_storage_read_bandwidth`]);
//! * `B_mem(c)`: memory read bandwidth with `c` cores, `c` times the single-core bandwidth
//!   ([`measure_memory_read_bandwidth_per_core`]);
//! * `T_cpu(c)`: epoch time measured at `c` CPUs with the whole dataset cached,
//!   `dataset_samples / measured_samples_per_s`.
//!
//! # Assumptions (why the model is *optimistic*)
//!
//! * Reading from storage overlaps perfectly with computation (hence the `max`).
//! * The measured full-memory rate is the truth when the whole dataset fits: the model never
//!   predicts more than it, and returns it exactly when `x = 1`.
//! * Caching never hurts: the storage bandwidth used is `min(B_disk, B_mem(c))`, so a storage
//!   figure that was itself served from some cache cannot make less memory look faster.
//! * `B_mem(c)` is per-core bandwidth times `c` with no machine-wide cap, because
//!   [`CacheModelInputs`] records no machine total; at the core counts where the cap would bind,
//!   the memory term is far below `T_cpu` for realistic jobs, so the omission rarely matters.
//! * Samples are of similar size, so a fraction of the bytes is the same fraction of the reads.
//! * A miss reads the sample, except where the job maps the dataset into memory without
//!   `MADV_RANDOM`: then the kernel reads the device's read-ahead window around each faulting
//!   page (`read_unit_bytes`, `k` samples' worth), and a block of `k` samples is read `k` times
//!   an epoch ([`block_hit_ratio`]).

use crate::matrix::{CacheKind, CacheModelInputs};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use thiserror::Error;

/// Errors of the bandwidth measurements.
#[derive(Debug, Error)]
pub enum CacheModelError {
    #[error("no files given to measure storage read bandwidth")]
    NoFiles,
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot evict {path} from the page cache: {source}")]
    Evict {
        path: PathBuf,
        #[source]
        source: nix::Error,
    },
    #[error("read 0 bytes from the given files (all empty, or a budget of 0)")]
    NothingRead,
    #[error(
        "storage bandwidth: of {read} bytes read, only {from_storage} came from storage (the page \
         cache kept the rest despite the eviction): the figure would be the page cache's"
    )]
    ServedFromPageCache { read: u64, from_storage: u64 },
}

/// What the model predicts for one cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Prediction {
    /// The job fits; `cached_fraction` is the `x` the model used (1.0 = whole dataset cached),
    /// `hit_ratio` the `h(x)` it implies.
    Feasible {
        samples_per_s: f64,
        cached_fraction: f64,
        hit_ratio: f64,
    },
    /// The memory limit is below the job's own resident memory: it would be OOM-killed.
    Infeasible,
}

impl Prediction {
    pub fn samples_per_s(&self) -> Option<f64> {
        match self {
            Prediction::Feasible { samples_per_s, .. } => Some(*samples_per_s),
            Prediction::Infeasible => None,
        }
    }
}

/// Hit ratio of an LRU cache that holds a fraction `x` of a dataset read once per epoch in a
/// fresh uniformly random order: `h(x) = x + (1 - x) ln(1 - x)` (0 at 0, 1 at 1, increasing).
///
/// Derivation: take an item read at relative position `u` of one epoch and `v` of the next
/// (independent, uniform). Between the two reads the job reads the `1 - u` tail of the first
/// permutation and the `v` head of the second; being independent random sets, their union
/// covers `1 - (1 - (1 - u))(1 - v) = 1 - u(1 - v)` of the dataset (in expectation, and sharply
/// so for many items). LRU still holds the item iff fewer than `x` of the dataset was read in
/// between, i.e. iff `u(1 - v) > 1 - x`. With `a = u`, `b = 1 - v` uniform,
/// `P(ab > t) = 1 - t + t ln t` for `t = 1 - x`, which is the formula. The kernel's page cache
/// approximates LRU with an active and an inactive list; how close it comes on a given kernel
/// and job is what `profiler validate` measures.
pub fn page_cache_hit_ratio(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let t = 1.0 - x;
    (x + t * t.ln()).clamp(0.0, x)
}

/// Hit ratio of the page cache when storage delivers blocks of `k` samples per miss (a memory
/// map's read-around) and the samples are read once per epoch in a fresh random order: each
/// block is then read `k` times an epoch at random moments, `h = x - (x - h_1(x)) / k` with
/// `h_1` = [`page_cache_hit_ratio`]. At `k = 1` it is `h_1`; as `k` grows the reads of a block
/// approach independent references, under which LRU hits a fraction `x` of them.
///
/// Why this form: Che's approximation of LRU (a block stays cached for a characteristic time
/// `T` after its last read, `T` set so that a fraction `x` of the blocks is cached) for blocks
/// read `k` times an epoch at uniform random moments gives hit ratios within 0.007 of it for
/// every `k >= 2` and `x` (checked numerically in the tests below).
pub fn block_hit_ratio(x: f64, k: f64) -> f64 {
    let h1 = page_cache_hit_ratio(x);
    if k.is_nan() || k <= 1.0 || x.is_nan() || x <= 0.0 {
        return h1;
    }
    if x >= 1.0 {
        return 1.0;
    }
    (x * (1.0 - 1.0 / k) + h1 / k).clamp(h1, x)
}

/// A cache model; see the module documentation for the formula and its assumptions.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheModel {
    pub inputs: CacheModelInputs,
}

impl CacheModel {
    pub fn new(inputs: CacheModelInputs) -> Self {
        CacheModel { inputs }
    }

    /// The same inputs under another cache model (to compare models on the same cells).
    pub fn with_kind(&self, kind: CacheKind) -> Self {
        let mut inputs = self.inputs.clone();
        inputs.kind = kind;
        CacheModel { inputs }
    }

    /// Part of each epoch's reads served from the cache when it holds `x` of the dataset of
    /// `dataset_samples` samples.
    pub fn hit_ratio(&self, x: f64, dataset_samples: u64) -> f64 {
        match self.inputs.kind {
            CacheKind::Minio => x.clamp(0.0, 1.0),
            CacheKind::PageCache => block_hit_ratio(x, self.samples_per_miss(dataset_samples)),
        }
    }

    /// How many samples' worth storage reads per cache miss: more than one where the job maps
    /// the dataset with read-around (`read_unit_bytes`), else 1.
    pub fn samples_per_miss(&self, dataset_samples: u64) -> f64 {
        let unit = match (self.inputs.kind, self.inputs.read_unit_bytes) {
            (CacheKind::PageCache, Some(u)) => u as f64,
            _ => return 1.0,
        };
        if dataset_samples == 0 || self.inputs.dataset_bytes == 0 {
            return 1.0;
        }
        let sample = self.inputs.dataset_bytes as f64 / dataset_samples as f64;
        (unit / sample).max(1.0)
    }

    /// Storage bytes read per sample over bytes of a sample when the cache holds `x` of the
    /// dataset: `(1 - h) k`, 1 with nothing cached and whole samples read per miss.
    pub fn read_fraction(&self, x: f64, dataset_samples: u64) -> f64 {
        (1.0 - self.hit_ratio(x, dataset_samples)) * self.samples_per_miss(dataset_samples)
    }

    /// Predicted throughput at `cpu` cores under `memory_limit_bytes`, from the rate measured at
    /// the same `cpu` with all memory (`measured_full_memory_samples_per_s`).
    ///
    /// * `Infeasible` iff `memory_limit_bytes < job_resident_bytes`.
    /// * When the whole dataset fits in `memory_limit - job_resident` (or the dataset size or
    ///   sample count is unknown, i.e. 0), the measured rate is returned unchanged.
    /// * Otherwise `min(measured, dataset_samples / io_time)` where
    ///   `io_time = x * D / B_mem(cpu) + (1 - x) * D / min(B_disk, B_mem(cpu))`.
    ///
    /// The result never exceeds the measured rate and is non-decreasing in the memory limit.
    /// A measured rate that is not a positive finite number predicts 0 for partial caching.
    pub fn predict_samples_per_s(
        &self,
        measured_full_memory_samples_per_s: f64,
        cpu: f64,
        memory_limit_bytes: u64,
        job_resident_bytes: u64,
        dataset_samples: u64,
    ) -> Prediction {
        if memory_limit_bytes < job_resident_bytes {
            return Prediction::Infeasible;
        }
        let measured = if measured_full_memory_samples_per_s.is_finite() {
            measured_full_memory_samples_per_s.max(0.0)
        } else {
            0.0
        };
        let cache_bytes = memory_limit_bytes - job_resident_bytes;
        let dataset_bytes = self.inputs.dataset_bytes;
        if dataset_bytes == 0 || dataset_samples == 0 || cache_bytes >= dataset_bytes {
            return Prediction::Feasible {
                samples_per_s: measured,
                cached_fraction: 1.0,
                hit_ratio: 1.0,
            };
        }
        let x = cache_bytes as f64 / dataset_bytes as f64;
        let hit = self.hit_ratio(x, dataset_samples);
        let k = self.samples_per_miss(dataset_samples);

        let mem_bw = self.inputs.memory_bytes_per_s_per_core * cpu;
        let mem_bw = if mem_bw.is_finite() && mem_bw > 0.0 {
            mem_bw
        } else {
            0.0
        };
        let disk_bw = self.inputs.storage_bytes_per_s;
        let disk_bw = if disk_bw.is_finite() && disk_bw > 0.0 {
            disk_bw.min(mem_bw)
        } else {
            0.0
        };
        if measured == 0.0 || disk_bw == 0.0 {
            // Some bytes must come from a storage (or memory) with no usable bandwidth.
            return Prediction::Feasible {
                samples_per_s: 0.0,
                cached_fraction: x,
                hit_ratio: hit,
            };
        }
        // A miss reads k samples' worth from storage, a hit one sample from memory:
        // io_time = D * (k/B_disk + h * (1/B_mem - k/B_disk)); the coefficient of h is <= 0 (k >= 1,
        // B_disk <= B_mem), h is non-decreasing in x and every float operation is monotone, so
        // io_time is non-increasing in x even after rounding.
        let k_inv_disk = k / disk_bw;
        let inv_mem = 1.0 / mem_bw;
        let io_time_s = dataset_bytes as f64 * (k_inv_disk + hit * (inv_mem - k_inv_disk));
        let io_rate = dataset_samples as f64 / io_time_s;
        let samples_per_s = if io_rate.is_nan() {
            measured
        } else {
            measured.min(io_rate)
        };
        Prediction::Feasible {
            samples_per_s,
            cached_fraction: x,
            hit_ratio: hit,
        }
    }
}

/// Sequential read bandwidth of storage, bytes/s: evicts `files` from the page cache
/// (`posix_fadvise(POSIX_FADV_DONTNEED)`), then reads them in order until `budget_bytes` have
/// been read (or the files end) and divides by the time the reads took.
///
/// Dirty pages are not dropped by `POSIX_FADV_DONTNEED`; files just written should be synced
/// first (dataset files normally are not dirty). Files are not evicted again afterwards.
pub fn measure_storage_read_bandwidth(
    files: &[PathBuf],
    budget_bytes: u64,
) -> Result<f64, CacheModelError> {
    if files.is_empty() {
        return Err(CacheModelError::NoFiles);
    }
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CacheModelError::Io { path, source }
    };
    // Evict every file, then read them one at a time: a dataset of tens of thousands of files
    // must never be held open at once (the open-file limit is often 1,024).
    for path in files {
        let file = File::open(path).map_err(io_err(path))?;
        // POSIX_FADV_DONTNEED leaves dirty pages (a dataset just written): write them back.
        file.sync_data().map_err(io_err(path))?;
        nix::fcntl::posix_fadvise(
            file.as_fd(),
            0,
            0,
            nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
        )
        .map_err(|source| CacheModelError::Evict {
            path: path.clone(),
            source,
        })?;
    }

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
        return Err(CacheModelError::NothingRead);
    }
    // On a block device, whose reads the kernel counts per thread, check that the bytes came
    // from storage and not from a page cache that kept them (tmpfs and network file systems
    // have no such count).
    let on_block_device = crate::harness::dataset::block_device_of(&files[0]).is_some();
    if let (true, Some(before), Some(after)) =
        (on_block_device, storage_before, storage_read_bytes())
    {
        let from_storage = after.saturating_sub(before);
        if from_storage < total / 2 {
            return Err(CacheModelError::ServedFromPageCache {
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
    use proptest::prelude::*;
    use std::io::Write;

    const GB: u64 = 1 << 30;

    fn model(dataset_bytes: u64, storage: f64, mem_per_core: f64) -> CacheModel {
        CacheModel::new(CacheModelInputs {
            kind: CacheKind::Minio,
            dataset_bytes,
            storage_bytes_per_s: storage,
            memory_bytes_per_s_per_core: mem_per_core,
            read_unit_bytes: None,
        })
    }

    fn rate(p: Prediction) -> f64 {
        p.samples_per_s().expect("feasible")
    }

    #[test]
    fn whole_dataset_cached_returns_measured() {
        let m = model(10 * GB, 200e6, 10e9);
        let p = m.predict_samples_per_s(1234.5, 4.0, 20 * GB, 2 * GB, 1_000_000);
        assert_eq!(
            p,
            Prediction::Feasible {
                samples_per_s: 1234.5,
                cached_fraction: 1.0,
                hit_ratio: 1.0
            }
        );
    }

    #[test]
    fn infeasible_below_resident() {
        let m = model(10 * GB, 200e6, 10e9);
        assert_eq!(
            m.predict_samples_per_s(100.0, 4.0, GB, 2 * GB, 1000),
            Prediction::Infeasible
        );
        // Exactly the resident size: feasible, nothing cached.
        match m.predict_samples_per_s(100.0, 4.0, 2 * GB, 2 * GB, 1000) {
            Prediction::Feasible {
                cached_fraction, ..
            } => assert_eq!(cached_fraction, 0.0),
            Prediction::Infeasible => panic!("limit == resident must be feasible"),
        }
    }

    #[test]
    fn half_cached_matches_formula() {
        // D = 100 GB, half cached, disk 100 MB/s, memory effectively free: io = 50 GB / 100 MB/s.
        let d = 100_000_000_000u64;
        let m = model(d, 100e6, 1e15);
        let samples = 1_000_000u64;
        let p = m.predict_samples_per_s(1e9, 8.0, d / 2 + GB, GB, samples);
        let expected = samples as f64 / (0.5 * d as f64 / 100e6 + 0.5 * d as f64 / 8e15);
        match p {
            Prediction::Feasible {
                samples_per_s,
                cached_fraction,
                ..
            } => {
                assert!((cached_fraction - 0.5).abs() < 1e-12);
                assert!((samples_per_s - expected).abs() / expected < 1e-9);
            }
            Prediction::Infeasible => panic!(),
        }
    }

    #[test]
    fn cpu_bound_job_unaffected_by_partial_cache() {
        // Fast disk, slow job: T_cpu dominates even with nothing cached.
        let m = model(GB, 1e9, 10e9);
        let r = rate(m.predict_samples_per_s(10.0, 1.0, GB, GB, 1000));
        assert_eq!(r, 10.0);
    }

    #[test]
    fn slow_disk_no_cache_approaches_disk_rate() {
        let d = 50 * GB;
        let disk = 1e6; // 1 MB/s
        let m = model(d, disk, 10e9);
        let samples = 1_000_000u64;
        let r = rate(m.predict_samples_per_s(5000.0, 4.0, GB, GB, samples));
        let disk_rate = samples as f64 / (d as f64 / disk);
        assert!(
            (r - disk_rate).abs() / disk_rate < 1e-9,
            "{r} vs {disk_rate}"
        );
    }

    #[test]
    fn degenerate_inputs_do_not_panic_or_nan() {
        let m = model(GB, 0.0, f64::NAN);
        for measured in [f64::NAN, f64::INFINITY, -1.0, 0.0, 100.0] {
            for cpu in [0.0, -1.0, 0.5, f64::NAN] {
                let p = m.predict_samples_per_s(measured, cpu, GB / 2, 0, 100);
                let r = rate(p);
                assert!(r.is_finite() && r >= 0.0, "{measured} {cpu} -> {r}");
            }
        }
    }

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
                "cache_model::tests::storage_bandwidth_of_many_files_child",
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
            Err(CacheModelError::NoFiles)
        ));
        let missing = PathBuf::from("/nonexistent/definitely/not/here");
        assert!(matches!(
            measure_storage_read_bandwidth(&[missing], 1),
            Err(CacheModelError::Io { .. })
        ));
        let empty = tempfile::NamedTempFile::new().expect("temp file");
        assert!(matches!(
            measure_storage_read_bandwidth(&[empty.path().to_path_buf()], 1 << 20),
            Err(CacheModelError::NothingRead)
        ));
    }

    #[test]
    fn memory_bandwidth_is_positive_finite() {
        let bw = measure_memory_read_bandwidth_per_core();
        assert!(bw.is_finite() && bw > 0.0, "{bw}");
    }

    fn arb_model() -> impl Strategy<Value = CacheModel> {
        (
            1u64..(1 << 42),
            1e3f64..1e11,
            1e6f64..1e11,
            any::<bool>(),
            proptest::option::of(1u64..(1 << 30)),
        )
            .prop_map(|(d, disk, mem, lru, unit)| {
                let kind = if lru {
                    CacheKind::PageCache
                } else {
                    CacheKind::Minio
                };
                let mut m = model(d, disk, mem).with_kind(kind);
                m.inputs.read_unit_bytes = unit;
                m
            })
    }

    /// Hit ratio of a real LRU cache of `cache` items over `n` items read in a fresh seeded
    /// random order every epoch, over `epochs` epochs after a warm-up epoch.
    fn simulated_lru_hit_ratio(n: usize, cache: usize, epochs: usize) -> f64 {
        use rand_chacha::ChaCha8Rng;
        use rand_core::{Rng, SeedableRng};
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut last_use = vec![0u64; n]; // 0 = never read
        let mut cached = std::collections::BTreeSet::new(); // (last use, item)
        let (mut clock, mut hits, mut reads) = (0u64, 0u64, 0u64);
        for epoch in 0..=epochs {
            let mut order: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            for item in order {
                clock += 1;
                let hit = cached.remove(&(last_use[item], item));
                if epoch > 0 {
                    reads += 1;
                    hits += hit as u64;
                }
                if !hit && cached.len() == cache {
                    let oldest = *cached.iter().next().expect("cache is full");
                    cached.remove(&oldest);
                }
                last_use[item] = clock;
                cached.insert((clock, item));
            }
        }
        hits as f64 / reads as f64
    }

    #[test]
    fn page_cache_hit_ratio_matches_a_simulated_lru() {
        for pct in [10, 25, 50, 75, 90] {
            let n = 4000;
            let simulated = simulated_lru_hit_ratio(n, n * pct / 100, 20);
            let formula = page_cache_hit_ratio(pct as f64 / 100.0);
            assert!(
                (simulated - formula).abs() < 0.01,
                "{pct}% cached: simulated {simulated:.4}, formula {formula:.4}"
            );
            // And far below what a never-evicting cache of the same size would give.
            assert!(formula < pct as f64 / 100.0);
        }
        assert_eq!(page_cache_hit_ratio(0.0), 0.0);
        assert_eq!(page_cache_hit_ratio(1.0), 1.0);
        assert_eq!(page_cache_hit_ratio(f64::NAN), 0.0);
    }

    #[test]
    fn page_cache_model_predicts_less_than_minio_for_a_storage_bound_job() {
        // 100 MB dataset, 30 MB/s storage, a quarter cached, CPU allows 10x what storage does.
        let d = 100_000_000u64;
        let minio = model(d, 30e6, 1e10);
        let lru = minio.with_kind(CacheKind::PageCache);
        let args = (3000.0, 2.0, d / 4 + 1000, 1000, 2000);
        let r_minio = rate(minio.predict_samples_per_s(args.0, args.1, args.2, args.3, args.4));
        let r_lru = rate(lru.predict_samples_per_s(args.0, args.1, args.2, args.3, args.4));
        // Storage-bound: 2000 samples need (1 - h) x 100 MB at 30 MB/s.
        let expect = |h: f64| 2000.0 / ((1.0 - h) * d as f64 / 30e6 + h * d as f64 / 2e10);
        assert!((r_minio - expect(0.25)).abs() / r_minio < 1e-9);
        assert!((r_lru - expect(page_cache_hit_ratio(0.25))).abs() / r_lru < 1e-9);
        assert!(r_lru < 0.8 * r_minio, "{r_lru} vs {r_minio}");
    }

    /// Che's approximation of LRU for blocks read `k` times an epoch at independent uniform
    /// moments: the hit ratio at the characteristic time `t` that caches a fraction `x` of the
    /// blocks (numerical integration and bisection; an independent derivation of
    /// `block_hit_ratio`).
    fn che_hit_ratio(x: f64, k: i32) -> f64 {
        // (part of blocks cached, part of reads that hit) for characteristic time t, in epochs.
        let at = |t: f64| {
            let n = 4000;
            let (mut absent, mut miss) = (0.0, 0.0);
            for i in 0..n {
                let now = (i as f64 + 0.5) / n as f64;
                let this_epoch = now.min(t);
                let last_epoch = (t - this_epoch).min(1.0);
                let before = (t - this_epoch - last_epoch).max(0.0);
                let others = ((1.0 - last_epoch) * (1.0 - before)).powi(k);
                absent += (1.0 - this_epoch).powi(k) * others;
                miss += (1.0 - this_epoch).powi(k - 1) * others;
            }
            (1.0 - absent / n as f64, 1.0 - miss / n as f64)
        };
        let (mut lo, mut hi) = (0.0, 3.0);
        for _ in 0..60 {
            let mid = (lo + hi) / 2.0;
            if at(mid).0 < x { lo = mid } else { hi = mid }
        }
        at((lo + hi) / 2.0).1
    }

    #[test]
    fn block_hit_ratio_agrees_with_ches_approximation() {
        for k in [2, 4, 8, 32, 200] {
            for x in [0.05, 0.25, 0.5, 0.75, 0.95] {
                let che = che_hit_ratio(x, k);
                let ours = block_hit_ratio(x, k as f64);
                assert!(
                    (che - ours).abs() < 0.008,
                    "k = {k}, x = {x}: Che {che}, ours {ours}"
                );
            }
        }
        assert_eq!(block_hit_ratio(0.3, 1.0), page_cache_hit_ratio(0.3));
        assert_eq!(block_hit_ratio(1.0, 50.0), 1.0);
        assert_eq!(block_hit_ratio(f64::NAN, 50.0), 0.0);
    }

    #[test]
    fn read_around_multiplies_what_a_miss_costs() {
        // 467 MB of 39 KB samples (12,000), 20 MB/s storage, 8 MiB read around each fault: a
        // miss reads 215 samples' worth, and with 68% of the dataset cached a third of the
        // reads miss (close to independent references), so storage allows 7-8 samples/s.
        let d = 467_000_000u64;
        let mut m = model(d, 20e6, 1e10).with_kind(CacheKind::PageCache);
        let whole = rate(m.predict_samples_per_s(800.0, 2.0, d * 68 / 100, 0, 12_000));
        m.inputs.read_unit_bytes = Some(8 << 20);
        let k = m.samples_per_miss(12_000);
        assert!(
            (k - (8 << 20) as f64 / (d as f64 / 12_000.0)).abs() < 1e-9,
            "{k}"
        );
        let p = m.predict_samples_per_s(800.0, 2.0, d * 68 / 100, 0, 12_000);
        let Prediction::Feasible {
            samples_per_s,
            hit_ratio,
            ..
        } = p
        else {
            panic!("{p:?}")
        };
        assert!((hit_ratio - block_hit_ratio(0.68, k)).abs() < 1e-12);
        let expect = 12_000.0 / (d as f64 * (1.0 - hit_ratio) * k / 20e6);
        assert!(
            (samples_per_s - expect).abs() / expect < 1e-3,
            "{samples_per_s} vs {expect}"
        );
        assert!((6.0..9.0).contains(&samples_per_s), "{samples_per_s}");
        assert!(whole > 100.0 * samples_per_s, "{whole} vs {samples_per_s}");
        // MinIO's cache holds whole objects: no read-around.
        assert_eq!(m.with_kind(CacheKind::Minio).samples_per_miss(12_000), 1.0);
    }

    proptest! {
        #[test]
        fn block_hit_ratio_is_monotone_and_between_lru_and_x(
            a in 0.0f64..=1.0, b in 0.0f64..=1.0, k in 1.0f64..1e6,
        ) {
            let (lo, hi) = (a.min(b), a.max(b));
            prop_assert!(block_hit_ratio(lo, k) <= block_hit_ratio(hi, k));
            let h = block_hit_ratio(lo, k);
            prop_assert!(page_cache_hit_ratio(lo) <= h && h <= lo.max(h.min(1.0)));
        }

        #[test]
        fn never_exceeds_measured(
            m in arb_model(),
            measured in 0.0f64..1e6,
            cpu in 0.1f64..128.0,
            limit in 0u64..(1 << 43),
            resident in 0u64..(1 << 36),
            samples in 0u64..1_000_000_000,
        ) {
            if let Prediction::Feasible { samples_per_s, cached_fraction, .. } =
                m.predict_samples_per_s(measured, cpu, limit, resident, samples)
            {
                prop_assert!(samples_per_s <= measured);
                prop_assert!(samples_per_s >= 0.0);
                prop_assert!((0.0..=1.0).contains(&cached_fraction));
            }
        }

        #[test]
        fn monotone_in_memory_limit(
            m in arb_model(),
            measured in 0.0f64..1e6,
            cpu in 0.1f64..128.0,
            a in 0u64..(1 << 43),
            b in 0u64..(1 << 43),
            resident in 0u64..(1 << 36),
            samples in 1u64..1_000_000_000,
        ) {
            let (lo, hi) = (a.min(b), a.max(b));
            let p_lo = m.predict_samples_per_s(measured, cpu, lo, resident, samples);
            let p_hi = m.predict_samples_per_s(measured, cpu, hi, resident, samples);
            match (p_lo.samples_per_s(), p_hi.samples_per_s()) {
                (Some(r_lo), Some(r_hi)) => prop_assert!(r_lo <= r_hi, "{r_lo} > {r_hi}"),
                (Some(_), None) => prop_assert!(false, "feasible at lower limit only"),
                _ => {}
            }
        }

        #[test]
        fn fits_means_measured(
            m in arb_model(),
            measured in 0.0f64..1e6,
            cpu in 0.1f64..128.0,
            resident in 0u64..(1 << 36),
            extra in 0u64..(1 << 36),
            samples in 0u64..1_000_000_000,
        ) {
            let limit = resident + m.inputs.dataset_bytes + extra;
            prop_assert_eq!(
                m.predict_samples_per_s(measured, cpu, limit, resident, samples),
                Prediction::Feasible { samples_per_s: measured, cached_fraction: 1.0, hit_ratio: 1.0 }
            );
        }

        #[test]
        fn infeasible_iff_below_resident(
            m in arb_model(),
            limit in 0u64..(1 << 40),
            resident in 0u64..(1 << 40),
        ) {
            let p = m.predict_samples_per_s(100.0, 2.0, limit, resident, 1000);
            prop_assert_eq!(p == Prediction::Infeasible, limit < resident);
        }

        #[test]
        fn slow_disk_without_cache_tends_to_disk_rate(
            d in (1u64 << 30)..(1u64 << 40),
            samples in 1_000u64..1_000_000_000,
            cpu in 1.0f64..64.0,
            resident in 0u64..(1 << 30),
        ) {
            let disk = 1.0; // 1 byte/s: storage dominates everything
            let m = model(d, disk, 1e10);
            let measured = 1e12; // far above what storage allows
            let r = rate(m.predict_samples_per_s(measured, cpu, resident, resident, samples));
            let disk_rate = samples as f64 / (d as f64 / disk);
            prop_assert!((r - disk_rate).abs() <= disk_rate * 1e-9, "{} vs {}", r, disk_rate);
        }
    }
}
