//! Runs scenarios on this machine: a fixed pool of threads takes scenarios in index order from a
//! shared counter; each result lands in its scenario's slot, so the output order (and, since
//! every scenario is deterministic, every value) is the same for any thread count.

use super::error::GridError;
use super::expand::{Scenario, options};
use super::spec::GridSpec;
use super::summary::ScenarioResult;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Progress of a grid run; the CLI draws a bar from it.
pub trait GridObserver: Sync {
    /// `total` scenarios are about to run.
    fn started(&self, _total: usize) {}
    /// One more scenario finished (`id`); `done` have finished so far.
    fn scenario_done(&self, _done: usize, _id: &str) {}
}

/// Reports to no one.
pub struct Unobserved;
impl GridObserver for Unobserved {}

/// Threads to use by default: the machine's available parallelism (its CPU affinity and
/// cgroup quota included), at least one.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Replays `scenarios` of `grid` on `threads` threads (at most one per scenario); results in
/// the order of `scenarios`. The first failure stops the others from starting more and is
/// returned, naming its scenario.
pub fn run_scenarios(
    grid: &GridSpec,
    scenarios: &[Scenario],
    threads: usize,
    observer: &dyn GridObserver,
) -> Result<Vec<ScenarioResult>, GridError> {
    observer.started(scenarios.len());
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Mutex<Vec<Option<Result<ScenarioResult, GridError>>>> =
        Mutex::new((0..scenarios.len()).map(|_| None).collect());
    let worker = || {
        while !failed.load(Ordering::SeqCst) {
            let k = next.fetch_add(1, Ordering::SeqCst);
            let Some(s) = scenarios.get(k) else { break };
            let result = super::super::run(&options(grid, s))
                .map_err(|source| GridError::Scenario {
                    index: s.index,
                    id: s.id.clone(),
                    source,
                })
                .and_then(|mut out| {
                    let run = out.runs.pop().ok_or_else(|| GridError::Scenario {
                        index: s.index,
                        id: s.id.clone(),
                        source: super::super::ReplayError::Internal("no run in the output".into()),
                    })?;
                    Ok(ScenarioResult {
                        scenario: s.clone(),
                        summary: run.summary,
                    })
                });
            if result.is_err() {
                failed.store(true, Ordering::SeqCst);
            }
            slots.lock().unwrap_or_else(|e| e.into_inner())[k] = Some(result);
            observer.scenario_done(done.fetch_add(1, Ordering::SeqCst) + 1, &s.id);
        }
    };
    let threads = threads.clamp(1, scenarios.len().max(1));
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads).map(|_| scope.spawn(worker)).collect();
        for h in handles {
            if h.join().is_err() {
                failed.store(true, Ordering::SeqCst);
            }
        }
    });
    let slots = slots.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut out = Vec::with_capacity(scenarios.len());
    // The failure of the lowest index, so the error does not depend on thread timing either.
    for (slot, s) in slots.into_iter().zip(scenarios) {
        match slot {
            Some(Ok(r)) => out.push(r),
            Some(Err(e)) => return Err(e),
            None if failed.load(Ordering::SeqCst) => {}
            None => {
                return Err(GridError::Scenario {
                    index: s.index,
                    id: s.id.clone(),
                    source: super::super::ReplayError::Internal("a replay thread panicked".into()),
                });
            }
        }
    }
    if out.len() != scenarios.len() {
        return Err(GridError::Replay(super::super::ReplayError::Internal(
            "a replay thread panicked".into(),
        )));
    }
    Ok(out)
}
