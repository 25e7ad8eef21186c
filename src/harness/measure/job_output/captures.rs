//! Named captures in a progress regex, and how what they read becomes cumulative samples.
//!
//! | capture | meaning |
//! | --- | --- |
//! | `samples` | cumulative samples |
//! | `iterations` | cumulative iterations |
//! | `epoch` | epoch number, or a fractional epoch (`1.27`) when there is no `iteration` |
//! | `iteration` | iteration within the epoch (restarts every epoch) |
//! | `epoch_length` | iterations per epoch |
//! | `rate` | a rate: samples/s, or per `unit` |
//! | `unit` | `it/s`, `s/it`, `samples/s`, `img/s`, `ms/step`, `kit/s`, ...; also what the counts count |
//! | `iteration_time_s` | seconds per iteration |

use regex::Captures;

/// Largest plausible count or rate in a line: beyond it a value is a parsing accident, and
/// sums of such values could overflow to infinity.
pub const MAX_VALUE: f64 = 1e15;

/// Largest plausible cumulative sample count (a count times samples per iteration).
pub const MAX_SAMPLES: f64 = 1e18;

/// What a count or a rate counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    Samples,
    Iterations,
}

/// A `unit` capture, understood.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    /// `it/s`, `kimg/s`: so many of `Counted` per second, times `scale`.
    PerSecond { counted: Counted, scale: f64 },
    /// `s/it`, `ms/step`: so many seconds (times `seconds`) per one of `Counted`.
    TimePer { counted: Counted, seconds: f64 },
}

fn counted(name: &str) -> Option<(Counted, f64)> {
    let base = |n: &str| match n.to_ascii_lowercase().as_str() {
        "it" | "its" | "iter" | "iters" | "iteration" | "iterations" | "step" | "steps"
        | "batch" | "batches" => Some(Counted::Iterations),
        "sample" | "samples" | "img" | "imgs" | "image" | "images" | "ex" | "example"
        | "examples" | "seq" | "seqs" | "sequence" | "sequences" => Some(Counted::Samples),
        _ => None,
    };
    if let Some(c) = base(name) {
        return Some((c, 1.0));
    }
    // tqdm's unit_scale: `1.23kit/s`.
    let mut chars = name.chars();
    let scale = match chars.next()? {
        'k' => 1e3,
        'M' => 1e6,
        'G' => 1e9,
        _ => return None,
    };
    base(chars.as_str()).map(|c| (c, scale))
}

fn seconds(name: &str) -> Option<f64> {
    match name {
        "s" | "sec" => Some(1.0),
        "ms" => Some(1e-3),
        "us" | "µs" => Some(1e-6),
        _ => None,
    }
}

impl Unit {
    pub fn parse(text: &str) -> Option<Unit> {
        let (num, den) = text.trim().split_once('/')?;
        if let Some(s) = seconds(den) {
            let (counted, scale) = counted(num)?;
            return Some(Unit::PerSecond {
                counted,
                scale: scale / s,
            });
        }
        let s = seconds(num)?;
        let (counted, scale) = counted(den)?;
        Some(Unit::TimePer {
            counted,
            seconds: s / scale,
        })
    }

    fn counted(self) -> Counted {
        match self {
            Unit::PerSecond { counted, .. } | Unit::TimePer { counted, .. } => counted,
        }
    }
}

/// What one line says, before it is placed on the cumulative axis.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Reading {
    pub samples: Option<f64>,
    pub iterations: Option<f64>,
    pub epoch: Option<f64>,
    pub iteration: Option<f64>,
    pub epoch_length: Option<f64>,
    /// Per second, in what the unit counts (samples without a unit).
    pub rate: Option<(f64, Counted)>,
    pub iteration_time_s: Option<f64>,
    /// What `iterations`, `iteration` and `epoch_length` count (a tqdm bar in `img` counts
    /// samples).
    pub counts: Option<Counted>,
}

/// Why a line that matched was not used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Reject {
    #[error("capture `{name}` = {text:?} is not a finite number >= 0 (at most 1e15)")]
    NotANumber { name: &'static str, text: String },
    #[error("capture `{name}` = {text:?}: a rate or time must be above 0")]
    Zero { name: &'static str, text: String },
    #[error("unit {0:?} is not understood (expected e.g. it/s, s/it, samples/s, img/s, ms/step)")]
    Unit(String),
    #[error(
        "the output counts iterations: set throughput.samples_per_iteration or batch_size_per_gpu"
    )]
    NeedsSamplesPerIteration,
    #[error(
        "the output gives epochs without their length: set throughput.epoch_length (iterations per epoch)"
    )]
    NeedsEpochLength,
    #[error("progress went backwards ({from} -> {to} samples)")]
    Backwards { from: f64, to: f64 },
    #[error("timestamp t = {t} is {why}")]
    Time { t: f64, why: &'static str },
    #[error("line is longer than {0} bytes")]
    TooLong(usize),
    #[error("not a progress line: {0}")]
    Malformed(String),
}

/// A number as printed: `12`, `1.5e3`, tqdm's `1.23k`.
pub fn parse_number(text: &str) -> Option<f64> {
    let t = text.trim();
    let (digits, scale) = match t.chars().last()? {
        'k' => (&t[..t.len() - 1], 1e3),
        'M' => (&t[..t.len() - 1], 1e6),
        'G' => (&t[..t.len() - 1], 1e9),
        _ => (t, 1.0),
    };
    // Only plain decimal numbers: Rust would also read "nan", "inf" and "infinity".
    if !digits
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
    {
        return None;
    }
    let v = digits.parse::<f64>().ok()? * scale;
    (v.is_finite() && (0.0..=MAX_VALUE).contains(&v)).then_some(v)
}

impl Reading {
    /// Reads the named captures of a match.
    pub fn from_captures(c: &Captures) -> Result<Reading, Reject> {
        let num = |name: &'static str| -> Result<Option<f64>, Reject> {
            let Some(m) = c.name(name) else {
                return Ok(None);
            };
            parse_number(m.as_str())
                .map(Some)
                .ok_or_else(|| Reject::NotANumber {
                    name,
                    text: m.as_str().chars().take(40).collect(),
                })
        };
        let positive = |name: &'static str| -> Result<Option<f64>, Reject> {
            match num(name)? {
                Some(v) if v <= 0.0 => Err(Reject::Zero {
                    name,
                    text: c[name].chars().take(40).collect(),
                }),
                v => Ok(v),
            }
        };
        let unit = match c.name("unit") {
            Some(u) => Some(
                Unit::parse(u.as_str())
                    .ok_or_else(|| Reject::Unit(u.as_str().chars().take(40).collect()))?,
            ),
            None => None,
        };
        let mut r = Reading {
            samples: num("samples")?,
            iterations: num("iterations")?,
            epoch: num("epoch")?,
            iteration: num("iteration")?,
            epoch_length: positive("epoch_length")?,
            iteration_time_s: positive("iteration_time_s")?,
            counts: unit.map(Unit::counted),
            rate: None,
        };
        if let Some(v) = positive("rate")? {
            r.rate = Some(match unit {
                None => (v, Counted::Samples),
                Some(Unit::PerSecond { counted, scale }) => (v * scale, counted),
                Some(Unit::TimePer { counted, seconds }) => {
                    let per_s = 1.0 / (v * seconds);
                    if counted == Counted::Iterations && r.iteration_time_s.is_none() {
                        r.iteration_time_s = Some(v * seconds);
                    }
                    (per_s, counted)
                }
            });
        }
        Ok(r)
    }
}

/// One progress report: cumulative samples at a time (Unix seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Report {
    pub t: f64,
    pub samples: f64,
    /// Cumulative iterations, when the job reports them.
    pub iterations: Option<f64>,
    /// Seconds of one iteration, when the job prints it.
    pub iteration_time_s: Option<f64>,
}

/// Places readings on the cumulative sample axis: scales iterations by the batch, chains
/// epochs, integrates rates.
#[derive(Debug, Clone, Default)]
pub struct Accumulator {
    pub samples_per_iteration: Option<f64>,
    /// Iterations per epoch from the spec, when the output does not print it.
    pub epoch_length: Option<f64>,
    pub last: Option<Report>,
    /// In-epoch counter without an epoch number: iterations of the epochs before this one.
    epochs_before: f64,
    last_iteration: Option<f64>,
    /// Longest epoch (bar) length printed so far, and the last cumulative count.
    bar_length: Option<f64>,
    last_count: Option<f64>,
}

impl Accumulator {
    pub fn new(samples_per_iteration: Option<f64>, epoch_length: Option<f64>) -> Self {
        Accumulator {
            samples_per_iteration,
            epoch_length,
            ..Default::default()
        }
    }

    fn per(&self, counted: Counted) -> Result<f64, Reject> {
        match counted {
            Counted::Samples => Ok(1.0),
            Counted::Iterations => self
                .samples_per_iteration
                .ok_or(Reject::NeedsSamplesPerIteration),
        }
    }

    /// The report a reading at time `t` makes, `Ok(None)` when it carries no progress.
    pub fn report(&mut self, r: &Reading, t: f64) -> Result<Option<Report>, Reject> {
        let counts = r.counts.unwrap_or(Counted::Iterations);
        // Several loops print bars (validation, a sanity check): the longest is training's.
        // A shorter one is not progress; a longer one takes over, continuing the count.
        if let Some(len) = r.epoch_length {
            match self.bar_length {
                Some(longest) if len < longest => return Ok(None),
                Some(longest) if len > longest => {
                    self.epochs_before = self.last_count.unwrap_or(0.0);
                    self.last_iteration = None;
                }
                _ => {}
            }
            self.bar_length = Some(len);
        }
        let epoch_length = r.epoch_length.or(self.epoch_length);
        // Cumulative count, in `counts`.
        let count = if let Some(i) = r.iterations {
            Some(i)
        } else if let Some(i) = r.iteration {
            Some(match r.epoch {
                Some(e) => e * epoch_length.ok_or(Reject::NeedsEpochLength)? + i,
                None => {
                    // The counter restarted: a new epoch began.
                    if let Some(prev) = self.last_iteration
                        && i < prev
                    {
                        self.epochs_before += epoch_length.unwrap_or(prev);
                    }
                    self.epochs_before + i
                }
            })
        } else if let Some(e) = r.epoch {
            Some(e * epoch_length.ok_or(Reject::NeedsEpochLength)?)
        } else {
            None
        };
        let (samples, iterations) = if let Some(s) = r.samples {
            (s, r.iterations)
        } else if let Some(n) = count {
            let per = self.per(counts)?;
            (n * per, (counts == Counted::Iterations).then_some(n))
        } else {
            let per_s = match (r.rate, r.iteration_time_s) {
                (Some((v, counted)), _) => v * self.per(counted)?,
                (None, Some(s)) => self.per(Counted::Iterations)? / s,
                (None, None) => return Ok(None),
            };
            // A rate: integrate it since the previous report.
            let samples = self
                .last
                .map_or(0.0, |p| p.samples + per_s * (t - p.t).max(0.0));
            (samples, None)
        };
        if !(samples.is_finite() && samples <= MAX_SAMPLES) {
            return Err(Reject::NotANumber {
                name: "samples",
                text: samples.to_string(),
            });
        }
        if let Some(last) = self.last
            && samples < last.samples
        {
            return Err(Reject::Backwards {
                from: last.samples,
                to: samples,
            });
        }
        if r.iteration.is_some() && r.epoch.is_none() {
            self.last_iteration = r.iteration;
        }
        if count.is_some() {
            self.last_count = count;
        }
        let report = Report {
            t,
            samples,
            iterations,
            iteration_time_s: r.iteration_time_s,
        };
        self.last = Some(report);
        Ok(Some(report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;

    fn read(re: &str, line: &str) -> Result<Reading, Reject> {
        let re = Regex::new(re).unwrap();
        Reading::from_captures(&re.captures(line).expect("matches"))
    }

    #[test]
    fn units_say_what_is_counted_and_how_fast() {
        let per_s = |c, scale| Some(Unit::PerSecond { counted: c, scale });
        assert_eq!(Unit::parse("it/s"), per_s(Counted::Iterations, 1.0));
        assert_eq!(Unit::parse("kit/s"), per_s(Counted::Iterations, 1e3));
        assert_eq!(Unit::parse("img/s"), per_s(Counted::Samples, 1.0));
        assert_eq!(Unit::parse("samples/s"), per_s(Counted::Samples, 1.0));
        assert_eq!(
            Unit::parse("ms/step"),
            Some(Unit::TimePer {
                counted: Counted::Iterations,
                seconds: 1e-3
            })
        );
        assert_eq!(
            Unit::parse("s/it"),
            Some(Unit::TimePer {
                counted: Counted::Iterations,
                seconds: 1.0
            })
        );
        assert_eq!(Unit::parse("furlongs/fortnight"), None);
    }

    #[test]
    fn every_rate_shape_becomes_samples_per_second() {
        let re = r"(?P<rate>\S+) (?P<unit>\S+)";
        let mut acc = Accumulator::new(Some(32.0), None);
        for (line, samples_per_s) in [
            ("10 it/s", 320.0),
            ("0.5 s/it", 64.0),
            ("100 samples/s", 100.0),
            ("20 ms/step", 1600.0),
        ] {
            acc.last = Some(Report {
                t: 0.0,
                samples: 0.0,
                iterations: None,
                iteration_time_s: None,
            });
            let r = acc.report(&read(re, line).unwrap(), 2.0).unwrap().unwrap();
            assert!(
                (r.samples / 2.0 - samples_per_s).abs() < 1e-9,
                "{line}: {r:?}"
            );
        }
        // Seconds per iteration alone.
        let r = read(r"(?P<iteration_time_s>\S+)", "0.25").unwrap();
        acc.last = Some(Report {
            t: 0.0,
            samples: 0.0,
            iterations: None,
            iteration_time_s: None,
        });
        let rep = acc.report(&r, 1.0).unwrap().unwrap();
        assert_eq!((rep.samples, rep.iteration_time_s), (128.0, Some(0.25)));
    }

    #[test]
    fn an_in_epoch_counter_is_chained_across_epochs() {
        let with_epoch = r"\[(?P<epoch>\d+)\]\[(?P<iteration>\d+)/(?P<epoch_length>\d+)\]";
        let mut acc = Accumulator::new(Some(2.0), None);
        let s = |acc: &mut Accumulator, re, line| {
            acc.report(&read(re, line).unwrap(), 0.0)
                .unwrap()
                .unwrap()
                .samples
        };
        assert_eq!(s(&mut acc, with_epoch, "[0][90/100]"), 180.0);
        assert_eq!(s(&mut acc, with_epoch, "[1][10/100]"), 220.0);
        // No epoch number: the counter restarting starts the next epoch.
        let bare = r"(?P<iteration>\d+)/(?P<epoch_length>\d+)";
        let mut acc = Accumulator::new(Some(1.0), None);
        let got: Vec<f64> = ["40/50", "50/50", "10/50", "30/50"]
            .iter()
            .map(|l| s(&mut acc, bare, l))
            .collect();
        assert_eq!(got, vec![40.0, 50.0, 60.0, 80.0]);
        // Fractional epochs need the epoch's length.
        let r = read(r"'epoch': (?P<epoch>[\d.]+)", "'epoch': 1.5").unwrap();
        assert_eq!(
            Accumulator::new(Some(8.0), None).report(&r, 0.0),
            Err(Reject::NeedsEpochLength)
        );
        let rep = Accumulator::new(Some(8.0), Some(100.0))
            .report(&r, 0.0)
            .unwrap()
            .unwrap();
        assert_eq!(rep.samples, 1200.0);
    }

    #[test]
    fn non_finite_and_zero_values_are_rejected() {
        // Each of these produced NaN or infinite samples/s before values were checked.
        let rate = r"(?P<rate>\S+)";
        for bad in ["nan", "NaN", "inf", "-inf", "infinity", "1e999", "-3"] {
            assert!(
                matches!(read(rate, bad), Err(Reject::NotANumber { .. })),
                "{bad}"
            );
        }
        assert!(matches!(read(rate, "0"), Err(Reject::Zero { .. })));
        assert!(matches!(
            read(r"(?P<rate>\S+) (?P<unit>\S+)", "0.0 s/it"),
            Err(Reject::Zero { .. })
        ));
        assert!(matches!(
            read(r"(?P<iteration_time_s>\S+)", "0"),
            Err(Reject::Zero { .. })
        ));
        assert!(matches!(
            read(r"(?P<samples>\S+)", "nan"),
            Err(Reject::NotANumber { .. })
        ));
    }

    #[test]
    fn progress_never_goes_backwards() {
        let re = r"(?P<samples>\d+)";
        let mut acc = Accumulator::new(None, None);
        acc.report(&read(re, "100").unwrap(), 0.0).unwrap();
        assert!(matches!(
            acc.report(&read(re, "50").unwrap(), 1.0),
            Err(Reject::Backwards { .. })
        ));
        // The rejected line did not move the baseline.
        assert_eq!(acc.last.unwrap().samples, 100.0);
    }
}
