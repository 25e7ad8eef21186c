//! Blocks: the sweep measures in blocks so that every cell can be read relative to a reference
//! measured close to it in time (`crate::matrix::relative`). A block is one round of a live
//! launch where re-capping is valid, else one pass of adjacent fresh launches. It opens with the
//! reference point of its parameter combination (the top CPU level at the top memory level) and
//! walks the other points in a fresh random order; a live launch walks the top memory level in
//! rounds, each re-capped back to the reference at its end, which closes its block and opens the
//! next, and the lower memory levels once, descending (as a launch can only walk them). A
//! reference that moved between opening and closing beyond what their windows allow marks the
//! block as drifted, a measurement that stayed disturbed (other processes took the job's CPUs
//! or kept the rest of the machine busy) marks it as disturbed, and another pass is measured in
//! place of each round's worth of blocks left out.

use super::measure::Outcome;
use super::{Run, Sweep, SweepError};
use crate::harness::measure::job_output::now_unix_s;
use crate::harness::sweep::plan::{Point, Walk, joins_launch, label};
use crate::matrix::{
    BlockReference, Cell, SweepBlock, describe_host, describe_relative, relative_rates,
};
use crate::spec::SweepMode;
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
/// Passes measured in place of drifted blocks, at most, per parameter combination.
pub const MAX_EXTRA_PASSES: u32 = 2;

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

impl Sweep<'_> {
    /// Whether each launch is a block of its own: live re-capping, where one launch walks the
    /// points of a pass.
    pub(super) fn blocks_per_launch(&self) -> bool {
        self.axes.mode == SweepMode::Live && !self.opts.spec.depends_on_cpu_level()
    }

    /// The reference point of `params`: the top CPU level at the top memory level.
    pub(super) fn reference_point(&self, params: &BTreeMap<String, String>) -> Point {
        let cpu = match &self.axes.search {
            Some(s) => s.max,
            None => self.axes.cpu.iter().copied().fold(0.0, f64::max),
        };
        Point {
            cpu,
            mem: 0,
            params: params.clone(),
        }
    }

    /// Blocks a launch measures: `measure.rounds` where it walks in rounds, else 1.
    pub(super) fn rounds_per_launch(&self) -> u32 {
        match self.blocks_per_launch() {
            true => self.opts.spec.spec.measure.rounds.max(1),
            false => 1,
        }
    }

    /// The rounds a launch walks the top memory level in, with the reference that ends each:
    /// only where the launch is re-capped back to it (live).
    fn rounds<'a>(&self, reference: &'a Point) -> Option<(&'a Point, u32)> {
        self.blocks_per_launch()
            .then_some((reference, self.rounds_per_launch()))
    }

    /// The first pass's walk of `grid`: the reference first, then the rest ([`walk_order`]).
    pub(super) fn first_walk(
        &mut self,
        grid: Vec<Point>,
        params: &BTreeMap<String, String>,
    ) -> Walk {
        let reference = self.reference_point(params);
        let rounds = self.rounds(&reference);
        walk_order(
            grid,
            std::slice::from_ref(&reference),
            rounds,
            false,
            &mut self.blocks.rng,
        )
    }

    /// A later pass's walk of `points`: the reference first, then the rest ([`walk_order`]).
    /// With the live check still to make, the pass is its fresh launch: it starts at the lowest
    /// CPU level at the top memory level (where re-capping is the largest step) and is re-capped
    /// up to the reference from there.
    pub(super) fn again_walk(&mut self, points: Vec<Point>) -> Walk {
        let Some(params) = points.first().map(|p| p.params.clone()) else {
            return Walk::default();
        };
        let reference = self.reference_point(&params);
        let mut leading = vec![reference.clone()];
        if self.live_check.is_pending()
            && let Some(low) = (points.iter())
                .filter(|p| p.mem == reference.mem)
                .min_by(|a, b| a.cpu.total_cmp(&b.cpu))
                .filter(|p| **p != reference)
        {
            leading.insert(0, low.clone());
        }
        let rounds = self.rounds(&reference);
        walk_order(points, &leading, rounds, true, &mut self.blocks.rng)
    }

    /// Starts a block for `params` (closing one still open).
    pub(super) fn open_block(
        &mut self,
        params: &BTreeMap<String, String>,
    ) -> Result<(), SweepError> {
        self.close_block()?;
        let reference = self.reference_point(params);
        let now = now_unix_s();
        self.blocks.open = Some(SweepBlock {
            index: self
                .blocks
                .closed
                .iter()
                .map(|b| b.index + 1)
                .max()
                .unwrap_or(0),
            params: params.clone(),
            reference_cpu: reference.cpu,
            reference_memory_bytes: 0,
            span_unix_s: [now, now],
            opening: None,
            closing: None,
            drifted: false,
            disturbed: false,
        });
        Ok(())
    }

    /// Notes `cell`, just measured at `p`, where `p` is the reference: as the open block's
    /// opening, or, where it has one, its closing. Where `chain` (the launch walks on at the top
    /// memory level, another round), that block ends and the next opens with the same
    /// measurement.
    pub(super) fn note_reference(
        &mut self,
        p: &Point,
        cell: &Cell,
        chain: bool,
    ) -> Result<(), SweepError> {
        if *p != self.reference_point(&p.params) {
            return Ok(());
        }
        let Some(block) = self.blocks.open.as_mut() else {
            return Ok(());
        };
        let measured = reference_of(cell);
        // A launch that started elsewhere (the live check's) measured points before its first
        // reference: that reference closes their block.
        let launch = self.launches.resumed + self.launches.started;
        let started_elsewhere =
            (self.out.cells.iter()).any(|c| c.visits.iter().any(|v| v.launch == launch));
        if block.opening.is_none() && !started_elsewhere {
            block.opening = measured;
            return Ok(());
        }
        block.closing = measured.clone();
        if chain {
            self.open_block(&p.params)?;
            if let Some(next) = self.blocks.open.as_mut() {
                next.opening = measured;
                // The measurement opens the next block too, disturbed or not.
                next.disturbed = is_disturbed(cell);
            }
        }
        Ok(())
    }

    /// Marks the open block disturbed where `cell`, just measured in it, stayed disturbed.
    pub(super) fn note_disturbance(&mut self, cell: &Cell) {
        if let Some(block) = self.blocks.open.as_mut() {
            block.disturbed |= is_disturbed(cell);
        }
    }

    /// Ends the open block: records it in the header, with its drift judged. A block without a
    /// reference measurement says nothing and is not kept.
    pub(super) fn close_block(&mut self) -> Result<(), SweepError> {
        let Some(mut block) = self.blocks.open.take() else {
            return Ok(());
        };
        if block.opening.is_none() && block.closing.is_none() {
            return Ok(());
        }
        block.span_unix_s[1] = now_unix_s();
        block.reference_memory_bytes = self.mem.levels.bytes().map_or(0, |b| b[0]);
        if let Some((moved, allowed)) = block.drift_beyond_windows() {
            block.drifted = block.judge_drift(DRIFT_SLACK);
            if block.drifted {
                self.observer.warn(&format!(
                    "block {}: the reference cell moved {:+.1}% while the block was measured, \
                     beyond the {:.1}% its windows allow and the {:.0}% a block moves by \
                     anyway: its cells keep their absolute rates, their relative rates leave it \
                     out, and another pass is measured",
                    block.index,
                    100.0 * moved.exp_m1(),
                    100.0 * allowed.exp_m1(),
                    100.0 * DRIFT_SLACK
                ));
            }
        }
        if block.disturbed {
            self.observer.warn(&format!(
                "block {}: other processes disturbed a measurement of it (see the cell's \
                 interference): its cells keep their absolute rates, their relative rates leave \
                 it out, and another pass is measured",
                block.index
            ));
        }
        self.blocks.closed.push(block);
        let blocks = self.blocks.closed.clone();
        self.update_header(|h| h.blocks = blocks)
    }

    /// Blocks of `params` left out so far (drifted or disturbed).
    pub(super) fn left_out_blocks(&self, params: &BTreeMap<String, String>) -> u32 {
        let left_out = (self.blocks.closed.iter()).filter(|b| b.left_out() && &b.params == params);
        left_out.count() as u32
    }

    /// Whether the launch at `point` should be re-capped back to the reference before it walks
    /// on to `next`: the open block has a reference measurement to compare with, the launch is
    /// still at the top memory level and is leaving it (or has nothing left), and it can re-cap
    /// to the reference.
    pub(super) fn closing_due(&self, point: &Point, next: Option<&Point>) -> bool {
        let reference = self.reference_point(&point.params);
        let depends_on_cpu = self.opts.spec.depends_on_cpu_level();
        self.blocks
            .open
            .as_ref()
            .is_some_and(|b| b.opening.is_some() && b.closing.is_none())
            && self.blocks_per_launch()
            && *point != reference
            && point.mem == reference.mem
            && next.is_none_or(|n| n.mem != reference.mem || n.params != point.params)
            && joins_launch(point, &reference, self.axes.mode, depends_on_cpu)
    }

    /// Re-caps the running job to the reference and measures it to close the block. `false`
    /// when the job died meanwhile (the launch is over; nothing is recorded for the reference).
    pub(super) fn measure_closing(
        &mut self,
        run: &mut Run,
        from: &Point,
    ) -> Result<bool, SweepError> {
        let reference = self.reference_point(&from.params);
        self.observer.status(&format!(
            "{}: re-capping to the reference again to close block {}",
            label(&reference),
            self.blocks.open.as_ref().map_or(0, |b| b.index)
        ));
        match self.measure_reference(run, &reference)? {
            Outcome::Cell(cell) => {
                if let Some(block) = self.blocks.open.as_mut() {
                    block.closing = reference_of(&cell);
                }
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
        self.measure(run, reference, std::time::Instant::now())
    }

    /// Gives every cell its rate relative to its blocks' reference, says how tight they are, and
    /// rewrites the file.
    pub(super) fn hold_relative_rates(&mut self) -> Result<(), SweepError> {
        if self.blocks.closed.is_empty() {
            return Ok(());
        }
        let relative = relative_rates(&self.blocks.closed, &self.out.cells);
        for (cell, r) in self.out.cells.iter_mut().zip(relative) {
            cell.relative = r;
        }
        if let Some(line) = describe_relative(&self.out.cells, &self.blocks.closed) {
            match self.out.cells.iter().any(|c| c.relative.is_some()) {
                true => self.observer.note(&line),
                false => self.observer.warn(&line),
            }
        }
        if let Some(line) = describe_host(&self.out.cells, &self.blocks.closed) {
            self.observer.note(&line);
        }
        self.rewrite()
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
