//! The memory axis from the cache model: the bandwidths it needs, measured once per sweep, and
//! the modelled cells below the measured top memory level.

use super::run::Run;
use super::{Sweep, SweepError};
use crate::cache_model;
use crate::harness::dataset::read_ahead_bytes;
use crate::harness::model_fill::modelled_cells;
use crate::harness::resident::maps_with_read_around;
use crate::matrix::{CacheKind, CacheModelInputs, CellKey};
use std::collections::BTreeMap;

impl Sweep<'_> {
    /// Measures storage and memory bandwidth for the cache model (once per sweep).
    pub(super) fn prepare_cache_model(&mut self) {
        if self.cache_inputs.is_some() {
            return;
        }
        let Some(ds) = &self.dataset else { return };
        self.observer
            .status("measuring storage and memory bandwidth for the cache model");
        let storage = match cache_model::measure_storage_read_bandwidth(&ds.paths, 512 << 20) {
            Ok(b) => b,
            Err(e) => {
                self.observer.warn(&format!(
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
        let kind = self
            .opts
            .spec
            .spec
            .dataset
            .as_ref()
            .map_or(CacheKind::PageCache, |d| d.cache);
        self.cache_inputs = Some(CacheModelInputs {
            kind,
            dataset_bytes: ds.page_cache_bytes,
            storage_bytes_per_s: storage,
            memory_bytes_per_s_per_core: cache_model::measure_memory_read_bandwidth_per_core(),
            read_unit_bytes: None,
        });
    }

    /// Once per sweep, while `run`'s job reads its dataset: where it maps the dataset's files
    /// without `MADV_RANDOM`, a miss reads the device's read-ahead window, not a sample, and the
    /// page-cache model is told so (`read_unit_bytes`, in the header).
    pub(super) fn check_read_around(&mut self, run: &Run) -> Result<(), SweepError> {
        let page_cache =
            (self.cache_inputs.as_ref()).is_some_and(|i| i.kind == CacheKind::PageCache);
        let Some(dataset) = self.opts.spec.dataset_path.as_deref() else {
            return Ok(());
        };
        if self.read_around_checked || !page_cache {
            return Ok(());
        }
        self.read_around_checked = true;
        let Some(unit) = std::fs::canonicalize(dataset)
            .ok()
            .filter(|d| maps_with_read_around(&run.pids(), d))
            .and_then(|d| read_ahead_bytes(&d))
        else {
            return Ok(());
        };
        let Some(inputs) = self.cache_inputs.as_mut() else {
            return Ok(());
        };
        inputs.read_unit_bytes = Some(unit);
        let inputs = inputs.clone();
        self.observer.warn(&format!(
            "the job maps the dataset's files into memory without MADV_RANDOM: each page fault \
             on an uncached page reads {} KiB around it (the device's read_ahead_kb), and \
             the cache model counts misses so; under a memory cap such a job can thrash \
             (give the map MADV_RANDOM, or lower read_ahead_kb)",
            unit / 1024
        ));
        self.update_header(|h| h.cache_model = Some(inputs))
    }

    /// Fills the memory levels below the top one from the measured CPU axis.
    pub(super) fn fill_modelled(
        &mut self,
        params: &BTreeMap<String, String>,
        cpus: &[f64],
    ) -> Result<(), SweepError> {
        let Some(levels) = self.memory.bytes().map(|b| b.to_vec()) else {
            return Ok(());
        };
        if self.model_unavailable && self.cache_inputs.is_none() {
            // Without the cache model the top level's rate says nothing about lower levels;
            // leave them out (a --resume that can measure storage fills them).
            return Ok(());
        }
        let samples = self
            .header
            .as_ref()
            .and_then(|h| h.job.dataset_samples)
            .unwrap_or(0);
        for &cpu in cpus {
            let top = CellKey::new(cpu, levels[0], params);
            let Some(measured) = self.cells.iter().find(|c| c.key() == top).cloned() else {
                continue;
            };
            let lower: Vec<u64> = levels[1..]
                .iter()
                .copied()
                .filter(|&l| !self.done.contains(&CellKey::new(cpu, l, params)))
                .collect();
            for cell in modelled_cells(&measured, &lower, self.cache_inputs.as_ref(), samples) {
                self.record(cell)?;
            }
        }
        Ok(())
    }
}
