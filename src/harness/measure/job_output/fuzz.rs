//! Property tests over the progress parsers: whatever a job prints, no panic, and every report
//! (and every rate and throughput computed from the reports) is finite. `PROPTEST_CASES`
//! raises the number of cases (default 256), e.g.
//! `PROPTEST_CASES=100000 cargo test --release --lib progress::fuzz`.

use super::*;
use crate::harness::measure::steady::RateWindows;
use proptest::prelude::*;
use std::sync::OnceLock;

/// A number as a job might print it, including the ones that must be rejected.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..100_000).prop_map(|n| n.to_string()),
        (0.0f64..1e4).prop_map(|x| format!("{x:.3}")),
        any::<f64>().prop_map(|x| x.to_string()),
        Just("nan".to_string()),
        Just("NaN".to_string()),
        Just("inf".to_string()),
        Just("-inf".to_string()),
        Just("1e999".to_string()),
        Just("0".to_string()),
        Just("0.00".to_string()),
        Just("-1".to_string()),
        Just("?".to_string()),
        Just("1.5k".to_string()),
        Just("".to_string()),
    ]
}

fn unit() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("it/s"),
        Just("s/it"),
        Just("img/s"),
        Just("samples/s"),
        Just("kit/s"),
        Just("ms/step"),
        Just("us/step"),
        Just("s/step"),
        Just("x/y"),
        Just("/"),
        Just(""),
    ]
    .prop_map(String::from)
}

/// Lines shaped like each preset's output, with random numbers, units and terminal noise.
fn shaped_line() -> impl Strategy<Value = String> {
    let n = number;
    let shapes = prop_oneof![
        (n(), n(), n(), n(), n()).prop_map(|(e, i, l, t, a)| format!(
            "Epoch: [{e}][{i:>5}/{l}]\tTime {t} ({a})\tData 0.01 (0.02)\tLoss 6.9"
        )),
        (n(), n(), n(), unit())
            .prop_map(|(i, l, r, u)| format!(" 45%|████▌     | {i}/{l} [00:20<00:25, {r}{u}]")),
        (n(), n(), n(), n(), unit()).prop_map(|(e, i, l, r, u)| format!(
            "Epoch {e}:  45%|████▌ | {i}/{l} [00:20<00:25, {r}{u}, v_num=1, loss={r}]"
        )),
        (n(), n(), unit()).prop_map(|(i, r, u)| format!("{i}it [00:10, {r}{u}]")),
        (n(), n())
            .prop_map(|(l, e)| format!("{{'loss': {l}, 'learning_rate': 4e-05, 'epoch': {e}}}")),
        (n(), n()).prop_map(|(r, e)| format!(
            "{{'train_runtime': 40.1, 'train_samples_per_second': {r}, 'epoch': {e}}}"
        )),
        (n(), n()).prop_map(|(i, l)| format!("{i}/{l} [====>.........] - ETA: 1:02 - loss: 0.3")),
        (n(), n(), n(), unit()).prop_map(|(i, l, r, u)| format!(
            "{i}/{l} [==============================] - 75s {r}{u} - loss: 0.3"
        )),
        (n(), n(), n()).prop_map(|(i, l, r)| format!("{i}/{l} ━━━━━━━━━━ 1:02 {r}ms/step")),
    ];
    // Terminal noise: redraws, colours, stray bytes.
    (
        shapes,
        prop_oneof![
            Just(""),
            Just("\u{8}\u{8}\u{8}"),
            Just("\u{1b}[32m"),
            Just("\u{1b}["),
            Just("\u{1b}"),
            Just("\u{0}"),
        ],
        any::<bool>(),
    )
        .prop_map(|(line, noise, before)| {
            if before {
                format!("{noise}{line}")
            } else {
                format!("{line}{noise}")
            }
        })
}

/// Lines shaped like what the current releases print (`workloads/frameworks/`): the ImageNet
/// example's padded `[  1/128]`, transformers 5's quoted values, Keras 3's bold and coloured bar,
/// tqdm's postfix and hour-long estimates.
fn current_line() -> impl Strategy<Value = String> {
    let n = number;
    prop_oneof![
        (n(), n(), n(), n()).prop_map(|(e, i, l, t)| format!(
            "Epoch: [{e}][{i:>4}/{l:>4}]\tTime {t:>6} ({t:>6})\tData  0.002 ( 0.033)\tLoss 4.5694e+01 (1.8111e+01)"
        )),
        (n(), n(), n()).prop_map(|(l, g, e)| format!(
            "{{'loss': '{l}', 'grad_norm': '{g}', 'learning_rate': '4.999e-05', 'epoch': '{e}'}}"
        )),
        (n(), n()).prop_map(|(r, e)| format!(
            "{{'train_runtime': '40.12', 'train_samples_per_second': '{r}', 'train_steps_per_second': '{r}', 'train_loss': '0.69', 'epoch': '{e}'}}"
        )),
        (n(), n(), n(), n(), unit()).prop_map(|(i, l, t, r, u)| format!(
            "\u{1b}[1m{i}/{l}\u{1b}[0m \u{1b}[32m━━━━━━━━\u{1b}[0m\u{1b}[37m━━━━\u{1b}[0m \u{1b}[1m{t}s\u{1b}[0m {r}{u} - accuracy: 0.1006 - loss: 2.3088"
        )),
        (n(), n(), n(), n(), unit()).prop_map(|(e, i, l, r, u)| format!(
            "Epoch {e}:   2%|▏         | {i}/{l} [00:29<6:44:31, {r}{u}, loss={r}]"
        )),
    ]
}

/// Any line: shaped, or arbitrary text.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => shaped_line(),
        2 => current_line(),
        1 => any::<String>(),
        1 => "[0-9/.:%|\\[\\], a-z{}'-]{0,80}"
    ]
}

fn json_line() -> impl Strategy<Value = String> {
    let t = prop_oneof![
        Just("".to_string()),
        (-100.0f64..100.0).prop_map(|d| format!(", \"t\": {}", 1.7e9 + d)),
        Just(", \"t\": 1e18".to_string()),
        Just(", \"t\": -1e18".to_string()),
        Just(", \"t\": 1e999".to_string()),
        Just(", \"t\": null".to_string()),
        Just(", \"t\": \"now\"".to_string()),
        any::<f64>().prop_map(|x| format!(", \"t\": {x}")),
    ];
    let shaped = (number(), number(), t)
        .prop_map(|(s, i, t)| format!("{{\"samples\": {s}, \"iterations\": {i}{t}}}"));
    prop_oneof![3 => shaped, 1 => any::<String>()]
}

fn preset_regexes(p: Preset, epoch_length_given: bool) -> &'static [Regex] {
    static CACHE: OnceLock<Vec<(Preset, bool, Vec<Regex>)>> = OnceLock::new();
    let all = CACHE.get_or_init(|| {
        Preset::ALL
            .into_iter()
            .flat_map(|p| [false, true].map(|e| (p, e, p.regexes(e))))
            .collect()
    });
    &all.iter()
        .find(|(q, e, _)| *q == p && *e == epoch_length_given)
        .expect("every preset")
        .2
}

/// Feeds `lines` to a parser one `dt` apart and checks every report and the throughput.
fn check(
    mut parse: impl FnMut(&mut Accumulator, &str, f64) -> Result<Option<Report>, Reject>,
    acc: &mut Accumulator,
    lines: &[(String, f64)],
) -> Result<(), TestCaseError> {
    let t0 = 1.7e9;
    let mut now = t0;
    let mut windows = RateWindows::new(t0, 0.5);
    let mut last: Option<Report> = None;
    for (line, dt) in lines {
        now += dt;
        if let Ok(Some(r)) = parse(acc, line, now) {
            prop_assert!(
                r.t.is_finite() && r.samples.is_finite() && r.samples >= 0.0,
                "{r:?} from {line:?}"
            );
            prop_assert!(r.iteration_time_s.is_none_or(|s| s.is_finite() && s > 0.0));
            if let Some(l) = last {
                prop_assert!(r.samples >= l.samples && r.t >= l.t, "{l:?} then {r:?}");
            }
            last = Some(r);
            windows.push(r);
        }
    }
    prop_assert!(windows.rates().iter().all(|r| r.is_finite()));
    if let Some(tp) = windows.throughput(5) {
        prop_assert!(
            tp.samples_per_s.is_finite() && tp.ci95_high.is_finite(),
            "{tp:?}"
        );
    }
    Ok(())
}

fn lines_of(s: impl Strategy<Value = String>) -> impl Strategy<Value = Vec<(String, f64)>> {
    proptest::collection::vec((s, 0.0f64..2.0), 1..12)
}

fn check_preset(
    p: Preset,
    lines: &[(String, f64)],
    spi: Option<f64>,
    len: Option<f64>,
) -> Result<(), TestCaseError> {
    let regexes = preset_regexes(p, len.is_some());
    let mut acc = Accumulator::new(spi, len);
    check(
        |a, l, now| parse_log_line(regexes, a, l, now),
        &mut acc,
        lines,
    )
}

fn spi() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        Just(None),
        Just(Some(1.0)),
        Just(Some(256.0)),
        Just(Some(1e6))
    ]
}

fn epoch_length() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![Just(None), Just(Some(100.0)), Just(Some(5005.0))]
}

proptest! {
    #[test]
    fn fuzz_pytorch_imagenet(lines in lines_of(line()), spi in spi(), len in epoch_length()) {
        check_preset(Preset::PytorchImagenet, &lines, spi, len)?;
    }

    #[test]
    fn fuzz_tqdm(lines in lines_of(line()), spi in spi(), len in epoch_length()) {
        check_preset(Preset::Tqdm, &lines, spi, len)?;
    }

    #[test]
    fn fuzz_hf_trainer(lines in lines_of(line()), spi in spi(), len in epoch_length()) {
        check_preset(Preset::HfTrainer, &lines, spi, len)?;
    }

    #[test]
    fn fuzz_keras(lines in lines_of(line()), spi in spi(), len in epoch_length()) {
        check_preset(Preset::Keras, &lines, spi, len)?;
    }

    /// The current shapes with sensible numbers are read, and give the count they print.
    #[test]
    fn fuzz_current_shapes_are_read_exactly(
        e in 0u32..200,
        l in 1u32..20_000,
        i_frac in 0.0f64..=1.0,
        t in 0.001f64..100.0,
    ) {
        let i = ((l as f64 * i_frac) as u32).min(l);
        let spi = 8.0;
        let expect = (e as f64 * l as f64 + i as f64) * spi;
        let read = |p: Preset, line: &str, len: Option<f64>| {
            let mut acc = Accumulator::new(Some(spi), len);
            parse_log_line(preset_regexes(p, len.is_some()), &mut acc, line, 1.7e9)
                .ok()
                .flatten()
                .map(|r| r.samples)
        };
        let imagenet = format!(
            "Epoch: [{e}][{i:>w$}/{l}]\tTime {t:6.3} ({t:6.3})\tData  0.002 ( 0.033)\tLoss 4.5694e+01 (1.8111e+01)",
            w = l.to_string().len()
        );
        prop_assert_eq!(read(Preset::PytorchImagenet, &imagenet, None), Some(expect), "{}", imagenet);
        let bar = format!("Epoch {e}:   2%|▏         | {i}/{l} [00:29<6:44:31, {:.2}it/s, loss=0.3]", 1.0 / t);
        prop_assert_eq!(read(Preset::Tqdm, &bar, None), Some(expect), "{}", bar);
        // The Trainer's epoch as transformers 5 prints it: `f"{v:.4g}"`, quoted.
        let epoch = e as f64 + i as f64 / l as f64;
        let logged = format!("{{'loss': '0.6975', 'grad_norm': '1.209', 'learning_rate': '4.999e-05', 'epoch': '{epoch}'}}");
        let got = read(Preset::HfTrainer, &logged, Some(l as f64));
        prop_assert!(got.is_some_and(|s| (s - expect).abs() <= 1e-6 * expect.max(1.0)), "{:?} {}", got, logged);
        let keras = format!(
            "\u{1b}[1m{i:>w$}/{l}\u{1b}[0m \u{1b}[32m━━━━━━━━\u{1b}[0m\u{1b}[37m━━━━\u{1b}[0m \u{1b}[1m9s\u{1b}[0m {}ms/step - loss: 2.3",
            (t * 1000.0).round().max(1.0),
            w = l.to_string().len()
        );
        prop_assert_eq!(read(Preset::Keras, &keras, None), Some(i as f64 * spi), "{}", keras);
    }

    #[test]
    fn fuzz_regex_with_every_capture(lines in lines_of(prop_oneof![
        (number(), number(), number(), number(), unit()).prop_map(|(e, i, l, r, u)| format!("e {e} i {i} l {l} r {r} {u} t {r}")),
        (number(), number()).prop_map(|(s, n)| format!("s {s} n {n}")),
        line(),
    ]), spi in spi(), len in epoch_length()) {
        static RES: OnceLock<Vec<Regex>> = OnceLock::new();
        let regexes = RES.get_or_init(|| vec![
            Regex::new(r"e (?P<epoch>\S*) i (?P<iteration>\S*) l (?P<epoch_length>\S*) r (?P<rate>\S*) (?P<unit>\S*) t (?P<iteration_time_s>\S*)").unwrap(),
            Regex::new(r"s (?P<samples>\S*) n (?P<iterations>\S*)").unwrap(),
        ]);
        let mut acc = Accumulator::new(spi, len);
        check(|a, l, now| parse_log_line(regexes, a, l, now), &mut acc, &lines)?;
    }

    #[test]
    fn fuzz_progress_file_json(lines in lines_of(json_line())) {
        let mut acc = Accumulator::new(None, None);
        check(parse_json_report, &mut acc, &lines)?;
    }

    #[test]
    fn fuzz_line_splitting(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 1..8)) {
        let mut partial = Vec::new();
        let mut lines = Vec::new();
        for c in &chunks {
            split_lines(&mut partial, c, &mut lines);
            prop_assert!(partial.len() <= MAX_LINE_BYTES + 1);
        }
        for l in lines.iter().flatten() {
            prop_assert!(!l.contains(['\n', '\r']));
            let cleaned = clean_line(l);
            let terminal_only = ['\u{8}', '\u{1b}'];
            prop_assert!(!cleaned.contains(terminal_only), "{:?}", cleaned);
        }
    }
}
