//! What a spec that parsed may still not say: values out of range, sections that need each
//! other, a `[throughput]` section that cannot read the job's progress.

use super::log_format::{CAPTURE_NAMES, Preset};
use super::{
    CpuAxis, CpuSearchSpec, JobSpec, SPEC_VERSION, SearchRuleSpec, SpecError, SweepSpec,
    ThroughputSpec, assignment_offset, is_safe_name, line_column,
};
use std::path::Path;

/// Checks every value of `spec`; the message starts with the key it is about, so that the
/// caller can find its line.
pub(super) fn validate(spec: &JobSpec) -> Result<(), String> {
    validate_job(spec)?;
    match &spec.sweep.cpu {
        CpuAxis::Levels(levels) => validate_cpu_levels(levels)?,
        CpuAxis::Search(search) => validate_search(search, spec)?,
    }
    validate_memory_axis(&spec.sweep, spec.dataset.is_some())?;
    validate_storage(&spec.sweep, spec.dataset.is_some())?;
    validate_params(&spec.sweep)?;
    super::elastic::validate_elastic(spec)?;
    validate_measure(spec)
}

/// The schema it is written for, its name (a cgroup and file name) and its command.
fn validate_job(spec: &JobSpec) -> Result<(), String> {
    if spec.schema_version != SPEC_VERSION {
        return Err(format!(
            "schema_version = {} is not supported; this build reads schema_version = {SPEC_VERSION}",
            spec.schema_version
        ));
    }
    if !is_safe_name(&spec.name) {
        return Err(format!(
            "name = {:?}: expected 1-64 characters from [A-Za-z0-9_.-]",
            spec.name
        ));
    }
    match (spec.shell, spec.command.len()) {
        (_, 0) => Err("command is empty: expected an argument list".into()),
        (true, n) if n != 1 => Err(format!(
            "shell = true expects command to be one string for /bin/sh -c, got {n} strings"
        )),
        _ => Ok(()),
    }
}

/// `sweep.cpu` as a list: some levels, each a number of cores a cgroup can cap.
fn validate_cpu_levels(levels: &[f64]) -> Result<(), String> {
    if levels.is_empty() {
        return Err("sweep.cpu is empty: expected CPU levels in cores, e.g. [0.5, 1, 2]".into());
    }
    if let Some(bad) = levels.iter().find(|c| !(**c >= 0.01 && c.is_finite())) {
        return Err(format!("sweep.cpu has {bad}: expected cores >= 0.01"));
    }
    Ok(())
}

/// `sweep.cpu` as a search: bounds in order, a tolerance that is a fraction, and only the keys
/// its rule reads.
fn validate_search(search: &CpuSearchSpec, spec: &JobSpec) -> Result<(), String> {
    for (key, value) in [("min", search.min), ("max", search.max)] {
        if let Some(v) = value
            && !(v >= 0.01 && v.is_finite())
        {
            return Err(format!("sweep.cpu.{key} = {v}: expected cores >= 0.01"));
        }
    }
    if let (Some(min), Some(max)) = (search.min, search.max)
        && min > max
    {
        return Err(format!("sweep.cpu: min = {min} is above max = {max}"));
    }
    if let Some(t) = search.tolerance
        && !(t > 0.0 && t < 1.0)
    {
        return Err(format!(
            "sweep.cpu.tolerance = {t}: expected a fraction between 0 and 1, e.g. 0.05"
        ));
    }
    let predict_keys = search.levels.is_some() || search.library.is_some();
    if predict_keys && search.search != SearchRuleSpec::Predict {
        return Err(
            "sweep.cpu: levels and library belong to the predict search (search = \"predict\")"
                .into(),
        );
    }
    match search.search {
        SearchRuleSpec::Predict => {
            let Some(levels) = &search.levels else {
                return Err(
                    "sweep.cpu: the predict search needs levels, the CPU levels of the \
                            whole matrix, e.g. levels = [0.25, 0.5, 1, 2]"
                        .into(),
                );
            };
            validate_cpu_levels(levels)?;
            if levels.len() < 2 {
                return Err("sweep.cpu.levels: expected two levels or more to predict".into());
            }
            if search.min.is_some() || search.max.is_some() || search.step.is_some() {
                return Err(
                    "sweep.cpu: the predict search measures among its levels; min, max \
                            and step belong to the knee search"
                        .into(),
                );
            }
        }
        SearchRuleSpec::Knee => {
            if let Some(step) = search.step
                && !(step >= 0.01 && step.is_finite())
            {
                return Err(format!("sweep.cpu.step = {step}: expected cores >= 0.01"));
            }
            if search.max_points.is_some_and(|n| n < 2) {
                return Err("sweep.cpu.max_points: expected at least 2 (the two ends)".into());
            }
        }
        SearchRuleSpec::Synergy => {
            if search.step.is_some() || search.max_points.is_some() {
                return Err(format!(
                    "sweep.cpu: step and max_points belong to the knee search; Synergy's rule steps down by the job's GPU count ({}) and ends below min",
                    spec.gpus.max(1)
                ));
            }
        }
    }
    Ok(())
}

/// The memory levels, in GiB or in percent of the dataset (which then must be described),
/// never both.
fn validate_memory_axis(sweep: &SweepSpec, has_dataset: bool) -> Result<(), String> {
    match (&sweep.memory_gib, &sweep.memory_pct_of_dataset) {
        (Some(_), Some(_)) => {
            Err("give either sweep.memory_gib or sweep.memory_pct_of_dataset, not both".into())
        }
        (Some(levels), None) => {
            if levels.is_empty() {
                return Err(
                    "sweep.memory_gib is empty: expected memory levels in GiB, e.g. [16, 8, 4], or leave it out for one uncapped level"
                        .into(),
                );
            }
            if let Some(bad) = levels.iter().find(|g| !(**g > 0.0 && g.is_finite())) {
                return Err(format!("sweep.memory_gib has {bad}: expected GiB > 0"));
            }
            Ok(())
        }
        (None, Some(levels)) => {
            if !has_dataset {
                return Err("sweep.memory_pct_of_dataset needs a [dataset] section".into());
            }
            if levels.is_empty() {
                return Err(
                    "sweep.memory_pct_of_dataset is empty: expected percentages of the dataset, e.g. [150, 50, 10]"
                        .into(),
                );
            }
            if let Some(bad) = levels.iter().find(|p| !(**p > 0.0 && p.is_finite())) {
                return Err(format!(
                    "sweep.memory_pct_of_dataset has {bad}: expected percent > 0"
                ));
            }
            Ok(())
        }
        (None, None) => Ok(()),
    }
}

/// The storage throttle: a positive rate, on the disk of a dataset the spec describes.
fn validate_storage(sweep: &SweepSpec, has_dataset: bool) -> Result<(), String> {
    if let Some(mb) = sweep.storage_read_mb_s {
        if !(mb > 0.0 && mb.is_finite()) {
            return Err(format!("sweep.storage_read_mb_s = {mb}: expected MB/s > 0"));
        }
        if !has_dataset {
            return Err("sweep.storage_read_mb_s needs a [dataset] section (it throttles the dataset's disk)".into());
        }
    }
    Ok(())
}

/// The swept parameters: names that are safe in file names and do not shadow the template
/// names the profiler defines, each with a value.
fn validate_params(sweep: &SweepSpec) -> Result<(), String> {
    for (name, values) in &sweep.params {
        if !is_safe_name(name) || matches!(name.as_str(), "cpus" | "workers" | "dataset" | "gpus") {
            return Err(format!(
                "sweep.params.{name}: parameter names are [A-Za-z0-9_.-] and not one of cpus, workers, dataset, gpus"
            ));
        }
        if values.is_empty() {
            return Err(format!(
                "sweep.params.{name} is empty: expected at least one value"
            ));
        }
    }
    Ok(())
}

/// `[measure]`'s durations and counts, and `[deploy]`'s start-up time.
fn validate_measure(spec: &JobSpec) -> Result<(), String> {
    let m = &spec.measure;
    let budget = m.launches_budget_s.map(|b| ("launches_budget_s", b));
    for (key, v) in [
        ("warmup_s", m.warmup_s),
        ("settle_s", m.settle_s),
        ("max_s", m.max_s),
        ("startup_timeout_s", m.startup_timeout_s),
        ("stop_grace_s", m.stop_grace_s),
    ]
    .into_iter()
    .chain(budget)
    {
        if !(v >= 0.0 && v.is_finite()) {
            return Err(format!("measure.{key} = {v}: expected seconds >= 0"));
        }
    }
    let startup = spec.deploy.startup_s;
    if !(startup >= 0.0 && startup.is_finite()) {
        return Err(format!(
            "deploy.startup_s = {startup}: expected seconds >= 0"
        ));
    }
    if !(m.precision > 0.0 && m.precision < 1.0) {
        return Err(format!(
            "measure.precision = {}: expected a relative half-width in (0, 1), e.g. 0.05 for ±5%",
            m.precision
        ));
    }
    if m.rounds == 0 {
        return Err("measure.rounds = 0: expected 1 or more blocks a launch".into());
    }
    if !(m.window_s > 0.0 && m.window_s.is_finite()) {
        return Err(format!(
            "measure.window_s = {}: expected seconds > 0",
            m.window_s
        ));
    }
    if m.steady_windows < 2 {
        return Err("measure.steady_windows: expected at least 2".into());
    }
    if !(1..=10).contains(&m.launches) {
        return Err(format!(
            "measure.launches = {}: expected 1 to 10 launches of a point",
            m.launches
        ));
    }
    Ok(())
}

/// The end of a message about output that counts iterations but not samples.
const NEEDS_SPI: &str =
    "counts iterations: set throughput.samples_per_iteration or batch_size_per_gpu";

/// Where a `[throughput]` error is reported: the spec's text and file.
struct Locator<'a> {
    text: &'a str,
    path: &'a Path,
}

impl Locator<'_> {
    /// An error at the line that sets `key` (`key = ...`), else at the first mention of it.
    fn at(&self, key: &str, message: String) -> SpecError {
        let text = self.text;
        let found = assignment_offset(text, key).or_else(|| text.find(key));
        let (line, column) = found.map_or((1, 1), |offset| line_column(text, offset));
        SpecError::Syntax {
            path: self.path.to_owned(),
            line,
            column,
            message,
        }
    }
}

/// What a `[throughput]` section that reads the job's output says, whichever its protocol.
struct OutputReading<'a> {
    regex: Option<&'a String>,
    format: Option<&'a String>,
    samples_per_iteration: Option<f64>,
    epoch_length: Option<f64>,
}

impl<'a> OutputReading<'a> {
    /// `None` for the progress file, which needs no checking.
    fn of(throughput: &'a ThroughputSpec) -> Option<Self> {
        match throughput {
            ThroughputSpec::ProgressFile => None,
            ThroughputSpec::StdoutRegex {
                regex,
                samples_per_iteration,
                epoch_length,
            } => Some(OutputReading {
                regex: Some(regex),
                format: None,
                samples_per_iteration: *samples_per_iteration,
                epoch_length: *epoch_length,
            }),
            ThroughputSpec::Log(log) => Some(OutputReading {
                regex: log.regex.as_ref(),
                format: log.format.as_ref(),
                samples_per_iteration: log.samples_per_iteration,
                epoch_length: log.epoch_length,
            }),
        }
    }
}

/// Checks the `[throughput]` section: a known `format`, a regex that compiles with known
/// captures, and the batch size wherever the output counts iterations. Errors carry the line.
pub(super) fn check_throughput(spec: &JobSpec, text: &str, path: &Path) -> Result<(), SpecError> {
    let Some(reading) = OutputReading::of(&spec.throughput) else {
        return Ok(());
    };
    let loc = Locator { text, path };
    for (key, value) in [
        ("samples_per_iteration", reading.samples_per_iteration),
        ("epoch_length", reading.epoch_length),
    ] {
        if let Some(v) = value
            && !(v > 0.0 && v.is_finite())
        {
            return Err(loc.at(
                key,
                format!("throughput.{key} = {v}: expected a number > 0"),
            ));
        }
    }
    let spi = spec.samples_per_iteration(reading.samples_per_iteration);
    match (reading.format, reading.regex) {
        (Some(_), Some(_)) => Err(loc.at(
            "format",
            "throughput: give either format or regex, not both".into(),
        )),
        (None, None) => Err(loc.at(
            "[throughput]",
            format!(
                "throughput: protocol = \"log\" needs format = one of {} or a regex with named captures",
                Preset::names()
            ),
        )),
        (Some(name), None) => check_format(name, spi, &loc),
        (None, Some(regex)) => check_regex(regex, spi, reading.epoch_length, &loc),
    }
}

/// A preset that exists, with the samples per iteration where it counts only iterations.
fn check_format(name: &str, spi: Option<f64>, loc: &Locator) -> Result<(), SpecError> {
    let Some(preset) = Preset::from_name(name) else {
        return Err(loc.at(
            "format",
            format!(
                "throughput.format = {name:?} is not a known format; expected one of {}",
                Preset::names()
            ),
        ));
    };
    if preset.counts_only_iterations() && spi.is_none() {
        return Err(loc.at(
            "format",
            format!("throughput.format = {name:?} {NEEDS_SPI}"),
        ));
    }
    Ok(())
}

/// A regex that compiles, captures only known names, at least one of them progress, and has
/// what turns iterations and epochs into samples.
fn check_regex(
    regex: &str,
    spi: Option<f64>,
    epoch_length: Option<f64>,
    loc: &Locator,
) -> Result<(), SpecError> {
    let re = regex::Regex::new(regex)
        .map_err(|e| loc.at("regex", format!("throughput.regex does not compile: {e}")))?;
    let names: Vec<&str> = re.capture_names().flatten().collect();
    if let Some(unknown) = names.iter().find(|n| !CAPTURE_NAMES.contains(n)) {
        return Err(loc.at(
            "regex",
            format!(
                "throughput.regex: unknown capture `{unknown}`; known: {}",
                CAPTURE_NAMES.join(", ")
            ),
        ));
    }
    let has = |n: &str| names.contains(&n);
    let progress = [
        "samples",
        "iterations",
        "iteration",
        "epoch",
        "rate",
        "iteration_time_s",
    ];
    if !progress.iter().any(|n| has(n)) {
        return Err(loc.at(
            "regex",
            "throughput.regex needs a named capture: (?P<rate>...) in samples/s, (?P<samples>...) cumulative, (?P<iterations>...) cumulative, (?P<epoch>...) with (?P<iteration>...) in the epoch, or (?P<iteration_time_s>...)"
                .into(),
        ));
    }
    let counts_iterations = ["iterations", "iteration", "epoch", "iteration_time_s"]
        .iter()
        .any(|n| has(n));
    if counts_iterations && !has("samples") && !has("unit") && !has("rate") && spi.is_none() {
        return Err(loc.at("regex", format!("throughput.regex {NEEDS_SPI}")));
    }
    if has("epoch") && !has("epoch_length") && epoch_length.is_none() {
        return Err(loc.at(
            "regex",
            "throughput.regex captures epochs: also capture (?P<epoch_length>...) or set throughput.epoch_length (iterations per epoch)".into(),
        ));
    }
    Ok(())
}
