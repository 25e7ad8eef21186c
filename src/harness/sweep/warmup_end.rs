//! The end of a warm-up on a job that reads a dataset: once the page cache has stopped taking
//! it in. One pass over the dataset caches it on a fresh machine, but not always after another
//! launch under a tight memory cap (which also evicted the job's other files, read again under
//! the new launch's limit): a zarr loader's 1-CPU launch, after its 2-CPU level's lowest cap,
//! had 81-94% of its dataset cached after 1.7 passes. A top-level cell measured from there
//! reads from storage while it is measured and is not the rate of the job with its data
//! cached, the rate every cell the cache model derives from it scales with.

use super::SweepObserver;
use super::memory_inputs::MemoryInputs;
use super::visit::PARTLY_CACHED;
use crate::harness::sweep::plan::{Point, label};

/// Less than this part of the dataset gained over a pass: the cache holds what the level lets
/// it hold.
const MIN_GAIN: f64 = 0.01;

/// Where the warm-up's last look at the page cache left it: the samples the job had read since
/// its first report, and the dataset's bytes cached then.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct CacheLook {
    read: f64,
    cached_bytes: u64,
}

/// What the warm-up does next, from the dataset's bytes in the page cache now.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Next {
    /// The cache holds the dataset, or gained less than [`MIN_GAIN`] of it over the last
    /// pass: measure.
    Measure,
    /// The cache is still taking the dataset in: warm up for another pass, from this look.
    AnotherPass(CacheLook),
}

/// The decision at a look after `read` samples, with `cached` of `dataset` bytes in the page
/// cache and the previous look `last` (none at the first).
fn next(last: Option<CacheLook>, read: f64, cached: u64, dataset: u64) -> Next {
    let look = CacheLook {
        read,
        cached_bytes: cached,
    };
    if cached as f64 >= PARTLY_CACHED * dataset as f64 {
        return Next::Measure;
    }
    match last {
        None => Next::AnotherPass(look),
        Some(l) if cached as f64 >= l.cached_bytes as f64 + MIN_GAIN * dataset as f64 => {
            Next::AnotherPass(look)
        }
        Some(_) => Next::Measure,
    }
}

impl MemoryInputs {
    /// Whether the warm-up of `p` goes on for another pass of `pass` samples, `read` samples
    /// into it: its memory level has room for the dataset beside the `held` bytes the job holds
    /// (anonymous and shared memory, at their most so far), and the page cache holds less than
    /// [`PARTLY_CACHED`] of the dataset and gained over the pass since the last look (`last`,
    /// none yet at the first). Looks once a pass, so a dataset of many files is scanned once
    /// an epoch.
    pub(super) fn cache_still_filling(
        &self,
        observer: &mut dyn SweepObserver,
        p: &Point,
        held: u64,
        last: &mut Option<CacheLook>,
        read: f64,
        pass: f64,
    ) -> bool {
        let Some(ds) = self.dataset.as_ref() else {
            return false;
        };
        let limit = self.levels.bytes().and_then(|b| b.get(p.mem).copied());
        if pass <= 0.0 || limit.is_some_and(|l| l.saturating_sub(held) < ds.page_cache_bytes) {
            return false;
        }
        if let Some(l) = last
            && read - l.read < pass
        {
            return true;
        }
        let cached = ds.cached().bytes;
        match next(*last, read, cached, ds.page_cache_bytes) {
            Next::Measure => false,
            Next::AnotherPass(look) => {
                observer.status(&format!(
                    "{}: the page cache holds {:.0}% of the dataset: warming up for another pass",
                    label(p),
                    100.0 * cached as f64 / ds.page_cache_bytes.max(1) as f64
                ));
                *last = Some(look);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: u64 = 100_000_000;

    #[test]
    fn a_cached_dataset_is_measured_at_once() {
        assert_eq!(next(None, 6000.0, D, D), Next::Measure);
        assert_eq!(next(None, 6000.0, 99_000_000, D), Next::Measure);
    }

    /// A launch that read part of the dataset twice: another pass while the cache gains, then
    /// measured once it holds the dataset.
    #[test]
    fn a_cache_still_taking_the_dataset_in_gets_another_pass() {
        let first = next(None, 6000.0, 70_000_000, D);
        let Next::AnotherPass(look) = first else {
            panic!("{first:?}")
        };
        let second = next(Some(look), 12_000.0, 90_000_000, D);
        assert!(
            matches!(second, Next::AnotherPass(l) if l.read == 12_000.0),
            "{second:?}"
        );
        assert_eq!(next(Some(look), 12_000.0, D, D), Next::Measure);
    }

    /// A level with room for part of the dataset, or a job whose reads bypass the cache: one
    /// look more, then measured as it is.
    #[test]
    fn a_cache_that_holds_what_its_level_allows_is_measured() {
        let Next::AnotherPass(look) = next(None, 6000.0, 40_000_000, D) else {
            panic!("the first look waits a pass")
        };
        assert_eq!(next(Some(look), 12_000.0, 40_500_000, D), Next::Measure);
        assert_eq!(next(Some(look), 12_000.0, 35_000_000, D), Next::Measure);
        let Next::AnotherPass(none) = next(None, 6000.0, 0, D) else {
            panic!("the first look waits a pass")
        };
        assert_eq!(next(Some(none), 12_000.0, 0, D), Next::Measure);
    }
}
