//! "host speed": whether the host is slowing this machine's CPUs in a spell right now. A
//! CPU-bound process capped at half a core runs beside the sweep's probe of the host's speed
//! (`crate::harness::measure::host_probe`) on one CPU for a few seconds. Its CPU time being
//! held to the cap, its rate over one-second windows moves only with the host's speed; the
//! check reports how far it did, how far the probe's speed did, and how much of the rate's
//! swing the probe's speed explains (what a sweep takes out of its cells).

use super::{Check, Verdict};
use crate::harness::cgroup::CgroupRoot;
use crate::harness::measure::host_probe::{Burst, HostProbe, speed_over};
use crate::stats::mean_sd;
use std::time::Duration;

const NAME: &str = "host speed";
/// The reference process's cap, in cores: at half a core the probe runs in the process's
/// throttled half and sees what the host does to that CPU.
const CORES: f64 = 0.5;
/// Windows measured, and how long each is.
const WINDOWS: usize = 10;
const WINDOW_S: f64 = 1.0;
/// Started processes settle for this long before the windows.
const SETTLE: Duration = Duration::from_millis(500);
/// How far the capped process's rate may spread over one-second windows (log standard
/// deviation) on a host that is not in a spell. The cap holds its CPU time to exactly half a
/// CPU-second a second, so what its rate spreads by is the host's speed on that CPU.
const SPELL_SPREAD: f64 = 0.05;

/// What the windows say: the probe's spread, the process's, its spread with the probe's speed
/// taken out (at the slope fitted on the windows) and their correlation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spell {
    pub probe_spread: f64,
    pub job_spread: f64,
    pub left_spread: f64,
    pub correlation: f64,
}

/// The spell statistics of `windows`, each `[process rate, probe speed]`; `None` with fewer
/// than three windows that have both.
pub fn spell_of(windows: &[[f64; 2]]) -> Option<Spell> {
    let (ys, xs): (Vec<f64>, Vec<f64>) = (windows.iter())
        .filter(|[r, s]| *r > 0.0 && *s > 0.0)
        .map(|[r, s]| (r.ln(), s.ln()))
        .unzip();
    if ys.len() < 3 {
        return None;
    }
    let ((my, sy), (mx, sx)) = (mean_sd(&ys), mean_sd(&xs));
    let cov = (ys.iter().zip(&xs))
        .map(|(y, x)| (y - my) * (x - mx))
        .sum::<f64>()
        / (ys.len() - 1) as f64;
    // A rate that falls as the host speeds up is not the host's doing: nothing to take out.
    let slope = if sx > 0.0 {
        (cov / (sx * sx)).max(0.0)
    } else {
        0.0
    };
    let left: Vec<f64> = (ys.iter().zip(&xs)).map(|(y, x)| y - slope * x).collect();
    Some(Spell {
        probe_spread: sx,
        job_spread: sy,
        left_spread: mean_sd(&left).1,
        correlation: if sx > 0.0 && sy > 0.0 {
            cov / (sx * sy)
        } else {
            0.0
        },
    })
}

/// The check, where the cgroup checks passed (`caps`).
pub fn check(parent: &str, caps: bool) -> Check {
    if !caps {
        return Check::with(
            NAME,
            Verdict::Skip,
            vec!["the cgroup checks failed".into()],
            "fix the cgroup checks above",
        );
    }
    match measure(parent) {
        Ok(windows) => verdict(&windows),
        Err(e) => Check::with(
            NAME,
            Verdict::Warn,
            vec![format!(
                "could not run the probe beside a capped process: {e}"
            )],
            "sweeps then keep the host's spells in their cells; check the kernel log",
        ),
    }
}

/// `[process rate, probe speed]` over each window, from the two started side by side on the
/// first of the profiler's CPUs.
fn measure(parent: &str) -> Result<Vec<[f64; 2]>, String> {
    let root = CgroupRoot::open(parent).map_err(|e| e.to_string())?;
    let cpu = *root.cpus().first().ok_or("no CPU to run on")?;
    let job_cgroup = root
        .create_launch("doctor-host-job", 0)
        .map_err(|e| e.to_string())?;
    job_cgroup
        .set_cpu_on(CORES, &[cpu])
        .map_err(|e| e.to_string())?;
    let job = HostProbe::start_busy(job_cgroup, cpu).map_err(|e| e.to_string())?;
    let probe_cgroup = root
        .create_launch("doctor-host-probe", 0)
        .map_err(|e| e.to_string())?;
    let probe = HostProbe::start(probe_cgroup, &[cpu]).map_err(|e| e.to_string())?;
    std::thread::sleep(SETTLE);
    let start = crate::harness::measure::job_output::now_unix_s();
    std::thread::sleep(Duration::from_secs_f64(WINDOWS as f64 * WINDOW_S));
    let span = [start, start + WINDOWS as f64 * WINDOW_S];
    let (job_bursts, probe_bursts) = (job.bursts_within(span), probe.bursts_within(span));
    Ok((0..WINDOWS)
        .filter_map(|i| {
            let w = [
                start + i as f64 * WINDOW_S,
                start + (i + 1) as f64 * WINDOW_S,
            ];
            let speed = speed_over(&probe_bursts, &[cpu], w)?;
            Some([work_within(&job_bursts, w) / WINDOW_S, speed])
        })
        .collect())
}

/// The work of `bursts` (one process's records, in order) between the two ends of `span`,
/// read off their cumulative work at each end by linear interpolation between records: a
/// count of the records ending inside would be off by a record's worth, 10% of a window.
fn work_within(bursts: &[Burst], span: [f64; 2]) -> f64 {
    let mut cumulative = Vec::with_capacity(bursts.len());
    let mut total = 0.0;
    for b in bursts {
        total += b.work;
        cumulative.push((b.unix_s, total));
    }
    let at = |t: f64| -> Option<f64> {
        let i = cumulative.iter().position(|&(u, _)| u >= t)?;
        let (u1, w1) = cumulative[i];
        if u1 == t {
            return Some(w1);
        }
        let (u0, w0) = *cumulative.get(i.checked_sub(1)?)?;
        Some(w0 + (w1 - w0) * (t - u0) / (u1 - u0).max(f64::MIN_POSITIVE))
    };
    match (at(span[0]), at(span[1])) {
        (Some(a), Some(b)) => b - a,
        _ => 0.0,
    }
}

fn verdict(windows: &[[f64; 2]]) -> Check {
    let Some(s) = spell_of(windows) else {
        return Check::with(
            NAME,
            Verdict::Warn,
            vec![format!(
                "the probe got time in {} of {WINDOWS} windows beside a process capped at \
                 {CORES} CPU",
                windows.len()
            )],
            "the machine is busy: profile on an idle machine",
        );
    };
    let facts = vec![format!(
        "over {} 1-s windows, a CPU-bound process held to {CORES} CPU by its cap ran at a rate \
         spread ±{:.1}% (the host's speed on its CPU; under ±{:.0}% outside a spell); the \
         probe's speed beside it spread ±{:.1}%, and with it taken out the process's rate \
         spread ±{:.1}% (correlation {:.2})",
        windows.len(),
        100.0 * s.job_spread,
        100.0 * SPELL_SPREAD,
        100.0 * s.probe_spread,
        100.0 * s.left_spread,
        s.correlation
    )];
    if s.job_spread < SPELL_SPREAD {
        return Check::pass(NAME, facts);
    }
    Check::with(
        NAME,
        Verdict::Warn,
        facts,
        "the host is slowing this machine in a spell: a sweep now takes longer and its cells \
         are wider where the probe cannot take the spell out (whole busy cores, jobs not bound \
         by their CPU); sweep later, or run `profiler doctor` again to see it pass",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process whose rate follows the probe's speed exactly has nothing left once it is
    /// taken out; the spreads are the logs' standard deviations.
    #[test]
    fn a_rate_that_follows_the_probe_leaves_nothing() {
        let speeds = [1.0, 0.8, 0.9, 1.1, 0.7];
        let windows: Vec<[f64; 2]> = speeds.iter().map(|s| [500.0 * s, 3e8 * s]).collect();
        let s = spell_of(&windows).unwrap();
        assert!((s.correlation - 1.0).abs() < 1e-9, "{s:?}");
        assert!(s.left_spread < 1e-9, "{s:?}");
        assert!((s.probe_spread - s.job_spread).abs() < 1e-12, "{s:?}");
        assert!(spell_of(&windows[..2]).is_none());
    }

    /// The work between two instants is read off the cumulative work, interpolated between
    /// records: a window that cuts records in half counts half of each.
    #[test]
    fn work_is_interpolated_between_records() {
        let bursts: Vec<Burst> = (0..10)
            .map(|i| Burst {
                cpu: 0,
                unix_s: i as f64 * 0.1,
                work: 100.0,
                cpu_s: 0.05,
            })
            .collect();
        assert!((work_within(&bursts, [0.05, 0.55]) - 500.0).abs() < 1e-9);
        assert!((work_within(&bursts, [0.0, 0.9]) - 900.0).abs() < 1e-9);
        assert_eq!(
            work_within(&bursts, [0.5, 2.0]),
            0.0,
            "past the last record"
        );
    }

    /// A capped process whose rate swings past the spell's spread is a spell, and the check
    /// warns; a steady one passes.
    #[test]
    fn a_swinging_rate_is_a_spell() {
        let wide: Vec<[f64; 2]> = [1.0, 0.7, 1.0, 0.8, 1.0]
            .iter()
            .map(|s| [500.0 * s, 3e8 * s])
            .collect();
        assert_eq!(verdict(&wide).verdict, Verdict::Warn);
        let quiet: Vec<[f64; 2]> = [1.0, 0.99, 1.01, 1.0, 1.0]
            .iter()
            .map(|s| [500.0 * s, 3e8 * s])
            .collect();
        assert_eq!(verdict(&quiet).verdict, Verdict::Pass);
    }
}
