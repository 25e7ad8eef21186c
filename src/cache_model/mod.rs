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
//!     [`page_cache_hit_ratio`] for the derivation. Where the sweep traced the order in which
//!     the job opened its dataset's files (`access_hit_curve`), `h(x)` is an LRU cache replayed
//!     over that order instead ([`lru_hit_curve`]): 0 below the whole dataset for a job that
//!     reads its files in the same order every epoch;
//! * `B_disk`: storage read bandwidth (`harness::memory::bandwidth`); matrices written
//!   before `miss_calibration` may give a lower one, what the job read per second on its first
//!   pass over the dataset (`job_storage_bytes_per_s`);
//! * a job that waits on its reads: the sweep measures one cell at the lowest memory level
//!   (`miss_calibration`). Where it ran below 90% of what bandwidth allows it, a few loader
//!   workers reading one small sample at a time wait for each read in turn, with bandwidth to
//!   spare; each sample's worth read from storage then adds the time it added there to a
//!   sample's time ([`CacheModel::wait_per_read_s`]), a line in the reads per sample through the
//!   top cell and the calibration cell;
//! * a job that uses all its CPUs: each sample's worth read from storage adds the CPU time it
//!   added in the calibration cell (faults or reads, their completion, reclaim under the cap),
//!   where that cell used its CPUs too, and the same cores do that much more work per sample
//!   ([`CacheModel::cpu_per_read_s`]);
//! * `B_mem(c)`: memory read bandwidth with `c` cores, `c` times the single-core bandwidth
//!   (`harness::memory::bandwidth`);
//! * `T_cpu(c)`: epoch time measured at `c` CPUs with the whole dataset cached,
//!   `dataset_samples / measured_samples_per_s`.
//!
//! # Assumptions (why the model is *optimistic*)
//!
//! * Reading from storage overlaps perfectly with computation (hence the `max`), unless the
//!   calibration cell showed the job waiting on its reads.
//! * The measured full-memory rate is the truth when the whole dataset fits: the model never
//!   predicts more than it, and returns it exactly when `x = 1`.
//! * Caching never hurts: the storage bandwidth used is `min(B_disk, B_mem(c))`, so a storage
//!   figure that was itself served from some cache cannot make less memory look faster.
//! * `B_mem(c)` is per-core bandwidth times `c` with no machine-wide cap, because
//!   [`CacheModelInputs`] records no machine total; at the core counts where the cap would bind,
//!   the memory term is far below `T_cpu` for realistic jobs, so the omission rarely matters.
//! * Samples are of similar size, so a fraction of the bytes is the same fraction of the reads.
//! * A miss reads the sample, except where the job maps the dataset into memory with no advice
//!   (neither `MADV_RANDOM` nor `MADV_SEQUENTIAL`): then the kernel reads the device's
//!   read-ahead window around each faulting page (`read_unit_bytes`, `k` samples' worth), and a
//!   block of `k` samples is read `k` times an epoch ([`block_hit_ratio`]).
//! * A miss is read once, except where the job maps `W` bytes of the dataset at once with
//!   `MADV_SEQUENTIAL` (`sequential_map_bytes`): the kernel reads those maps ahead of their use,
//!   and a cache holding `x D < W` evicts the part `1 - x D / W` of it before the job reaches
//!   it, to be read once more ([`CacheModel::reads_per_miss`]).

mod access_order;
mod calibration;
mod hit_ratio;

pub use access_order::{CURVE_POINTS, MIN_REREAD_SHARE, curve_hit_ratio, lru_hit_curve};

pub use calibration::{CPU_BOUND, HELD_BACK};
pub use hit_ratio::{block_hit_ratio, page_cache_hit_ratio};

use crate::matrix::{CacheKind, CacheModelInputs};

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
            CacheKind::PageCache => match &self.inputs.access_hit_curve {
                Some(curve) => curve_hit_ratio(curve, x),
                None => block_hit_ratio(x, self.samples_per_miss(dataset_samples)),
            },
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

    /// What storage serves the job's misses at: the measured bandwidth, or the job's own rate
    /// where its first pass got less (`job_storage_bytes_per_s`).
    pub fn storage_bytes_per_s(&self) -> f64 {
        match self.inputs.job_storage_bytes_per_s {
            Some(job) => self.inputs.storage_bytes_per_s.min(job),
            None => self.inputs.storage_bytes_per_s,
        }
    }

    /// How many times a miss is read when the cache holds `x` of the dataset: 1, plus the part
    /// of what the job keeps mapped with `MADV_SEQUENTIAL` (`sequential_map_bytes`, `W`) that
    /// does not fit in the cache, `1 - x D / W`. The kernel reads such maps ahead of their use;
    /// with less room than `W`, what was read ahead is evicted before the job reaches it in
    /// that proportion and read again on the fault.
    pub fn reads_per_miss(&self, x: f64) -> f64 {
        match (self.inputs.kind, self.inputs.sequential_map_bytes) {
            (CacheKind::PageCache, Some(w)) if w > 0 => {
                let room = x.clamp(0.0, 1.0) * self.inputs.dataset_bytes as f64;
                1.0 + (1.0 - room / w as f64).clamp(0.0, 1.0)
            }
            _ => 1.0,
        }
    }

    /// Samples' worth storage reads for each miss when the cache holds `x` of the dataset:
    /// `k r`, what a miss reads ([`CacheModel::samples_per_miss`]) times how often it is read
    /// ([`CacheModel::reads_per_miss`]).
    fn miss_cost(&self, x: f64, dataset_samples: u64) -> f64 {
        self.samples_per_miss(dataset_samples) * self.reads_per_miss(x)
    }

    /// Storage bytes read per sample over bytes of a sample when the cache holds `x` of the
    /// dataset: what the sweep's replay of the job's reads counted (`replayed_reads`), else
    /// `(1 - h) k r`, 1 with nothing cached, whole samples read per miss and nothing read
    /// twice ([`CacheModel::miss_cost`]).
    pub fn read_fraction(&self, x: f64, dataset_samples: u64) -> f64 {
        match self.replayed() {
            Some(points) => replayed_read_fraction(points, x),
            None => (1.0 - self.hit_ratio(x, dataset_samples)) * self.miss_cost(x, dataset_samples),
        }
    }

    /// What storage reads per sample and the part of reads served from memory when the cache
    /// holds `x`: `(1 - h) k r` and `h`, or the replay's reads and what of a sample they leave
    /// to memory.
    fn reads_and_hits(&self, x: f64, dataset_samples: u64) -> (f64, f64) {
        let reads = self.read_fraction(x, dataset_samples);
        match self.replayed() {
            Some(_) => (reads, (1.0 - reads).clamp(0.0, 1.0)),
            None => (reads, self.hit_ratio(x, dataset_samples)),
        }
    }

    /// The replay's `[x, reads]` points, where the page-cache model has them (MinIO's fixed
    /// subset is what it is whatever the kernel would do).
    fn replayed(&self) -> Option<&[[f64; 2]]> {
        let r = self.inputs.replayed_reads.as_ref()?;
        (self.inputs.kind == CacheKind::PageCache && !r.points.is_empty())
            .then_some(r.points.as_slice())
    }

    /// The rate storage and memory bandwidth allow at `cpu` cores where storage reads `reads`
    /// samples' worth per sample and memory serves `hit` of a sample
    /// ([`CacheModel::reads_and_hits`]), at most `measured`.
    fn bandwidth_rate(
        &self,
        measured: f64,
        cpu: f64,
        reads: f64,
        hit: f64,
        dataset_samples: u64,
    ) -> f64 {
        let usable = |b: f64| if b.is_finite() && b > 0.0 { b } else { 0.0 };
        let mem_bw = usable(self.inputs.memory_bytes_per_s_per_core * cpu);
        let disk_bw = usable(self.storage_bytes_per_s()).min(mem_bw);
        if measured == 0.0 || disk_bw == 0.0 {
            // Some bytes must come from a storage (or memory) with no usable bandwidth.
            return 0.0;
        }
        // Storage reads `reads` samples' worth per sample, memory serves the hits:
        // io_time = D * (reads/B_disk + h/B_mem). With reads = (1 - h) k the coefficient of h is
        // 1/B_mem - k/B_disk <= 0 (k >= 1, B_disk <= B_mem) and k is non-increasing in x; with
        // a replay, h = 1 - reads where below 1 and reads is non-increasing: io_time is
        // non-increasing in x either way.
        let dataset_bytes = self.inputs.dataset_bytes as f64;
        let io_time_s = dataset_bytes * (reads / disk_bw + hit / mem_bw);
        let io_rate = dataset_samples as f64 / io_time_s;
        if io_rate.is_nan() {
            measured
        } else {
            measured.min(io_rate)
        }
    }

    /// Predicted throughput at `cpu` cores under `memory_limit_bytes`, from the rate measured at
    /// the same `cpu` with all memory (`measured_full_memory_samples_per_s`).
    ///
    /// * `Infeasible` iff `memory_limit_bytes < job_resident_bytes`.
    /// * When the whole dataset fits in `memory_limit - job_resident` (or the dataset size or
    ///   sample count is unknown, i.e. 0), the measured rate is returned unchanged.
    /// * Otherwise `min(measured, dataset_samples / io_time)` where
    ///   `io_time = x * D / B_mem(cpu) + (1 - x) * D / min(B_disk, B_mem(cpu))`, and at most
    ///   what the wait per read ([`CacheModel::wait_per_read_s`]) allows where the calibration
    ///   cell showed the job waiting on its reads, and at most what its CPUs allow where the job
    ///   used them all with all memory (`full_memory_cpu_cores_used`) and the calibration cell
    ///   showed what a read costs in CPU time ([`CacheModel::cpu_per_read_s`]).
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
        full_memory_cpu_cores_used: Option<f64>,
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
        let (reads, hit) = self.reads_and_hits(x, dataset_samples);
        let mut samples_per_s = self.bandwidth_rate(measured, cpu, reads, hit, dataset_samples);
        if measured > 0.0
            && let Some(wait_s) = self.wait_per_read_s(dataset_samples)
        {
            samples_per_s = samples_per_s.min(self.waiting_rate(measured, reads, wait_s));
        }
        if let Some(cpu_rate) = self.cpu_bound_rate(
            measured,
            cpu,
            full_memory_cpu_cores_used,
            reads,
            dataset_samples,
        ) {
            samples_per_s = samples_per_s.min(cpu_rate);
        }
        Prediction::Feasible {
            samples_per_s,
            cached_fraction: x,
            hit_ratio: hit,
        }
    }
}

/// Storage reads per sample at `x` from a replay's `[x, reads]` points (sorted by `x`): linear
/// between points, towards none read at the whole dataset above the last, the first point's
/// below it, and never more than at any smaller `x` (a replay's noise must not make more
/// memory read more).
fn replayed_read_fraction(points: &[[f64; 2]], x: f64) -> f64 {
    let finite = |v: f64| if v.is_finite() { v.max(0.0) } else { 0.0 };
    let mut prev: Option<[f64; 2]> = None;
    let mut cap = f64::INFINITY;
    for p in points.iter().chain(std::iter::once(&[1.0, 0.0])) {
        let p = [p[0], finite(p[1]).min(cap)];
        if x <= p[0] {
            return match prev {
                None => p[1],
                Some(q) if p[0] > q[0] => q[1] + (p[1] - q[1]) * (x - q[0]) / (p[0] - q[0]),
                Some(q) => q[1].min(p[1]),
            };
        }
        cap = p[1];
        prev = Some(p);
    }
    0.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GB: u64 = 1 << 30;

    pub(super) fn model(dataset_bytes: u64, storage: f64, mem_per_core: f64) -> CacheModel {
        CacheModel::new(CacheModelInputs::new(
            CacheKind::Minio,
            dataset_bytes,
            storage,
            mem_per_core,
        ))
    }

    /// The rate and hit ratio of a feasible prediction.
    fn rate_and_hits(p: Prediction) -> (f64, f64) {
        match p {
            Prediction::Feasible {
                samples_per_s,
                hit_ratio,
                ..
            } => (samples_per_s, hit_ratio),
            Prediction::Infeasible => panic!("{p:?}"),
        }
    }

    pub(super) fn rate(p: Prediction) -> f64 {
        p.samples_per_s().expect("feasible")
    }

    #[test]
    fn whole_dataset_cached_returns_measured() {
        let m = model(10 * GB, 200e6, 10e9);
        let p = m.predict_samples_per_s(1234.5, 4.0, 20 * GB, 2 * GB, 1_000_000, None);
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
            m.predict_samples_per_s(100.0, 4.0, GB, 2 * GB, 1000, None),
            Prediction::Infeasible
        );
        // Exactly the resident size: feasible, nothing cached.
        match m.predict_samples_per_s(100.0, 4.0, 2 * GB, 2 * GB, 1000, None) {
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
        let p = m.predict_samples_per_s(1e9, 8.0, d / 2 + GB, GB, samples, None);
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
        let r = rate(m.predict_samples_per_s(10.0, 1.0, GB, GB, 1000, None));
        assert_eq!(r, 10.0);
    }

    #[test]
    fn slow_disk_no_cache_approaches_disk_rate() {
        let d = 50 * GB;
        let disk = 1e6; // 1 MB/s
        let m = model(d, disk, 10e9);
        let samples = 1_000_000u64;
        let r = rate(m.predict_samples_per_s(5000.0, 4.0, GB, GB, samples, None));
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
                let p = m.predict_samples_per_s(measured, cpu, GB / 2, 0, 100, None);
                let r = rate(p);
                assert!(r.is_finite() && r >= 0.0, "{measured} {cpu} -> {r}");
            }
        }
    }

    fn arb_model() -> impl Strategy<Value = CacheModel> {
        (
            1u64..(1 << 42),
            1e3f64..1e11,
            1e6f64..1e11,
            any::<bool>(),
            proptest::option::of(1u64..(1 << 30)),
            proptest::option::of(proptest::collection::vec(0u32..16, 0..64)),
            proptest::option::of(1e3f64..1e11),
            proptest::option::of((
                1e-3f64..1e5,
                1e-3f64..1e5,
                proptest::option::of(1e-6f64..1.0),
                proptest::option::of(1e-6f64..1.0),
            )),
            proptest::option::of(0u64..(1 << 42)),
            proptest::option::of(proptest::collection::vec((0.0f64..1.0, 0.0f64..3.0), 1..5)),
        )
            .prop_map(
                |(d, disk, mem, lru, unit, trace, job_disk, pass, mapped, replay)| {
                    let kind = if lru {
                        CacheKind::PageCache
                    } else {
                        CacheKind::Minio
                    };
                    let mut m = model(d, disk, mem).with_kind(kind);
                    m.inputs.read_unit_bytes = unit;
                    m.inputs.job_storage_bytes_per_s = job_disk;
                    m.inputs.sequential_map_bytes = mapped;
                    m.inputs.replayed_reads = replay.map(|points| {
                        let mut points: Vec<[f64; 2]> =
                            points.iter().map(|&(x, r)| [x, r]).collect();
                        points.sort_by(|a, b| a[0].total_cmp(&b[0]));
                        crate::matrix::ReplayedReads {
                            access: crate::matrix::ReadAccess::Pread,
                            readers: 3,
                            points,
                        }
                    });
                    m.inputs.miss_calibration =
                        pass.map(|(a, b, cpu_low, cpu_top)| crate::matrix::MissCalibration {
                            cpu: 1.0,
                            memory_bytes: d / 4,
                            resident_bytes: 0,
                            samples_per_s: a.min(b),
                            cached_samples_per_s: a.max(b),
                            storage_read_bytes_per_s: None,
                            cpu_s_per_sample: cpu_low,
                            cached_cpu_s_per_sample: cpu_top,
                            system_s_per_sample: None,
                            cached_system_s_per_sample: None,
                        });
                    m.inputs.access_hit_curve = trace.and_then(|picks| {
                        let opens: Vec<u32> = (0..16).chain(0..16).chain(picks).collect();
                        lru_hit_curve(&opens, &[4096; 16])
                    });
                    m
                },
            )
    }

    #[test]
    fn page_cache_model_predicts_less_than_minio_for_a_storage_bound_job() {
        // 100 MB dataset, 30 MB/s storage, a quarter cached, CPU allows 10x what storage does.
        let d = 100_000_000u64;
        let minio = model(d, 30e6, 1e10);
        let lru = minio.with_kind(CacheKind::PageCache);
        let args = (3000.0, 2.0, d / 4 + 1000, 1000, 2000);
        let r_minio =
            rate(minio.predict_samples_per_s(args.0, args.1, args.2, args.3, args.4, None));
        let r_lru = rate(lru.predict_samples_per_s(args.0, args.1, args.2, args.3, args.4, None));
        // Storage-bound: 2000 samples need (1 - h) x 100 MB at 30 MB/s.
        let expect = |h: f64| 2000.0 / ((1.0 - h) * d as f64 / 30e6 + h * d as f64 / 2e10);
        assert!((r_minio - expect(0.25)).abs() / r_minio < 1e-9);
        assert!((r_lru - expect(page_cache_hit_ratio(0.25))).abs() / r_lru < 1e-9);
        assert!(r_lru < 0.8 * r_minio, "{r_lru} vs {r_minio}");
    }

    /// A job traced reading its files in the same order every epoch gets no hits below the
    /// whole dataset: storage-bound, it runs at the storage rate, where a shuffle would hit.
    #[test]
    fn a_traced_repeated_scan_reads_everything_from_storage() {
        let d = 100_000_000u64;
        let mut m = model(d, 20e6, 1e10).with_kind(CacheKind::PageCache);
        let shuffled = rate(m.predict_samples_per_s(5000.0, 2.0, d / 2, 0, 2000, None));
        let scan: Vec<u32> = (0..50).chain(0..50).collect();
        m.inputs.access_hit_curve = lru_hit_curve(&scan, &[d / 50; 50]);
        let p = m.predict_samples_per_s(5000.0, 2.0, d / 2, 0, 2000, None);
        let (samples_per_s, hit_ratio) = rate_and_hits(p);
        assert_eq!(hit_ratio, 0.0);
        let storage_rate = 2000.0 / (d as f64 / 20e6);
        assert!(
            (samples_per_s - storage_rate).abs() / storage_rate < 1e-3,
            "{samples_per_s} vs {storage_rate}"
        );
        assert!(
            shuffled > 1.15 * samples_per_s,
            "{shuffled} vs {samples_per_s}"
        );
    }

    /// Storage that gave the job less than one sequential stream gets: misses come at the
    /// job's rate; one above the device's changes nothing.
    #[test]
    fn misses_come_at_the_storage_rate_the_job_got() {
        let d = 100_000_000u64;
        let mut m = model(d, 20e6, 1e10);
        let device = rate(m.predict_samples_per_s(5000.0, 2.0, 0, 0, 2000, None));
        m.inputs.job_storage_bytes_per_s = Some(15e6);
        let job = rate(m.predict_samples_per_s(5000.0, 2.0, 0, 0, 2000, None));
        assert!((job / device - 0.75).abs() < 1e-3, "{job} vs {device}");
        m.inputs.job_storage_bytes_per_s = Some(30e6);
        assert_eq!(
            rate(m.predict_samples_per_s(5000.0, 2.0, 0, 0, 2000, None)),
            device
        );
    }

    #[test]
    fn read_around_multiplies_what_a_miss_costs() {
        // 467 MB of 39 KB samples (12,000), 20 MB/s storage, 8 MiB read around each fault: a
        // miss reads 215 samples' worth, and with 68% of the dataset cached a third of the
        // reads miss (close to independent references), so storage allows 7-8 samples/s.
        let d = 467_000_000u64;
        let mut m = model(d, 20e6, 1e10).with_kind(CacheKind::PageCache);
        let whole = rate(m.predict_samples_per_s(800.0, 2.0, d * 68 / 100, 0, 12_000, None));
        m.inputs.read_unit_bytes = Some(8 << 20);
        let k = m.samples_per_miss(12_000);
        assert!(
            (k - (8 << 20) as f64 / (d as f64 / 12_000.0)).abs() < 1e-9,
            "{k}"
        );
        let p = m.predict_samples_per_s(800.0, 2.0, d * 68 / 100, 0, 12_000, None);
        let (samples_per_s, hit_ratio) = rate_and_hits(p);
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

    #[test]
    fn read_ahead_that_does_not_fit_is_read_again() {
        // 323 MB of 126 KiB samples (2,500), 20 MB/s storage, four workers each mapping four
        // chunks of 7.4 MB with MADV_SEQUENTIAL (118 MB read ahead at once).
        let d = 323_000_000u64;
        let mut m = model(d, 20e6, 1e10).with_kind(CacheKind::PageCache);
        let at = |m: &CacheModel, pct: u64| {
            let x = pct as f64 / 100.0;
            let p = m.predict_samples_per_s(1000.0, 2.0, d * pct / 100, 0, 2_500, None);
            (m.read_fraction(x, 2_500), rate(p))
        };
        let plain: Vec<_> = [5, 25, 50].iter().map(|&p| at(&m, p)).collect();
        m.inputs.sequential_map_bytes = Some(118_000_000);
        let mapped: Vec<_> = [5, 25, 50].iter().map(|&p| at(&m, p)).collect();
        // What was read ahead and evicted is read again: 1.86 samples' worth per sample with 16
        // MB of room, 1.27 with 81 MB; with room for all of it, nothing changes.
        assert!((1.8..1.9).contains(&mapped[0].0), "{mapped:?}");
        assert!((1.2..1.3).contains(&mapped[1].0), "{mapped:?}");
        assert_eq!(mapped[2], plain[2]);
        for (p, q) in plain.iter().zip(&mapped).take(2) {
            assert!(
                (q.1 * q.0 - p.1 * p.0).abs() / (p.1 * p.0) < 1e-3,
                "{p:?} {q:?}"
            );
        }
        // Only the page cache reads ahead; MinIO's cache holds whole objects.
        assert_eq!(m.with_kind(CacheKind::Minio).reads_per_miss(0.05), 1.0);
    }

    #[test]
    fn replayed_reads_are_interpolated_and_never_rise_with_memory() {
        let points = [[0.25, 1.5], [0.5, 1.45], [0.75, 1.6]];
        let f = |x| replayed_read_fraction(&points, x);
        assert_eq!(f(0.1), 1.5);
        assert!((f(0.375) - 1.475).abs() < 1e-12);
        // More memory never reads more: the 0.75 point is taken at 1.45.
        assert_eq!(f(0.75), 1.45);
        assert!((f(0.875) - 0.725).abs() < 1e-12);
        assert_eq!(f(1.0), 0.0);
        assert_eq!(f(1.5), 0.0);
    }

    /// An h5py loader's replayed reads (storage at 20 MB/s, 61 KB samples) bound the rate by
    /// what storage delivers: 20 MB/s over 1.45 samples' worth a sample. MinIO ignores them.
    #[test]
    fn the_page_cache_model_takes_its_reads_from_a_replay() {
        let d = 276_520_960u64;
        let samples = 4500;
        let mut m = model(d, 20e6, 1e10).with_kind(CacheKind::PageCache);
        m.inputs.replayed_reads = Some(crate::matrix::ReplayedReads {
            access: crate::matrix::ReadAccess::Pread,
            readers: 3,
            points: vec![[0.27, 1.48], [0.47, 1.45], [0.72, 1.0]],
        });
        let sample = d as f64 / samples as f64;
        let r = rate(m.predict_samples_per_s(600.0, 2.0, d / 2 + GB, GB, samples, None));
        let reads = replayed_read_fraction(&[[0.27, 1.48], [0.47, 1.45], [0.72, 1.0]], 0.5);
        assert!((r - 20e6 / (reads * sample)).abs() / r < 0.01, "{r}");
        let minio = m.with_kind(CacheKind::Minio);
        assert!(
            rate(minio.predict_samples_per_s(600.0, 2.0, d / 2 + GB, GB, samples, None)) > 1.5 * r
        );
    }

    proptest! {
        #[test]
        fn never_exceeds_measured(
            m in arb_model(),
            measured in 0.0f64..1e6,
            cpu in 0.1f64..128.0,
            limit in 0u64..(1 << 43),
            resident in 0u64..(1 << 36),
            cores in proptest::option::of(0.0f64..256.0),
            samples in 0u64..1_000_000_000,
        ) {
            if let Prediction::Feasible { samples_per_s, cached_fraction, .. } =
                m.predict_samples_per_s(measured, cpu, limit, resident, samples, cores)
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
            cores in proptest::option::of(0.0f64..256.0),
            samples in 1u64..1_000_000_000,
        ) {
            let (lo, hi) = (a.min(b), a.max(b));
            let p_lo = m.predict_samples_per_s(measured, cpu, lo, resident, samples, cores);
            let p_hi = m.predict_samples_per_s(measured, cpu, hi, resident, samples, cores);
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
                m.predict_samples_per_s(measured, cpu, limit, resident, samples, None),
                Prediction::Feasible { samples_per_s: measured, cached_fraction: 1.0, hit_ratio: 1.0 }
            );
        }

        #[test]
        fn infeasible_iff_below_resident(
            m in arb_model(),
            limit in 0u64..(1 << 40),
            resident in 0u64..(1 << 40),
        ) {
            let p = m.predict_samples_per_s(100.0, 2.0, limit, resident, 1000, None);
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
            let r = rate(m.predict_samples_per_s(measured, cpu, resident, resident, samples, None));
            let disk_rate = samples as f64 / (d as f64 / disk);
            prop_assert!((r - disk_rate).abs() <= disk_rate * 1e-9, "{} vs {}", r, disk_rate);
        }
    }
}
