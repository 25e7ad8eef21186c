//! The policy order of the active jobs. Jobs are identified by their slot in the engine's
//! active list. A policy whose keys change only for the jobs that run ([`KeyUpdate::Static`],
//! [`KeyUpdate::WhenRun`]) keeps an ordered set across rounds, re-keying only those jobs, so a
//! round costs O(jobs run x log queue) however long the queue; any other is re-keyed and
//! re-sorted every round. Both give the same order: (starvation priority, key, arrival, id),
//! a total order since ids are unique.

use super::super::job::JobState;
use super::super::policy::{KeyUpdate, Policy, PolicyCtx};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// A job's place in the order.
#[derive(Debug, Clone, Copy)]
pub struct Rank {
    prio: f64,
    key: f64,
    arrival: f64,
    id: u64,
}

impl Rank {
    /// The rank of `job` now; `prioritized`: its starvation priority sorts first.
    pub fn of(policy: &dyn Policy, job: &JobState, ctx: &PolicyCtx, prioritized: bool) -> Rank {
        Rank {
            prio: if prioritized {
                -f64::from(job.starvation_priority())
            } else {
                0.0
            },
            key: policy.key(job, ctx),
            arrival: job.spec.arrival_s,
            id: job.spec.id,
        }
    }
}

impl Ord for Rank {
    fn cmp(&self, o: &Self) -> Ordering {
        self.prio
            .total_cmp(&o.prio)
            .then(self.key.total_cmp(&o.key))
            .then(self.arrival.total_cmp(&o.arrival))
            .then(self.id.cmp(&o.id))
    }
}
impl PartialOrd for Rank {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl PartialEq for Rank {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Rank {}

/// The order, kept one of two ways.
pub enum Queue {
    /// Ordered across rounds: rank -> slot, and each slot's rank.
    Kept {
        set: BTreeMap<Rank, usize>,
        rank_of: Vec<Rank>,
        update: KeyUpdate,
    },
    /// Re-keyed and sorted each round ([`Queue::resort`]).
    Sorted(Vec<(Rank, usize)>),
}

impl Queue {
    /// A kept order when `update` allows one and `incremental`, else a sorted one.
    pub fn new(update: KeyUpdate, incremental: bool) -> Queue {
        if incremental && update != KeyUpdate::EveryRound {
            Queue::Kept {
                set: BTreeMap::new(),
                rank_of: Vec::new(),
                update,
            }
        } else {
            Queue::Sorted(Vec::new())
        }
    }

    /// Whether the order is kept across rounds.
    pub fn is_kept(&self) -> bool {
        matches!(self, Queue::Kept { .. })
    }

    /// A job admitted into slot `slot` (the next free one) with `rank`.
    pub fn admit(&mut self, slot: usize, rank: Rank) {
        if let Queue::Kept { set, rank_of, .. } = self {
            debug_assert_eq!(slot, rank_of.len());
            set.insert(rank, slot);
            rank_of.push(rank);
        }
    }

    /// Whether [`Queue::rerank`] can move a job (a kept order whose keys change as jobs run).
    pub fn reranks(&self) -> bool {
        matches!(
            self,
            Queue::Kept {
                update: KeyUpdate::WhenRun,
                ..
            }
        )
    }

    /// Slot `slot` ran this round (or the round before): re-rank it if its key may have moved.
    pub fn rerank(&mut self, slot: usize, rank: impl FnOnce() -> Rank) {
        if let Queue::Kept {
            set,
            rank_of,
            update: KeyUpdate::WhenRun,
        } = self
        {
            let new = rank();
            if new != rank_of[slot] {
                set.remove(&rank_of[slot]);
                set.insert(new, slot);
                rank_of[slot] = new;
            }
        }
    }

    /// Slot `slot` leaves (its job finished) and the job in the last slot moves into it, as
    /// `Vec::swap_remove` does to the active list.
    pub fn swap_remove(&mut self, slot: usize) {
        if let Queue::Kept { set, rank_of, .. } = self {
            set.remove(&rank_of[slot]);
            rank_of.swap_remove(slot);
            if let Some(moved) = rank_of.get(slot) {
                set.insert(*moved, slot);
            }
        }
    }

    /// Re-keys every active job and sorts (a sorted queue; a kept one is already in order).
    pub fn resort(&mut self, active: &[JobState], rank: impl Fn(&JobState) -> Rank) {
        if let Queue::Sorted(keyed) = self {
            keyed.clear();
            keyed.extend(active.iter().enumerate().map(|(i, j)| (rank(j), i)));
            keyed.sort_unstable_by_key(|a| a.0);
        }
    }

    /// The slots in order.
    pub fn slots(&self) -> Slots<'_> {
        match self {
            Queue::Kept { set, .. } => Slots::Kept(set.values()),
            Queue::Sorted(keyed) => Slots::Sorted(keyed.iter()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Queue::Kept { set, .. } => set.len(),
            Queue::Sorted(keyed) => keyed.len(),
        }
    }
}

/// The slots of a [`Queue`] in order, or of a selection from it.
pub enum Slots<'a> {
    Kept(std::collections::btree_map::Values<'a, Rank, usize>),
    Sorted(std::slice::Iter<'a, (Rank, usize)>),
    Selected(std::slice::Iter<'a, usize>),
}

impl Iterator for Slots<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        match self {
            Slots::Kept(it) => it.next().copied(),
            Slots::Sorted(it) => it.next().map(|k| k.1),
            Slots::Selected(it) => it.next().copied(),
        }
    }
}
