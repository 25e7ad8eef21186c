//! One point on a running job: warm-up, then measurement until steady state, and the cell it
//! gives (or why there is none).

use super::disturbance::WindowJudge;
use super::{POLL, Run, Sweep, SweepError};
use crate::harness::launch::describe_exit;
use crate::harness::plan::{Point, label};
use crate::harness::progress::now_unix_s;
use crate::harness::steady::{MIN_INTERVALS_PER_WINDOW, RateWindows};
use crate::matrix::{Cell, CellSource, Telemetry};
use std::time::Instant;

/// Below this part of the dataset in the page cache, a cell is measured over a whole epoch.
pub(super) const PARTLY_CACHED: f64 = 0.98;

/// Whole epochs of `n` samples to measure over: enough to span the `steady_windows` windows a
/// steady cell would have, at the pace so far (a short epoch alone is a noisy measurement).
fn whole_epochs(
    n: f64,
    windows: &crate::harness::steady::RateWindows,
    elapsed_s: f64,
    m: &crate::spec::MeasureSpec,
) -> f64 {
    let gained = windows.gained();
    if gained <= 0.0 || elapsed_s <= 0.0 {
        return 1.0;
    }
    let epoch_s = n * elapsed_s / gained;
    (m.steady_windows as f64 * m.window_s / epoch_s)
        .ceil()
        .max(1.0)
}

/// What happened to a measured point.
pub(super) enum Outcome {
    Cell(Cell),
    /// The job died at this point; the cell says why. The launch is over.
    Died(Cell),
}

impl Sweep<'_> {
    pub(super) fn empty_cell(
        &self,
        p: &Point,
        source: CellSource,
        note: String,
        wall_s: f64,
    ) -> Cell {
        Cell {
            cpu: p.cpu,
            memory_bytes: self.memory.bytes().map_or(0, |b| b[p.mem]),
            params: p.params.clone(),
            source,
            throughput: None,
            iteration_time_s: None,
            telemetry: None,
            gpu: None,
            note: Some(note),
            wall_s,
            node: None,
            interference: None,
            relative: None,
            visits: Vec::new(),
            measured_unix_s: None,
            left_out_unix_s: Vec::new(),
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
                    b as f64 / (1u64 << 30) as f64
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
    /// Returns `Err(cell)` when the job dies or never reports.
    pub(super) fn warm_up(
        &mut self,
        run: &mut Run,
        p: &Point,
        started: Instant,
    ) -> Result<Result<(), Cell>, SweepError> {
        let m = self.opts.spec.spec.measure.clone();
        // One pass over the dataset, so a launch's first cell sees a warm page cache, and more
        // while the cache is still taking it in.
        let pass_samples = match m.warmup_pass {
            true => self.epoch_samples().unwrap_or(0.0),
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
                crate::harness::resident::clear_referenced(&run.pids());
            }
            if let (Some(last), Some((_, base))) = (reports.last(), first) {
                read = last.samples - base;
            }
            // What the job holds once it runs, at its most: the memory levels are sized from it.
            if let (Some(_), Some(c)) = (first, run.memory_counters()) {
                run.held_peak = run.held_peak.max(c.held_bytes());
            }
            if run.job.try_status().is_some() {
                return Ok(Err(self.death_cell(
                    run,
                    p,
                    started,
                    "start-up and warm-up",
                )));
            }
            match first {
                Some((f, _))
                    if f.elapsed().as_secs_f64() >= m.warmup_s
                        && (f.elapsed().as_secs_f64() >= m.startup_timeout_s
                            || (read >= pass_samples
                                && !self.cache_still_filling(
                                    p,
                                    run.held_peak,
                                    &mut cache_look,
                                    read,
                                    pass_samples,
                                ))) =>
                {
                    return Ok(Ok(()));
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
                    if let (Some((_, cap)), Some(c)) = (self.storage_throttle, run.counters()) {
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
                    return Ok(Err(self.empty_cell(
                        p,
                        CellSource::Failed,
                        note,
                        started.elapsed().as_secs_f64(),
                    )));
                }
                _ => std::thread::sleep(POLL),
            }
        }
    }

    /// Mapped files the job touched since its referenced bits were last cleared, the dataset
    /// left out (the cache model accounts for it).
    pub(super) fn mapped_hot_bytes(&self, run: &Run) -> Option<u64> {
        // Without a memory cgroup nothing says how much of them a limit would have to hold.
        run.memory_counters()?;
        // smaps names files by their canonical path.
        let dataset =
            (self.opts.spec.dataset_path.as_deref()).and_then(|d| std::fs::canonicalize(d).ok());
        Some(crate::harness::resident::referenced_file_bytes(
            &run.pids(),
            dataset.as_deref(),
        ))
    }

    /// Samples in one epoch: the spec's `dataset.samples`, else one per dataset file.
    fn epoch_samples(&self) -> Option<f64> {
        self.dataset_samples().map(|n| n as f64)
    }

    /// The dataset's samples: the spec's `dataset.samples`, else one per dataset file.
    pub(super) fn dataset_samples(&self) -> Option<u64> {
        let ds = self.dataset.as_ref()?;
        let samples = (self.opts.spec.spec.dataset.as_ref()).and_then(|d| d.samples);
        Some(samples.unwrap_or(ds.files))
    }

    /// The epoch to measure over when the page cache holds only part of the dataset. The cache
    /// then holds what the last epoch read last, so a freshly shuffled epoch hits early and
    /// misses late: a few steady windows would see only one phase, and only a whole epoch
    /// gives the rate a job really gets.
    fn partly_cached_epoch(&self) -> Option<f64> {
        let ds = self.dataset.as_ref()?;
        let cached = ds.cached().bytes;
        ((cached as f64) < PARTLY_CACHED * ds.page_cache_bytes as f64)
            .then(|| self.epoch_samples())
            .flatten()
            .filter(|n| *n > 0.0)
    }

    /// Whether the launch running now measured `p` already (a later round's visit).
    fn visited_on_this_launch(&self, p: &Point) -> bool {
        let Some(bytes) = self.memory.bytes() else {
            return false;
        };
        let key = crate::matrix::CellKey::new(p.cpu, bytes[p.mem], &p.params);
        (self.cells.iter())
            .any(|c| c.key() == key && c.visits.iter().any(|v| v.launch == self.launch_id()))
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
        let t0 = now_unix_s();
        let mut windows = RateWindows::new(t0, m.window_s);
        let mut warned_sparse = false;
        let c0 = run.counters();
        let u0 = match c0 {
            Some(_) => Default::default(),
            None => run.tree_usage(),
        };
        let clock = Instant::now();
        if let Some(g) = &self.gpu {
            g.reset_window();
        }
        let cpus = self.root.as_ref().map_or(&[][..], |r| r.cpus());
        let mut judge = WindowJudge::start(run.cgroup.as_ref(), cpus, p.cpu, m.steady_windows);
        // What of its mapped files the job uses from here on (for the cache model).
        crate::harness::resident::clear_referenced(&run.pids());
        let epoch = self.partly_cached_epoch();
        if let Some(n) = epoch {
            self.observer.status(&format!(
                "{}: dataset partly cached: measuring a whole epoch ({n:.0} samples)",
                label(p)
            ));
        }
        let mut rss_peak = 0u64;
        let mut resident = crate::harness::resident::ResidentSampler::default();
        let mut speed = crate::harness::cpu_speed::SpeedSampler::default();
        let mut anon_peak = 0u64;
        let mut shmem_peak = 0u64;
        let (mut held_sum, mut held_polls) = (0u128, 0u64);
        let mut steady = false;
        let mut told_rhythm = false;
        let revisit = self.visited_on_this_launch(p);
        loop {
            if self.cancelled() {
                return Err(self.interrupted());
            }
            for r in run.poll() {
                let closed = windows.closed();
                windows.push(r);
                if let (true, Some(j), Some(cg)) = (
                    windows.closed() > closed,
                    judge.as_mut(),
                    run.cgroup.as_ref(),
                ) && j.window_closed(cg)
                {
                    windows.discard_last();
                }
            }
            if let Some(gap) = windows
                .report_interval_s()
                .filter(|g| !warned_sparse && *g > m.window_s)
            {
                warned_sparse = true;
                self.observer.warn(&format!(
                    "{}: one progress line every {gap:.1} s, sparser than window_s = {} s: each \
                     window widens to {MIN_INTERVALS_PER_WINDOW} report intervals (about {:.0} s)",
                    label(p),
                    m.window_s,
                    gap * MIN_INTERVALS_PER_WINDOW as f64
                ));
            }
            if let Some(r) = windows.rhythm().filter(|_| !told_rhythm) {
                told_rhythm = true;
                self.observer.status(&format!(
                    "{}: progress comes in bursts every {:.1} s: each window holds whole bursts",
                    label(p),
                    r.period_s
                ));
            }
            for w in run.tail.take_warnings() {
                self.observer.warn(&format!("{}: {w}", label(p)));
            }
            if let Some(bytes) = resident.sample(|| run.resident_bytes()) {
                rss_peak = rss_peak.max(bytes);
            }
            speed.sample();
            if let Some(c) = run.memory_counters() {
                anon_peak = anon_peak.max(c.anon_bytes);
                shmem_peak = shmem_peak.max(c.shmem_bytes);
                run.held_peak = run.held_peak.max(c.held_bytes());
                held_sum += u128::from(c.held_bytes());
                held_polls += 1;
            }
            if run.job.try_status().is_some() {
                return Ok(Outcome::Died(self.death_cell(
                    run,
                    p,
                    started,
                    "measurement",
                )));
            }
            let done = match epoch {
                Some(n) => {
                    let k = whole_epochs(n, &windows, clock.elapsed().as_secs_f64(), &m);
                    windows.gained() >= k * n && windows.closed() >= m.steady_windows
                }
                // The spread between rounds, not this visit's windows, is what the relative
                // rate's interval is made of.
                None if revisit => windows.closed() >= m.steady_windows,
                None => windows.is_steady(m.steady_windows, m.steady_cv),
            };
            if done {
                steady = true;
                break;
            }
            let elapsed = clock.elapsed().as_secs_f64();
            // An epoch may outlast max_s: give it the time it takes at the pace so far.
            let limit = match epoch {
                Some(n) if windows.gained() > 0.0 => {
                    let k = whole_epochs(n, &windows, elapsed, &m);
                    m.max_s.max(1.25 * k * n * elapsed / windows.gained())
                }
                _ => m.max_s,
            };
            if elapsed >= limit {
                break;
            }
            std::thread::sleep(POLL);
        }
        let elapsed = clock.elapsed().as_secs_f64();
        let dataset_cached = self.dataset.as_ref().map(|d| d.cached());
        let telemetry = match (c0, run.counters()) {
            (Some(a), Some(b)) => Some(Telemetry {
                cpu_cores_used: b.cpu_usage_ns.saturating_sub(a.cpu_usage_ns) as f64
                    / 1e9
                    / elapsed,
                cpu_system_cores: a
                    .cpu_system_ns
                    .zip(b.cpu_system_ns)
                    .map(|(a, b)| b.saturating_sub(a) as f64 / 1e9 / elapsed),
                throttled_s_per_s: (b.throttled_ns.saturating_sub(a.throttled_ns)) as f64
                    / 1e9
                    / elapsed,
                rss_peak_bytes: rss_peak,
                page_cache_bytes: b.page_cache_bytes,
                storage_read_bytes_per_s: (b.read_bytes.saturating_sub(a.read_bytes)) as f64
                    / elapsed,
                anon_peak_bytes: Some(anon_peak.max(b.anon_bytes)),
                shmem_peak_bytes: Some(shmem_peak.max(b.shmem_bytes)),
                held_mean_bytes: (held_polls > 0)
                    .then(|| (held_sum / u128::from(held_polls)) as u64),
                dataset_cached_bytes: dataset_cached.map(|c| c.bytes),
                dataset_cached_half_width_bytes: dataset_cached.and_then(|c| c.half_width_bytes),
                mapped_hot_bytes: self.mapped_hot_bytes(run),
                reference_loop_ns: speed.median_ns(),
            }),
            _ => {
                // No cgroup counts for the job: its process tree does, memory aside.
                let u1 = run.tree_usage();
                Some(Telemetry {
                    cpu_cores_used: u1.cpu_ns.saturating_sub(u0.cpu_ns) as f64 / 1e9 / elapsed,
                    storage_read_bytes_per_s: u1.read_bytes.saturating_sub(u0.read_bytes) as f64
                        / elapsed,
                    rss_peak_bytes: rss_peak,
                    reference_loop_ns: speed.median_ns(),
                    ..Telemetry::default()
                })
            }
        };
        self.check_dataset_maps(run)?;
        let period = match (epoch, self.epoch_samples()) {
            (Some(n), _) => {
                let period = n * whole_epochs(n, &windows, elapsed, &m);
                Some(if windows.gained() >= period {
                    period
                } else {
                    n
                })
            }
            // Windows that never settled, on a job that went through whole epochs of a cached
            // dataset: a loader that starts its workers afresh every epoch (a `DataLoader`
            // without `persistent_workers`) is slower at each epoch's start, and its rate is
            // the one over whole epochs, however its windows swing within them.
            (None, Some(n)) if !steady && n > 0.0 && windows.gained() >= n => {
                let epochs = (windows.gained() / n).floor();
                self.observer.status(&format!(
                    "{}: windows did not settle; the rate is over the last {epochs:.0} whole \
                     epoch{}",
                    label(p),
                    if epochs == 1.0 { "" } else { "s" }
                ));
                steady = true;
                Some(n * epochs)
            }
            _ => None,
        };
        let over_epoch =
            period.and_then(|p| windows.throughput_over(p).zip(windows.period_times(p)));
        let (measured_unix_s, left_out_unix_s) = match &over_epoch {
            Some((_, span)) => (Some(*span), Vec::new()),
            None => (
                windows.span(m.steady_windows),
                windows.left_out(m.steady_windows),
            ),
        };
        let throughput = match over_epoch {
            Some((t, _)) => Some(t),
            None => windows.throughput(m.steady_windows),
        };
        let Some(throughput) = throughput else {
            let why = match windows.report_interval_s() {
                Some(_) => windows
                    .too_sparse(m.steady_windows, m.max_s, elapsed)
                    .unwrap_or_else(|| "too few progress lines".into()),
                None => format!(
                    "the job reported no progress for {elapsed:.0} s of measurement (max_s); expected {}",
                    run.tail.expectation()
                ),
            };
            let mut cell =
                self.empty_cell(p, CellSource::Failed, why, started.elapsed().as_secs_f64());
            cell.telemetry = telemetry;
            return Ok(Outcome::Cell(cell));
        };
        let note = (!steady).then(|| {
            if let Some(n) = epoch {
                return format!(
                    "unsteady: the dataset is partly cached and the measurement covers {:.0}% of \
                     an epoch ({n:.0} samples); hits come early in an epoch, so this rate may be \
                     off: raise max_s",
                    100.0 * windows.gained() / n
                );
            }
            let why = windows
                .too_sparse(m.steady_windows, m.max_s, elapsed)
                .unwrap_or_else(|| {
                    format!(
                        "the rates of the last {} windows still vary by more than steady_cv = {} \
                         after max_s = {} s",
                        m.steady_windows, m.steady_cv, m.max_s
                    )
                });
            format!("unsteady: {why}")
        });
        let disturbed = judge.as_ref().and_then(WindowJudge::note);
        if let Some(d) = &disturbed {
            self.observer.warn(&format!("{}: {d}", label(p)));
        }
        let note = match (note, disturbed) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        let cell = Cell {
            cpu: p.cpu,
            memory_bytes: self.memory.bytes().map_or(0, |b| b[p.mem]),
            params: p.params.clone(),
            source: CellSource::Measured,
            throughput: Some(throughput),
            iteration_time_s: windows.iteration_times(),
            telemetry,
            gpu: self.gpu.as_ref().and_then(|g| g.window_summary()),
            note,
            wall_s: started.elapsed().as_secs_f64(),
            node: None,
            interference: judge.as_ref().and_then(WindowJudge::summary),
            relative: None,
            visits: Vec::new(),
            measured_unix_s,
            left_out_unix_s,
        };
        self.note_disturbance(&cell);
        Ok(Outcome::Cell(cell))
    }
}
