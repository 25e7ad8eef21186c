//! Fuzzing of what users feed the profiler outside the replay: job specs (TOML), matrix files
//! (JSON lines) and command-line values. Inputs are the shipped files with random mutations
//! (random bytes alone rarely get past a header or a TOML table). What must hold: never a
//! panic, a bounded time per input, and every error names the file (and the line, where the
//! input has lines and the error is about one).
//!
//! CI runs proptest's default number of cases; `PROPTEST_CASES=100000` runs the count the docs
//! report (`cargo test --release --test matrices fuzz`).

use profiler::cli::Cli;
use profiler::export::CellChoice;
use profiler::matrix::{self, CostWeights, DEFAULT_EPS, Interp, ServerShape, Surface, load_matrix};
use profiler::spec::parse_spec;
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A parse of one input must take less than this (debug build, loaded machine).
const PER_INPUT: Duration = Duration::from_secs(2);

/// Values that have broken parsers before, or would: limits, non-finite numbers, paths out of
/// a directory, unknown template names, empty collections.
const NASTY: &[&str] = &[
    "0",
    "-0",
    "-1",
    "1e308",
    "-1e308",
    "1e-320",
    "nan",
    "inf",
    "-inf",
    "NaN",
    "18446744073709551616",
    "9223372036854775807",
    "0.0000001",
    "\"\"",
    "[]",
    "{}",
    "[[]]",
    "\"../../etc/passwd\"",
    "\"/\"",
    "\"{cpus}\"",
    "\"{unknown}\"",
    "\"{\"",
    "true",
    "null",
    "\"\\u0000\"",
    "\"é\"",
    // Plausible values, so that many mutated files still parse and reach the checks after it.
    "1",
    "2",
    "0.5",
    "16",
    "[1, 2]",
    "[0.5]",
    "\"x\"",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read_all(paths: impl IntoIterator<Item = PathBuf>, max_lines: usize) -> Vec<String> {
    let mut out: Vec<String> = paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
            text.lines().take(max_lines).collect::<Vec<_>>().join("\n") + "\n"
        })
        .collect();
    out.sort();
    out
}

fn files_in(dir: &str, suffix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect()
}

/// The shipped job specs (every progress protocol and preset among them).
fn spec_seeds() -> &'static [String] {
    static SEEDS: OnceLock<Vec<String>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let paths = files_in("workloads", ".toml")
            .into_iter()
            .chain(files_in("workloads/progress-shapes", ".toml"));
        let seeds = read_all(paths, usize::MAX);
        assert!(seeds.len() >= 3, "workloads/*.toml");
        seeds
    })
}

/// Shipped matrices: measured, modelled, validated, Synergy's zoo (first lines of each).
fn matrix_seeds() -> &'static [String] {
    static SEEDS: OnceLock<Vec<String>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let paths = files_in("matrices/examples", ".matrix.jsonl")
            .into_iter()
            .chain(
                files_in("matrices/zoo", ".matrix.jsonl")
                    .into_iter()
                    .take(3),
            );
        let seeds = read_all(paths, 12);
        assert!(seeds.len() >= 4, "matrices/examples and matrices/zoo");
        seeds
    })
}

/// One edit of a text.
#[derive(Debug, Clone)]
enum Mutation {
    /// Replace the n-th value token (number, string, `true`/`false`) with a nasty value.
    Value(usize, &'static str),
    /// Replace the n-th value token with arbitrary text.
    Text(usize, String),
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    /// Cut the text at this fraction of its length (a torn write).
    Truncate(f64),
    /// Insert arbitrary text at this fraction of its length.
    Insert(f64, String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), proptest::sample::select(NASTY)).prop_map(|(n, v)| Mutation::Value(n, v)),
        2 => (any::<usize>(), "\\PC{0,12}").prop_map(|(n, s)| Mutation::Text(n, s)),
        1 => any::<usize>().prop_map(Mutation::DeleteLine),
        1 => any::<usize>().prop_map(Mutation::DuplicateLine),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        1 => (0.0f64..1.0).prop_map(Mutation::Truncate),
        1 => ((0.0f64..1.0), "[\\[\\]{}\",=\n.0-9a-z\\\\]{0,8}").prop_map(|(at, s)| Mutation::Insert(at, s)),
    ]
}

/// Byte ranges of value tokens: numbers, quoted strings, booleans.
fn value_tokens(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' && bytes[i] != b'\n' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i = i.min(bytes.len());
            i = (i + 1).min(bytes.len());
            out.push((start, i));
        } else if c.is_ascii_digit()
            || (c == b'-' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            i += 1;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || b".+-_".contains(&bytes[i]))
            {
                i += 1;
            }
            out.push((start, i));
        } else if bytes[i..].starts_with(b"true") || bytes[i..].starts_with(b"false") {
            i += if c == b't' { 4 } else { 5 };
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out.retain(|&(a, b)| text.is_char_boundary(a) && text.is_char_boundary(b));
    out
}

fn char_floor(text: &str, at: f64) -> usize {
    let mut i = ((text.len() as f64) * at) as usize;
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &str, mutations: &[Mutation]) -> String {
    let mut text = text.to_string();
    for m in mutations {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let n = lines.len().max(1);
        match m {
            Mutation::Value(k, v) => replace_token(&mut text, *k, v),
            Mutation::Text(k, v) => replace_token(&mut text, *k, v),
            Mutation::DeleteLine(k) if !lines.is_empty() => {
                lines.remove(k % n);
                text = lines.join("\n");
            }
            Mutation::DuplicateLine(k) if !lines.is_empty() => {
                let line = lines[k % n].clone();
                lines.insert(k % n, line);
                text = lines.join("\n");
            }
            Mutation::SwapLines(a, b) if !lines.is_empty() => {
                lines.swap(a % n, b % n);
                text = lines.join("\n");
            }
            Mutation::Truncate(at) => text.truncate(char_floor(&text, *at)),
            Mutation::Insert(at, s) => text.insert_str(char_floor(&text, *at), s),
            _ => {}
        }
    }
    text
}

fn replace_token(text: &mut String, k: usize, value: &str) {
    let tokens = value_tokens(text);
    if tokens.is_empty() {
        return;
    }
    let (a, b) = tokens[k % tokens.len()];
    text.replace_range(a..b, value);
}

fn mutated(seeds: &'static [String]) -> impl Strategy<Value = String> {
    (
        proptest::sample::select(seeds),
        proptest::collection::vec(mutation(), 1..3),
    )
        .prop_map(|(seed, ms)| apply(&seed, &ms))
}

/// Everything `show` computes from a matrix that loaded.
fn use_matrix(m: &matrix::Matrix) {
    let _ = matrix::render_summary(m);
    let _ = matrix::render_cells(m);
    if let Ok(surface) = Surface::from_matrix(m) {
        let shape = ServerShape::default();
        let d = matrix::best_case(&surface, &shape, DEFAULT_EPS, CostWeights::default());
        assert!(
            d.cpus_per_gpu.is_finite() && d.mem_gb_per_gpu.is_finite(),
            "a demand that is not a number: {d:?}"
        );
        for c in [0.0, 0.5, 3.0, 1e9] {
            for g in [0.0, 62.5, 1e12] {
                let v = surface.at(c, g, Interp::Bilinear);
                assert!(v.is_finite() && v >= 0.0, "surface at ({c}, {g}) = {v}");
            }
        }
    }
}

proptest! {
    #[test]
    fn specs_parse_or_name_the_file_and_line(text in mutated(spec_seeds())) {
        let path = Path::new("fuzz/job.toml");
        let started = Instant::now();
        let result = parse_spec(&text, path);
        prop_assert!(started.elapsed() < PER_INPUT, "{:?} for {text:?}", started.elapsed());
        if let Err(e) = result {
            let message = e.to_string();
            prop_assert!(message.starts_with("fuzz/job.toml"), "{message}");
        }
    }

    #[test]
    fn matrices_load_or_name_the_file_and_line(text in mutated(matrix_seeds())) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("m.matrix.jsonl");
        std::fs::write(&path, &text).expect("write");
        let started = Instant::now();
        match load_matrix(&path) {
            Ok(m) => use_matrix(&m),
            Err(e) => {
                let message = e.to_string();
                prop_assert!(message.starts_with(&path.display().to_string()), "{message}");
                if let matrix::MatrixError::Parse { line, .. } = e {
                    prop_assert!(line >= 1 && line <= text.lines().count().max(1), "{message}");
                }
            }
        }
        prop_assert!(started.elapsed() < PER_INPUT, "{:?} for {text:?}", started.elapsed());
    }

    #[test]
    fn command_lines_parse_or_explain(argv in command_line()) {
        let started = Instant::now();
        let result = <Cli as clap::Parser>::try_parse_from(&argv);
        prop_assert!(started.elapsed() < PER_INPUT);
        if let Err(e) = result {
            prop_assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn server_shapes_and_cells_parse_or_explain(text in prop_oneof![
        proptest::sample::select(NASTY).prop_map(str::to_string),
        "[0-9.:,e+-]{0,16}",
        "\\PC{0,16}",
    ]) {
        if let Ok(shape) = text.parse::<ServerShape>() {
            prop_assert!(shape.cpus > 0.0 && shape.cpus.is_finite() && shape.gpus > 0);
            prop_assert!(shape.mem_gb > 0.0 && shape.mem_gb.is_finite());
            prop_assert!(shape.share_cpus().is_finite() && shape.share_mem_gb().is_finite());
        }
        let _ = text.parse::<CellChoice>();
    }
}

/// A command line: a subcommand, then flags of every subcommand with nasty or random values.
fn command_line() -> impl Strategy<Value = Vec<String>> {
    const SUBCOMMANDS: &[&str] = &["sweep", "show", "validate", "export", "plot", "replay"];
    const FLAGS: &[&str] = &[
        "--job",
        "--resume",
        "--no-caps",
        "--mode",
        "--memory",
        "--cgroup-parent",
        "-o",
        "--demand",
        "--cells",
        "--server",
        "--eps",
        "--cpu-weight",
        "--mem-weight",
        "--format",
        "--cell",
        "--normalize",
        "--policy",
        "--mechanism",
        "--compare",
        "--cluster",
        "--trace",
        "--profiles",
        "--window",
        "--seed",
        "--jobs",
        "--semantics",
        "--help",
    ];
    let word = prop_oneof![
        proptest::sample::select(FLAGS).prop_map(str::to_string),
        proptest::sample::select(NASTY).prop_map(str::to_string),
        "[a-z0-9.:,+-]{0,10}",
        Just("matrices/zoo/res18.matrix.jsonl".to_string()),
    ];
    (
        proptest::sample::select(SUBCOMMANDS),
        proptest::collection::vec(word, 0..8),
    )
        .prop_map(|(sub, words)| {
            std::iter::once("profiler".to_string())
                .chain(std::iter::once(sub.to_string()))
                .chain(words)
                .filter(|w| w != "--help")
                .collect()
        })
}

#[test]
fn mutations_reach_the_values_of_every_seed() {
    // The fuzzer is only as good as its edits: every seed must have values to replace, and
    // replacing one must change the text.
    for seed in spec_seeds().iter().chain(matrix_seeds()) {
        assert!(value_tokens(seed).len() >= 5, "{seed}");
        let edited = apply(seed, &[Mutation::Value(3, "nan")]);
        assert_ne!(&edited, seed);
    }
}

#[test]
fn mutated_inputs_reach_past_the_parsers() {
    // Inputs that all fail to parse would test only the first lines of each parser; inputs
    // that all parse would test nothing. Both must be common.
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut specs_ok, mut matrices_ok) = (0, 0);
    let n = 400;
    for i in 0..n {
        let spec = mutated(spec_seeds())
            .new_tree(&mut runner)
            .expect("tree")
            .current();
        specs_ok += usize::from(parse_spec(&spec, Path::new("job.toml")).is_ok());
        let text = mutated(matrix_seeds())
            .new_tree(&mut runner)
            .expect("tree")
            .current();
        let path = dir.path().join(format!("{i}.matrix.jsonl"));
        std::fs::write(&path, text).expect("write");
        matrices_ok += usize::from(load_matrix(&path).is_ok());
    }
    for (what, ok) in [("specs", specs_ok), ("matrices", matrices_ok)] {
        println!("{what}: {ok} of {n} mutated inputs parse");
        assert!(
            (n / 10..=n * 9 / 10).contains(&ok),
            "{what}: {ok} of {n} mutated inputs parse"
        );
    }
}
