use super::*;
use proptest::prelude::*;

/// A dataset of `n` files of `bytes` each, on the disk of the build tree (a tmpfs keeps every
/// page whatever fadvise says).
fn dataset(n: usize, bytes: usize) -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).expect("tempdir");
    let data = vec![7u8; bytes];
    let paths: Vec<PathBuf> = (0..n)
        .map(|i| {
            let p = dir.path().join(format!("{i:06}.bin"));
            std::fs::write(&p, &data).expect("write");
            p
        })
        .collect();
    (dir, paths)
}

fn on_disk(path: &std::path::Path) -> bool {
    crate::harness::memory::dataset::block_device_of(path).is_some()
}

#[test]
fn every_file_asked_gives_the_exact_count_and_eviction_drops_it() {
    let page = page_size();
    let (dir, paths) = dataset(3000, 3 * page as usize + 100);
    if !on_disk(dir.path()) {
        eprintln!("SKIPPED: the build tree is not on a block device; the cache keeps tmpfs files");
        return;
    }
    let total = paths.len() as u64 * 4 * page;
    assert!(evict(&paths) > 0, "freshly written files hold pages");
    let cold = cached(&paths, total);
    assert_eq!(
        (cold.bytes, cold.half_width_bytes, cold.files_asked),
        (0, None, 3000)
    );
    assert_eq!(evict(&paths), 0, "nothing left to drop");
    for p in paths.iter().step_by(3) {
        let _ = std::fs::read(p).unwrap();
    }
    let warm = cached(&paths, total);
    assert_eq!(warm.bytes, 1000 * 4 * page, "every third file, whole");
}

#[test]
fn a_sample_estimates_what_a_whole_scan_counts_within_its_stated_error() {
    let page = page_size();
    let (dir, paths) = dataset(6000, page as usize * 2);
    if !on_disk(dir.path()) {
        eprintln!("SKIPPED: the build tree is not on a block device; the cache keeps tmpfs files");
        return;
    }
    let total = paths.len() as u64 * 2 * page;
    evict(&paths);
    // A shuffled partial epoch: a fifth of the files, chosen at random, read whole.
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for p in &paths {
        if rng.next_u64() % 5 == 0 {
            let _ = std::fs::read(p).unwrap();
        }
    }
    let whole = cached_with(&paths, total, usize::MAX, 0);
    let sampled = cached_with(&paths, total, 1000, 800);
    let half = sampled.half_width_bytes.expect("sampled");
    eprintln!(
        "whole scan {} bytes, sample of {} files {} +- {} bytes",
        whole.bytes, sampled.files_asked, sampled.bytes, half
    );
    assert_eq!(sampled.files_asked, 800);
    assert!(half > 0 && half < whole.bytes / 4, "{half}");
    assert!(
        sampled.bytes.abs_diff(whole.bytes) <= half,
        "{} vs {} +- {half}",
        sampled.bytes,
        whole.bytes
    );
    // The same files every reading: a second scan agrees exactly.
    assert_eq!(cached_with(&paths, total, 1000, 800), sampled);
}

#[test]
fn samples_are_distinct_sorted_and_repeatable() {
    for (n, k) in [(10, 20), (1000, 1000), (1_000_000, 20_000), (50_001, 3)] {
        let s = sample_indices(n, k);
        assert_eq!(s.len(), k.min(n));
        assert!(s.windows(2).all(|w| w[0] < w[1]) && s.iter().all(|&i| i < n));
        assert_eq!(s, sample_indices(n, k));
    }
}

/// Over many samples of a known population, the stated 95% interval holds the truth about 95%
/// of the time (at least 90% of 400 draws).
#[test]
fn the_stated_error_covers_the_truth() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    // 20,000 files of 1 to 64 pages; files cached whole with a chance growing with their size.
    let population: Vec<(u64, u64)> = (0..20_000)
        .map(|_| {
            let pages = 1 + rng.next_u64() % 64;
            let cached = if rng.next_u64() % 100 < 20 + pages {
                pages
            } else {
                0
            };
            (pages, cached)
        })
        .collect();
    let total_pages: u64 = population.iter().map(|p| p.0).sum();
    let truth: u64 = population.iter().map(|p| p.1).sum();
    let mut covered = 0;
    for draw in 0..400u64 {
        let mut r = ChaCha8Rng::seed_from_u64(100 + draw);
        let sample: Vec<(u64, u64)> = (0..500)
            .map(|_| population[(r.next_u64() % population.len() as u64) as usize])
            .collect();
        let (est, half) = ratio_estimate(&sample, population.len(), total_pages);
        covered += u32::from(est.abs_diff(truth) <= half);
    }
    assert!(covered >= 360, "covered {covered} of 400");
}

proptest! {
    #[test]
    fn estimates_stay_within_the_dataset(
        sample in proptest::collection::vec((0u64..1000, 0u64..1000), 0..50),
        population in 0usize..100_000,
        total_pages in 0u64..10_000_000,
    ) {
        let sample: Vec<(u64, u64)> = sample.into_iter().map(|(p, c)| (p, c.min(p))).collect();
        let (est, half) = ratio_estimate(&sample, population, total_pages);
        prop_assert!(est <= total_pages && half <= total_pages);
    }

    #[test]
    fn a_census_has_no_error(files in proptest::collection::vec((1u64..100, 0u64..100), 2..200)) {
        let files: Vec<(u64, u64)> = files.into_iter().map(|(p, c)| (p, c.min(p))).collect();
        let total: u64 = files.iter().map(|f| f.0).sum();
        let cached: u64 = files.iter().map(|f| f.1).sum();
        let (est, half) = ratio_estimate(&files, files.len(), total);
        prop_assert_eq!(half, 0);
        prop_assert!(est.abs_diff(cached) <= 1);
    }
}
