//! One visit: a point measured on a running job, after its warm-up, until steady state (or
//! `steady_windows` windows where the point was measured before), and the cell it gives (or
//! why there is none).

use super::disturbance::WindowJudge;
use super::launches::visit_of;
use super::visit_progress::Measurement;
use super::{POLL, Run, Sweep, SweepError};
use crate::harness::process::launch::describe_exit;
use crate::harness::sweep::plan::{Point, label};
use crate::matrix::{Cell, CellSource, Visit};
use std::time::Instant;

/// Below this part of the dataset in the page cache, a cell is measured over a whole epoch.
pub(super) const PARTLY_CACHED: f64 = 0.98;

/// What happened to a measured point.
pub(super) enum Outcome {
    Cell(Cell),
    /// The job died at this point; the cell says why. The launch is over.
    Died(Cell),
}

/// How a launch's warm-up ended.
pub(super) enum WarmUp {
    /// The job reports progress and has warmed up: measure it.
    Ready,
    /// It died or never reported; the cell says why.
    Failed(Box<Cell>),
}

impl Sweep<'_> {
    /// The cell of point `p` at its memory level, nothing in it yet.
    pub(super) fn cell_at(&self, p: &Point, source: CellSource) -> Cell {
        let memory_bytes = self.mem.levels.bytes().map_or(0, |b| b[p.mem]);
        Cell::at(p.cpu, memory_bytes, p.params.clone(), source)
    }

    pub(super) fn empty_cell(
        &self,
        p: &Point,
        source: CellSource,
        note: String,
        wall_s: f64,
    ) -> Cell {
        Cell {
            note: Some(note),
            wall_s,
            ..self.cell_at(p, source)
        }
    }

    /// The cell for a job that ended: infeasible if the OOM killer took it, else failed.
    pub(super) fn death_cell(
        &self,
        run: &mut Run,
        p: &Point,
        started: Instant,
        phase: &str,
    ) -> Cell {
        let status = run
            .job
            .try_status()
            .map(describe_exit)
            .unwrap_or_else(|| "stopped".into());
        let wall = started.elapsed().as_secs_f64();
        if run.oom_killed() {
            // What it held says whether the job outgrew the cap or the cap was far too tight.
            let held = match run.held_peak {
                0 => String::new(),
                b => format!(
                    "; it was seen holding up to {:.2} GiB of anonymous and shared memory",
                    b as f64 / crate::units::GIB
                ),
            };
            return self.empty_cell(
                p,
                CellSource::Infeasible,
                format!("OOM-killed under the memory cap during {phase} ({status}){held}"),
                wall,
            );
        }
        let tail = run.job.stderr_tail(2000);
        self.empty_cell(
            p,
            CellSource::Failed,
            format!("job {status} during {phase}; stderr tail:\n{tail}"),
            wall,
        )
    }

    /// Waits until the job has reported progress for `seconds` after its first report.
    /// [`WarmUp::Failed`] when the job dies or never reports.
    pub(super) fn warm_up(
        &mut self,
        run: &mut Run,
        p: &Point,
        started: Instant,
    ) -> Result<WarmUp, SweepError> {
        let m = self.opts.spec.spec.measure.clone();
        // One pass over the dataset, so a launch's first cell sees a warm page cache, and more
        // while the cache is still taking it in.
        let pass_samples = match m.warmup_pass {
            true => self.mem.epoch_samples().unwrap_or(0.0),
            false => 0.0,
        };
        let mut first: Option<(Instant, f64)> = None;
        let mut read = 0.0;
        let mut cache_look = None;
        loop {
            if self.cancelled() {
                return Err(self.interrupted());
            }
            let reports = run.poll();
            for w in run.tail.take_warnings() {
                self.observer.warn(&format!("{}: {w}", label(p)));
            }
            if let (Some(r), None) = (reports.first(), first) {
                first = Some((Instant::now(), r.samples));
                self.observer.status(&format!("{}: warming up", label(p)));
                // What of its mapped files the job touches once it runs (start-up excluded),
                // for the memory levels.
                crate::harness::memory::resident::clear_referenced(&run.pids());
            }
            if let (Some(last), Some((_, base))) = (reports.last(), first) {
                read = last.samples - base;
            }
            // What the job holds once it runs, at its most: the memory levels are sized from it.
            if let (Some(_), Some(c)) = (first, run.memory_counters()) {
                run.held_peak = run.held_peak.max(c.held_bytes());
            }
            if run.job.try_status().is_some() {
                return Ok(WarmUp::Failed(Box::new(self.death_cell(
                    run,
                    p,
                    started,
                    "start-up and warm-up",
                ))));
            }
            match first {
                Some((f, _))
                    if f.elapsed().as_secs_f64() >= m.warmup_s
                        && (f.elapsed().as_secs_f64() >= m.startup_timeout_s
                            || (read >= pass_samples
                                && !self.mem.cache_still_filling(
                                    self.observer,
                                    p,
                                    run.held_peak,
                                    &mut cache_look,
                                    read,
                                    pass_samples,
                                ))) =>
                {
                    return Ok(WarmUp::Ready);
                }
                None if started.elapsed().as_secs_f64() > m.startup_timeout_s => {
                    let mut note = format!(
                        "no progress within startup_timeout_s = {} s; expected {}",
                        m.startup_timeout_s,
                        run.tail.expectation()
                    );
                    if let Some(bad) = &run.tail.first_bad_line {
                        note.push_str(&format!(
                            "; got {} malformed line(s), first: {bad}",
                            run.tail.bad_lines
                        ));
                    }
                    // The cap throttles every read of the device, the job's own libraries
                    // included where the page cache lost them (PyTorch's import reads hundreds
                    // of MB).
                    if let (Some((_, cap)), Some(c)) = (self.mem.storage_throttle, run.counters()) {
                        let rate = c.read_bytes as f64 / started.elapsed().as_secs_f64();
                        if rate >= 0.8 * cap as f64 {
                            note.push_str(&format!(
                                "; it read {:.0} MB from storage meanwhile, at the storage cap of \
                                 {:.1} MB/s, which also slows the reading of its own code and \
                                 libraries where the page cache does not hold them (a longer \
                                 startup_timeout_s, or one uncapped run of the job to cache them)",
                                c.read_bytes as f64 / 1e6,
                                cap as f64 / 1e6
                            ));
                        }
                    }
                    return Ok(WarmUp::Failed(Box::new(self.empty_cell(
                        p,
                        CellSource::Failed,
                        note,
                        started.elapsed().as_secs_f64(),
                    ))));
                }
                _ => std::thread::sleep(POLL),
            }
        }
    }

    /// Whether `p` was measured before, on this launch or another: its first visit measured
    /// until steady, and the spread between visits, not this visit's windows, makes its
    /// interval.
    fn visited_before(&self, p: &Point) -> bool {
        let key = self.key_of(p);
        (self.out.cells.iter()).any(|c| Some(c.key()) == key && !c.visits.is_empty())
    }

    /// Measures one point on a running, warmed-up job.
    pub(super) fn measure(
        &mut self,
        run: &mut Run,
        p: &Point,
        started: Instant,
    ) -> Result<Outcome, SweepError> {
        let m = self.opts.spec.spec.measure.clone();
        self.observer.status(&format!("{}: measuring", label(p)));
        run.poll();
        let mut at = Measurement::start(run, &m);
        if let Some(g) = &self.gpu {
            g.reset_window();
        }
        let cpus = self.root.as_ref().map_or(&[][..], |r| r.cpus());
        at.judge = WindowJudge::start(run.cgroup.as_ref(), cpus, p.cpu, m.steady_windows);
        // What of its mapped files the job uses from here on (for the cache model).
        crate::harness::memory::resident::clear_referenced(&run.pids());
        at.epoch = self.mem.partly_cached_epoch();
        if let Some(n) = at.epoch {
            self.observer.status(&format!(
                "{}: dataset partly cached: measuring a whole epoch ({n:.0} samples)",
                label(p)
            ));
        }
        at.revisit = self.visited_before(p);
        loop {
            if self.cancelled() {
                return Err(self.interrupted());
            }
            at.take_reports(run);
            if let Some(message) = at.sparse_news(&m) {
                self.observer.warn(&format!("{}: {message}", label(p)));
            }
            if let Some(message) = at.rhythm_news() {
                self.observer.status(&format!("{}: {message}", label(p)));
            }
            for w in run.tail.take_warnings() {
                self.observer.warn(&format!("{}: {w}", label(p)));
            }
            at.sample(run);
            if run.job.try_status().is_some() {
                return Ok(Outcome::Died(self.death_cell(
                    run,
                    p,
                    started,
                    "measurement",
                )));
            }
            if at.done(&m) {
                at.steady = true;
                break;
            }
            if at.elapsed_s() >= at.limit_s(&m) {
                break;
            }
            std::thread::sleep(POLL);
        }
        self.cell_of(at, run, p, started, &m)
    }

    /// The cell a finished measurement gives: its rate (over its steady windows, or over
    /// whole epochs), telemetry, and why it is unsteady or disturbed where it is.
    fn cell_of(
        &mut self,
        mut at: Measurement,
        run: &mut Run,
        p: &Point,
        started: Instant,
        m: &crate::spec::MeasureSpec,
    ) -> Result<Outcome, SweepError> {
        let elapsed = at.elapsed_s();
        let dataset_cached = self.mem.dataset.as_ref().map(|d| d.cached());
        let mapped_hot = self.mem.mapped_hot_bytes(run);
        let telemetry = Some(at.telemetry(run, elapsed, dataset_cached, mapped_hot));
        if self.mem.check_dataset_maps(self.observer, run) {
            self.cache_model_changed()?;
        }
        let period = at.period(self.mem.epoch_samples(), elapsed, m);
        if let Some(epochs) = period.and_then(|(_, unsettled)| unsettled) {
            self.observer.status(&format!(
                "{}: windows did not settle; the rate is over the last {epochs:.0} whole \
                 epoch{}",
                label(p),
                if epochs == 1.0 { "" } else { "s" }
            ));
        }
        let windows = &at.windows;
        let over_epoch = period
            .map(|(n, _)| n)
            .and_then(|p| windows.throughput_over(p).zip(windows.period_times(p)));
        let (measured_unix_s, left_out_unix_s) = match &over_epoch {
            Some((_, span)) => (Some(*span), Vec::new()),
            None => (
                windows.span(m.steady_windows),
                windows.left_out(m.steady_windows),
            ),
        };
        let root = self.root.as_ref();
        let host =
            measured_unix_s.and_then(|span| self.host.speed_of(root, p.cpu, span, &at.windows));
        let throughput = match over_epoch {
            Some((t, _)) => Some(t),
            None => windows.throughput(m.steady_windows),
        };
        let Some(throughput) = throughput else {
            let why = at.why_no_rate(run, elapsed, m);
            let mut cell =
                self.empty_cell(p, CellSource::Failed, why, started.elapsed().as_secs_f64());
            cell.telemetry = telemetry;
            return Ok(Outcome::Cell(cell));
        };
        let disturbed = at.judge.as_ref().and_then(WindowJudge::note);
        if let Some(d) = &disturbed {
            self.observer.warn(&format!("{}: {d}", label(p)));
        }
        let note = match (at.unsteady_note(elapsed, m), disturbed) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        let cell = Cell {
            throughput: Some(throughput),
            iteration_time_s: at.windows.iteration_times(),
            telemetry,
            gpu: self.gpu.as_ref().and_then(|g| g.window_summary()),
            note,
            wall_s: started.elapsed().as_secs_f64(),
            interference: at.judge.as_ref().and_then(WindowJudge::summary),
            measured_unix_s,
            left_out_unix_s,
            ..self.cell_at(p, CellSource::Measured)
        };
        self.blocks.note_disturbance(&cell);
        // A live launch walking in rounds visits a point more than once: each visit is kept,
        // and so is each fresh launch's measurement where the probe runs, with its speed.
        let keep_visit = self.axes.blocks_per_launch() || self.host.runs();
        let visit = keep_visit
            .then(|| visit_of(&cell, self.launch_id()))
            .flatten();
        let visits = visit.map(|v| Visit { host, ..v }).into_iter().collect();
        Ok(Outcome::Cell(Cell { visits, ..cell }))
    }
}
