//! What the calibration cell teaches the cache model: a cell measured at the lowest memory level
//! of the highest CPU level, beside the top level there (`miss_calibration`). Bandwidth alone
//! predicts a job that overlaps its reads with its work and has CPU to spare; the cell shows
//! where a job instead waits on each read, or spends CPU time on it.

use super::CacheModel;
use crate::matrix::MissCalibration;

/// A calibration cell that ran below this part of what storage bandwidth allows it was held
/// back by waiting on its reads.
pub const HELD_BACK: f64 = 0.9;

/// A job that used this part of its CPUs or more was bound by them: it had no idle time in
/// which to wait on a read, and each CPU second a read costs slows it down.
pub const CPU_BOUND: f64 = 0.9;

/// Fewer samples' worth read per sample than this in the calibration cell say nothing about
/// what a read costs.
const MIN_READS: f64 = 0.1;

/// Whether the calibration cell used [`CPU_BOUND`] of its CPUs or more (false without its CPU
/// figure): it had no idle time to wait in, and its extra CPU time is work, not spinning.
fn used_its_cpus(c: &MissCalibration) -> bool {
    c.cpu_s_per_sample
        .is_some_and(|s| s * c.samples_per_s >= CPU_BOUND * c.cpu)
}

impl CacheModel {
    /// The part of the dataset the model gives the cache in the calibration cell, where it is
    /// less than the whole dataset and the cell made progress.
    fn calibration_fraction(&self) -> Option<f64> {
        let c = self.inputs.miss_calibration.as_ref()?;
        let dataset_bytes = self.inputs.dataset_bytes as f64;
        let cache = c.memory_bytes.saturating_sub(c.resident_bytes) as f64;
        (dataset_bytes > 0.0 && cache < dataset_bytes && c.samples_per_s > 0.0)
            .then(|| cache / dataset_bytes)
    }

    /// Seconds each sample's worth read from storage adds to a sample's time, from the
    /// calibration cell, where that cell ran below [`HELD_BACK`] of what storage bandwidth
    /// allows it, read from storage at less than that part of the bandwidth and left some of
    /// its CPUs idle: the line through the cached rate (no reads) and that cell. `None` where
    /// there is no calibration, or bandwidth or CPU explains the cell: it ran as fast as the
    /// model's reads allow, storage was busy (it read more than the model counts, such as
    /// read-ahead evicted before it was used), or it used its CPUs ([`CPU_BOUND`]).
    pub fn wait_per_read_s(&self, dataset_samples: u64) -> Option<f64> {
        let c = self.inputs.miss_calibration.as_ref()?;
        let x = self.calibration_fraction()?;
        let (reads, hit) = self.reads_and_hits(x, dataset_samples);
        let bandwidth =
            self.bandwidth_rate(c.cached_samples_per_s, c.cpu, reads, hit, dataset_samples);
        let storage_busy = c
            .storage_read_bytes_per_s
            .is_some_and(|r| r >= HELD_BACK * self.storage_bytes_per_s());
        if !(reads > 0.0 && c.samples_per_s < HELD_BACK * bandwidth)
            || storage_busy
            || used_its_cpus(c)
        {
            return None;
        }
        let wait = (1.0 / c.samples_per_s - 1.0 / c.cached_samples_per_s) / reads;
        (wait.is_finite() && wait > 0.0).then_some(wait)
    }

    /// The most a job reaches that waits `wait_s` for each sample's worth read from storage
    /// and reads `reads` per sample: the wait added to the time per sample of the faster of
    /// `measured` and the calibration's cached rate. A CPU level slower than the calibration's
    /// has slack that absorbs the wait (its compute overlaps it); a faster one pays it in full.
    pub(super) fn waiting_rate(&self, measured: f64, reads: f64, wait_s: f64) -> f64 {
        let cached =
            (self.inputs.miss_calibration.as_ref()).map_or(measured, |c| c.cached_samples_per_s);
        1.0 / (1.0 / measured.max(cached) + reads * wait_s)
    }

    /// CPU seconds each sample's worth read from storage adds to a sample, from the calibration
    /// cell: the CPU time per sample there over that at the top level, per sample's worth the
    /// model has it read. Reading under a memory cap costs the job CPU time of its own: page
    /// faults or read calls, their completion, and reclaim, which the kernel runs in the task
    /// that needs the page. A cell that used its CPUs ([`CPU_BOUND`]) says so in its CPU time:
    /// one that had idle CPU only in its system time, since threads that spin while they wait
    /// (PyTorch's and OpenMP's) turn waiting on storage into user time as well, which a job
    /// that uses its CPUs does not spend; the kernel's work for a read is the same either way.
    /// `None` without those figures, where the cell read too little or spent no more time per
    /// sample than the top level.
    pub fn cpu_per_read_s(&self, dataset_samples: u64) -> Option<f64> {
        let c = self.inputs.miss_calibration.as_ref()?;
        let (low, top) = if used_its_cpus(c) {
            (c.cpu_s_per_sample?, c.cached_cpu_s_per_sample?)
        } else {
            (c.system_s_per_sample?, c.cached_system_s_per_sample?)
        };
        let reads = self.read_fraction(self.calibration_fraction()?, dataset_samples);
        if reads < MIN_READS {
            return None;
        }
        let per_read = (low - top) / reads;
        (per_read.is_finite() && per_read > 0.0).then_some(per_read)
    }

    /// The rate a job keeps that used `cores_used` of its `cpu` cores at `measured` samples/s
    /// with all memory, when each sample also reads `reads` samples' worth from storage: where
    /// it used its CPUs ([`CPU_BOUND`]) the same cores do `cpu_s + reads × cpu_per_read` CPU
    /// seconds per sample. `None` where it had CPU to spare or no calibration says what a read
    /// costs.
    pub(super) fn cpu_bound_rate(
        &self,
        measured: f64,
        cpu: f64,
        cores_used: Option<f64>,
        reads: f64,
        dataset_samples: u64,
    ) -> Option<f64> {
        let used = cores_used.filter(|&u| u.is_finite() && u > 0.0)?;
        if !(measured > 0.0 && used >= CPU_BOUND * cpu) {
            return None;
        }
        let per_read = self.cpu_per_read_s(dataset_samples)?;
        let rate = used / (used / measured + reads.max(0.0) * per_read);
        rate.is_finite().then_some(rate.min(measured))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{model, rate};
    use super::super::{CacheModel, Prediction};
    use crate::matrix::MissCalibration;

    /// A job measured at 4,000 samples/s with nothing cached against 6,000 cached, where
    /// storage allows 10,000, waits on its reads: each sample read costs it 83 µs, so half the
    /// reads missing give 4,800 where bandwidth alone allows the cached rate. A CPU level whose
    /// cached rate is below the calibration's absorbs the wait; one above pays it in full. A
    /// calibration cell that bandwidth explains adds nothing.
    #[test]
    fn a_job_that_waits_pays_each_miss_what_the_calibration_cell_did() {
        let d = 100_000_000u64;
        let samples = 20_000;
        let mut m = model(d, 50e6, 1e12);
        let half = d / 2;
        assert_eq!(
            rate(m.predict_samples_per_s(6000.0, 2.0, half, 0, samples, None)),
            6000.0
        );
        let calibration = MissCalibration {
            cpu: 2.0,
            memory_bytes: 1000,
            resident_bytes: 1000,
            samples_per_s: 4000.0,
            cached_samples_per_s: 6000.0,
            storage_read_bytes_per_s: Some(20e6),
            cpu_s_per_sample: None,
            cached_cpu_s_per_sample: None,
            system_s_per_sample: None,
            cached_system_s_per_sample: None,
        };
        m.inputs.miss_calibration = Some(calibration);
        let wait_s = m.wait_per_read_s(samples).expect("it waited");
        assert!(
            (wait_s - (1.0 / 4000.0 - 1.0 / 6000.0)).abs() < 1e-12,
            "{wait_s}"
        );
        let at = |m: &CacheModel, measured: f64, limit: u64| {
            rate(m.predict_samples_per_s(measured, 2.0, limit, 0, samples, None))
        };
        let close = |a: f64, b: f64| (a - b).abs() / b < 1e-9;
        // Nothing cached: the calibration's rate; half cached (MinIO: half the reads hit).
        assert!(close(at(&m, 6000.0, 0), 4000.0), "{}", at(&m, 6000.0, 0));
        assert!(close(
            at(&m, 6000.0, half),
            1.0 / (1.0 / 6000.0 + 0.5 * wait_s)
        ));
        // A CPU level at 3,000 cached: 1/6000 + wait_s is 1/4000, below 1/3000.
        assert!(close(at(&m, 3000.0, 0), 3000.0), "{}", at(&m, 3000.0, 0));
        // A faster CPU level pays the whole wait on top of its own time.
        assert!(close(
            at(&m, 12_000.0, half),
            1.0 / (1.0 / 12_000.0 + 0.5 * wait_s)
        ));
        // The whole dataset cached: the measured rate.
        assert_eq!(at(&m, 6000.0, d), 6000.0);
        // Storage at 0.5 MB/s allows 100 samples/s: the calibration cell is storage's, and
        // adds nothing to what bandwidth predicts.
        m.inputs.storage_bytes_per_s = 0.5e6;
        m.inputs.miss_calibration = Some(MissCalibration {
            samples_per_s: 95.0,
            ..calibration
        });
        assert_eq!(m.wait_per_read_s(samples), None);
        let storage_bound = at(&m, 6000.0, half);
        // Storage busy at the calibration cell: it read more than the model counts (read-ahead
        // evicted before use), which is bandwidth, not waiting.
        m.inputs.storage_bytes_per_s = 50e6;
        m.inputs.miss_calibration = Some(MissCalibration {
            storage_read_bytes_per_s: Some(49e6),
            ..calibration
        });
        assert_eq!(m.wait_per_read_s(samples), None);
        assert!((storage_bound - 200.0).abs() < 1e-3, "{storage_bound}");
    }

    #[test]
    fn a_job_that_uses_its_cpus_pays_each_read_in_cpu_time() {
        // 100 MB of 5,000 samples, storage far faster than the job: bandwidth allows its full
        // rate at every level. The calibration cell (nothing cached: a whole sample read per
        // sample) took 1.5 ms of CPU per sample where the top level took 1.0.
        let d = 100_000_000u64;
        let samples = 5_000;
        let mut m = model(d, 1e12, 1e13);
        let calibration = MissCalibration {
            cpu: 1.0,
            memory_bytes: 1000,
            resident_bytes: 1000,
            samples_per_s: 1.0 / 1.5e-3,
            cached_samples_per_s: 1000.0,
            storage_read_bytes_per_s: Some(1e6),
            cpu_s_per_sample: Some(1.5e-3),
            cached_cpu_s_per_sample: Some(1.0e-3),
            system_s_per_sample: None,
            cached_system_s_per_sample: None,
        };
        m.inputs.miss_calibration = Some(calibration);
        let per_read = m.cpu_per_read_s(samples).expect("it cost CPU time");
        assert!((per_read - 0.5e-3).abs() < 1e-12, "{per_read}");
        // It used its CPU: it was not waiting, so no wait is fitted.
        assert_eq!(m.wait_per_read_s(samples), None);
        let at = |limit: u64, used: Option<f64>| {
            rate(m.predict_samples_per_s(1000.0, 1.0, limit, 0, samples, used))
        };
        let close = |a: f64, b: f64| (a - b).abs() / b < 1e-9;
        // CPU-bound at the top (1.0 of 1 core): nothing cached costs 0.5 ms more a sample, half
        // cached (MinIO: half the reads hit) 0.25 ms.
        assert!(
            close(at(0, Some(1.0)), 1.0 / 1.5e-3),
            "{}",
            at(0, Some(1.0))
        );
        assert!(close(at(d / 2, Some(1.0)), 1.0 / 1.25e-3));
        assert_eq!(at(d, Some(1.0)), 1000.0);
        // With CPU to spare at the top (0.5 of 1 core), or no CPU figure, the cost is absorbed.
        assert_eq!(at(0, Some(0.5)), 1000.0);
        assert_eq!(at(0, None), 1000.0);
        // The same cell with a CPU to spare (0.75 of 1 used): its extra CPU time may be
        // threads spinning while they wait, not what a read costs.
        m.inputs.miss_calibration = Some(MissCalibration {
            samples_per_s: 0.75 / 1.5e-3,
            ..calibration
        });
        assert_eq!(m.cpu_per_read_s(samples), None);
        // Its system time says what the kernel spent on each read (0.2 ms a sample, where the
        // top level spent 0.1), spinning or not.
        m.inputs.miss_calibration = Some(MissCalibration {
            samples_per_s: 0.75 / 1.5e-3,
            system_s_per_sample: Some(0.3e-3),
            cached_system_s_per_sample: Some(0.1e-3),
            ..calibration
        });
        let per_read = m.cpu_per_read_s(samples).expect("the kernel's time");
        assert!((per_read - 0.2e-3).abs() < 1e-12, "{per_read}");
        // No more CPU time per sample in the cell, which ran at the top level's rate: reads
        // cost bandwidth only.
        m.inputs.miss_calibration = Some(MissCalibration {
            samples_per_s: 1000.0,
            cpu_s_per_sample: Some(0.9e-3),
            ..calibration
        });
        assert_eq!(m.cpu_per_read_s(samples), None);
        assert!(matches!(
            m.predict_samples_per_s(1000.0, 1.0, 0, 0, samples, Some(1.0)),
            Prediction::Feasible { samples_per_s, .. } if samples_per_s == 1000.0
        ));
    }
}
