//! Hit ratios of the page cache (LRU) under the access patterns the cache model assumes.

/// Hit ratio of an LRU cache that holds a fraction `x` of a dataset read once per epoch in a
/// fresh uniformly random order: `h(x) = x + (1 - x) ln(1 - x)` (0 at 0, 1 at 1, increasing).
///
/// Derivation: take an item read at relative position `u` of one epoch and `v` of the next
/// (independent, uniform). Between the two reads the job reads the `1 - u` tail of the first
/// permutation and the `v` head of the second; being independent random sets, their union
/// covers `1 - (1 - (1 - u))(1 - v) = 1 - u(1 - v)` of the dataset (in expectation, and sharply
/// so for many items). LRU still holds the item iff fewer than `x` of the dataset was read in
/// between, i.e. iff `u(1 - v) > 1 - x`. With `a = u`, `b = 1 - v` uniform,
/// `P(ab > t) = 1 - t + t ln t` for `t = 1 - x`, which is the formula. The kernel's page cache
/// approximates LRU with an active and an inactive list; how close it comes on a given kernel
/// and job is what `profiler validate` measures.
pub fn page_cache_hit_ratio(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let t = 1.0 - x;
    (x + t * t.ln()).clamp(0.0, x)
}

/// Hit ratio of the page cache when storage delivers blocks of `k` samples per miss (a memory
/// map's read-around) and the samples are read once per epoch in a fresh random order: each
/// block is then read `k` times an epoch at random moments, `h = x - (x - h_1(x)) / k` with
/// `h_1` = [`page_cache_hit_ratio`]. At `k = 1` it is `h_1`; as `k` grows the reads of a block
/// approach independent references, under which LRU hits a fraction `x` of them.
///
/// Why this form: Che's approximation of LRU (a block stays cached for a characteristic time
/// `T` after its last read, `T` set so that a fraction `x` of the blocks is cached) for blocks
/// read `k` times an epoch at uniform random moments gives hit ratios within 0.007 of it for
/// every `k >= 2` and `x` (checked numerically in the tests below).
pub fn block_hit_ratio(x: f64, k: f64) -> f64 {
    let h1 = page_cache_hit_ratio(x);
    if k.is_nan() || k <= 1.0 || x.is_nan() || x <= 0.0 {
        return h1;
    }
    if x >= 1.0 {
        return 1.0;
    }
    (x * (1.0 - 1.0 / k) + h1 / k).clamp(h1, x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Hit ratio of a real LRU cache of `cache` items over `n` items read in a fresh seeded
    /// random order every epoch, over `epochs` epochs after a warm-up epoch.
    fn simulated_lru_hit_ratio(n: usize, cache: usize, epochs: usize) -> f64 {
        use rand_chacha::ChaCha8Rng;
        use rand_core::{Rng, SeedableRng};
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut last_use = vec![0u64; n]; // 0 = never read
        let mut cached = std::collections::BTreeSet::new(); // (last use, item)
        let (mut clock, mut hits, mut reads) = (0u64, 0u64, 0u64);
        for epoch in 0..=epochs {
            let mut order: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            for item in order {
                clock += 1;
                let hit = cached.remove(&(last_use[item], item));
                if epoch > 0 {
                    reads += 1;
                    hits += hit as u64;
                }
                if !hit && cached.len() == cache {
                    let oldest = *cached.iter().next().expect("cache is full");
                    cached.remove(&oldest);
                }
                last_use[item] = clock;
                cached.insert((clock, item));
            }
        }
        hits as f64 / reads as f64
    }

    #[test]
    fn page_cache_hit_ratio_matches_a_simulated_lru() {
        for pct in [10, 25, 50, 75, 90] {
            let n = 4000;
            let simulated = simulated_lru_hit_ratio(n, n * pct / 100, 20);
            let formula = page_cache_hit_ratio(pct as f64 / 100.0);
            assert!(
                (simulated - formula).abs() < 0.01,
                "{pct}% cached: simulated {simulated:.4}, formula {formula:.4}"
            );
            // And far below what a never-evicting cache of the same size would give.
            assert!(formula < pct as f64 / 100.0);
        }
        assert_eq!(page_cache_hit_ratio(0.0), 0.0);
        assert_eq!(page_cache_hit_ratio(1.0), 1.0);
        assert_eq!(page_cache_hit_ratio(f64::NAN), 0.0);
    }

    /// Che's approximation of LRU for blocks read `k` times an epoch at independent uniform
    /// moments: the hit ratio at the characteristic time `t` that caches a fraction `x` of the
    /// blocks (numerical integration and bisection; an independent derivation of
    /// `block_hit_ratio`).
    fn che_hit_ratio(x: f64, k: i32) -> f64 {
        // (part of blocks cached, part of reads that hit) for characteristic time t, in epochs.
        let at = |t: f64| {
            let n = 4000;
            let (mut absent, mut miss) = (0.0, 0.0);
            for i in 0..n {
                let now = (i as f64 + 0.5) / n as f64;
                let this_epoch = now.min(t);
                let last_epoch = (t - this_epoch).min(1.0);
                let before = (t - this_epoch - last_epoch).max(0.0);
                let others = ((1.0 - last_epoch) * (1.0 - before)).powi(k);
                absent += (1.0 - this_epoch).powi(k) * others;
                miss += (1.0 - this_epoch).powi(k - 1) * others;
            }
            (1.0 - absent / n as f64, 1.0 - miss / n as f64)
        };
        let (mut lo, mut hi) = (0.0, 3.0);
        for _ in 0..60 {
            let mid = (lo + hi) / 2.0;
            if at(mid).0 < x { lo = mid } else { hi = mid }
        }
        at((lo + hi) / 2.0).1
    }

    #[test]
    fn block_hit_ratio_agrees_with_ches_approximation() {
        for k in [2, 4, 8, 32, 200] {
            for x in [0.05, 0.25, 0.5, 0.75, 0.95] {
                let che = che_hit_ratio(x, k);
                let ours = block_hit_ratio(x, k as f64);
                assert!(
                    (che - ours).abs() < 0.008,
                    "k = {k}, x = {x}: Che {che}, ours {ours}"
                );
            }
        }
        assert_eq!(block_hit_ratio(0.3, 1.0), page_cache_hit_ratio(0.3));
        assert_eq!(block_hit_ratio(1.0, 50.0), 1.0);
        assert_eq!(block_hit_ratio(f64::NAN, 50.0), 0.0);
    }

    proptest! {
        #[test]
        fn block_hit_ratio_is_monotone_and_between_lru_and_x(
            a in 0.0f64..=1.0, b in 0.0f64..=1.0, k in 1.0f64..1e6,
        ) {
            let (lo, hi) = (a.min(b), a.max(b));
            prop_assert!(block_hit_ratio(lo, k) <= block_hit_ratio(hi, k));
            let h = block_hit_ratio(lo, k);
            prop_assert!(page_cache_hit_ratio(lo) <= h && h <= lo.max(h.min(1.0)));
        }
    }
}
