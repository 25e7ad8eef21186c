//! MinIO cache model used by optimistic profiling to fill the memory axis.
//!
//! Synergy (OSDI'22) measures a job along the CPU axis only, with all memory available (so the
//! whole dataset sits in the page cache), and *models* the memory axis:
//!
//! ```text
//! epoch_time(c, x) = max(T_cpu(c), x * D / B_mem(c) + (1 - x) * D / B_disk)
//! ```
//!
//! * `D`: dataset size in bytes ([`CacheModelInputs::dataset_bytes`]);
//! * `x`: fraction of the dataset that stays cached, `min(1, cache / D)`, where the page cache
//!   available to the job is `memory_limit - job_resident` (clamped at 0);
//! * `B_disk`: storage read bandwidth ([`measure_storage_read_bandwidth`]);
//! * `B_mem(c)`: memory read bandwidth with `c` cores, `c` times the single-core bandwidth
//!   ([`measure_memory_read_bandwidth_per_core`]);
//! * `T_cpu(c)`: epoch time measured at `c` CPUs with the whole dataset cached,
//!   `dataset_samples / measured_samples_per_s`.
//!
//! # Assumptions (why the model is *optimistic*)
//!
//! * MinIO caching: a fixed subset (`x` of the data) stays cached for the whole run and is never
//!   evicted, so every epoch reads exactly `(1 - x) * D` bytes from storage. Linux's LRU page
//!   cache under a cyclic or shuffled access pattern can thrash and do much worse (in the worst
//!   case, a cyclic scan over a dataset slightly larger than the cache misses on every read), so
//!   real throughput under a memory cap may be *below* the model's figure.
//! * Reading from storage overlaps perfectly with computation (hence the `max`).
//! * The measured full-memory rate is the truth when the whole dataset fits: the model never
//!   predicts more than it, and returns it exactly when `x = 1`.
//! * Caching never hurts: the storage bandwidth used is `min(B_disk, B_mem(c))`, so a storage
//!   figure that was itself served from some cache cannot make less memory look faster.
//! * `B_mem(c)` is per-core bandwidth times `c` with no machine-wide cap, because
//!   [`CacheModelInputs`] records no machine total; at the core counts where the cap would bind,
//!   the memory term is far below `T_cpu` for realistic jobs, so the omission rarely matters.

use crate::matrix::CacheModelInputs;
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
}

/// What the model predicts for one cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Prediction {
    /// The job fits; `cached_fraction` is the `x` the model used (1.0 = whole dataset cached).
    Feasible {
        samples_per_s: f64,
        cached_fraction: f64,
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

/// The MinIO cache model; see the module documentation for the formula and its assumptions.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheModel {
    pub inputs: CacheModelInputs,
}

impl CacheModel {
    pub fn new(inputs: CacheModelInputs) -> Self {
        CacheModel { inputs }
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
            };
        }
        let x = cache_bytes as f64 / dataset_bytes as f64;

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
            };
        }
        // io_time = D * (1/B_disk + x * (1/B_mem - 1/B_disk)); the coefficient of x is <= 0 and
        // every float operation is monotone, so io_time is non-increasing in x even after rounding.
        let inv_disk = 1.0 / disk_bw;
        let inv_mem = 1.0 / mem_bw;
        let io_time_s = dataset_bytes as f64 * (inv_disk + x * (inv_mem - inv_disk));
        let io_rate = dataset_samples as f64 / io_time_s;
        let samples_per_s = if io_rate.is_nan() {
            measured
        } else {
            measured.min(io_rate)
        };
        Prediction::Feasible {
            samples_per_s,
            cached_fraction: x,
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
    let mut opened = Vec::with_capacity(files.len());
    for path in files {
        let file = File::open(path).map_err(io_err(path))?;
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
        opened.push((path, file));
    }

    let mut buf = vec![0u8; 1 << 20];
    let mut total: u64 = 0;
    let start = Instant::now();
    'files: for (path, mut file) in opened {
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
        break;
    }
    let elapsed = start.elapsed().max(Duration::from_nanos(1));
    if total == 0 {
        return Err(CacheModelError::NothingRead);
    }
    Ok(total as f64 / elapsed.as_secs_f64())
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
            dataset_bytes,
            storage_bytes_per_s: storage,
            memory_bytes_per_s_per_core: mem_per_core,
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
                cached_fraction: 1.0
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
        (1u64..(1 << 42), 1e3f64..1e11, 1e6f64..1e11).prop_map(|(d, disk, mem)| model(d, disk, mem))
    }

    proptest! {
        #[test]
        fn never_exceeds_measured(
            m in arb_model(),
            measured in 0.0f64..1e6,
            cpu in 0.1f64..128.0,
            limit in 0u64..(1 << 43),
            resident in 0u64..(1 << 36),
            samples in 0u64..1_000_000_000,
        ) {
            if let Prediction::Feasible { samples_per_s, cached_fraction } =
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
                Prediction::Feasible { samples_per_s: measured, cached_fraction: 1.0 }
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
