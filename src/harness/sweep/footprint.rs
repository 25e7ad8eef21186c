//! Memory levels relative to the dataset are sized from the job's own footprint: what the first
//! launch holds besides the dataset once it is warm. A job can outgrow that footprint after
//! warm-up (loader workers with more batches in flight, pinned-memory caches that only grow, a
//! process per worker that touches more as the epoch goes on). When the launch that sized the
//! levels is then OOM-killed before any cell is recorded, the kill says the estimate was short,
//! not that the allocation cannot run the job: the levels are sized again, larger, and the point
//! is launched again.

use super::memory_inputs::{MemoryInputs, Sizing};
use super::run::Run;
use super::{SweepError, SweepObserver};
use crate::harness::sweep::plan::{Point, cpu_text};
use crate::matrix::{Cell, CellSource};

/// How many times the levels are sized again before an OOM kill is taken at its word.
const MAX_RESIZES: u32 = 2;
/// Each new estimate is at least this many times the last.
const GROWTH: f64 = 1.5;
use crate::units::GIB;

impl MemoryInputs {
    /// Fixes levels relative to the dataset from `run`, the first launch, once it is warm: what
    /// the job holds besides the dataset, the most anonymous and shared memory it held while
    /// warming up (what the kernel cannot reclaim without swap; a loader that starts its
    /// workers afresh every epoch holds more at each epoch's start than a moment's reading
    /// shows) and the mapped files it touched while warming up. Not its
    /// whole page cache: the libraries a job is the first to load are charged to it as page
    /// cache, and most of them (start-up code) are cold and the first thing the kernel evicts
    /// under a cap. After an OOM kill, never less than the grown estimate.
    pub(super) fn size_memory_levels(&mut self, run: &Run) {
        let footprint = match (&run.cgroup, self.mapped_hot_bytes(run)) {
            (Some(cg), Some(hot)) => {
                let c = cg.counters();
                c.held_bytes().max(run.held_peak) + hot
            }
            _ => run.resident_bytes(),
        };
        let (floor, resizes) = self
            .sizing
            .as_ref()
            .map_or((0, 0), |s| (s.floor, s.resizes));
        let resident = footprint.max(floor);
        let unresolved = self.levels.clone();
        self.levels.resolve(resident);
        self.sizing = Some(Sizing {
            unresolved,
            resident,
            floor,
            resizes,
        });
    }

    /// Whether `died`, the first launch's cell, is an OOM kill of a job that outgrew the
    /// footprint its levels were sized from; if so the levels are unfixed, to be sized again
    /// (at least `GROWTH` times larger, and no less than the anonymous and shared memory the
    /// launch was seen holding) by the point's next launch. Only before any cell is recorded
    /// (`recorded_any`): the caller then starts the file afresh, with the levels sized again.
    pub(super) fn outgrew_sizing(
        &mut self,
        observer: &mut dyn SweepObserver,
        died: &Cell,
        p: &Point,
        held_peak: u64,
        recorded_any: bool,
    ) -> bool {
        let Some(sizing) = self.sizing.as_mut() else {
            return false;
        };
        if died.source != CellSource::Infeasible || recorded_any || sizing.resizes >= MAX_RESIZES {
            return false;
        }
        let killed_at = self.levels.bytes().map_or(0, |b| b[p.mem]);
        let estimate = ((sizing.resident as f64 * GROWTH) as u64).max(held_peak);
        sizing.floor = estimate;
        sizing.resizes += 1;
        let note = format!(
            "the first launch ({} CPUs) outgrew the {:.2} GiB its memory levels were sized from \
             (its footprint after warm-up) and was OOM-killed under {:.2} GiB: levels sized \
             from {:.2} GiB instead ({} time{})",
            cpu_text(p.cpu),
            sizing.resident as f64 / GIB,
            killed_at as f64 / GIB,
            estimate as f64 / GIB,
            sizing.resizes,
            if sizing.resizes == 1 { "" } else { "s" }
        );
        self.levels = sizing.unresolved.clone();
        observer.warn(&note);
        self.memory_note = Some(note);
        true
    }

    /// Sets the limit of the level `p` measures on `run`'s cgroup, once levels are sized.
    pub(super) fn apply_sized_limit(&self, run: &Run, p: &Point) -> Result<(), SweepError> {
        let bytes = self.levels.bytes().expect("sized")[p.mem];
        if let Some(cg) = &run.cgroup {
            cg.set_memory_limit(Some(bytes))?;
        }
        Ok(())
    }
}
