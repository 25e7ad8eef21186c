//! Blocks: the sweep measures in blocks so that every cell can be read relative to a reference
//! measured close to it in time (`crate::matrix::relative`). A block is one round of a live
//! launch where re-capping is valid, else one pass of adjacent fresh launches. It opens with the
//! reference point of its parameter combination (the top CPU level at the top memory level) and
//! walks the other points in a fresh random order; a live launch walks the top memory level in
//! rounds, each re-capped back to the reference at its end, which closes its block and opens the
//! next, and the lower memory levels once, descending (as a launch can only walk them). A
//! reference that moved between opening and closing beyond what their windows allow marks the
//! block as drifted, and a measurement that stayed disturbed (other processes took the job's
//! CPUs or kept the rest of the machine busy) marks it as disturbed: the live check leaves both
//! out. The cell model reads every visit, drifted blocks' too, at one probe speed.

use super::SweepObserver;
use crate::harness::measure::job_output::now_unix_s;
use crate::harness::sweep::plan::{Axes, Point, Walk, joins_launch};
use crate::matrix::{BlockReference, Cell, SweepBlock};
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use std::collections::BTreeMap;

/// The blocks of a sweep: those measured so far, the one being measured, and the random order
/// of each block's points.
pub(super) struct Blocks {
    pub closed: Vec<crate::matrix::SweepBlock>,
    pub open: Option<crate::matrix::SweepBlock>,
    /// Orders each block's points afresh.
    pub rng: ChaCha8Rng,
}

impl Blocks {
    /// No block yet, the order seeded from the clock (each sweep walks its own).
    pub fn seeded_now() -> Blocks {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Blocks {
            closed: Vec::new(),
            open: None,
            rng: <ChaCha8Rng as rand_core::SeedableRng>::seed_from_u64(seed),
        }
    }
}

/// How far a block's reference may move beyond what its windows allow before the block is
/// dropped (log ratio). On a 2-core VM the reference of the default sweep moved between -4.1%
/// and +7.2% from opening to closing over 8 blocks of 4 sweeps, 15-40 s apart: a block moves by
/// a few percent anyway, and the interpolation between the two takes a steady move out. A move
/// beyond this is a host that changed speed under the block.
pub const DRIFT_SLACK: f64 = 0.05;

/// `points` shuffled in place (Fisher-Yates).
fn shuffle(points: &mut [Point], rng: &mut ChaCha8Rng) {
    for i in (1..points.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        points.swap(i, j);
    }
}

/// The walk of `points`: `leading` first (those of them among `points`), then the rest in a
/// fresh random order inside each memory level, memory levels descending (the order a live
/// launch can walk them). Given the `reference` a live launch re-caps back to, the top memory
/// level is walked in `rounds` rounds, each ending with the reference and each in a fresh
/// order of the other points: every round is a block of its own, its closing the next one's
/// opening. `again`: the walk measures recorded points too (a later pass).
pub(super) fn walk_order(
    points: Vec<Point>,
    leading: &[Point],
    rounds: Option<(&Point, u32)>,
    again: bool,
    rng: &mut ChaCha8Rng,
) -> Walk {
    let lead: Vec<Point> = (leading.iter())
        .filter(|p| points.contains(p))
        .cloned()
        .collect();
    let mut rest: Vec<Point> = (points.iter())
        .filter(|p| !lead.contains(p))
        .cloned()
        .collect();
    let mut walk = Walk::new(lead.clone(), again);
    let rounds = rounds.filter(|(r, _)| points.contains(r));
    if let Some((reference, rounds)) = rounds {
        let top = |p: &Point| p.mem == reference.mem && p != reference;
        let others: Vec<Point> = points.iter().filter(|p| top(p)).cloned().collect();
        if !others.is_empty() {
            let mut first: Vec<Point> = rest.iter().filter(|p| top(p)).cloned().collect();
            rest.retain(|p| p.mem != reference.mem);
            for round in 0..rounds {
                let mut order = match round {
                    // Leading points that ended with the reference need no round of their own.
                    0 if first.is_empty() && lead.last() == Some(reference) => continue,
                    0 => std::mem::take(&mut first),
                    _ => others.clone(),
                };
                shuffle(&mut order, rng);
                for p in order.into_iter().chain([reference.clone()]) {
                    walk.push(p, again);
                }
            }
        }
    }
    // A stable sort by memory level keeps the shuffle inside each level.
    shuffle(&mut rest, rng);
    rest.sort_by_key(|p| p.mem);
    for p in rest {
        walk.push(p, again);
    }
    walk
}

/// Whether `cell`'s measurement stayed disturbed after its re-measurements ran out.
fn is_disturbed(cell: &Cell) -> bool {
    cell.interference.as_ref().is_some_and(|i| i.disturbed)
}

/// A reference measurement from a measured cell: its rate, interval and measuring span.
pub(super) fn reference_of(cell: &Cell) -> Option<BlockReference> {
    let t = cell.throughput.as_ref()?;
    Some(BlockReference {
        samples_per_s: t.samples_per_s,
        ci95_low: t.ci95_low,
        ci95_high: t.ci95_high,
        windows: t.windows,
        measured_unix_s: cell.measured_unix_s?,
    })
}

impl Blocks {
    /// The first pass's walk of `grid`: the reference first, then the rest ([`walk_order`]).
    pub(super) fn first_walk(
        &mut self,
        axes: &Axes,
        grid: Vec<Point>,
        params: &BTreeMap<String, String>,
    ) -> Walk {
        let reference = axes.reference_point(params);
        let rounds = axes.rounds(&reference);
        walk_order(
            grid,
            std::slice::from_ref(&reference),
            rounds,
            false,
            &mut self.rng,
        )
    }

    /// The live check's first launch: started at `reference`, re-capped down to `point` and
    /// back, one block.
    pub(super) fn check_walk(&mut self, axes: &Axes, reference: &Point, point: &Point) -> Walk {
        let points = vec![reference.clone(), point.clone()];
        let rounds = axes.rounds(reference).map(|(r, _)| (r, 1));
        walk_order(
            points,
            std::slice::from_ref(reference),
            rounds,
            false,
            &mut self.rng,
        )
    }

    /// A later pass's walk of `points`: the reference first, then the rest ([`walk_order`]),
    /// in `measure.rounds` rounds, or one (`one_round`: a narrowing pass, the next block). With
    /// the live check still to make (`live_check_pending`), the pass is its fresh launch: it
    /// starts at the lowest CPU level at the top memory level (where re-capping is the largest
    /// step) and is re-capped up to the reference from there.
    pub(super) fn again_walk(
        &mut self,
        axes: &Axes,
        points: Vec<Point>,
        live_check_pending: bool,
        one_round: bool,
    ) -> Walk {
        let Some(params) = points.first().map(|p| p.params.clone()) else {
            return Walk::default();
        };
        let reference = axes.reference_point(&params);
        let mut leading = vec![reference.clone()];
        if live_check_pending
            && let Some(low) = (points.iter())
                .filter(|p| p.mem == reference.mem)
                .min_by(|a, b| a.cpu.total_cmp(&b.cpu))
                .filter(|p| **p != reference)
        {
            leading.insert(0, low.clone());
        }
        let rounds = axes
            .rounds(&reference)
            .map(|(r, n)| (r, if one_round { 1 } else { n }));
        walk_order(points, &leading, rounds, true, &mut self.rng)
    }

    /// Starts a block for `params`, with `reference_cpu` its reference's CPU level; the last
    /// one is closed already.
    pub(super) fn open(&mut self, params: &BTreeMap<String, String>, reference_cpu: f64) {
        let now = now_unix_s();
        self.open = Some(SweepBlock {
            index: self.closed.iter().map(|b| b.index + 1).max().unwrap_or(0),
            params: params.clone(),
            reference_cpu,
            reference_memory_bytes: 0,
            span_unix_s: [now, now],
            opening: None,
            closing: None,
            drifted: false,
            disturbed: false,
        });
    }

    /// Notes `cell`, a measurement of the reference, as the open block's opening, or, where it
    /// has one (or the launch measured points before it, `started_elsewhere`: that reference
    /// closes their block), its closing. Returns whether the block is to end here and the next
    /// open with the same measurement (`chain`: the launch walks on at the top memory level,
    /// another round).
    pub(super) fn note_reference(
        &mut self,
        cell: &Cell,
        chain: bool,
        started_elsewhere: bool,
    ) -> bool {
        let Some(block) = self.open.as_mut() else {
            return false;
        };
        let measured = reference_of(cell);
        if block.opening.is_none() && !started_elsewhere {
            block.opening = measured;
            return false;
        }
        block.closing = measured;
        chain
    }

    /// Gives the block just opened `cell`, the reference measurement that closed the last one,
    /// as its opening.
    pub(super) fn open_with(&mut self, cell: &Cell) {
        if let Some(next) = self.open.as_mut() {
            next.opening = reference_of(cell);
            // The measurement opens the next block too, disturbed or not.
            next.disturbed = is_disturbed(cell);
        }
    }

    /// Marks the open block disturbed where `cell`, just measured in it, stayed disturbed.
    pub(super) fn note_disturbance(&mut self, cell: &Cell) {
        if let Some(block) = self.open.as_mut() {
            block.disturbed |= is_disturbed(cell);
        }
    }

    /// Gives the open block `cell`, the reference measured to close it, as its closing.
    pub(super) fn note_closing(&mut self, cell: &Cell) {
        if let Some(block) = self.open.as_mut() {
            block.closing = reference_of(cell);
        }
    }

    /// Ends the open block, its reference at `top_memory_bytes`, with its drift judged; says
    /// whether it was kept (a block without a reference measurement says nothing and is not).
    pub(super) fn close(
        &mut self,
        observer: &mut dyn SweepObserver,
        top_memory_bytes: u64,
    ) -> bool {
        let Some(mut block) = self.open.take() else {
            return false;
        };
        if block.opening.is_none() && block.closing.is_none() {
            return false;
        }
        block.span_unix_s[1] = now_unix_s();
        block.reference_memory_bytes = top_memory_bytes;
        if let Some((moved, allowed)) = block.drift_beyond_windows() {
            block.drifted = block.judge_drift(DRIFT_SLACK);
            if block.drifted {
                observer.note(&format!(
                    "block {}: the reference cell moved {:+.1}% while the block was measured, \
                     beyond the {:.1}% its windows allow and the {:.0}% a block moves by \
                     anyway: the live check leaves it out",
                    block.index,
                    100.0 * moved.exp_m1(),
                    100.0 * allowed.exp_m1(),
                    100.0 * DRIFT_SLACK
                ));
            }
        }
        if block.disturbed {
            observer.note(&format!(
                "block {}: other processes disturbed a measurement of it (see the cell's \
                 interference): the live check leaves it out",
                block.index
            ));
        }
        self.closed.push(block);
        true
    }

    /// Whether the launch at `point` should be re-capped back to the reference before it walks
    /// on to `next`: the open block has a reference measurement to compare with, the launch is
    /// still at the top memory level and is leaving it (or has nothing left), and it can re-cap
    /// to the reference.
    pub(super) fn closing_due(&self, axes: &Axes, point: &Point, next: Option<&Point>) -> bool {
        let reference = axes.reference_point(&point.params);
        self.open
            .as_ref()
            .is_some_and(|b| b.opening.is_some() && b.closing.is_none())
            && axes.blocks_per_launch()
            && *point != reference
            && point.mem == reference.mem
            && next.is_none_or(|n| n.mem != reference.mem || n.params != point.params)
            && joins_launch(point, &reference, axes.mode, axes.depends_on_cpu)
    }

    /// The open block's index (0 with none).
    pub(super) fn open_index(&self) -> u32 {
        self.open.as_ref().map_or(0, |b| b.index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    fn p(cpu: f64, mem: usize) -> Point {
        Point {
            cpu,
            mem,
            params: BTreeMap::new(),
        }
    }

    /// The leading points lead, memory levels descend, and the order inside a level changes
    /// from walk to walk.
    #[test]
    fn walks_lead_with_the_reference_and_shuffle_inside_each_memory_level() {
        let points: Vec<Point> = [4.0, 3.0, 2.0, 1.0, 0.5]
            .iter()
            .flat_map(|&c| [p(c, 0), p(c, 1)])
            .collect();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut orders = std::collections::HashSet::new();
        for _ in 0..20 {
            let walk = walk_order(
                points.clone(),
                &[p(0.5, 0), p(4.0, 0)],
                None,
                false,
                &mut rng,
            );
            let walk = walk.steps();
            assert_eq!(walk.len(), points.len());
            assert_eq!((walk[0].clone(), walk[1].clone()), (p(0.5, 0), p(4.0, 0)));
            assert!(
                walk.iter()
                    .skip(1)
                    .zip(walk.iter().skip(2))
                    .all(|(a, b)| a.mem <= b.mem)
            );
            orders.insert(
                walk.iter()
                    .map(|q| (q.cpu * 10.0) as u32)
                    .collect::<Vec<_>>(),
            );
        }
        assert!(
            orders.len() > 10,
            "{} distinct orders in 20 walks",
            orders.len()
        );
        // A leading point that is not among the points is not added.
        let walk = walk_order(vec![p(1.0, 0)], &[p(4.0, 0)], None, false, &mut rng);
        assert_eq!(walk.steps(), vec![p(1.0, 0)]);
    }

    /// In rounds, the top memory level is walked once a round, each round ending with the
    /// reference and holding every other point once, in orders that differ; the lower levels
    /// follow once.
    #[test]
    fn a_live_walk_visits_the_top_level_in_rounds_that_end_with_the_reference() {
        let points: Vec<Point> = [2.0, 1.0, 0.5, 0.25]
            .iter()
            .flat_map(|&c| [p(c, 0), p(c, 1)])
            .collect();
        let reference = p(2.0, 0);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut rounds_seen = std::collections::HashSet::new();
        for _ in 0..10 {
            let walk = walk_order(
                points.clone(),
                &[p(0.25, 0), reference.clone()],
                Some((&reference, 3)),
                true,
                &mut rng,
            )
            .steps();
            assert_eq!(walk[..2], [p(0.25, 0), reference.clone()]);
            // Round 1: the two top points not yet visited; rounds 2 and 3: all three.
            let ends: Vec<usize> = (2..walk.len()).filter(|&i| walk[i] == reference).collect();
            assert_eq!(ends, vec![4, 8, 12], "{walk:?}");
            for (from, to) in [(2, 4), (5, 8), (9, 12)] {
                let round = &walk[from..to];
                assert!(round.iter().all(|q| q.mem == 0 && *q != reference));
                let distinct: std::collections::HashSet<u32> =
                    round.iter().map(|q| (q.cpu * 100.0) as u32).collect();
                assert_eq!(distinct.len(), round.len());
                rounds_seen.insert(
                    round
                        .iter()
                        .map(|q| (q.cpu * 100.0) as u32)
                        .collect::<Vec<_>>(),
                );
            }
            assert_eq!(walk.len(), 13 + 4);
            assert!(walk[13..].iter().all(|q| q.mem == 1));
        }
        assert!(rounds_seen.len() > 4, "{rounds_seen:?}");
    }
}
