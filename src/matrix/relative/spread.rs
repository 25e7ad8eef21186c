//! How far another sweep's mean log-ratio of a cell lands from this one's: the spread at the
//! level that repeats independently (Kalibera and Jones, ISMM 2013). The blocks of one live
//! launch share that launch: its threads' placement, its page cache, minutes of the host. On
//! a 2-core VM the input pipeline's ratio at 1 CPU held within 1-2% across one launch's two
//! blocks while two launches' means lay 2-12% apart, so the blocks' spread alone, as if each
//! block were a fresh start, gave intervals that another sweep's mean missed one time in
//! nine. Where a cell's blocks come from several launches and the launches' means spread more
//! than their blocks would give them, the launches are the units: the launch component is
//! estimated from their means, the block component from the blocks around their launch's
//! mean, and the quantile is Student's for the launches' degrees of freedom.

use super::{OWN_SPREAD_DF, Ratios};

/// The variance of a sample about its mean pooled over `groups`, with its degrees of freedom
/// (0 and 0 where no group has two members).
pub(super) fn pooled<'a>(groups: impl IntoIterator<Item = &'a [f64]>) -> (f64, usize) {
    let (mut squares, mut df) = (0.0, 0);
    for g in groups.into_iter().filter(|g| g.len() > 1) {
        let m = crate::stats::mean(g);
        squares += g.iter().map(|x| (x - m).powi(2)).sum::<f64>();
        df += g.len() - 1;
    }
    (if df > 0 { squares / df as f64 } else { 0.0 }, df)
}

/// The log-ratios of `r` by launch, in the order met; a measurement without a launch (a
/// relaunching sweep's launch) is a launch of its own.
fn by_launch(r: &Ratios) -> Vec<Vec<f64>> {
    let mut groups: Vec<(Option<u32>, Vec<f64>)> = Vec::new();
    for (launch, log) in r.launches.iter().zip(&r.logs) {
        match groups.iter_mut().find(|(l, _)| l.is_some() && l == launch) {
            Some((_, g)) => g.push(*log),
            None => groups.push((*launch, vec![*log])),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// The spread of log-ratios at each level, pooled over some cells' ratios.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Levels {
    /// Every block about its cell's mean, as if each were a fresh start.
    blocks: (f64, usize),
    /// Blocks about their launch's mean.
    within_launches: (f64, usize),
    /// Launch means about their cell's mean, over cells measured on two launches or more.
    launch_means: (f64, usize),
    /// Blocks a launch mean of those rests on, on average.
    blocks_per_launch: f64,
}

impl Levels {
    pub(super) fn of<'a>(cells: impl IntoIterator<Item = &'a Ratios>) -> Levels {
        let launches: Vec<Vec<Vec<f64>>> = cells
            .into_iter()
            .map(by_launch)
            .filter(|l| !l.is_empty())
            .collect();
        let all: Vec<Vec<f64>> = (launches.iter()).map(|l| l.concat()).collect();
        let means: Vec<Vec<f64>> = (launches.iter())
            .filter(|l| l.len() > 1)
            .map(|l| l.iter().map(|g| crate::stats::mean(g)).collect())
            .collect();
        let (units, blocks): (usize, usize) = (launches.iter())
            .filter(|l| l.len() > 1)
            .fold((0, 0), |(u, b), l| {
                (u + l.len(), b + l.iter().map(Vec::len).sum::<usize>())
            });
        Levels {
            blocks: pooled(all.iter().map(Vec::as_slice)),
            within_launches: pooled(launches.iter().flatten().map(Vec::as_slice)),
            launch_means: pooled(means.iter().map(Vec::as_slice)),
            blocks_per_launch: if units > 0 {
                blocks as f64 / units as f64
            } else {
                1.0
            },
        }
    }

    /// The variance of the mean log-ratio of `r` and its degrees of freedom, one ratio's
    /// variance never below `floor` (what the windows give it), from these levels pooled over
    /// the sweep's cells, or from `r`'s own where it has units enough for a spread of its own:
    /// cells of one job scatter differently (a job throttled to half a core swings more than at
    /// two). Its units are its launches where it has several, else its blocks.
    pub(super) fn variance_of_mean(&self, r: &Ratios, floor: f64) -> (f64, usize) {
        let launches = by_launch(r).len();
        let own = r.logs.len() > OWN_SPREAD_DF && (launches == 1 || launches > OWN_SPREAD_DF);
        match own {
            true => Levels::of([r]).of_mean(r, launches, floor),
            false => self.of_mean(r, launches, floor),
        }
    }

    /// The variance of the mean of `r` (on `launches` launches) from these levels. The launch
    /// level counts where `r`'s blocks come from two launches or more and the launches' means
    /// spread beyond what their blocks give them; else every block is a unit, as in a
    /// relaunching sweep.
    fn of_mean(&self, r: &Ratios, launches: usize, floor: f64) -> (f64, usize) {
        let k = r.logs.len() as f64;
        let (blocks, df) = self.blocks;
        let block = match self.within_launches.1 {
            0 => blocks.max(floor),
            _ => self.within_launches.0.max(floor),
        };
        let (means, launch_df) = self.launch_means;
        let launch = means - block / self.blocks_per_launch;
        if launches > 1 && launch_df > 0 && launch > 0.0 {
            return (launch / launches as f64 + block / k, launch_df);
        }
        (blocks.max(floor) / k, df)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ratios(launches: &[(u32, f64)]) -> Ratios {
        Ratios {
            launches: launches.iter().map(|l| Some(l.0)).collect(),
            logs: launches.iter().map(|l| l.1).collect(),
            ..Ratios::default()
        }
    }

    /// Two launches whose blocks agree within each launch and disagree between them: the
    /// launches are the units, and the mean's variance is their means' over two.
    #[test]
    fn launches_that_disagree_are_the_units() {
        let cells = [
            ratios(&[(1, -0.50), (1, -0.51), (2, -0.45), (2, -0.46)]),
            ratios(&[(1, -1.20), (1, -1.21), (2, -1.26), (2, -1.25)]),
        ];
        let levels = Levels::of(&cells);
        let (variance, df) = levels.variance_of_mean(&cells[0], 0.0);
        assert_eq!(df, 2, "{levels:?}");
        // Launch means -0.505/-0.455 and -1.205/-1.255: 0.00125 each about their cell's mean.
        assert!((variance - 0.00125 / 2.0).abs() < 1e-9, "{variance}");
        // The blocks as units would say a third of it.
        let (blocks, _) = levels.blocks;
        assert!(blocks / 4.0 < 0.4 * variance, "{blocks}");
    }

    /// Launches that agree as well as their blocks do leave every block a unit, with the
    /// degrees of freedom of all of them.
    #[test]
    fn launches_that_agree_leave_the_blocks_the_units() {
        let cells = [
            ratios(&[(1, -0.50), (1, -0.46), (2, -0.49), (2, -0.47)]),
            ratios(&[(1, -1.20), (1, -1.24), (2, -1.23), (2, -1.21)]),
        ];
        let levels = Levels::of(&cells);
        let (variance, df) = levels.variance_of_mean(&cells[0], 0.0);
        assert_eq!(df, 6, "{levels:?}");
        assert!((variance - levels.blocks.0 / 4.0).abs() < 1e-12);
        // The windows' floor still holds.
        assert_eq!(levels.variance_of_mean(&cells[0], 1.0).0, 0.25);
    }

    /// A relaunching sweep's measurements carry no launch: each is a unit of its own.
    #[test]
    fn measurements_without_a_launch_are_their_own_units() {
        let r = Ratios {
            launches: vec![None, None, None],
            logs: vec![-0.5, -0.4, -0.6],
            ..Ratios::default()
        };
        assert_eq!(by_launch(&r).len(), 3);
        let levels = Levels::of([&r]);
        let (variance, df) = levels.variance_of_mean(&r, 0.0);
        assert_eq!(df, 2);
        assert!((variance - 0.01 / 3.0).abs() < 1e-12, "{variance}");
    }
}
