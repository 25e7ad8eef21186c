//! Walking the points: one launch for as long as points can share it (live re-capping), a live
//! launch's rounds each a block that ends with the reference ([`super::blocks`]), launching the
//! job for a point (its cgroup and caps, its command and environment), and the uncapped spec
//! check.

use super::visit::{Outcome, WarmUp};
use super::{POLL, Run, Sweep, SweepError, SweepOutcome, total_memory_bytes};
use crate::harness::measure::job_output::ProgressTail;
use crate::harness::process::job_launch::{cpu_vars, job_launch};
use crate::harness::sweep::plan::{
    MemoryLevels, Point, PointSource, Recorded, joins_launch, label, param_combinations,
};
use crate::matrix::{Cell, CellSource, Matrix};
use crate::spec::Vars;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// What a launch's walk does after a point.
enum Step {
    /// Walk on to the next point.
    Go,
    /// The launch is over.
    Stop,
    /// The launch outgrew the memory levels it sized: launch this point again.
    Resized(Point),
}

impl Sweep<'_> {
    pub(super) fn recorded(&self) -> Recorded<'_> {
        Recorded {
            cells: &self.out.cells,
            memory: &self.mem.levels,
            done: &self.out.done,
        }
    }

    /// The running launch's number in the sweep, counted from 1 (0 before the first), the
    /// launches of a resumed sweep's file included: what its visits are recorded with.
    pub(super) fn launch_id(&self) -> u32 {
        self.launches.resumed + self.launches.started
    }

    pub(super) fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    pub(super) fn interrupted(&self) -> SweepError {
        SweepError::Interrupted {
            cells: self.out.cells.len(),
            path: self.opts.output.clone(),
        }
    }

    /// Starts a block for `params` (closing one still open).
    fn open_block(&mut self, params: &BTreeMap<String, String>) -> Result<(), SweepError> {
        self.close_block()?;
        let reference = self.axes.reference_point(params);
        self.blocks.open(params, reference.cpu);
        Ok(())
    }

    /// Ends the open block and records it in the header ([`super::blocks::Blocks::close`]).
    fn close_block(&mut self) -> Result<(), SweepError> {
        let top = self.mem.levels.bytes().map_or(0, |b| b[0]);
        if !self.blocks.close(self.observer, top) {
            return Ok(());
        }
        let blocks = self.blocks.closed.clone();
        self.update_header(|h| h.blocks = blocks)
    }

    /// Notes `cell`, just measured at `p`, where `p` is the reference: as the open block's
    /// opening, or, where it has one, its closing. Where `chain` (the launch walks on at the top
    /// memory level, another round), that block ends and the next opens with the same
    /// measurement.
    fn note_reference(&mut self, p: &Point, cell: &Cell, chain: bool) -> Result<(), SweepError> {
        if *p != self.axes.reference_point(&p.params) {
            return Ok(());
        }
        // A launch that started elsewhere (the live check's) measured points before its first
        // reference: that reference closes their block.
        let launch = self.launch_id();
        let started_elsewhere =
            (self.out.cells.iter()).any(|c| c.visits.iter().any(|v| v.launch == launch));
        if self.blocks.note_reference(cell, chain, started_elsewhere) {
            self.open_block(&p.params)?;
            self.blocks.open_with(cell);
        }
        Ok(())
    }

    /// Re-caps the running job to the reference and measures it to close the block. `false`
    /// when the job died meanwhile (the launch is over; nothing is recorded for the reference).
    fn measure_closing(&mut self, run: &mut Run, from: &Point) -> Result<bool, SweepError> {
        let reference = self.axes.reference_point(&from.params);
        self.observer.status(&format!(
            "{}: re-capping to the reference again to close block {}",
            label(&reference),
            self.blocks.open_index()
        ));
        match self.measure_reference(run, &reference)? {
            Outcome::Cell(cell) => {
                self.blocks.note_closing(&cell);
                Ok(true)
            }
            Outcome::Died(_) => Ok(false),
        }
    }

    /// Re-caps the running job's CPU to `reference` (the launch is at the reference's memory
    /// level already), lets the cap settle, and measures it.
    pub(super) fn measure_reference(
        &mut self,
        run: &mut Run,
        reference: &Point,
    ) -> Result<Outcome, SweepError> {
        if let Some(cg) = &run.cgroup {
            cg.set_cpu(reference.cpu)?;
        }
        self.settle(run)?;
        self.measure(run, reference, Instant::now())
    }

    /// Measures the points `source` gives, one launch for as long as they can share it (live
    /// re-capping); when the job dies, the next point is relaunched. A pass of fresh launches is
    /// one block, a live launch's round another.
    pub(super) fn run_points(&mut self, source: &mut dyn PointSource) -> Result<(), SweepError> {
        // A point launched again because its launch outgrew the memory levels it sized.
        let mut resized: Option<Point> = None;
        loop {
            let (first, may_open) = match resized.take() {
                Some(p) => (p, false),
                None => match source.peek(&self.recorded()) {
                    Some(p) => {
                        source.take();
                        (p, true)
                    }
                    None => break,
                },
            };
            resized = self.run_launch(source, first, may_open)?;
        }
        self.close_block()
    }

    /// One launch from `first`. A live launch is a block of its own (more, where it walks in
    /// rounds); one whose walk would start away from the reference at the top memory level
    /// starts at the reference (where `may_open`), so its block opens with it, unless it is the
    /// live check's fresh launch. Returns the point to launch again where the launch outgrew
    /// its memory sizing.
    fn run_launch(
        &mut self,
        source: &mut dyn PointSource,
        first: Point,
        may_open: bool,
    ) -> Result<Option<Point>, SweepError> {
        let started = Instant::now();
        let per_launch = self.axes.blocks_per_launch();
        if per_launch || self.blocks.open.is_none() {
            self.open_block(&first.params)?;
        }
        let reference = self.axes.reference_point(&first.params);
        let launch_at = match may_open && per_launch && self.opens_at_reference(&first) {
            true => reference,
            false => first.clone(),
        };
        self.observer
            .status(&format!("{}: starting job", label(&launch_at)));
        let limit = self.mem.levels.bytes().map(|b| b[launch_at.mem]);
        let trace = (self.mem).start_open_trace(self.observer, self.launches.started == 0);
        let mut run = self.launch(&launch_at, limit)?;
        let resized = match self.start(&mut run, &first, &launch_at, started)? {
            Some(died) => {
                self.record(died)?;
                self.record_ruled_out_by_oom(source, &first);
                None
            }
            None => self.walk_from(&mut run, source, first, launch_at, started)?,
        };
        run.job.stop();
        drop(run);
        if let Some(trace) = trace
            && self.mem.record_access_order(self.observer, trace)
        {
            self.cache_model_changed()?;
        }
        if per_launch {
            self.close_block()?;
        }
        Ok(resized)
    }

    /// Whether a live launch that would start at `first` starts at the reference instead: `first`
    /// is at the top memory level, and the reference was measured (or is still to be).
    fn opens_at_reference(&self, first: &Point) -> bool {
        let reference = self.axes.reference_point(&first.params);
        let reference_cell = self.mem.levels.bytes().and_then(|b| {
            let key = crate::matrix::CellKey::new(reference.cpu, b[0], &reference.params);
            self.out.cells.iter().find(|c| c.key() == key)
        });
        first.mem == reference.mem
            && *first != reference
            && !self.live_check.is_check_launch(first, self.launch_id() + 1)
            && reference_cell.is_none_or(|c| c.source == CellSource::Measured)
    }

    /// Warms the launch up and, on its first launch, sizes the memory levels. Where the job
    /// died first, its cell, for `first`, the point the launch was for.
    fn start(
        &mut self,
        run: &mut Run,
        first: &Point,
        launch_at: &Point,
        started: Instant,
    ) -> Result<Option<Cell>, SweepError> {
        if let WarmUp::Failed(mut cell) = self.warm_up(run, launch_at, started)? {
            cell.cpu = first.cpu;
            if self.mem.levels.bytes().is_none() {
                // Levels relative to the dataset need the job's resident size, which a job
                // that died cannot tell; fix them now without it so the file stays
                // loadable and resumable and the other points have levels to run at.
                self.mem.levels.resolve(0);
                self.mem.memory_note = Some(
                    "the first launch ended before its warm-up, so memory levels leave out the job's resident memory".into(),
                );
            }
            cell.memory_bytes = self.mem.levels.bytes().expect("resolved")[first.mem];
            return Ok(Some(*cell));
        }
        if self.mem.levels.bytes().is_none() {
            self.mem.size_memory_levels(run);
            self.check_step_caps(launch_at)?;
            self.mem.apply_sized_limit(run, launch_at)?;
            self.ensure_writer()?;
            std::thread::sleep(Duration::from_secs_f64(
                self.opts.spec.spec.measure.settle_s,
            ));
        }
        Ok(None)
    }

    /// Measures the launch's first point (after the reference, where it started there) and walks
    /// on.
    fn walk_from(
        &mut self,
        run: &mut Run,
        source: &mut dyn PointSource,
        first: Point,
        launch_at: Point,
        started: Instant,
    ) -> Result<Option<Point>, SweepError> {
        let mut point_started = started;
        if launch_at != first {
            // The reference opens the block; a cell already recorded keeps its launches (this
            // launch is one of `first`'s, not another of the reference's).
            match self.measure(run, &launch_at, started)? {
                Outcome::Cell(cell) => {
                    self.note_reference(&launch_at, &cell, false)?;
                    if !self.recorded().is_done(&launch_at) {
                        self.record(cell)?;
                    }
                }
                // The job died at the reference: `first` is launched again, where it is.
                Outcome::Died(_) => return Ok(Some(first)),
            }
            point_started = Instant::now();
            self.observer
                .status(&format!("{}: re-capping the running job", label(&first)));
            if !self.recap(run, &first, source)? {
                return Ok(None);
            }
        }
        match self.take_outcome(run, source, &first, point_started)? {
            Step::Go => self.walk(run, source, first),
            Step::Stop => Ok(None),
            Step::Resized(p) => Ok(Some(p)),
        }
    }

    /// From `point`, just measured, walks the points that can join the launch, closing its block
    /// with the reference before it leaves the top memory level.
    fn walk(
        &mut self,
        run: &mut Run,
        source: &mut dyn PointSource,
        mut point: Point,
    ) -> Result<Option<Point>, SweepError> {
        let depends_on_cpu = self.axes.depends_on_cpu;
        loop {
            let next = source.peek(&self.recorded());
            if self.blocks.closing_due(&self.axes, &point, next.as_ref())
                && !self.measure_closing(run, &point)?
            {
                return Ok(None);
            }
            // Next point on the same launch, if it can share it.
            let Some(next) = next else { return Ok(None) };
            if !joins_launch(&point, &next, self.axes.mode, depends_on_cpu) {
                return Ok(None);
            }
            source.take();
            let started = Instant::now();
            self.observer
                .status(&format!("{}: re-capping the running job", label(&next)));
            if !self.recap(run, &next, source)? {
                return Ok(None);
            }
            match self.take_outcome(run, source, &next, started)? {
                Step::Go => point = next,
                Step::Stop => return Ok(None),
                Step::Resized(p) => return Ok(Some(p)),
            }
        }
    }

    /// Measures `p` on the running launch and records what came of it.
    fn take_outcome(
        &mut self,
        run: &mut Run,
        source: &mut dyn PointSource,
        p: &Point,
        started: Instant,
    ) -> Result<Step, SweepError> {
        match self.measure(run, p, started)? {
            Outcome::Cell(cell) => {
                let chain = (source.peek(&self.recorded()))
                    .is_some_and(|n| n.mem == p.mem && n.params == p.params);
                self.note_reference(p, &cell, chain)?;
                self.record(cell)?;
                Ok(Step::Go)
            }
            Outcome::Died(cell)
                if self.mem.outgrew_sizing(
                    self.observer,
                    &cell,
                    p,
                    run.held_peak,
                    !self.out.cells.is_empty(),
                ) =>
            {
                // The file holds the header alone, with the old levels: it is replaced.
                self.out.writer = None;
                self.out.header = None;
                Ok(Step::Resized(p.clone()))
            }
            Outcome::Died(cell) => {
                self.record(cell)?;
                self.record_ruled_out_by_oom(source, p);
                Ok(Step::Stop)
            }
        }
    }

    /// Re-caps the running job to `next` and lets the caps settle. `false` when the kernel could
    /// not reclaim memory down to its limit (the cell says so, and the launch is over).
    pub(super) fn recap(
        &mut self,
        run: &mut Run,
        next: &Point,
        source: &mut dyn PointSource,
    ) -> Result<bool, SweepError> {
        if let Some(cg) = &run.cgroup {
            cg.set_cpu(next.cpu)?;
            let bytes = self.mem.levels.bytes().expect("resolved")[next.mem];
            // Only EBUSY means the kernel could not reclaim; any other failure is the sweep's,
            // not the cell's.
            if let Err(e) = cg.set_memory_limit(Some(bytes)) {
                if !e.is_busy() {
                    return Err(e.into());
                }
                let cell = self.empty_cell(
                    next,
                    CellSource::Infeasible,
                    format!("the kernel could not reclaim memory down to the limit: {e}"),
                    0.0,
                );
                self.record(cell)?;
                self.record_ruled_out_by_oom(source, next);
                return Ok(false);
            }
        }
        self.settle(run)?;
        Ok(true)
    }

    /// Lets new caps take effect before measuring.
    pub(super) fn settle(&self, run: &mut Run) -> Result<(), SweepError> {
        let settle = Instant::now();
        while settle.elapsed().as_secs_f64() < self.opts.spec.spec.measure.settle_s {
            if self.cancelled() {
                return Err(self.interrupted());
            }
            run.poll();
            std::thread::sleep(POLL);
        }
        Ok(())
    }

    /// After an OOM at `p`, smaller memory at the same CPU level and parameters cannot fit either.
    pub(super) fn record_ruled_out_by_oom(&mut self, source: &mut dyn PointSource, p: &Point) {
        let oom = self
            .out
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
        self.mem.levels = MemoryLevels::Bytes(vec![total_memory_bytes()]);
        self.axes.cpu = vec![cpus];
        self.observer.planned(1, 0);
        let mut run = self.launch(&p, None)?;
        let cell = match self.warm_up(&mut run, &p, started)? {
            WarmUp::Failed(cell) => *cell,
            WarmUp::Ready => match self.measure(&mut run, &p, started)? {
                Outcome::Cell(c) | Outcome::Died(c) => c,
            },
        };
        run.job.stop();
        self.observer.cell_done(&cell);
        self.out.cells.push(cell);
        Ok(SweepOutcome {
            matrix: Matrix {
                header: self.make_header(),
                cells: self.out.cells,
            },
            path: PathBuf::new(),
            launches: self.launches.started,
            wall_s: started.elapsed().as_secs_f64(),
        })
    }
}

/// Launching the job for a point: its cgroup and caps, its command and environment, and the
/// files its progress is read from.
impl Sweep<'_> {
    pub(super) fn vars_for(&self, p: &Point) -> Vars {
        let mut vars = cpu_vars(&self.opts.spec, p.cpu);
        vars.extend(p.params.clone());
        vars
    }

    /// In a Slurm step: an error unless the step's cgroup has the point's caps.
    pub(super) fn check_step_caps(&self, p: &Point) -> Result<(), SweepError> {
        let Some((_, caps)) = &self.step else {
            return Ok(());
        };
        let memory = self.mem.levels.bytes().map(|b| b[p.mem]);
        caps.check(p.cpu, memory).map_err(|e| {
            SweepError::Plan(format!(
                "in the Slurm step: refusing to measure {}: {e} (ask for more with \
                 `profiler sweep --slurm --slurm-mem MB`)",
                label(p)
            ))
        })
    }

    pub(super) fn launch(
        &mut self,
        first: &Point,
        memory_limit: Option<u64>,
    ) -> Result<Run, SweepError> {
        self.check_step_caps(first)?;
        let spec = &self.opts.spec;
        self.launches.started += 1;
        // Start every launch with a cold cache, charged to the job's own cgroup (or the Slurm
        // step's), so its reads and cache are its own.
        if (self.root.is_some() || self.step.is_some())
            && let Some(ds) = &self.mem.dataset
        {
            ds.evict();
        }
        let cgroup = match &self.root {
            Some(root) => {
                let cg = root.create_launch(&spec.spec.name, self.launches.started)?;
                cg.set_cpu(first.cpu)?;
                cg.set_memory_limit(memory_limit)?;
                if let Some((dev, bps)) = self.mem.storage_throttle {
                    cg.set_read_bps(dev, Some(bps))?;
                }
                Some(cg)
            }
            None => None,
        };
        let tag = match &cgroup {
            Some(cg) => cg.name().to_string(),
            None => format!(
                "{}-{}-{}",
                spec.spec.name,
                std::process::id(),
                self.launches.started
            ),
        };
        let vars = self.vars_for(first);
        let procs = cgroup.as_ref().map(|c| c.procs_files()).unwrap_or_default();
        let (launch, progress_paths) = job_launch(spec, &vars, &self.out.log_dir, &tag, procs, &[])
            .map_err(|source| SweepError::Template {
                spec: spec.path.clone(),
                source,
            })?;
        let job = launch.spawn()?;
        let step = self.step.as_ref().map(|(_, caps)| caps.clone());
        let tail = ProgressTail::new(&spec.spec, progress_paths);
        Ok(Run::started(job, cgroup, tail, step))
    }
}
