//! The job's reads replayed under the page cache each memory level below the top one leaves it
//! ([`crate::harness::memory::reread`]), for the cache model, where a hit ratio cannot say what
//! storage reads: a dataset in one file read by system calls, where the kernel reads ahead of
//! a `pread` whose preceding pages are cached, by as much as the cache holds around it.

use super::SweepObserver;
use super::memory_inputs::MemoryInputs;
use crate::harness::cgroup::CgroupRoot;
use crate::harness::memory::reread::{ReplayError, ReplaySetup, replay_level};
use crate::matrix::{CacheKind, Cell, CellKey, ReadAccess, ReplayedReads};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Ctrl-C stopped the replay.
pub(super) struct Interrupted;

/// The longest an epoch over the dataset may take at the storage rate for the sweep to replay
/// it: the replay reads two at each level.
const REPLAY_EPOCH_S: f64 = 60.0;
/// The seed of the replay's epoch orders, the same at every level.
const REPLAY_SEED: u64 = 0x005e_ed0f_da7a;

impl MemoryInputs {
    /// Once per sweep, after the top levels `cells` holds are measured: replays the job's
    /// reads at every memory level below the top one, at the highest CPU level's resident
    /// size, and records what storage read per sample there (`replayed_reads`), where the job
    /// reads a dataset in one file by system calls, in cgroups under `root` (none inside a
    /// Slurm step, whose cgroups Slurm owns). Says whether the cache model's inputs changed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn replay_reads(
        &mut self,
        observer: &mut dyn SweepObserver,
        root: Option<&CgroupRoot>,
        cancel: &AtomicBool,
        cells: &[Cell],
        params: &BTreeMap<String, String>,
        cpus: &[f64],
    ) -> Result<bool, Interrupted> {
        let Some(access) = self.replay_access() else {
            return Ok(false);
        };
        let (Some(inputs), Some(ds), Some(root)) =
            (self.cache_inputs.as_ref(), self.dataset.as_ref(), root)
        else {
            return Ok(false);
        };
        let Some(levels) = self.levels.bytes().map(|b| b.to_vec()) else {
            return Ok(false);
        };
        let Some(cpu) = cpus.iter().copied().reduce(f64::max) else {
            return Ok(false);
        };
        let top = CellKey::new(cpu, levels[0], params);
        let Some(resident) = (cells.iter().find(|c| c.key() == top))
            .and_then(|c| c.telemetry.as_ref())
            .map(|t| t.resident_besides_dataset())
        else {
            return Ok(false);
        };
        let dataset = inputs.dataset_bytes;
        let rate = crate::cache_model::CacheModel::new(inputs.clone()).storage_bytes_per_s();
        let epoch_s = dataset as f64 / rate;
        if epoch_s.is_nan() || epoch_s > REPLAY_EPOCH_S {
            observer.status(&format!(
                "the job's reads are not replayed: an epoch over the dataset takes {epoch_s:.0} s \
                 at {:.1} MB/s, more than {REPLAY_EPOCH_S:.0} s",
                rate / 1e6
            ));
            return Ok(false);
        }
        let samples = self.dataset_samples().unwrap_or(ds.files);
        let readers = self.dataset_maps.map_or(1, |m| m.readers.max(1));
        let setup = ReplaySetup {
            files: ds.paths.clone(),
            sizes: (ds.paths.iter())
                .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
                .collect(),
            samples,
            readers: readers as usize,
            access,
            read_cap: self.storage_throttle,
            timeout: Duration::from_secs_f64(60.0 + 6.0 * epoch_s),
        };
        let mut points = Vec::new();
        for &level in &levels[1..] {
            let room = level.saturating_sub(resident);
            if room == 0 || room >= dataset {
                continue;
            }
            let x = room as f64 / dataset as f64;
            observer.status(&format!(
                "replaying the job's reads ({readers} readers) with {:.0} MB of page cache, {:.0}% \
                 of the dataset",
                room as f64 / 1e6,
                100.0 * x
            ));
            match replay_level(root, &setup, room, REPLAY_SEED, cancel) {
                Ok(reads) => {
                    observer.status(&format!(
                        "storage read {reads:.2} samples' worth for each sample taken"
                    ));
                    points.push([x, reads]);
                }
                Err(ReplayError::Interrupted) => return Err(Interrupted),
                Err(e) => {
                    observer.warn(&format!(
                        "the job's reads could not be replayed ({e}): the cache model counts \
                         storage reads from its hit ratio"
                    ));
                    return Ok(false);
                }
            }
        }
        if points.is_empty() {
            return Ok(false);
        }
        points.sort_by(|a, b| a[0].total_cmp(&b[0]));
        let Some(inputs) = self.cache_inputs.as_mut() else {
            return Ok(false);
        };
        inputs.replayed_reads = Some(ReplayedReads {
            access,
            readers,
            points,
        });
        Ok(true)
    }

    /// How the job reads its dataset, where the sweep replays it: a page-cache model not
    /// replayed yet, and one file holding several samples that the job reads without mapping
    /// it.
    fn replay_access(&self) -> Option<ReadAccess> {
        let inputs = self.cache_inputs.as_ref()?;
        let ds = self.dataset.as_ref()?;
        let maps = self.dataset_maps?;
        let samples = self.dataset_samples()?;
        let replays = inputs.kind == CacheKind::PageCache
            && inputs.replayed_reads.is_none()
            && self.levels.len() > 1
            && ds.files == 1
            && samples > 1
            && !maps.mapped;
        replays.then_some(ReadAccess::Pread)
    }
}
