//! Reading the job's own progress reports: JSON lines in a progress file (recommended), or
//! what the job prints, read by a preset (`format`) or a regex with named captures. Everything
//! is tailed from files, so a chatty job never blocks on a pipe.
//!
//! Every report is checked before it is used: a value that is not a finite number, a rate of
//! zero, a count that goes backwards or a timestamp far from now is rejected, counted, and
//! warned about once per kind, so that no NaN or unbounded window reaches a matrix.

mod captures;
#[cfg(test)]
mod fuzz;
mod json;
mod presets;

pub use captures::{
    Accumulator, Counted, MAX_SAMPLES, MAX_VALUE, Reading, Reject, Report, Unit, parse_number,
};
pub use json::{JsonLine, parse_json_line};

use crate::spec::log_format::Preset;
use crate::spec::{JobSpec, LogStream, ThroughputSpec};
use regex::Regex;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

pub fn now_unix_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A progress-file timestamp more than this far ahead of the clock is rejected.
pub const MAX_FUTURE_S: f64 = 60.0;
/// ... and more than this far behind it (the file is new for every launch).
pub const MAX_PAST_S: f64 = 3600.0;
/// A line without an end after this many bytes is dropped (a job printing without newlines).
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// The files a launch writes, of which the spec's protocol reads some.
#[derive(Debug, Clone)]
pub struct ProgressPaths {
    pub progress_file: PathBuf,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

/// How lines become readings.
enum Parser {
    Json,
    /// `what`: the output expected ("tqdm progress output"); `matcher`: what a line must match
    /// ("the preset `tqdm`"), both for messages.
    Log {
        regexes: Vec<Regex>,
        what: String,
        matcher: String,
    },
}

/// A line quoted in a message is cut to this many characters.
const QUOTE_CHARS: usize = 160;

/// One tailed file.
struct Tailed {
    path: PathBuf,
    offset: u64,
    /// Bytes after the last line end.
    partial: Vec<u8>,
    /// When the first of those bytes were read (Unix seconds).
    partial_since: Option<f64>,
}

/// Tails the job's files and turns new complete lines into reports.
pub struct ProgressTail {
    files: Vec<Tailed>,
    parser: Parser,
    acc: Accumulator,
    /// Lines rejected (malformed progress-file lines, unusable values); the first one is kept
    /// for messages.
    pub bad_lines: u64,
    pub first_bad_line: Option<String>,
    warned: Vec<std::mem::Discriminant<Reject>>,
    warnings: Vec<String>,
    /// What was read, for the message when no progress comes: see [`ProgressTail::describe_silence`].
    seen: Seen,
    /// The launch's output files this tail does not read (the other stream; stdout and stderr
    /// for the progress-file protocol): output there explains some silences.
    unread: Vec<PathBuf>,
    /// The job runs under a pseudo-terminal.
    terminal: bool,
}

/// What a tail has read so far.
#[derive(Debug, Clone, Default)]
struct Seen {
    /// Non-empty lines read.
    lines: u64,
    /// Lines that gave a report.
    reports: u64,
    /// The last non-empty line read, shortened.
    last_line: Option<String>,
    /// A line of a table drawn by Rich (box-drawing corners) was read.
    rich_table: bool,
}

/// Corners of the tables Rich draws (Lightning's model summary among them).
const RICH_TABLE_CORNERS: [char; 4] = ['┏', '┡', '┗', '└'];

impl ProgressTail {
    /// Reads what `spec.throughput` says from the files of one launch.
    pub fn new(spec: &JobSpec, paths: ProgressPaths) -> Self {
        let (parser, files, acc) = match &spec.throughput {
            ThroughputSpec::ProgressFile => (
                Parser::Json,
                vec![paths.progress_file.clone()],
                Accumulator::new(None, None),
            ),
            ThroughputSpec::StdoutRegex {
                regex,
                samples_per_iteration: spi,
                epoch_length,
            } => (
                Parser::Log {
                    // Validated when the spec was loaded.
                    regexes: Regex::new(regex).into_iter().collect(),
                    what: format!("stdout lines matching /{regex}/"),
                    matcher: format!("the regex /{regex}/"),
                },
                vec![paths.stdout.clone()],
                Accumulator::new(spec.samples_per_iteration(*spi), *epoch_length),
            ),
            ThroughputSpec::Log(log) => {
                let preset = log.format.as_deref().and_then(Preset::from_name);
                let (regexes, what, matcher) = match (preset, &log.regex) {
                    (Some(p), _) => (
                        p.regexes(log.epoch_length.is_some()),
                        format!("{} progress output", p.name()),
                        format!("the preset `{}`", p.name()),
                    ),
                    (None, Some(re)) => (
                        Regex::new(re).into_iter().collect(),
                        format!("lines matching /{re}/"),
                        format!("the regex /{re}/"),
                    ),
                    (None, None) => (
                        Vec::new(),
                        "nothing (no format or regex)".into(),
                        "nothing (no format or regex)".into(),
                    ),
                };
                let files = match log.stream {
                    LogStream::Stdout => vec![paths.stdout.clone()],
                    LogStream::Stderr => vec![paths.stderr.clone()],
                    LogStream::Both => vec![paths.stdout.clone(), paths.stderr.clone()],
                };
                (
                    Parser::Log {
                        regexes,
                        what,
                        matcher,
                    },
                    files,
                    Accumulator::new(
                        spec.samples_per_iteration(log.samples_per_iteration),
                        log.epoch_length,
                    ),
                )
            }
        };
        let unread = [paths.stdout, paths.stderr]
            .into_iter()
            .filter(|p| !files.contains(p))
            .collect();
        ProgressTail {
            unread,
            terminal: spec.throughput.terminal(),
            seen: Seen::default(),
            files: files
                .into_iter()
                .map(|path| Tailed {
                    path,
                    offset: 0,
                    partial: Vec::new(),
                    partial_since: None,
                })
                .collect(),
            parser,
            acc,
            bad_lines: 0,
            first_bad_line: None,
            warned: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn files_display(&self) -> String {
        self.files
            .iter()
            .map(|f| f.path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What the job is expected to write, for time-out messages, which reads on from
    /// "expected ": the same as [`ProgressTail::describe_silence`], which also says what did
    /// arrive (a message blaming output buffering on a job whose lines arrived but did not
    /// match sent people the wrong way).
    pub fn expectation(&self) -> String {
        self.describe_silence()
    }

    /// What was expected and why none of it came, for the note of a cell without progress; it
    /// reads on from "expected ". It tells apart a job that wrote nothing where it is read
    /// (output held back in the job, or written to the stream not read) from one whose lines
    /// arrived but did not match (quoting the last one), and one whose progress stopped.
    pub fn describe_silence(&self) -> String {
        let expected = match &self.parser {
            Parser::Json => format!(
                "JSON lines like {{\"samples\": 1024, \"t\": 1700000000.5}} appended to ${} ({})",
                crate::harness::process::launch::PROGRESS_FILE_ENV,
                self.files_display()
            ),
            Parser::Log { what, .. } => format!("{what} ({})", self.files_display()),
        };
        let last = || {
            self.seen
                .last_line
                .as_deref()
                .map_or(String::new(), |l| format!(" (last line seen: `{l}`)"))
        };
        let why = if self.seen.lines == 0 {
            let mut why = match &self.parser {
                Parser::Json => "nothing was written to it".to_string(),
                Parser::Log { .. } => "no output at all from the job there (a Python job must not \
                     buffer its output: PYTHONUNBUFFERED=1 or python -u)"
                    .to_string(),
            };
            for path in &self.unread {
                let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
                if bytes > 0 {
                    let hint = match &self.parser {
                        Parser::Json => "progress printed there is read with protocol = \"log\"",
                        Parser::Log { .. } => "throughput.stream = \"both\" reads it too",
                    };
                    why.push_str(&format!(
                        "; the job wrote {bytes} bytes to {}, which is not read ({hint})",
                        path.display()
                    ));
                }
            }
            why
        } else if self.seen.reports == 0 {
            let lines = self.seen.lines;
            match &self.parser {
                Parser::Json => format!(
                    "{lines} line(s) arrived but none was a usable progress report{}",
                    last()
                ),
                Parser::Log { matcher, .. } if self.bad_lines == 0 => format!(
                    "output arrived ({lines} lines) but no line matched {matcher}{}",
                    last()
                ),
                Parser::Log { .. } => format!(
                    "output arrived ({lines} lines) but no line gave usable progress{}",
                    last()
                ),
            }
        } else {
            let ago = self.acc.last.map_or(String::new(), |r| {
                format!(" {:.0} s ago", (now_unix_s() - r.t).max(0.0))
            });
            format!(
                "progress stopped: the last of {} progress lines came{ago}{}",
                self.seen.reports,
                last()
            )
        };
        let rich = if self.seen.rich_table && self.seen.reports == 0 && !self.terminal {
            "; the output stops at a table drawn by Rich, whose progress bars draw only on a \
             terminal (Lightning's default bar where `rich` is installed): use format = \
             \"lightning\", or set throughput.terminal = true to run the job under a \
             pseudo-terminal"
        } else {
            ""
        };
        format!("{expected}; {why}{rich}")
    }

    /// Warnings about rejected lines since the last call: the first of each kind.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Reads what was appended since the last call.
    pub fn poll(&mut self) -> Vec<Report> {
        let now = now_unix_s();
        let mut lines = Vec::new();
        for f in &mut self.files {
            read_lines(f, now, &mut lines);
        }
        // Lines of several files in the order they were written, as far as reading tells.
        lines.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut reports = Vec::new();
        for (t, line) in lines {
            if let Ok(l) = &line {
                self.see(l);
            }
            match line.and_then(|l| self.parse_line_at(&l, t)) {
                Ok(Some(r)) => {
                    self.seen.reports += 1;
                    reports.push(r);
                }
                Ok(None) => {}
                Err(e) => self.reject(e),
            }
        }
        reports
    }

    /// Counts a line read, keeping it (shortened) for messages.
    fn see(&mut self, raw: &str) {
        let line = clean_line(raw);
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        self.seen.lines += 1;
        self.seen.rich_table |= line.contains(RICH_TABLE_CORNERS);
        let mut quoted: String = line.chars().take(QUOTE_CHARS).collect();
        if quoted.len() < line.len() {
            quoted.push('…');
        }
        self.seen.last_line = Some(quoted);
    }

    fn reject(&mut self, e: Reject) {
        self.bad_lines += 1;
        let message = e.to_string();
        if self.first_bad_line.is_none() {
            self.first_bad_line = Some(message.clone());
        }
        let kind = std::mem::discriminant(&e);
        if !self.warned.contains(&kind) {
            self.warned.push(kind);
            self.warnings.push(format!(
                "ignored a progress line ({message}); further ones are counted"
            ));
        }
    }

    /// One complete line, written at `now` as far as reading tells (see [`read_lines`]).
    fn parse_line_at(&mut self, raw: &str, now: f64) -> Result<Option<Report>, Reject> {
        let line = clean_line(raw);
        let line = line.trim();
        if line.is_empty() {
            return Ok(None);
        }
        match &self.parser {
            Parser::Json => parse_json_report(&mut self.acc, line, now),
            Parser::Log { regexes, .. } => parse_log_line(regexes, &mut self.acc, line, now),
        }
    }
}

/// A progress-file line read at `now`: its report, or why it was rejected.
pub fn parse_json_report(
    acc: &mut Accumulator,
    line: &str,
    now: f64,
) -> Result<Option<Report>, Reject> {
    let j = parse_json_line(line)?;
    let t = j.t.unwrap_or(now);
    check_time(t, now, acc.last.map(|l| l.t))?;
    let reading = Reading {
        samples: Some(j.samples),
        iterations: j.iterations,
        ..Reading::default()
    };
    acc.report(&reading, t)
}

/// An output line read at `now` by the first of `regexes` that matches it: its report,
/// nothing (not a progress line), or why it was rejected.
pub fn parse_log_line(
    regexes: &[Regex],
    acc: &mut Accumulator,
    line: &str,
    now: f64,
) -> Result<Option<Report>, Reject> {
    let line = clean_line(line);
    let Some(c) = regexes.iter().find_map(|re| re.captures(&line)) else {
        return Ok(None);
    };
    let reading = Reading::from_captures(&c)?;
    // The time is the reader's, not the job's: lines of two streams whose times cross (a bar
    // redrawn on stderr, read once the next redraw starts, beside stdout) keep their order.
    let now = acc.last.map_or(now, |l| now.max(l.t));
    check_time(now, now, None)?;
    acc.report(&reading, now)
}

/// Rejects timestamps that would make the rate windows meaningless or unbounded.
fn check_time(t: f64, now: f64, previous: Option<f64>) -> Result<(), Reject> {
    let why = if !t.is_finite() {
        "not a number"
    } else if t > now + MAX_FUTURE_S {
        "in the future (t is Unix time in seconds)"
    } else if t < now - MAX_PAST_S {
        "more than an hour in the past (t is Unix time in seconds, not a monotonic clock)"
    } else if previous.is_some_and(|p| t < p) {
        "earlier than the previous report"
    } else {
        return Ok(());
    };
    Err(Reject::Time { t, why })
}

/// Drops what only matters on a terminal: backspaces (Keras redraws) and ANSI escape
/// sequences (colours, cursor moves).
pub fn clean_line(raw: &str) -> std::borrow::Cow<'_, str> {
    if !raw.contains(['\u{8}', '\u{1b}']) {
        return raw.into();
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{8}' => {}
            '\u{1b}' => {
                // CSI: ESC [ parameters final-byte.
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
            }
            c => out.push(c),
        }
    }
    out.into()
}

/// Appends the complete lines added to `f` since the last call, read at `now`, each with the
/// time it was written as far as reading tells. A carriage return ends a line as a newline does:
/// progress bars redraw themselves with `\r` and never end the line, so a redraw is complete
/// only once the next one starts. It was written when its first bytes were read, not then: a
/// bar redrawn every step would otherwise be timed one step late, and the rate over a window
/// be off by the difference of two step times.
fn read_lines(f: &mut Tailed, now: f64, lines: &mut Vec<(f64, Result<String, Reject>)>) {
    let Ok(mut file) = File::open(&f.path) else {
        return;
    };
    let mut buf = Vec::new();
    if file.seek(SeekFrom::Start(f.offset)).is_err() || file.read_to_end(&mut buf).is_err() {
        return;
    }
    f.offset += buf.len() as u64;
    let since = f
        .partial_since
        .filter(|_| !f.partial.is_empty() && f.partial.len() <= MAX_LINE_BYTES)
        .unwrap_or(now);
    let mut complete = Vec::new();
    split_lines(&mut f.partial, &buf, &mut complete);
    let ended = !complete.is_empty();
    // The first line completed is the one begun in an earlier read, if any.
    lines.extend(
        complete
            .into_iter()
            .enumerate()
            .map(|(k, l)| (if k == 0 { since } else { now }, l)),
    );
    f.partial_since = match (f.partial.is_empty(), ended) {
        (true, _) => None,
        (false, false) => Some(since),
        (false, true) => Some(now),
    };
}

/// Splits `partial + buf` at `\n` and `\r`, keeping the unfinished end in `partial`.
pub fn split_lines(partial: &mut Vec<u8>, buf: &[u8], lines: &mut Vec<Result<String, Reject>>) {
    for &b in buf {
        if b == b'\n' || b == b'\r' {
            if !partial.is_empty() && partial.len() <= MAX_LINE_BYTES {
                lines.push(Ok(String::from_utf8_lossy(partial).into_owned()));
            }
            partial.clear();
        } else if partial.len() < MAX_LINE_BYTES {
            partial.push(b);
        } else if partial.len() == MAX_LINE_BYTES {
            lines.push(Err(Reject::TooLong(MAX_LINE_BYTES)));
            // Marks the line as reported; its rest is dropped up to the next line end.
            partial.push(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;
    use std::io::Write;
    use std::path::Path;

    fn spec(throughput: &str) -> JobSpec {
        let text = format!(
            "schema_version = 1\nname = \"x\"\ncommand = [\"true\"]\nbatch_size_per_gpu = 32\n[throughput]\n{throughput}\n[sweep]\ncpu = [1]\n"
        );
        parse_spec(&text, Path::new("x.toml")).unwrap().spec
    }

    fn paths(dir: &Path) -> ProgressPaths {
        ProgressPaths {
            progress_file: dir.join("p.jsonl"),
            stdout: dir.join("out.log"),
            stderr: dir.join("err.log"),
        }
    }

    #[test]
    fn json_protocol_reads_only_complete_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        let mut f = File::create(&p.progress_file).unwrap();
        let mut tail = ProgressTail::new(&spec("protocol = \"progress-file\""), p);
        let t = now_unix_s();
        write!(
            f,
            "{{\"samples\": 10, \"t\": {t}}}\n{{\"samples\": 20, \"t\""
        )
        .unwrap();
        f.flush().unwrap();
        let r = tail.poll();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].samples, 10.0);
        write!(f, ": {}, \"iterations\": 2}}\nnot json\n", t + 1.0).unwrap();
        f.flush().unwrap();
        let r = tail.poll();
        assert_eq!(
            r,
            vec![Report {
                t: t + 1.0,
                samples: 20.0,
                iterations: Some(2.0),
                iteration_time_s: None,
            }]
        );
        assert_eq!(tail.bad_lines, 1);
    }

    #[test]
    fn regex_protocol_counts_iterations() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        std::fs::write(&p.stdout, "hello\nstep 3 loss 1.0\nstep 4 loss 0.9\n").unwrap();
        let s = spec(
            "protocol = \"stdout-regex\"\nregex = 'step (?P<iterations>\\d+)'\nsamples_per_iteration = 32",
        );
        let mut tail = ProgressTail::new(&s, p);
        let r = tail.poll();
        assert_eq!(
            r.iter().map(|r| r.samples).collect::<Vec<_>>(),
            vec![96.0, 128.0]
        );
        assert_eq!(tail.bad_lines, 0);
    }

    #[test]
    fn carriage_returns_and_backspaces_end_redrawn_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        // tqdm on stderr: no newline until the bar closes; Keras redraws with \b and \r.
        std::fs::write(
            &p.stderr,
            "\r  1%|          | 10/1000 [00:01<01:39, 10.00it/s]\r  2%|\x1b[32m▏\x1b[0m         | 20/1000 [00:02<01:38, 10.00it/s]\r  3%|",
        )
        .unwrap();
        std::fs::write(&p.stdout, "\u{8}\u{8}\u{8}\r").unwrap();
        let mut tail = ProgressTail::new(&spec("protocol = \"log\"\nformat = \"tqdm\""), p);
        let r = tail.poll();
        // 32 samples per iteration from batch_size_per_gpu; the unfinished redraw waits.
        assert_eq!(
            r.iter().map(|r| r.samples).collect::<Vec<_>>(),
            vec![320.0, 640.0]
        );
    }

    #[test]
    fn a_redrawn_bar_is_timed_when_it_was_drawn_not_when_the_next_one_starts() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        let mut tail = ProgressTail::new(&spec("protocol = \"log\"\nformat = \"tqdm\""), p.clone());
        let mut err = File::create(&p.stderr).unwrap();
        let mut out = File::create(&p.stdout).unwrap();
        write!(err, "\r  1%|          | 1/100 [00:01<01:39,  1.00it/s]").unwrap();
        let drawn = now_unix_s();
        assert!(tail.poll().is_empty(), "the redraw may not be complete yet");
        std::thread::sleep(std::time::Duration::from_millis(300));
        // A line on the other stream, then the next redraw, which completes the first.
        writeln!(out, "validation loss 0.3").unwrap();
        write!(err, "\r  2%|          | 2/100 [00:02<01:38,  1.00it/s]").unwrap();
        let r = tail.poll();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].samples, 32.0);
        assert!(
            r[0].t >= drawn && r[0].t < drawn + 0.2,
            "timed {:.3} s after it was drawn",
            r[0].t - drawn
        );
        let warnings = tail.take_warnings();
        assert_eq!(tail.bad_lines, 0, "{warnings:?}");
        // Lines that end at once are timed when read.
        write!(err, "\r  3%|          | 3/100 [00:03<01:37,  1.00it/s]\n").unwrap();
        let before = now_unix_s();
        let r = tail.poll();
        assert_eq!(
            r.iter().map(|r| r.samples).collect::<Vec<_>>(),
            vec![64.0, 96.0]
        );
        assert!(
            r[0].t < before,
            "the second redraw was drawn in the previous read"
        );
        assert!(r[1].t >= before);
    }

    #[test]
    fn a_far_future_timestamp_is_rejected_with_a_warning() {
        // Before timestamps were checked, this report reached the rate windows, whose window
        // walk from now to t = 1e18 allocated without bound.
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        let now = now_unix_s();
        std::fs::write(
            &p.progress_file,
            format!(
                "{{\"samples\": 10, \"t\": {now}}}\n{{\"samples\": 20, \"t\": 1e18}}\n{{\"samples\": 30, \"t\": 12.5}}\n{{\"samples\": 40, \"t\": {}}}\n{{\"samples\": 50, \"t\": {}}}\n",
                now - 5.0,
                now + 1.0
            ),
        )
        .unwrap();
        let mut tail = ProgressTail::new(&spec("protocol = \"progress-file\""), p);
        let r = tail.poll();
        assert_eq!(
            r.iter().map(|r| r.samples).collect::<Vec<_>>(),
            vec![10.0, 50.0]
        );
        assert_eq!(tail.bad_lines, 3);
        let w = tail.take_warnings();
        assert_eq!(w.len(), 1, "one warning per kind: {w:?}");
        assert!(w[0].contains("in the future"), "{w:?}");
        assert!(tail.take_warnings().is_empty());
    }

    #[test]
    fn a_nan_or_zero_rate_never_becomes_a_report() {
        // Before values were checked, `rate = nan` gave NaN samples, and `0 s/it` infinite ones.
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        std::fs::write(
            &p.stdout,
            "rate 100 samples/s\nrate nan samples/s\nrate inf samples/s\nrate 0 s/it\nrate 50 it/s\n",
        )
        .unwrap();
        let s = spec(
            "protocol = \"log\"\nstream = \"stdout\"\nregex = 'rate (?P<rate>\\S+) (?P<unit>\\S+)'",
        );
        let mut tail = ProgressTail::new(&s, p);
        let r = tail.poll();
        assert_eq!(r.len(), 2);
        assert!(r.iter().all(|r| r.samples.is_finite()));
        assert_eq!(tail.bad_lines, 3);
        assert_eq!(tail.take_warnings().len(), 2, "not a number, and zero");
    }

    /// Lightning's model summary, drawn by Rich into a pipe, and then nothing: the message says
    /// why and what to do; under a terminal (the `lightning` preset) it does not.
    #[test]
    fn output_that_stops_at_a_rich_table_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        std::fs::write(
            &p.stdout,
            "┏━━━┳━━━━━━━┳━━━━━━━━┓\n┃   ┃ Name  ┃ Type   ┃\n┡━━━╇━━━━━━━╇━━━━━━━━┩\n\
             │ 0 │ model │ ResNet │\n└───┴───────┴────────┘\nTotal params: 11.2 M\n",
        )
        .unwrap();
        let mut tail = ProgressTail::new(&spec("protocol = \"log\"\nformat = \"tqdm\""), p.clone());
        assert!(tail.poll().is_empty());
        let why = tail.describe_silence();
        assert!(
            why.contains("stops at a table drawn by Rich")
                && why.contains("format = \"lightning\""),
            "{why}"
        );
        let mut tail = ProgressTail::new(&spec("protocol = \"log\"\nformat = \"lightning\""), p);
        assert!(tail.poll().is_empty());
        assert!(!tail.describe_silence().contains("Rich"));
    }

    #[test]
    fn silence_says_whether_anything_arrived_and_what_did_not_match() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        let s = spec("protocol = \"log\"\nformat = \"tqdm\"");
        // Nothing at all: the output is held back in the job (or never printed).
        let mut tail = ProgressTail::new(&s, p.clone());
        assert!(tail.poll().is_empty());
        let silent = tail.describe_silence();
        assert!(
            silent.contains("no output at all") && silent.contains("PYTHONUNBUFFERED=1"),
            "{silent}"
        );
        // Lines arrived, none of them a tqdm bar: not blamed on buffering, the last one quoted.
        std::fs::write(&p.stdout, "loading data\nstep 10 loss 2.3\n").unwrap();
        std::fs::write(&p.stderr, "\u{1b}[33mwarning: slow\u{1b}[0m\n").unwrap();
        assert!(tail.poll().is_empty());
        let unmatched = tail.describe_silence();
        assert!(
            unmatched.contains("output arrived (3 lines) but no line matched the preset `tqdm`")
                && !unmatched.contains("buffer"),
            "{unmatched}"
        );
        assert!(
            unmatched.contains("(last line seen: `step 10 loss 2.3`)")
                || unmatched.contains("(last line seen: `warning: slow`)"),
            "{unmatched}"
        );
        // Then progress, then none: when the last progress line came.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&p.stderr)
            .unwrap();
        write!(
            f,
            "\r 10%|█         | 10/100 [00:01<00:09, 10.00it/s]\rvalidating\n"
        )
        .unwrap();
        assert_eq!(tail.poll().len(), 1);
        let stopped = tail.describe_silence();
        assert!(
            stopped.contains("progress stopped: the last of 1 progress lines came 0 s ago")
                && stopped.contains("`validating`"),
            "{stopped}"
        );
        // A very long line is cut short in the message.
        std::fs::write(&p.stdout, "x".repeat(10_000) + "\n").unwrap();
        let mut tail = ProgressTail::new(&s, p.clone());
        tail.poll();
        assert!(tail.describe_silence().len() < 1_000);
    }

    #[test]
    fn silence_of_a_progress_file_points_at_output_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        let mut tail = ProgressTail::new(&spec("protocol = \"progress-file\""), p.clone());
        tail.poll();
        let nothing = tail.describe_silence();
        assert!(
            nothing.contains("PROFILER_PROGRESS_FILE") && nothing.contains("nothing was written"),
            "{nothing}"
        );
        assert!(!nothing.contains("not read"), "{nothing}");
        // The job prints its progress instead of writing the file.
        std::fs::write(&p.stdout, "epoch 1 step 5\n").unwrap();
        let elsewhere = tail.describe_silence();
        assert!(
            elsewhere.contains("wrote 15 bytes to") && elsewhere.contains("protocol = \"log\""),
            "{elsewhere}"
        );
        std::fs::write(&p.progress_file, "{\"step\": 5}\n").unwrap();
        tail.poll();
        let bad = tail.describe_silence();
        assert!(
            bad.contains("1 line(s) arrived but none was a usable progress report"),
            "{bad}"
        );
    }

    #[test]
    fn an_endless_line_is_dropped_not_buffered() {
        let mut partial = Vec::new();
        let mut lines = Vec::new();
        let long = vec![b'x'; 3 * MAX_LINE_BYTES];
        split_lines(&mut partial, &long, &mut lines);
        assert!(partial.len() <= MAX_LINE_BYTES + 1);
        split_lines(&mut partial, b"\nok\n", &mut lines);
        assert_eq!(lines.len(), 2);
        assert!(matches!(lines[0], Err(Reject::TooLong(_))));
        assert_eq!(lines[1].as_deref().ok(), Some("ok"));
    }
}
