//! The memory axis from the cache model: the bandwidths it needs, measured once per sweep, and
//! the modelled cells below the measured top memory level.

use super::SweepObserver;
use super::output::Output;
use super::run::Run;
use super::visit::PARTLY_CACHED;
use crate::cache_model::CacheModel;
use crate::cache_model::{self, curve_hit_ratio, lru_hit_curve, page_cache_hit_ratio};
use crate::harness::memory::dataset::{DatasetSize, read_ahead_bytes};
use crate::harness::memory::modelled_cells::modelled_cells;
use crate::harness::memory::open_trace::OpenTrace;
use crate::harness::memory::resident::dataset_maps;
use crate::harness::sweep::plan::{MemoryLevels, Point};
use crate::matrix::{CacheKind, CacheModelInputs, Cell, CellKey, CellSource, MissCalibration};
use crate::spec::LoadedSpec;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What the memory axis is made of: its levels, the dataset, the cache model's inputs and what
/// was found out about them while the sweep ran.
pub(super) struct MemoryInputs {
    pub levels: MemoryLevels,
    pub dataset: Option<DatasetSize>,
    pub cache_inputs: Option<CacheModelInputs>,
    /// How the job maps its dataset's files, once looked at (while its first cell ran).
    pub dataset_maps: Option<crate::harness::memory::resident::DatasetMaps>,
    /// Block device of the dataset and the read cap (bytes/s) applied to every run.
    pub storage_throttle: Option<((u64, u64), u64)>,
    /// Why memory levels relative to the dataset leave out the job's resident size, or were
    /// sized again, if they were.
    pub memory_note: Option<String>,
    /// Where the storage cap is above what the disk delivers to random reads of a sample,
    /// what it delivered.
    pub storage_note: Option<String>,
    /// How levels relative to the dataset were sized from the job's footprint.
    pub sizing: Option<Sizing>,
    /// The memory axis has a dataset but no cache model (measuring storage failed): lower
    /// memory levels are not filled in rather than filled with the top level's rate.
    pub model_unavailable: bool,
    /// The dataset as the spec gives it: its path, its samples, what caches it.
    spec_dataset: SpecDataset,
}

/// How the memory levels relative to the dataset were sized (`super::footprint`).
pub(super) struct Sizing {
    /// The levels as the spec gives them (percentages of the dataset), to size again.
    pub unresolved: MemoryLevels,
    /// The footprint they were sized from, bytes.
    pub resident: u64,
    /// The least the next sizing may use (after an OOM kill), bytes.
    pub floor: u64,
    pub resizes: u32,
}

/// What the job spec says of its dataset.
struct SpecDataset {
    path: Option<PathBuf>,
    samples: Option<u64>,
    cache: CacheKind,
}

impl MemoryInputs {
    pub fn new(
        spec: &LoadedSpec,
        levels: MemoryLevels,
        dataset: Option<DatasetSize>,
        storage_throttle: Option<((u64, u64), u64)>,
    ) -> MemoryInputs {
        let declared = spec.spec.dataset.as_ref();
        MemoryInputs {
            spec_dataset: SpecDataset {
                path: spec.dataset_path.clone(),
                samples: declared.and_then(|d| d.samples),
                cache: declared.map_or(CacheKind::PageCache, |d| d.cache),
            },
            levels,
            dataset,
            cache_inputs: None,
            dataset_maps: None,
            storage_throttle,
            memory_note: None,
            storage_note: None,
            sizing: None,
            model_unavailable: false,
        }
    }

    /// The dataset's samples: the spec's `dataset.samples`, else one per dataset file.
    pub(super) fn dataset_samples(&self) -> Option<u64> {
        let ds = self.dataset.as_ref()?;
        Some(self.spec_dataset.samples.unwrap_or(ds.files))
    }

    /// Samples in one epoch: the spec's `dataset.samples`, else one per dataset file.
    pub(super) fn epoch_samples(&self) -> Option<f64> {
        self.dataset_samples().map(|n| n as f64)
    }

    /// The epoch to measure over when the page cache holds only part of the dataset. The cache
    /// then holds what the last epoch read last, so a freshly shuffled epoch hits early and
    /// misses late: a few steady windows would see only one phase, and only a whole epoch
    /// gives the rate a job really gets.
    pub(super) fn partly_cached_epoch(&self) -> Option<f64> {
        let ds = self.dataset.as_ref()?;
        let cached = ds.cached().bytes;
        ((cached as f64) < PARTLY_CACHED * ds.page_cache_bytes as f64)
            .then(|| self.epoch_samples())
            .flatten()
            .filter(|n| *n > 0.0)
    }

    /// Mapped files `run`'s job touched since its referenced bits were last cleared, the
    /// dataset left out (the cache model accounts for it).
    pub(super) fn mapped_hot_bytes(&self, run: &Run) -> Option<u64> {
        // Without a memory cgroup nothing says how much of them a limit would have to hold.
        run.memory_counters()?;
        // smaps names files by their canonical path.
        let dataset =
            (self.spec_dataset.path.as_deref()).and_then(|d| std::fs::canonicalize(d).ok());
        Some(crate::harness::memory::resident::referenced_file_bytes(
            &run.pids(),
            dataset.as_deref(),
        ))
    }
}

/// A top memory level whose cell ended with less than this share of the dataset in the page
/// cache did not hold the dataset.
const TOP_HOLDS: f64 = 0.95;
/// Memory levels a sweep needs for a calibration cell: the top one, the lowest one it
/// measures, and at least one between that the model predicts.
const CALIBRATED_LEVELS: usize = 3;
/// Looks at the job's memory maps for how much of the dataset it maps at once, and the time
/// between them.
const MAP_LOOKS: usize = 10;
const MAP_LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(200);
/// Readers, and how long they read, when the sweep checks a storage cap against random reads
/// of a sample: a loader's usual few workers.
const RANDOM_READERS: usize = 4;
const RANDOM_READ_PROBE: std::time::Duration = std::time::Duration::from_secs(1);
/// A cap is held where random reads got at least this part of it.
const CAP_HELD: f64 = 0.9;

/// What a page fault on an uncached page of a mapped dataset reads: the device's read-ahead
/// window around it, clipped to its file, so the window or the dataset's mean file size,
/// whichever is smaller. A file of one sample is read whole, as a read of it would be.
fn read_around_unit(window: u64, dataset: Option<&DatasetSize>) -> u64 {
    let mean_file = dataset
        .filter(|d| d.files > 0)
        .map_or(u64::MAX, |d| d.bytes / d.files);
    window.min(mean_file.max(1))
}

impl MemoryInputs {
    /// Measures storage and memory bandwidth for the cache model (once per sweep).
    pub(super) fn prepare_cache_model(&mut self, observer: &mut dyn SweepObserver) {
        if self.cache_inputs.is_some() {
            return;
        }
        let Some(ds) = &self.dataset else { return };
        observer.status("measuring storage and memory bandwidth for the cache model");
        let storage = match crate::harness::memory::bandwidth::measure_storage_read_bandwidth(
            &ds.paths,
            512 << 20,
        ) {
            Ok(b) => b,
            Err(e) => {
                observer.warn(&format!(
                    "storage bandwidth: {e}; memory levels below the top one will not be modelled (measure them with --memory measure)"
                ));
                self.model_unavailable = true;
                return;
            }
        };
        // Runs see the throttled bandwidth when the spec emulates slower storage.
        let storage = match self.storage_throttle {
            Some((_, cap)) => storage.min(cap as f64),
            None => storage,
        };
        self.cache_inputs = Some(CacheModelInputs::new(
            self.spec_dataset.cache,
            ds.page_cache_bytes,
            storage,
            crate::harness::memory::bandwidth::measure_memory_read_bandwidth_per_core(),
        ));
        if let Some((_, cap)) = self.storage_throttle {
            self.check_cap_against_random_reads(observer, cap as f64);
        }
    }

    /// Warns where the disk delivers less than the storage cap `cap` (bytes/s) to
    /// [`RANDOM_READERS`] readers each reading one sample at a time at random: a job that reads
    /// its samples so runs at the disk's speed, which the cap does not hold steady, and its
    /// cells below the top memory level at whatever the disk gave them.
    fn check_cap_against_random_reads(&mut self, observer: &mut dyn SweepObserver, cap: f64) {
        let (Some(ds), Some(samples)) = (&self.dataset, self.dataset_samples()) else {
            return;
        };
        let Some(sample_bytes) = ds.page_cache_bytes.checked_div(samples) else {
            return;
        };
        let reads = match crate::harness::memory::random_read::measure_random_read_bandwidth(
            &ds.paths,
            sample_bytes,
            RANDOM_READERS,
            RANDOM_READ_PROBE,
        ) {
            Ok(r) => r,
            Err(e) => {
                observer.status(&format!("random reads of a sample not measured: {e}"));
                return;
            }
        };
        let got = reads.bytes_per_s();
        if got >= CAP_HELD * cap {
            return;
        }
        let note = format!(
            "the disk delivered {:.1} MB/s to {RANDOM_READERS} readers each reading one {:.0} \
             KiB sample at a time at random, below the storage cap of {:.1} MB/s",
            got / 1e6,
            sample_bytes as f64 / 1024.0,
            cap / 1e6
        );
        observer.warn(&format!(
            "{note}: a job that reads its samples at random runs at the disk's speed, not \
             the cap's, and the disk's speed can change from one cell to the next; set \
             sweep.storage_read_mb_s below {:.1} for cells that hold",
            got / 1e6
        ));
        self.storage_note = Some(note);
    }

    /// Whether the cells below the top memory level come from the page-cache model.
    fn page_cache_model(&self) -> bool {
        (self.cache_inputs.as_ref()).is_some_and(|i| i.kind == CacheKind::PageCache)
    }

    /// Once per sweep, while `run`'s job reads its dataset, how it maps the dataset's files
    /// (`dataset_maps`). Where it maps them with no advice (neither `MADV_RANDOM` nor
    /// `MADV_SEQUENTIAL`), a miss reads the device's read-ahead window, not a sample, and the
    /// page-cache model is told so (`read_unit_bytes`, in the header). Where it maps them with
    /// `MADV_SEQUENTIAL`, the model is told how much it keeps mapped at once
    /// (`sequential_map_bytes`): the most of [`MAP_LOOKS`] looks, as a loader maps and unmaps
    /// its chunks as it goes and may be between epochs at any one look. Says whether the
    /// cache model's inputs changed.
    pub(super) fn check_dataset_maps(
        &mut self,
        observer: &mut dyn SweepObserver,
        run: &Run,
    ) -> bool {
        let page_cache = self.page_cache_model();
        let Some(dataset) = self.spec_dataset.path.as_deref() else {
            return false;
        };
        if self.dataset_maps.is_some() || !page_cache {
            return false;
        }
        let Ok(dataset) = std::fs::canonicalize(dataset) else {
            return false;
        };
        let mut maps = dataset_maps(&run.pids(), &dataset);
        if maps.mapped && !maps.read_around {
            for _ in 1..MAP_LOOKS {
                std::thread::sleep(MAP_LOOK_EVERY);
                let look = dataset_maps(&run.pids(), &dataset);
                maps.sequential_bytes = maps.sequential_bytes.max(look.sequential_bytes);
            }
        }
        self.dataset_maps = Some(maps);
        let mut changed = false;
        if maps.sequential_bytes > 0
            && let Some(inputs) = self.cache_inputs.as_mut()
        {
            inputs.sequential_map_bytes = Some(maps.sequential_bytes);
            changed = true;
            observer.status(&format!(
                "the job keeps {:.0} MB of its dataset mapped with MADV_SEQUENTIAL, which the \
                 kernel reads ahead of its use: the cache model counts what a smaller page \
                 cache evicts before use as read twice",
                maps.sequential_bytes as f64 / 1e6
            ));
        }
        let Some(window) = maps
            .read_around
            .then(|| read_ahead_bytes(&dataset))
            .flatten()
        else {
            return changed;
        };
        let unit = read_around_unit(window, self.dataset.as_ref());
        let Some(inputs) = self.cache_inputs.as_mut() else {
            return changed;
        };
        inputs.read_unit_bytes = Some(unit);
        if unit < window {
            observer.status(&format!(
                "the job maps the dataset's files into memory, {} KiB on average, smaller than \
                 the device's read-ahead window: a page fault on an uncached file reads that \
                 file, as a read does",
                unit / 1024
            ));
        } else {
            observer.warn(&format!(
                "the job maps the dataset's files into memory with no madvise: each page fault \
                 on an uncached page reads {} KiB around it (the device's read_ahead_kb), and \
                 the cache model counts misses so; under a memory cap such a job can thrash \
                 (give the map MADV_RANDOM, or lower read_ahead_kb)",
                unit / 1024
            ));
        }
        true
    }

    /// Starts tracing the order in which the sweep's first launch opens the dataset's files,
    /// for the page-cache model, where it has files to order (`first_launch`: the launch about
    /// to start is the sweep's first).
    pub(super) fn start_open_trace(
        &self,
        observer: &mut dyn SweepObserver,
        first_launch: bool,
    ) -> Option<OpenTrace> {
        let page_cache = self.page_cache_model();
        let ds = self.dataset.as_ref()?;
        if !page_cache || !first_launch || ds.paths.len() < 2 {
            return None;
        }
        match OpenTrace::start(&ds.paths) {
            Ok(trace) => Some(trace),
            Err(e) => {
                observer.status(&format!(
                    "no trace of the order in which the job reads its files ({e}): the cache \
                     model assumes a fresh shuffle every epoch"
                ));
                None
            }
        }
    }

    /// Replays an LRU page cache over the first launch's opens: where they re-read enough of
    /// the dataset, the model's hit ratio comes from them (`access_hit_curve`, in the header).
    /// Says whether the cache model's inputs changed.
    pub(super) fn record_access_order(
        &mut self,
        observer: &mut dyn SweepObserver,
        trace: OpenTrace,
    ) -> bool {
        let opens = trace.finish();
        if self.dataset_maps.is_some_and(|m| m.mapped) {
            observer.status(
                "the job maps its dataset's files into memory: when it opens them says nothing of \
                 what it reads, and the cache model assumes a fresh shuffle every epoch",
            );
            return false;
        }
        let Some(inputs) = self.cache_inputs.as_mut() else {
            return false;
        };
        if opens.overflowed {
            observer.status(
                "the trace of the job's file opens lost some (the kernel's queue overflowed): \
                 the cache model assumes a fresh shuffle every epoch",
            );
            return false;
        }
        let Some(curve) = lru_hit_curve(&opens.files, &opens.sizes) else {
            observer.status(&format!(
                "the first launch opened the dataset's {} files {} times, re-reading less than \
                 {:.0}% of its bytes: the cache model assumes a fresh shuffle every epoch",
                opens.sizes.len(),
                opens.files.len(),
                100.0 * cache_model::MIN_REREAD_SHARE
            ));
            return false;
        };
        let (traced, shuffled) = (curve_hit_ratio(&curve, 0.5), page_cache_hit_ratio(0.5));
        let what = format!(
            "in the order the job read its files ({} opens of {}), a page cache holding half \
             the dataset hits {:.0}% of re-reads, {:.0}% under a fresh shuffle every epoch; the \
             cache model uses that order",
            opens.files.len(),
            opens.sizes.len(),
            100.0 * traced,
            100.0 * shuffled
        );
        if traced < shuffled / 2.0 {
            observer.warn(&format!(
                "{what}: memory that holds less than the whole dataset buys little"
            ));
        } else {
            observer.status(&what);
        }
        inputs.access_hit_curve = Some(curve);
        true
    }

    /// Where the top memory level's cell ended without the dataset in the page cache because
    /// the job's other memory grew past what the levels were sized for, says so (a warning and
    /// the cell's note): every cell modelled or validated below takes the top cell as the rate
    /// with the whole dataset cached.
    pub(super) fn note_top_level_shortfall(
        &self,
        observer: &mut dyn SweepObserver,
        cell: &mut Cell,
    ) {
        let top = self.levels.bytes().and_then(|b| b.iter().max().copied());
        let (Some(ds), Some(t)) = (self.dataset.as_ref(), cell.telemetry.as_ref()) else {
            return;
        };
        if self.cache_inputs.is_none()
            || cell.source != CellSource::Measured
            || top != Some(cell.memory_bytes)
        {
            return;
        }
        let Some(why) = top_level_shortfall(
            cell.memory_bytes,
            ds.page_cache_bytes,
            t.dataset_cached_bytes,
            t.resident_besides_dataset(),
            self.sizing.as_ref().map(|s| s.resident),
        ) else {
            return;
        };
        observer.warn(&format!(
            "{why}; the cells below take it as the rate with the whole dataset cached and come \
             out low (a longer warmup_s sizes the levels from the grown job; sweep.memory_gib \
             places them by hand)"
        ));
        cell.note = Some(match cell.note.take() {
            Some(note) => format!("{note}; {why}"),
            None => why,
        });
    }

    /// The calibration cell a sweep that models its memory axis measures besides the top
    /// levels: the lowest memory level at the highest CPU level (where the job is least held
    /// back by its CPUs), once per sweep, where there is a cache model and at least
    /// [`CALIBRATED_LEVELS`] memory levels (with two, the one below the top is modelled
    /// without it). Walked last, a running job reaches it by lowering its limit.
    pub(super) fn calibration_point(
        &self,
        cpus: &[f64],
        params: &BTreeMap<String, String>,
    ) -> Option<Point> {
        let inputs = self.cache_inputs.as_ref()?;
        let n_mem = self.levels.len();
        if n_mem < CALIBRATED_LEVELS
            || inputs.miss_calibration.is_some()
            || inputs.dataset_bytes == 0
        {
            return None;
        }
        let cpu = cpus.iter().copied().reduce(f64::max)?;
        Some(Point {
            cpu,
            mem: n_mem - 1,
            params: params.clone(),
        })
    }

    /// Records the calibration cell in the header's cache model (`miss_calibration`) once it
    /// and the top level at its CPU level are measured, and says what the model makes of it:
    /// a job that ran there below what bandwidth allows waits on its reads, and each read
    /// costs the modelled cells the time it cost there. Says whether the cache model's inputs
    /// changed.
    pub(super) fn calibrate_misses(
        &mut self,
        observer: &mut dyn SweepObserver,
        out: &Output,
        params: &BTreeMap<String, String>,
        cpus: &[f64],
    ) -> bool {
        let Some(levels) = self.levels.bytes().map(|b| b.to_vec()) else {
            return false;
        };
        if levels.len() < CALIBRATED_LEVELS {
            return false;
        }
        let Some(cpu) = cpus.iter().copied().reduce(f64::max) else {
            return false;
        };
        let (Some(&top_level), Some(&lowest)) = (levels.first(), levels.last()) else {
            return false;
        };
        let cell = |mem: u64| {
            let key = CellKey::new(cpu, mem, params);
            out.cells.iter().find(|c| c.key() == key)
        };
        let Some(calibration) = (cell(top_level).zip(cell(lowest)))
            .and_then(|(top, low)| MissCalibration::from_cells(top, low))
        else {
            return false;
        };
        let samples = out.recorded_dataset_samples();
        let Some(inputs) = self.cache_inputs.as_mut() else {
            return false;
        };
        if lowest == top_level || inputs.miss_calibration.is_some() {
            return false;
        }
        inputs.miss_calibration = Some(calibration);
        let inputs = inputs.clone();
        let at = format!(
            "the calibration cell (cpu {}, the lowest memory level) ran at {:.0} samples/s \
             against {:.0} at the top level",
            crate::harness::sweep::plan::cpu_text(cpu),
            calibration.samples_per_s,
            calibration.cached_samples_per_s,
        );
        let model = CacheModel::new(inputs.clone());
        let cpu_cost = match model.cpu_per_read_s(samples) {
            Some(per_read) => format!(
                "; each sample's worth read from storage cost it {:.0} µs of CPU time, which \
                 the cache model adds where the job uses all its CPUs",
                per_read * 1e6
            ),
            None => String::new(),
        };
        observer.status(&match model.wait_per_read_s(samples) {
            Some(wait) => format!(
                "{at}, below what storage bandwidth allows: the job waits on its reads, and the \
                 cache model adds {:.0} µs to a sample's time for each sample read from \
                 storage{cpu_cost}",
                wait * 1e6
            ),
            None => format!(
                "{at} and read {:.1} MB/s from storage: bandwidth explains it{cpu_cost}",
                calibration.storage_read_bytes_per_s.unwrap_or(0.0) / 1e6
            ),
        });
        true
    }

    /// The cells of the memory levels below the top one, modelled from the measured CPU axis,
    /// for those not recorded in `out` yet.
    pub(super) fn modelled(
        &self,
        out: &Output,
        params: &BTreeMap<String, String>,
        cpus: &[f64],
    ) -> Vec<Cell> {
        let Some(levels) = self.levels.bytes() else {
            return Vec::new();
        };
        if self.model_unavailable && self.cache_inputs.is_none() {
            // Without the cache model the top level's rate says nothing about lower levels;
            // leave them out (a --resume that can measure storage fills them).
            return Vec::new();
        }
        let samples = out.recorded_dataset_samples();
        let mut cells = Vec::new();
        for &cpu in cpus {
            let top = CellKey::new(cpu, levels[0], params);
            let Some(measured) = out.cells.iter().find(|c| c.key() == top) else {
                continue;
            };
            let lower: Vec<u64> = levels[1..]
                .iter()
                .copied()
                .filter(|&l| {
                    let key = CellKey::new(cpu, l, params);
                    !out.done.contains(&key) && !out.cells.iter().any(|c| c.key() == key)
                })
                .collect();
            cells.extend(modelled_cells(
                measured,
                &lower,
                self.cache_inputs.as_ref(),
                samples,
            ));
        }
        cells
    }
}

/// Why a top memory level of `limit` bytes did not hold a dataset of `dataset` bytes, of which
/// its cell ended with `cached` in the page cache while the job held `resident` besides it
/// (`sized_for`: what the levels were sized from after the warm-up); `None` where it held
/// the dataset, or had room for it and the job read less.
fn top_level_shortfall(
    limit: u64,
    dataset: u64,
    cached: Option<u64>,
    resident: u64,
    sized_for: Option<u64>,
) -> Option<String> {
    let cached = cached?;
    let short = (cached as f64) < TOP_HOLDS * dataset as f64 && limit < resident + dataset;
    short.then(|| {
        let mb = |b: u64| format!("{:.0} MB", b as f64 / 1e6);
        format!(
            "the top memory level ({}) ended its cell with {:.0}% of the dataset in the page \
             cache: the job's other memory reached {}{}",
            mb(limit),
            100.0 * cached as f64 / dataset.max(1) as f64,
            mb(resident),
            sized_for.map_or(String::new(), |r| format!(
                ", the levels were sized for {} after the warm-up",
                mb(r)
            ))
        )
    })
}

#[cfg(test)]
mod tests {
    use super::{DatasetSize, read_around_unit, top_level_shortfall};

    fn dataset(bytes: u64, files: u64) -> DatasetSize {
        DatasetSize {
            bytes,
            page_cache_bytes: bytes,
            files,
            paths: Vec::new(),
        }
    }

    /// A fault reads the read-ahead window around it, clipped to its file: a shard larger than
    /// the window costs the window, a file of one 39 KB JPEG costs the file, as a read would.
    #[test]
    fn a_mapped_file_smaller_than_the_window_is_read_whole() {
        let window = 8 << 20;
        for (bytes, files, unit) in [
            (472 << 20, 1, window),
            (468 << 20, 4, window),
            (8 << 20, 1, window),
            (234_000_000, 6000, 39_000),
        ] {
            assert_eq!(read_around_unit(window, Some(&dataset(bytes, files))), unit);
        }
        assert_eq!(read_around_unit(window, None), window);
    }

    const MB: u64 = 1_000_000;

    #[test]
    fn a_top_level_the_job_outgrew_is_named_with_its_figures() {
        // The Parquet streaming loader at 2 CPUs: 203 MB of data, levels sized for 1,221 MB,
        // the job grown to 1,395 MB, 180 MB of the dataset cached.
        let why = top_level_shortfall(
            1555 * MB,
            203 * MB,
            Some(180 * MB),
            1395 * MB,
            Some(1221 * MB),
        )
        .expect("short");
        assert_eq!(
            why,
            "the top memory level (1555 MB) ended its cell with 89% of the dataset in the page \
             cache: the job's other memory reached 1395 MB, the levels were sized for 1221 MB \
             after the warm-up"
        );
        // All of it cached; or room for all of it and the job read less; or no figure.
        assert_eq!(
            top_level_shortfall(1555 * MB, 203 * MB, Some(203 * MB), 1395 * MB, None),
            None
        );
        assert_eq!(
            top_level_shortfall(2000 * MB, 203 * MB, Some(100 * MB), 1395 * MB, None),
            None
        );
        assert_eq!(
            top_level_shortfall(1555 * MB, 203 * MB, None, 1395 * MB, None),
            None
        );
    }
}
