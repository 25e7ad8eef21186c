//! Every job-spec field and every command-line flag is in its reference. The fields come from
//! the spec's own parser (a key it does not know makes it name every key of that table), the
//! flags from clap's definition of the command line, so a field or flag added without its
//! documentation fails here.

use clap::CommandFactory;
use std::collections::BTreeSet;
use std::path::Path;

fn read(doc: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(doc);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The keys serde expects where it met `zz_unknown`: "expected one of `a`, `b`" or "expected
/// `a`".
fn expected_keys(error: &str) -> Vec<String> {
    let Some(at) = error.find("expected") else {
        panic!("no list of expected keys in: {error}");
    };
    let tail = &error[at..];
    let end = tail.find('\n').unwrap_or(tail.len());
    tail[..end]
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The keys of the spec table at `table` (dotted; "" the top level), as the parser lists them
/// for a spec that is `base` with an unknown key added there.
fn spec_keys(base: &toml::Table, table: &str) -> Vec<String> {
    let mut spec = base.clone();
    let mut at = &mut spec;
    for part in table.split('.').filter(|p| !p.is_empty()) {
        at = at
            .entry(part)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .unwrap_or_else(|| panic!("{table}: not a table"));
    }
    at.insert("zz_unknown".into(), toml::Value::Integer(1));
    let text = toml::to_string(&spec).unwrap();
    match profiler::spec::parse_spec(&text, Path::new("reference.toml")) {
        Ok(_) => panic!("[{table}] took an unknown key"),
        Err(e) => expected_keys(&e.to_string()),
    }
}

/// Whether `doc` names `key` as a spec key: in backticks, assigned in a TOML example, or as a
/// table's header (`[deploy]`, `[sweep.params]`).
fn names_key(doc: &str, key: &str) -> bool {
    if doc.contains(&format!("[{key}]")) || doc.contains(&format!(".{key}]")) {
        return true;
    }
    let quoted = format!("`{key}");
    let bounded = |s: &str, at: usize| {
        !s[at..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    };
    doc.match_indices(&quoted)
        .any(|(i, m)| bounded(doc, i + m.len()))
        || doc.lines().any(|line| {
            let line = line.trim_start().trim_start_matches('#').trim_start();
            line.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
}

#[test]
fn every_job_spec_field_is_in_the_job_spec_reference() {
    let doc = read("docs/JOB_SPEC.md");
    let base: toml::Table = read("workloads/input-pipeline.toml").parse().unwrap();
    let with = |table: &str, key: &str, value: &str| {
        let mut spec = base.clone();
        let value: toml::Table = value.parse().unwrap();
        match table {
            "" => spec.insert(key.into(), toml::Value::Table(value)),
            _ => spec[table]
                .as_table_mut()
                .unwrap()
                .insert(key.into(), toml::Value::Table(value)),
        };
        spec
    };
    let log = with("", "throughput", "protocol = 'log'\nformat = 'tqdm'");
    let regex = with(
        "",
        "throughput",
        "protocol = 'stdout-regex'\nregex = '(?P<samples>[0-9]+)'",
    );
    let search = with("sweep", "cpu", "search = 'knee'");
    let tables = [
        (&base, ""),
        (&base, "dataset"),
        (&log, "throughput"),
        (&regex, "throughput"),
        (&base, "measure"),
        (&base, "sweep"),
        (&search, "sweep.cpu"),
        (&base, "deploy"),
        (&base, "elastic"),
    ];
    let mut missing = Vec::new();
    let mut seen = 0;
    for (spec, table) in tables {
        let keys = spec_keys(spec, table);
        assert!(keys.len() > 1, "[{table}]: {keys:?}");
        seen += keys.len();
        missing.extend(
            (keys.into_iter())
                .filter(|k| !names_key(&doc, k))
                .map(|k| format!("[{table}] {k}")),
        );
    }
    assert!(seen > 50, "only {seen} keys found");
    assert!(
        missing.is_empty(),
        "job-spec keys not in docs/JOB_SPEC.md: {missing:?}"
    );
}

/// The references each command's flags are documented in (one of them for each flag).
const FLAG_REFERENCES: &[(&str, &[&str])] = &[
    ("sweep", &["docs/SWEEP.md", "docs/SLURM.md"]),
    ("validate", &["docs/SWEEP.md"]),
    ("plot", &["plots/README.md", "docs/MATRIX.md"]),
    ("report", &["docs/REPORT.md", "docs/MATRIX.md"]),
    ("replay", &["docs/REPLAY.md"]),
    ("deploy", &["docs/DEPLOY.md"]),
    ("colocate", &["docs/DEPLOY.md"]),
    ("export", &["docs/EXPORT.md", "docs/MATRIX.md"]),
    ("doctor", &["docs/GPU.md"]),
    ("show", &["docs/MATRIX.md"]),
    ("corpus", &["docs/SWEEP.md"]),
    ("predict", &["docs/PREDICT.md"]),
];

#[test]
fn every_command_line_flag_is_in_its_command_s_reference() {
    let cli = profiler::cli::Cli::command();
    let subcommands: BTreeSet<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
    let listed: BTreeSet<&str> = FLAG_REFERENCES.iter().map(|(c, _)| *c).collect();
    assert_eq!(subcommands, listed, "a command without its references");
    let mut missing = Vec::new();
    for (name, docs) in FLAG_REFERENCES {
        let text: String = docs.iter().map(|d| read(d)).collect();
        let command = cli.find_subcommand(name).unwrap();
        let flags: Vec<String> = (command.get_arguments())
            .filter(|a| !a.is_hide_set())
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect();
        assert!(!flags.is_empty(), "{name}: no flags");
        let bounded = |at: usize| {
            !text[at..]
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric() || c == '-')
        };
        missing.extend(
            (flags.into_iter())
                .filter(|f| {
                    !text
                        .match_indices(f.as_str())
                        .any(|(i, m)| bounded(i + m.len()))
                })
                .map(|f| format!("{name} {f} (in {})", docs.join(" or "))),
        );
    }
    assert!(
        missing.is_empty(),
        "flags not in their references: {missing:#?}"
    );
}

/// The references stay something a user looks a field up in: the studies behind them are
/// under docs/findings/.
#[test]
fn the_job_spec_and_replay_references_are_at_most_600_lines() {
    for doc in ["docs/JOB_SPEC.md", "docs/REPLAY.md"] {
        let lines = read(doc).lines().count();
        assert!(
            lines <= 600,
            "{doc}: {lines} lines; move studies to docs/findings/"
        );
    }
}
