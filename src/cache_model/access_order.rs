//! The page cache's hit ratio from the order in which the job itself read its dataset's files,
//! where the model would otherwise assume a fresh shuffle every epoch.
//!
//! A loader that reads its files in the same order every epoch (WebDataset's shards split
//! between persistent workers, a plain loop over files) misses every read in an LRU cache
//! smaller than the dataset: each file comes back only after all the others. One that reads
//! them in a fresh random order hits as [`super::page_cache_hit_ratio`] says. The job's own
//! trace, recorded on the sweep's first launch, tells which, and more: partial epochs and any
//! order in between. LRU is what a job started under the cap gets; one re-capped from more
//! memory can hit more for a while (Linux's active list keeps pages read twice before).
//!
//! Each read of a file after its first is a hit in an LRU cache of `c` bytes iff the file and
//! the distinct files read since its last read fit in `c` (Mattson's stack distance, here in
//! bytes, computed with a Fenwick tree in O(n log n)). The curve is the part of those re-reads'
//! bytes that hit, at evenly spaced cached fractions of the dataset.

/// Points of a curve: cached fractions `0, 1/n, ..., 1`.
pub const CURVE_POINTS: usize = 128;

/// Files re-read in the trace, as a part of the dataset's bytes, below which the trace says
/// too little of the job's order (most of an epoch must come back at least once).
pub const MIN_REREAD_SHARE: f64 = 0.5;

/// The LRU hit curve of a trace: `opens` are indices into `sizes` (the bytes each file takes
/// in the page cache) in the order the job opened them. Returns `[x, h(x)]` at
/// [`CURVE_POINTS`]` + 1` evenly spaced `x` from 0 to 1 of `sizes`' total, `h` non-decreasing
/// from 0 to 1, or `None` where the files re-read in the trace hold less than
/// [`MIN_REREAD_SHARE`] of the bytes (an index out of range is not a file of the dataset and is
/// skipped).
pub fn lru_hit_curve(opens: &[u32], sizes: &[u64]) -> Option<Vec<[f64; 2]>> {
    let dataset: u64 = sizes.iter().sum();
    if dataset == 0 {
        return None;
    }
    let opens: Vec<usize> = opens
        .iter()
        .map(|&i| i as usize)
        .filter(|&i| i < sizes.len())
        .collect();
    // (bytes an LRU cache needs to hit this re-read, bytes re-read)
    let mut rereads: Vec<(u64, u64)> = Vec::new();
    let mut last_read: Vec<Option<usize>> = vec![None; sizes.len()];
    let mut reread_once = vec![false; sizes.len()];
    // Bytes of each file at the position of its latest read: the sum over (p, i) is what was
    // read, distinct, between a file's last read at p and now.
    let mut latest = Fenwick::new(opens.len());
    for (i, &f) in opens.iter().enumerate() {
        let size = sizes[f];
        if let Some(p) = last_read[f] {
            let between = latest.sum(i) - latest.sum(p + 1);
            rereads.push((between + size, size));
            reread_once[f] = true;
            latest.add(p, -(size as i64));
        }
        latest.add(i, size as i64);
        last_read[f] = Some(i);
    }
    let reread_bytes: u64 = (0..sizes.len())
        .filter(|&f| reread_once[f])
        .map(|f| sizes[f])
        .sum();
    if (reread_bytes as f64) < MIN_REREAD_SHARE * dataset as f64 {
        return None;
    }
    rereads.sort_unstable();
    let total: u64 = rereads.iter().map(|r| r.1).sum();
    let mut curve = Vec::with_capacity(CURVE_POINTS + 1);
    let (mut next, mut hit) = (0, 0u64);
    for k in 0..=CURVE_POINTS {
        let x = k as f64 / CURVE_POINTS as f64;
        let cache = if k == CURVE_POINTS {
            dataset
        } else {
            (x * dataset as f64) as u64
        };
        while next < rereads.len() && rereads[next].0 <= cache {
            hit += rereads[next].1;
            next += 1;
        }
        curve.push([x, hit as f64 / total as f64]);
    }
    Some(curve)
}

/// `h(x)` on a curve of [`lru_hit_curve`]: its value at the last point at or below `x` (0
/// below the curve, 1 from `x = 1`). A step, not a line between points: a repeated scan hits
/// nothing until the whole dataset fits, and a line would give it hits just below.
pub fn curve_hit_ratio(curve: &[[f64; 2]], x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    curve
        .iter()
        .take_while(|p| p[0] <= x)
        .last()
        .map_or(0.0, |p| p[1].clamp(0.0, 1.0))
}

/// Prefix sums over positions with point updates.
struct Fenwick(Vec<i64>);

impl Fenwick {
    fn new(n: usize) -> Self {
        Fenwick(vec![0; n + 1])
    }

    fn add(&mut self, i: usize, v: i64) {
        let mut i = i + 1;
        while i < self.0.len() {
            self.0[i] += v;
            i += i & i.wrapping_neg();
        }
    }

    /// Sum over positions `0..i`.
    fn sum(&self, i: usize) -> u64 {
        let (mut i, mut s) = (i, 0i64);
        while i > 0 {
            s += self.0[i];
            i &= i - 1;
        }
        s.max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache_model::page_cache_hit_ratio;
    use proptest::prelude::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};

    fn shuffled(n: usize, rng: &mut ChaCha8Rng) -> Vec<u32> {
        let mut order: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        order
    }

    /// The same order every epoch: every re-read needs the whole dataset.
    #[test]
    fn a_repeated_scan_hits_only_with_the_whole_dataset() {
        let sizes = vec![4096u64; 500];
        let epoch: Vec<u32> = (0..500).collect();
        let opens: Vec<u32> = epoch.iter().chain(&epoch).chain(&epoch).copied().collect();
        let curve = lru_hit_curve(&opens, &sizes).expect("the dataset is re-read");
        assert_eq!(curve.len(), CURVE_POINTS + 1);
        for &[x, h] in &curve[..CURVE_POINTS] {
            assert_eq!(h, 0.0, "at {x}");
        }
        assert_eq!(curve[CURVE_POINTS], [1.0, 1.0]);
        assert_eq!(curve_hit_ratio(&curve, 0.99), 0.0);
    }

    /// A fresh shuffle every epoch: the curve is the formula the model uses without a trace.
    #[test]
    fn fresh_shuffles_give_the_shuffle_formula() {
        let n = 4000;
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let opens: Vec<u32> = (0..6).flat_map(|_| shuffled(n, &mut rng)).collect();
        let curve = lru_hit_curve(&opens, &vec![40_000; n]).unwrap();
        for x in [0.1, 0.25, 0.5, 0.75, 0.9] {
            let (traced, formula) = (curve_hit_ratio(&curve, x), page_cache_hit_ratio(x));
            assert!(
                (traced - formula).abs() < 0.02,
                "{x}: traced {traced}, formula {formula}"
            );
        }
    }

    /// Bytes, not reads: one large file re-read at once is half the re-read bytes, nine small
    /// ones re-read after everything else the other half.
    #[test]
    fn hits_are_weighted_by_bytes() {
        let mut sizes = vec![1u64; 10];
        sizes[0] = 9;
        let opens = [1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
        let curve = lru_hit_curve(&opens, &sizes).unwrap();
        assert_eq!(
            curve_hit_ratio(&curve, 0.4),
            0.0,
            "9 of 18 units do not hold file 0"
        );
        assert_eq!(
            curve_hit_ratio(&curve, 0.5),
            0.5,
            "file 0 fits: its 9 of 18 units hit"
        );
        assert_eq!(
            curve_hit_ratio(&curve, 0.99),
            0.5,
            "a small file needs all 18"
        );
    }

    #[test]
    fn a_trace_that_rereads_little_is_not_used() {
        let sizes = vec![100u64; 100];
        let opens: Vec<u32> = (0..100).chain(0..40).collect();
        assert_eq!(lru_hit_curve(&opens, &sizes), None);
        assert_eq!(lru_hit_curve(&[], &sizes), None);
        assert_eq!(lru_hit_curve(&[0, 0], &[]), None);
    }

    /// The stack distance against a direct count of the distinct files in between.
    fn naive_curve_point(opens: &[u32], sizes: &[u64], cache: u64) -> f64 {
        let (mut hit, mut total) = (0u64, 0u64);
        for i in 0..opens.len() {
            let f = opens[i];
            if let Some(p) = opens[..i].iter().rposition(|&g| g == f) {
                let mut between: Vec<u32> = opens[p + 1..i].to_vec();
                between.sort_unstable();
                between.dedup();
                let need: u64 =
                    between.iter().map(|&g| sizes[g as usize]).sum::<u64>() + sizes[f as usize];
                total += sizes[f as usize];
                if need <= cache {
                    hit += sizes[f as usize];
                }
            }
        }
        hit as f64 / total as f64
    }

    proptest! {
        #[test]
        fn the_curve_is_the_stack_distance_and_rises_from_0_to_1(
            sizes in proptest::collection::vec(1u64..5000, 2..30),
            picks in proptest::collection::vec(0usize..1000, 0..200),
        ) {
            let n = sizes.len();
            // Every file read twice at least, then whatever order.
            let opens: Vec<u32> = (0..n as u32)
                .chain(0..n as u32)
                .chain(picks.iter().map(|p| (p % n) as u32))
                .collect();
            let curve = lru_hit_curve(&opens, &sizes).expect("every file re-read");
            let dataset: u64 = sizes.iter().sum();
            prop_assert_eq!(curve[0][1], 0.0);
            prop_assert_eq!(curve[CURVE_POINTS][1], 1.0);
            for w in curve.windows(2) {
                prop_assert!(w[0][0] < w[1][0] && w[0][1] <= w[1][1], "{:?}", w);
            }
            for &[x, h] in &curve {
                let cache = if x >= 1.0 { dataset } else { (x * dataset as f64) as u64 };
                let naive = naive_curve_point(&opens, &sizes, cache);
                prop_assert!((h - naive).abs() < 1e-9, "at {}: {} vs {}", x, h, naive);
            }
        }

        #[test]
        fn interpolation_stays_in_0_1_and_rises(
            a in -1.0f64..2.0, b in -1.0f64..2.0,
            picks in proptest::collection::vec(0u32..20, 0..100),
        ) {
            let opens: Vec<u32> = (0..20).chain(0..20).chain(picks).collect();
            let curve = lru_hit_curve(&opens, &[4096; 20]).unwrap();
            let (lo, hi) = (a.min(b), a.max(b));
            let (h_lo, h_hi) = (curve_hit_ratio(&curve, lo), curve_hit_ratio(&curve, hi));
            prop_assert!((0.0..=1.0).contains(&h_lo) && h_lo <= h_hi);
        }
    }
}
