//! The replay engine: scheduling rounds with one-round leases, plus exact events within a round.
//!
//! At each round boundary `t` (multiples of the round length from 0): jobs that arrived by `t`
//! join; the policy orders the active jobs; the mechanism places some of them (a part per
//! server a job spans, every dimension checked); the engine re-checks that no server is
//! over-allocated; each placed job progresses for the round at the throughput of the
//! allocation it got. A round whose decision nothing could change reuses the last one
//! ([`EngineConfig::fast`]). How a placed job progresses, which jobs the mechanism is offered
//! and what a job carries between rounds are the semantics' rules ([`RoundRules`](super::semantics::RoundRules)), which the
//! engine calls and does not know. When no job is active the engine jumps to the first round
//! boundary at or after the next arrival.

mod check;
mod progress;
mod queue;
mod state;
mod work;

pub use super::binding::bind;
pub use super::job::JobState;
pub use check::Alloc;
pub use work::{Round, RoundWork};

use super::cluster::Cluster;
use super::error::ReplayError;
use super::job::JobSpec;
use super::mechanism::{MechCtx, MechStats, Mechanism, Placement};
use super::policy::{Policy, PolicyCtx};
use super::profile::{ProfileSet, Semantics};
use super::semantics::rules;
use super::workload::canonical::Recorder;
use queue::{Queue, Rank, Slots};
use state::{Clock, RoundBuffers, Rules, Streams, Tally};
use std::time::Instant;

/// One scheduling round of the time series.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundRow {
    pub t: f64,
    pub active: usize,
    pub running: usize,
    /// Allocated GPUs, cores, GB.
    pub gpus: u32,
    pub cpus: f64,
    pub mem_gb: f64,
    /// Used: GPUs weighted by throughput / best-case throughput; cores and GB up to best case.
    pub gpu_use: f64,
    pub cpu_use: f64,
    pub mem_use: f64,
    /// Wall seconds the policy and mechanism took.
    pub decision_s: f64,
    pub lp_bound: Option<f64>,
    pub lp_rounded: Option<f64>,
}

/// Audit hook: (round start, active jobs, placements).
pub type AuditFn<'a> = dyn Fn(f64, &[JobState], &[Placement]) + Sync + 'a;

/// Progress hook: jobs finished so far (of the window, when there is one), after each round in
/// which some finished.
pub type ProgressFn<'a> = dyn Fn(u64) + Sync + 'a;

/// Rates measured elsewhere than the profiles: what a job ran at with an allocation, where it
/// was seen running so. A job placed so progresses at it; elsewhere at its profile's rate.
/// Decisions still read the profiles.
pub trait MeasuredRates: Sync {
    /// Samples/s `job` ran at with `cpus` cores and `mem_gb` GB in all, where known.
    fn rate(&self, job: &JobSpec, cpus: f64, mem_gb: f64) -> Option<f64>;
}

pub struct EngineConfig<'a> {
    pub cluster: &'a Cluster,
    pub profiles: &'a ProfileSet,
    pub policy: &'a dyn Policy,
    pub mechanism: &'a dyn Mechanism,
    pub semantics: Semantics,
    pub round_s: f64,
    /// Stop once every job with an id in this inclusive range has finished.
    pub window: Option<(u64, u64)>,
    /// Simulated time limit, seconds: jobs still active when a round would start at or after it
    /// are an error ([`ReplayError::Horizon`]) naming them.
    pub horizon_s: f64,
    pub max_rounds: u64,
    /// Time of the first round; `None`: rounds fall on multiples of the round length from 0.
    /// A first round at 1 s (as a simulator that starts a static trace there has it) puts the
    /// rounds on 1 + k x round; later rounds keep the phase of the first.
    pub first_round_s: Option<f64>,
    /// Called after every round with the placements (tests use it to audit invariants).
    pub audit: Option<&'a AuditFn<'a>>,
    /// Called with the number of jobs finished when it changes (progress bars).
    pub progress: Option<&'a ProgressFn<'a>>,
    /// Rates that replace the profiles' where a job was measured at its allocation.
    pub measured: Option<&'a dyn MeasuredRates>,
    /// The fast path: keep the policy order across rounds where the policy's keys allow it
    /// ([`super::policy::KeyUpdate`]) and reuse the last round's decision when the jobs the
    /// mechanism looked at are unchanged, in order (nothing it could see has changed). `false`:
    /// re-key, re-sort and re-decide every round, the reference the fast path is tested against.
    pub fast: bool,
}

#[derive(Debug, Clone)]
pub struct EngineOutput {
    /// Every job admitted, finished or not, ordered by id (without the finished ones when they
    /// went to a sink, [`simulate_into`]).
    pub jobs: Vec<JobState>,
    pub rounds: Vec<RoundRow>,
    pub end_s: f64,
    pub lp_failures: u64,
}

/// Where finished jobs go instead of the output, as they finish (a replay too large to keep).
pub type SinkFn<'a> = dyn FnMut(JobState) -> Result<(), ReplayError> + 'a;

/// The error for jobs still active at the horizon (the first few named).
fn horizon_reached(horizon_s: f64, active: &[JobState]) -> ReplayError {
    ReplayError::Horizon {
        horizon_s,
        count: active.len(),
        jobs: active
            .iter()
            .take(5)
            .map(|j| super::error::UnfinishedJob {
                job_id: j.spec.id,
                remaining_samples: j.remaining,
                origin: None,
            })
            .collect(),
    }
}

/// Runs the replay over `arrivals` (sorted by arrival time).
pub fn simulate(
    cfg: &EngineConfig,
    arrivals: &mut dyn Iterator<Item = JobSpec>,
    recorder: Option<&mut Recorder>,
) -> Result<EngineOutput, ReplayError> {
    let mut replay = Replay::new(cfg, arrivals, recorder)?;
    replay.run_to_end()?;
    Ok(replay.finish())
}

/// [`simulate`], handing each job to `sink` as it finishes instead of keeping it: memory then
/// holds only the active jobs (and one row per round).
pub fn simulate_into(
    cfg: &EngineConfig,
    arrivals: &mut dyn Iterator<Item = JobSpec>,
    recorder: Option<&mut Recorder>,
    sink: &mut SinkFn,
) -> Result<EngineOutput, ReplayError> {
    let mut replay = Replay::new(cfg, arrivals, recorder)?;
    replay.streams.sink = Some(sink);
    replay.run_to_end()?;
    Ok(replay.finish())
}

/// What the engine keeps per active job besides its state (moves with it).
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The replay's (rounds, contention sum) when the job was admitted: its own counts are the
    /// differences when it leaves, so a round costs nothing per waiting job.
    since: (u64, f64),
    /// The round it last ran in, its low 32 bits (0: none yet): only ever compared with the
    /// round being made, and a slot stays 64 bytes.
    ran_round: u32,
    /// Its last allocation (cores, GB, servers) and the rate that gave.
    memo: Option<(f64, f64, u32, u32, f64)>,
    /// The whole CPUs its process was last started on (0: not started), where starting
    /// costs ([`super::profile::StartCost`]).
    started_on: u32,
}

/// The last decision, reused while the jobs it pulled are the first in the order again.
struct Decision {
    /// Slots the mechanism pulled from the order, in order.
    pulled: Vec<usize>,
    /// Whether it pulled the whole order (then a longer order changes what it sees).
    exhausted: bool,
    stats: MechStats,
}

impl Decision {
    /// Whether a mechanism given `order` (of `len` jobs) would pull exactly the same jobs.
    fn holds(&self, mut order: impl Iterator<Item = usize>, len: usize) -> bool {
        (!self.exhausted || len == self.pulled.len())
            && self.pulled.iter().all(|&s| order.next() == Some(s))
    }
}

/// The order as the mechanism pulls it, recording what it pulled.
struct Pull<'o, 'p> {
    order: Slots<'o>,
    pulled: &'p mut Vec<usize>,
    exhausted: bool,
}

impl Iterator for Pull<'_, '_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        let next = self.order.next();
        match next {
            Some(s) => self.pulled.push(s),
            None => self.exhausted = true,
        }
        next
    }
}

/// A replay in progress: [`Replay::step_round`] runs one scheduling round, so tests can look at
/// the jobs and placements between rounds; [`simulate`] runs it to the end.
pub struct Replay<'c, 'a> {
    cfg: &'c EngineConfig<'a>,
    rules: Rules,
    streams: Streams<'c>,
    /// Active jobs by slot (a finished job's slot takes the last job).
    active: Vec<JobState>,
    /// Per slot, what the engine keeps besides the job's state.
    slots: Vec<Slot>,
    queue: Queue,
    done: Vec<JobState>,
    rounds: Vec<RoundRow>,
    last: Option<Decision>,
    buffers: RoundBuffers,
    clock: Clock,
    tally: Tally,
}

impl<'c, 'a> Replay<'c, 'a> {
    pub fn new(
        cfg: &'c EngineConfig<'a>,
        arrivals: &'c mut dyn Iterator<Item = JobSpec>,
        recorder: Option<&'c mut Recorder>,
    ) -> Result<Self, ReplayError> {
        let r = cfg.round_s;
        if !(r.is_finite() && r > 0.0) {
            return Err(ReplayError::Options("round length must be positive".into()));
        }
        let t0 = cfg.first_round_s.unwrap_or(0.0);
        if !t0.is_finite() {
            return Err(ReplayError::Options(
                "first round time must be finite".into(),
            ));
        }
        let rules = Rules::new(rules(cfg.semantics), cfg.policy, cfg.profiles);
        let kept = cfg.fast && !rules.prioritized;
        Ok(Replay {
            cfg,
            rules,
            streams: Streams {
                arrivals: arrivals.peekable(),
                recorder,
                sink: None,
                work: None,
            },
            active: Vec::new(),
            slots: Vec::new(),
            queue: Queue::new(cfg.policy.key_update(cfg.semantics), kept),
            done: Vec::new(),
            rounds: Vec::new(),
            last: None,
            buffers: RoundBuffers::default(),
            clock: Clock::starting_at(t0),
            tally: Tally::default(),
        })
    }

    /// Makes every round's progress with `work` (a deploy's real jobs) instead of the
    /// matrices' rates.
    pub fn set_work(&mut self, work: &'c mut dyn RoundWork) {
        self.streams.work = Some(work);
    }

    /// Start of the next round (after [`Replay::step_round`]: of the round after the one run).
    pub fn now(&self) -> f64 {
        self.clock.t
    }

    /// Jobs admitted and not finished (in slot order: a finished job's slot takes the last
    /// job). Their `rounds_active` and `contention_sum` are filled in when they leave.
    pub fn active(&self) -> &[JobState] {
        &self.active
    }

    /// Finished jobs, in finishing order (by id within a round); empty with a sink.
    pub fn finished(&self) -> &[JobState] {
        &self.done
    }

    /// The placements of the last round run; their `job` indexes the active jobs as they were
    /// in that round (finished jobs have since left [`Replay::active`]).
    pub fn last_placements(&self) -> &[Placement] {
        &self.buffers.placements
    }

    pub fn rounds(&self) -> &[RoundRow] {
        &self.rounds
    }

    /// Runs rounds until every job has finished (or the window has).
    pub fn run_to_end(&mut self) -> Result<(), ReplayError> {
        while self.step_round()? {}
        Ok(())
    }

    /// The output: every job admitted (but those handed to a sink), ordered by id.
    pub fn finish(mut self) -> EngineOutput {
        for slot in 0..self.active.len() {
            self.settle(slot);
        }
        let end_s = self
            .done
            .iter()
            .filter_map(|j| j.finish)
            .fold(0.0, f64::max);
        let mut jobs = self.done;
        jobs.extend(self.active);
        jobs.sort_unstable_by_key(|j| j.spec.id); // ids are unique
        EngineOutput {
            jobs,
            rounds: self.rounds,
            end_s,
            lp_failures: self.tally.lp_failures,
        }
    }

    /// Fills in the per-job counters kept for all jobs at once.
    fn settle(&mut self, slot: usize) {
        let (rounds, contention) = self.slots[slot].since;
        let j = &mut self.active[slot];
        j.rounds_active = (self.clock.n_rounds - rounds) as u32;
        j.contention_sum = self.tally.contention_sum - contention;
    }

    fn pctx(&self, contention: f64) -> PolicyCtx<'a> {
        let cfg = self.cfg;
        PolicyCtx {
            now: self.clock.t,
            cluster: cfg.cluster,
            contention,
            free_frac: self.tally.free_frac,
            semantics: cfg.semantics,
            fair: self.rules.of.keys_ignore_speedups(cfg.mechanism),
        }
    }

    /// Admits the jobs that arrived by the current time.
    fn admit(&mut self) -> Result<(), ReplayError> {
        let cfg = self.cfg;
        let prioritized = self.rules.prioritized;
        while let Some(next) = self.streams.arrivals.peek() {
            if next.arrival_s > self.clock.t {
                break;
            }
            let job = self.streams.arrivals.next().expect("peeked");
            if job.arrival_s < self.tally.last_arrival {
                return Err(ReplayError::Options(format!(
                    "workload is not sorted by arrival: job {} arrives at {} after a job at {}",
                    job.id, job.arrival_s, self.tally.last_arrival
                )));
            }
            self.tally.last_arrival = job.arrival_s;
            if let Some(rec) = self.streams.recorder.as_deref_mut() {
                rec.write(&job)?;
            }
            let state = bind(job, cfg.cluster, cfg.profiles, cfg.semantics)?;
            self.tally.active_gpus += u64::from(state.spec.gpus);
            if self.queue.is_kept() {
                // Kept keys read nothing that changes between rounds (KeyUpdate's contract).
                let rank = Rank::of(cfg.policy, &state, &self.pctx(1.0), prioritized);
                self.queue.admit(self.active.len(), rank);
            }
            self.slots.push(Slot {
                since: (self.clock.n_rounds, self.tally.contention_sum),
                ran_round: 0,
                memo: None,
                started_on: 0,
            });
            self.active.push(state);
        }
        Ok(())
    }

    /// Runs the next round that has work (admitting arrivals first, skipping empty rounds).
    /// Returns `false`, running nothing, once the replay is over.
    pub fn step_round(&mut self) -> Result<bool, ReplayError> {
        if self.clock.ended {
            return Ok(false);
        }
        let cfg = self.cfg;
        let r = cfg.round_s;
        let window_len = cfg.window.map_or(0, |(a, b)| b - a + 1);
        loop {
            self.admit()?;
            if cfg.window.is_some() && self.tally.window_done == window_len {
                self.clock.ended = true;
                return Ok(false);
            }
            if !self.active.is_empty() {
                break;
            }
            match self.streams.arrivals.peek() {
                None => {
                    self.clock.ended = true;
                    return Ok(false);
                }
                Some(next) => {
                    let k = ((next.arrival_s - self.clock.t0) / r).ceil();
                    self.clock.t = self.clock.t.max(self.clock.t0 + k * r);
                }
            }
        }
        if self.clock.t >= cfg.horizon_s || cfg.horizon_s.is_nan() {
            return Err(horizon_reached(cfg.horizon_s, &self.active));
        }
        let t = self.clock.t;
        let round = self.round();
        // A plug-in's failure comes first: the round's own error is its consequence.
        if let Some(message) = cfg.policy.failure() {
            return Err(ReplayError::Plugin {
                name: format!("policy {}", cfg.policy.name()),
                t,
                message,
            });
        }
        if let Some(message) = cfg.mechanism.failure() {
            return Err(ReplayError::Plugin {
                name: format!("mechanism {}", cfg.mechanism.name()),
                t,
                message,
            });
        }
        round?;
        Ok(true)
    }

    /// Orders the jobs and decides the round: reuses the last decision when it still holds,
    /// else runs the mechanism and checks its placements. Returns whether it reused.
    fn decide(&mut self, contention: f64) -> Result<bool, ReplayError> {
        let cfg = self.cfg;
        let cl = cfg.cluster;
        let pctx = self.pctx(contention);
        let prioritized = self.rules.prioritized;
        self.queue.resort(&self.active, |j| {
            Rank::of(cfg.policy, j, &pctx, prioritized)
        });
        let select = self.rules.selects;
        if select {
            self.buffers.selected.clear();
            self.buffers.selected.extend(self.queue.slots());
            let total_gpus = cl.total_gpus;
            self.rules.of.select(
                &mut self.buffers.selected,
                &self.active,
                total_gpus,
                cfg.mechanism,
            );
        }
        if prioritized {
            self.rules.of.after_order(self.clock.t, &mut self.active);
        }
        let len = if select {
            self.buffers.selected.len()
        } else {
            self.queue.len()
        };
        let order = || {
            if select {
                Slots::Selected(self.buffers.selected.iter())
            } else {
                self.queue.slots()
            }
        };
        if cfg.fast
            && let Some(d) = &self.last
            && d.holds(order(), len)
        {
            // The same decision, so the same outcome of its LP, counted per round.
            self.tally.lp_failures += u64::from(d.stats.lp_failed);
            return Ok(true);
        }
        let mctx = MechCtx {
            cluster: cl,
            profiles: cfg.profiles,
            semantics: cfg.semantics,
            jobs: &self.active,
        };
        let mut stats = MechStats::default();
        let mut pulled = self.last.take().map(|d| d.pulled).unwrap_or_default();
        pulled.clear();
        let mut pull = Pull {
            order: order(),
            pulled: &mut pulled,
            exhausted: false,
        };
        self.buffers.placements.clear();
        cfg.mechanism
            .allocate(&mctx, &mut pull, &mut self.buffers.placements, &mut stats);
        let exhausted = pull.exhausted;
        if stats.lp_failed {
            self.tally.lp_failures += 1;
        }
        let mut allocs = check::allocations(
            &self.buffers.placements,
            &self.active,
            cl,
            cfg.mechanism.name(),
            self.clock.t,
            &mut self.buffers.scratch,
            std::mem::take(&mut self.buffers.allocs),
        )?;
        for a in &mut allocs {
            // A job given what it had last time runs at the rate it had (the rate is a pure
            // function of the allocation; looking it up in the profile is what costs).
            let memo = &mut self.slots[a.slot].memo;
            a.rate = match *memo {
                Some((c, m, n, k, rate))
                    if c == a.cpus && m == a.mem_gb && n == a.servers && k == a.kinds =>
                {
                    rate
                }
                _ => {
                    let spec = &self.active[a.slot].spec;
                    let rate = match cfg.measured.and_then(|m| m.rate(spec, a.cpus, a.mem_gb)) {
                        Some(measured) => measured,
                        None => mctx.rate_spread(a.slot, a.cpus, a.mem_gb, a.servers, a.kinds),
                    };
                    *memo = Some((a.cpus, a.mem_gb, a.servers, a.kinds, rate));
                    rate
                }
            };
        }
        self.buffers.allocs = allocs;
        self.last = Some(Decision {
            pulled,
            exhausted,
            stats,
        });
        Ok(false)
    }

    /// One round at `self.clock.t` over the (non-empty) active jobs.
    fn round(&mut self) -> Result<(), ReplayError> {
        let cfg = self.cfg;
        let cl = cfg.cluster;
        let r = cfg.round_s;
        let t = self.clock.t;
        self.clock.n_rounds += 1;
        if self.clock.n_rounds > cfg.max_rounds {
            return Err(ReplayError::NoProgress(format!(
                "more than {} rounds (raise --max-rounds if the workload is really this long)",
                cfg.max_rounds
            )));
        }
        let started = Instant::now();
        let contention = (self.tally.active_gpus as f64 / cl.total_gpus as f64).max(1.0);
        self.decide(contention)?;
        let decision_s = started.elapsed().as_secs_f64();
        if let Some(audit) = cfg.audit {
            audit(t, &self.active, &self.buffers.placements);
        }

        let stats = &self.last.as_ref().expect("decided").stats;
        let mut row = RoundRow {
            t,
            active: self.active.len(),
            running: self.buffers.placements.len(),
            gpus: 0,
            cpus: 0.0,
            mem_gb: 0.0,
            gpu_use: 0.0,
            cpu_use: 0.0,
            mem_use: 0.0,
            decision_s,
            lp_bound: stats.lp_bound,
            lp_rounded: stats.rounded,
        };
        let mut progressed = false;
        for a in &self.buffers.allocs {
            let j = &self.active[a.slot];
            row.gpus += a.gpus;
            row.cpus += a.cpus;
            row.mem_gb += a.mem_gb;
            row.gpu_use += a.gpus as f64 * (a.rate / j.best_rate).min(1.0);
            row.cpu_use += a.cpus.min(j.best_cpu);
            row.mem_use += a.mem_gb.min(j.best_mem);
            progressed |= a.rate > 0.0;
        }
        self.tally.free_frac = [
            1.0 - row.gpus as f64 / cl.total_gpus as f64,
            1.0 - row.cpus / cl.total_cpus,
            1.0 - row.mem_gb / cl.total_mem_gb,
        ];
        self.rounds.push(row);
        if !progressed && self.streams.arrivals.peek().is_none() {
            self.clock.idle_rounds += 1;
            if self.clock.idle_rounds > 3 {
                return Err(ReplayError::NoProgress(format!(
                    "{} jobs wait at t={t} s and no placement makes progress",
                    self.active.len()
                )));
            }
        } else {
            self.clock.idle_rounds = 0;
        }

        // Every active job counts the round (settled on leaving).
        self.tally.contention_sum += contention;
        let finished = self.progress(t)?;
        self.rekey_runners();
        self.retire(finished)?;
        self.clock.t += r;
        Ok(())
    }

    /// Whether a job's place in the order may change as it runs or stops running (only then
    /// does the engine keep the last round's runners).
    fn runners_rerank(&self) -> bool {
        self.rules.of.runners_move() || self.queue.reranks()
    }

    /// Jobs that ran this round, or stopped running (the rules update what a stopped job
    /// carries): both may have moved in the order.
    fn rekey_runners(&mut self) {
        let cfg = self.cfg;
        if !self.runners_rerank() {
            return;
        }
        let pctx = self.pctx(1.0);
        let prioritized = self.rules.prioritized;
        for &s in &self.buffers.running {
            if self.slots[s].ran_round == self.clock.n_rounds as u32 {
                continue;
            }
            self.rules.of.stopped(&mut self.active[s]);
            let j = &self.active[s];
            self.queue
                .rerank(s, || Rank::of(cfg.policy, j, &pctx, prioritized));
        }
        for a in &self.buffers.allocs {
            let j = &self.active[a.slot];
            self.queue
                .rerank(a.slot, || Rank::of(cfg.policy, j, &pctx, prioritized));
        }
    }

    /// Finished jobs (slots, ascending) leave the active list, to the sink or `done`; the
    /// jobs that ran and did not finish are the next round's runners.
    fn retire(&mut self, mut finished: Vec<usize>) -> Result<(), ReplayError> {
        let cfg = self.cfg;
        if self.runners_rerank() {
            self.buffers.running.clear();
            self.buffers
                .running
                .extend(self.buffers.allocs.iter().map(|a| a.slot));
        }
        if finished.is_empty() {
            return Ok(());
        }
        // Slots move: the decision no longer describes the order's jobs.
        self.last = None;
        finished.sort_unstable();
        let mut left = Vec::with_capacity(finished.len());
        // Jobs moved out of the last slots: (slot now, slot before this round).
        let mut moved: Vec<(usize, usize)> = Vec::new();
        // Highest first, so the last slot, which moves, never is one still to leave.
        for &s in finished.iter().rev() {
            self.settle(s);
            let from = self.active.len() - 1;
            self.queue.swap_remove(s);
            self.slots.swap_remove(s);
            let job = self.active.swap_remove(s);
            self.tally.active_gpus -= u64::from(job.spec.gpus);
            self.tally.n_finished += 1;
            if from != s {
                match moved.iter_mut().find(|m| m.0 == from) {
                    Some(m) => m.0 = s,
                    None => moved.push((s, from)),
                }
            }
            left.push(job);
        }
        // Only jobs from the slots past the new end moved.
        let end = self.active.len();
        self.buffers
            .running
            .retain(|s| finished.binary_search(s).is_err());
        for s in &mut self.buffers.running {
            if *s >= end {
                *s = moved.iter().find(|m| m.1 == *s).expect("moved").0;
            }
        }
        left.sort_by_key(|j| j.spec.id);
        for j in left {
            if let Some((a, b)) = cfg.window
                && (a..=b).contains(&j.spec.id)
            {
                self.tally.window_done += 1;
            }
            match self.streams.sink.as_deref_mut() {
                Some(sink) => sink(j)?,
                None => self.done.push(j),
            }
        }
        if let Some(progress) = cfg.progress {
            progress(if cfg.window.is_some() {
                self.tally.window_done
            } else {
                self.tally.n_finished
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    /// A slot moves with its job and is read for every active job each round.
    #[test]
    fn a_slot_stays_64_bytes() {
        assert!(
            std::mem::size_of::<super::Slot>() <= 64,
            "{}",
            std::mem::size_of::<super::Slot>()
        );
    }
}
