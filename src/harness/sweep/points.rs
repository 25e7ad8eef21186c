//! Walking the points: one launch for as long as points can share it (live re-capping), the
//! live check that re-capping measures what a fresh start would, and the uncapped spec check.

use super::measure::Outcome;
use super::{POLL, Sweep, SweepError, SweepOutcome, total_memory_bytes};
use crate::harness::plan::{
    MemoryLevels, Point, PointSource, joins_launch, label, param_combinations,
};
use crate::matrix::{Cell, CellSource, Matrix};
use std::path::PathBuf;
use std::time::{Duration, Instant};

impl Sweep<'_> {
    /// Measures the points `source` gives, one launch for as long as they can share it (live
    /// re-capping); when the job dies, the next point is relaunched.
    pub(super) fn run_points(&mut self, source: &mut dyn PointSource) -> Result<(), SweepError> {
        let depends_on_cpu = self.opts.spec.depends_on_cpu_level();
        // A point launched again because its launch outgrew the memory levels it sized.
        let mut resized: Option<Point> = None;
        loop {
            let first = match resized.take() {
                Some(p) => p,
                None => match source.peek(&self.recorded()) {
                    Some(p) => {
                        source.take();
                        p
                    }
                    None => break,
                },
            };
            let started = Instant::now();
            self.observer
                .status(&format!("{}: starting job", label(&first)));
            let limit = self.memory.bytes().map(|b| b[first.mem]);
            let trace = self.start_open_trace();
            let mut run = self.launch(&first, limit)?;
            let warm = self.warm_up(&mut run, &first, started)?;
            if let Err(mut cell) = warm {
                if self.memory.bytes().is_none() {
                    // Levels relative to the dataset need the job's resident size, which a job
                    // that died cannot tell; fix them now without it so the file stays
                    // loadable and resumable and the other points have levels to run at.
                    self.memory.resolve(0);
                    self.memory_note = Some(
                        "the first launch ended before its warm-up, so memory levels leave out the job's resident memory".into(),
                    );
                    cell.memory_bytes = self.memory.bytes().expect("resolved")[first.mem];
                }
                self.record(cell)?;
                self.record_ruled_out_by_oom(source, &first);
                continue;
            }
            if self.memory.bytes().is_none() {
                self.size_memory_levels(&run);
                self.check_step_caps(&first)?;
                self.apply_sized_limit(&run, &first)?;
                self.ensure_writer()?;
                std::thread::sleep(Duration::from_secs_f64(
                    self.opts.spec.spec.measure.settle_s,
                ));
            }
            let mut point = first.clone();
            let mut point_started = started;
            let mut check = None;
            loop {
                match self.measure(&mut run, &point, point_started)? {
                    Outcome::Cell(cell) if self.live_check_due(&first, &point) => {
                        // Held back until the same point is measured on a fresh launch,
                        // which must not share the machine with this one.
                        check = Some((point.clone(), cell));
                        break;
                    }
                    Outcome::Cell(cell) => self.record(cell)?,
                    Outcome::Died(cell) if self.outgrew_sizing(&cell, &point, run.held_peak) => {
                        resized = Some(point.clone());
                        break;
                    }
                    Outcome::Died(cell) => {
                        self.record(cell)?;
                        self.record_ruled_out_by_oom(source, &point);
                        break;
                    }
                }
                // Next point on the same launch, if it can share it.
                let Some(next) = source.peek(&self.recorded()) else {
                    break;
                };
                if !joins_launch(&point, &next, self.mode, depends_on_cpu) {
                    break;
                }
                source.take();
                point_started = Instant::now();
                self.observer
                    .status(&format!("{}: re-capping the running job", label(&next)));
                if let Some(cg) = &run.cgroup {
                    cg.set_cpu(next.cpu)?;
                    let bytes = self.memory.bytes().expect("resolved")[next.mem];
                    // Only EBUSY means the kernel could not reclaim; any other failure is
                    // the sweep's, not the cell's.
                    if let Err(e) = cg.set_memory_limit(Some(bytes)) {
                        if !e.is_busy() {
                            return Err(e.into());
                        }
                        let cell = self.empty_cell(
                            &next,
                            CellSource::Infeasible,
                            format!("the kernel could not reclaim memory down to the limit: {e}"),
                            0.0,
                        );
                        self.record(cell)?;
                        self.record_ruled_out_by_oom(source, &next);
                        break;
                    }
                }
                // Let the new caps take effect before measuring.
                let settle = Instant::now();
                while settle.elapsed().as_secs_f64() < self.opts.spec.spec.measure.settle_s {
                    if self.cancelled() {
                        return Err(self.interrupted());
                    }
                    run.poll();
                    std::thread::sleep(POLL);
                }
                point = next;
            }
            run.job.stop();
            drop(run);
            if let Some(trace) = trace {
                self.record_access_order(trace)?;
            }
            if let Some((point, live)) = check {
                self.conclude_live_check(&point, live)?;
            }
        }
        Ok(())
    }

    /// Measures `p` on a fresh launch.
    pub(super) fn fresh_cell(&mut self, p: &Point) -> Result<Cell, SweepError> {
        let started = Instant::now();
        let limit = self.memory.bytes().map(|b| b[p.mem]);
        let mut run = self.launch(p, limit)?;
        let cell = match self.warm_up(&mut run, p, started)? {
            Err(cell) => cell,
            Ok(()) => match self.measure(&mut run, p, started)? {
                Outcome::Cell(c) | Outcome::Died(c) => c,
            },
        };
        run.job.stop();
        Ok(cell)
    }

    /// After an OOM at `p`, smaller memory at the same CPU level and parameters cannot fit either.
    pub(super) fn record_ruled_out_by_oom(&mut self, source: &mut dyn PointSource, p: &Point) {
        let oom = self
            .cells
            .last()
            .is_some_and(|c| c.source == CellSource::Infeasible);
        if !oom {
            return;
        }
        for q in source.remove_ruled_out_by_oom(p) {
            let _ = self.record(self.ruled_out_cell(&q));
        }
    }

    pub(super) fn ruled_out_cell(&self, p: &Point) -> Cell {
        self.empty_cell(
            p,
            CellSource::Infeasible,
            "not run: a larger memory limit at this CPU level was already OOM-killed".into(),
            0.0,
        )
    }

    /// `--no-caps`: runs the first point once, without cgroups, to check the spec end to end.
    pub(super) fn check_uncapped(mut self, started: Instant) -> Result<SweepOutcome, SweepError> {
        let params = param_combinations(&self.opts.spec.spec.sweep.params)
            .into_iter()
            .next()
            .unwrap_or_default();
        let cpus = crate::machine::available_cpus() as f64;
        let p = Point {
            cpu: cpus,
            mem: 0,
            params,
        };
        self.memory = MemoryLevels::Bytes(vec![total_memory_bytes()]);
        self.axes_cpu = vec![cpus];
        self.observer.planned(1, 0);
        let mut run = self.launch(&p, None)?;
        let cell = match self.warm_up(&mut run, &p, started)? {
            Err(cell) => cell,
            Ok(()) => match self.measure(&mut run, &p, started)? {
                Outcome::Cell(c) | Outcome::Died(c) => c,
            },
        };
        run.job.stop();
        self.observer.cell_done(&cell);
        self.cells.push(cell);
        Ok(SweepOutcome {
            matrix: Matrix {
                header: self.make_header(),
                cells: self.cells,
            },
            path: PathBuf::new(),
            launches: self.launches,
            wall_s: started.elapsed().as_secs_f64(),
        })
    }
}
