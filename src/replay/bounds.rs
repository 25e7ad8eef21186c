//! Bounds on what a user can feed the replay: trace rows, cluster sizes, windows, the horizon.
//!
//! Every input is checked against these before it reaches the engine, so that no trace or
//! option can make the replay panic, run forever or allocate without bound. The limits are far
//! above any real cluster or trace (Synergy simulates 128 GPUs for weeks; Philly and Alibaba
//! span months on a few thousand GPUs) and far below where arithmetic loses precision or
//! overflows.

/// Latest arrival, longest recorded duration, and the longest horizon: about 317 years.
pub const MAX_TIME_S: f64 = 1e10;
/// Most work one job may ask for, in samples (a million GPU-years at 30 samples/s per GPU).
pub const MAX_WORK_SAMPLES: f64 = 1e15;
/// Largest CPU or memory request of one job (cores, GB).
pub const MAX_REQUEST: f64 = 1e7;
/// Servers in a cluster, all groups together.
pub const MAX_SERVERS: u64 = 100_000;
/// GPUs on one server.
pub const MAX_GPUS_PER_SERVER: u32 = 4096;
/// Cores on one server.
pub const MAX_CPUS_PER_SERVER: f64 = 1e6;
/// Memory of one server, GB (a petabyte).
pub const MAX_MEM_GB_PER_SERVER: f64 = 1e6;
/// Largest job id a window may name (exact as an f64, no overflow in window arithmetic).
pub const MAX_JOB_ID: u64 = 1 << 52;
/// Most jobs a synthetic workload may generate (its memory grows with the jobs active).
pub const MAX_SYNTHETIC_JOBS: u64 = 10_000_000;
/// Longest line of a CSV trace, bytes (a real row is under 200).
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// Default simulated-time horizon: one year.
pub const DEFAULT_HORIZON_S: f64 = 365.0 * 86400.0;
/// Shortest and longest scheduling round, seconds.
pub const MIN_ROUND_S: f64 = 1e-3;
pub const MAX_ROUND_S: f64 = 7.0 * 86400.0;
/// Most rounds a horizon may span (`horizon / round`): the replay's cost grows with them.
pub const MAX_HORIZON_ROUNDS: f64 = 1e8;

/// A number for a message: `1e300`, not three hundred digits.
pub fn show(x: f64) -> String {
    if x.is_finite() && x != 0.0 && !(1e-4..1e7).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// `Ok(x)` when `x` is finite and in `lo..=hi`, else a message naming `what`.
pub fn in_range(what: &str, x: f64, lo: f64, hi: f64) -> Result<f64, String> {
    if x.is_finite() && (lo..=hi).contains(&x) {
        Ok(x)
    } else {
        Err(format!(
            "{what} {} is not in {}..={}",
            show(x),
            show(lo),
            show(hi)
        ))
    }
}

/// `Ok(x)` when `x` is finite, positive and at most `hi`.
pub fn positive(what: &str, x: f64, hi: f64) -> Result<f64, String> {
    if x.is_finite() && x > 0.0 && x <= hi {
        Ok(x)
    } else {
        Err(format!(
            "{what} {} must be positive and at most {}",
            show(x),
            show(hi)
        ))
    }
}

/// Parses a simulated duration: a number of seconds, or a number with a unit `s`, `m`, `h`,
/// `d`, `w` (`3600`, `90m`, `36h`, `365d`). Finite, positive, at most [`MAX_TIME_S`].
pub fn parse_duration_s(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c),
        _ => (t, 's'),
    };
    let scale = match unit {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86400.0,
        'w' => 7.0 * 86400.0,
        _ => return Err(format!("duration {s:?}: unit must be s, m, h, d or w")),
    };
    let x: f64 = num.trim().parse().map_err(|_| {
        format!(
            "duration {s:?}: expected a number with an optional unit s, m, h, d or w, e.g. 365d"
        )
    })?;
    positive(&format!("duration {s:?} ="), x * scale, MAX_TIME_S).map_err(|e| format!("{e} s"))
}

/// 1-based line of byte offset `byte` in `text` (TOML errors give byte spans).
pub fn line_at(text: &str, byte: usize) -> usize {
    let end = byte.min(text.len());
    1 + text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_show_huge_numbers_briefly() {
        assert_eq!(show(1e300), "1e300");
        assert_eq!(show(-1e15), "-1e15");
        assert_eq!(show(300.5), "300.5");
        assert_eq!(show(f64::NAN), "NaN");
        assert!(
            positive("work", 1e300, 1e15)
                .unwrap_err()
                .contains("work 1e300 must")
        );
    }

    #[test]
    fn durations_with_units() {
        assert_eq!(parse_duration_s("3600"), Ok(3600.0));
        assert_eq!(parse_duration_s("90m"), Ok(5400.0));
        assert_eq!(parse_duration_s(" 2d "), Ok(172800.0));
        assert_eq!(parse_duration_s("1w"), Ok(604800.0));
        for bad in ["", "d", "0", "-1h", "nan", "inf", "1e300", "5x", "1é", "ß"] {
            assert!(parse_duration_s(bad).is_err(), "{bad:?}");
        }
    }
}
