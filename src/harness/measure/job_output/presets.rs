//! Presets: the regexes that read what well-known training loops print, unmodified (the
//! outputs a spec can name are [`crate::spec::log_format::Preset`]).

use crate::spec::log_format::Preset;
use regex::Regex;

/// A count as tqdm prints it, `1234` or, with `unit_scale`, `1.23k`.
const COUNT: &str = r"\d+(?:\.\d+)?[kMG]?";
/// A rate or a time as printed.
const NUMBER: &str = r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?";

impl Preset {
    /// Whether the library behind this output draws it only on a terminal, so the job runs
    /// under a pseudo-terminal unless the spec says otherwise (`throughput.terminal`). Rich,
    /// Lightning's default bar, prints nothing into a pipe until the process ends.
    pub fn draws_only_on_a_terminal(self) -> bool {
        matches!(self, Preset::Lightning)
    }

    /// The regexes, tried in order on each line; the first that matches reads it.
    /// `epoch_length_given`: the Trainer's fractional epochs are only read when the spec gives
    /// the epoch's length (otherwise the bar carries the progress).
    pub fn regexes(self, epoch_length_given: bool) -> Vec<Regex> {
        let tqdm_total = format!(
            r"(?:Epoch (?P<epoch>\d+)\b.*?)?(?P<iteration>{COUNT})/(?P<epoch_length>{COUNT}) \[[\d:?]+<[\d:?]+,\s*(?:(?P<rate>{NUMBER})|\?)\s*(?P<unit>[^\s,\]]+)"
        );
        let tqdm_open = format!(
            r"(?:^|[\s:|])(?P<iteration>{COUNT})[A-Za-z]* \[[\d:]+,\s*(?:(?P<rate>{NUMBER})|\?)\s*(?P<unit>[^\s,\]]+)"
        );
        let sources: Vec<String> = match self {
            Preset::PytorchImagenet => vec![format!(
                r"Epoch: \[(?P<epoch>\d+)\]\[\s*(?P<iteration>\d+)\s*/\s*(?P<epoch_length>\d+)\](?:\s+Time\s+(?P<iteration_time_s>{NUMBER}))?"
            )],
            Preset::Tqdm => vec![tqdm_total, tqdm_open],
            Preset::HfTrainer => {
                let mut v = vec![
                    // transformers 5 prints the values as strings: `'epoch': '1.27'`.
                    format!(r"'train_samples_per_second':\s*'?(?P<rate>{NUMBER})"),
                    tqdm_total,
                    tqdm_open,
                ];
                if epoch_length_given {
                    v.push(format!(r"^\{{.*'epoch':\s*'?(?P<epoch>{NUMBER})"));
                }
                v
            }
            Preset::Lightning => vec![
                // Rich's speed column reads 0.00it/s until it has two updates: the count
                // alone is read.
                r"Epoch (?P<epoch>\d+)/?\d*\s.*?\s(?P<iteration>\d+)/(?:(?P<epoch_length>\d+)|--)\s+(?:\d+:\d\d:\d\d|-:--:--) • ".to_string(),
                format!(
                    r"Epoch (?P<epoch>\d+):.*?(?P<iteration>{COUNT})/(?P<epoch_length>{COUNT}) \[[\d:?]+<[\d:?]+,\s*(?:(?P<rate>{NUMBER})|\?)\s*(?P<unit>[^\s,\]]+)"
                ),
            ],
            Preset::Keras => vec![format!(
                r"(?P<iteration>\d+)/(?P<epoch_length>\d+)\s*(?:\[[=>.]*\]|[━─]+|-)(?:.*?\s(?P<rate>{NUMBER})(?P<unit>[mµu]?s/(?:step|sample)))?"
            )],
        };
        sources
            .iter()
            .map(|s| Regex::new(s).expect("preset regexes are valid"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::captures::{Accumulator, Reading, Reject};
    use super::*;

    /// Cumulative samples read from each line (None: no progress in it), 10 samples per
    /// iteration.
    fn read_all(p: Preset, lines: &[&str], epoch_length: Option<f64>) -> Vec<Option<f64>> {
        let res = p.regexes(epoch_length.is_some());
        let mut acc = Accumulator::new(Some(10.0), epoch_length);
        lines
            .iter()
            .map(|l| {
                let c = res.iter().find_map(|re| re.captures(l))?;
                let r: Result<_, Reject> =
                    Reading::from_captures(&c).and_then(|r| acc.report(&r, 0.0));
                r.unwrap().map(|r| r.samples)
            })
            .collect()
    }

    #[test]
    fn names_round_trip() {
        for p in Preset::ALL {
            assert_eq!(Preset::from_name(p.name()), Some(p));
        }
        assert_eq!(Preset::from_name("tqmd"), None);
        assert!(Preset::names().contains("\"hf-trainer\""));
    }

    #[test]
    fn pytorch_imagenet_lines() {
        let got = read_all(
            Preset::PytorchImagenet,
            &[
                "Epoch: [0][4990/5005]\tTime  0.231 ( 0.245)\tData  0.001 ( 0.002)\tLoss 6.9e+00",
                "Epoch: [1][   0/5005]\tTime  0.300 ( 0.300)",
                "Test: [ 10/196]\tTime  0.100 ( 0.100)",
                "Epoch: [1][  10/5005]",
            ],
            None,
        );
        assert_eq!(got, vec![Some(49900.0), Some(50050.0), None, Some(50150.0)]);
    }

    /// Lightning's Rich bar as drawn on a terminal (escape sequences already dropped) and its
    /// tqdm bar; validation and sanity-check bars are never read.
    #[test]
    fn lightning_rich_and_tqdm_bars() {
        let got = read_all(
            Preset::Lightning,
            &[
                "Sanity Checking DataLoader 0: 100% 2/2 [00:00<00:00, 30.0it/s]",
                "Epoch 0/9  ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 0/100 0:00:00 • -:--:-- 0.00it/s ",
                "Epoch 0/9  ━━━━━━━━━╸━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 25/100 0:00:02 • 0:00:07 10.51it/s v_num: 0 train_loss: 2.301",
                "Validation ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 10/20 0:00:00 • 0:00:01 30.10it/s",
                "Epoch 1/9  ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 50/100 0:00:05 • 0:00:05 10.02it/s v_num: 0",
                "Epoch 3:  45%|████▌     | 45/100 [00:04<00:05, 10.12it/s, v_num=1]",
                "Validation DataLoader 0:  50%|█████     | 10/20 [00:00<00:00, 30.1it/s]",
            ],
            None,
        );
        assert_eq!(
            got,
            vec![
                None,
                Some(0.0),
                Some(250.0),
                None,
                Some(1500.0),
                Some(3450.0),
                None,
            ]
        );
    }

    #[test]
    fn tqdm_and_lightning_bars() {
        let got = read_all(
            Preset::Tqdm,
            &[
                " 45%|████▌     | 450/1000 [00:20<00:25, 22.12it/s]",
                " 99%|█████████▉| 990/1000 [00:45<00:00,  2.50s/it, loss=0.3]",
                "  1%|          | 10/1000 [00:00<?, ?it/s]",
                "Epoch 3:  45%|████▌     | 450/1000 [00:20<00:25, 22.12it/s, v_num=1]",
                "Validation DataLoader 0:  50%|█████     | 10/20 [00:00<00:00, 30.1it/s]",
                "Epoch 4:   0%|          | 0/1000 [00:00<?, ?it/s]",
            ],
            None,
        );
        assert_eq!(
            got,
            vec![
                Some(4500.0),
                Some(9900.0),
                // The counter restarted: a new bar, the next epoch.
                Some(10100.0),
                Some(34500.0),
                // Shorter bar: another loop (validation), not progress.
                None,
                Some(40000.0),
            ]
        );
        // Without a total, in samples.
        let got = read_all(Preset::Tqdm, &["2048img [00:10, 204.80img/s]"], None);
        assert_eq!(got, vec![Some(2048.0)]);
    }

    #[test]
    fn hf_trainer_lines() {
        let lines = [
            " 25%|██▌       | 250/1000 [00:10<00:30, 24.51it/s]",
            "{'loss': 2.31, 'grad_norm': 1.5, 'learning_rate': 4e-05, 'epoch': 1.27}",
            "{'train_runtime': 40.1, 'train_samples_per_second': 99.5, 'epoch': 3.0}",
        ];
        assert_eq!(
            read_all(Preset::HfTrainer, &lines, None),
            vec![Some(2500.0), None, Some(2500.0)]
        );
        // With the epoch's length, the logged epochs count too.
        let got = read_all(Preset::HfTrainer, &lines[1..2], Some(200.0));
        assert_eq!(got, vec![Some(2540.0)]);
    }

    /// Lines the current releases print, captured from `workloads/frameworks/*.py` (torch 2.15,
    /// torchvision 0.29, tqdm 4.70, transformers 5.24, keras 3.15).
    #[test]
    fn what_current_frameworks_print() {
        // The ImageNet example since 2022: `display(i + 1)`, padded to the epoch length's width.
        let got = read_all(
            Preset::PytorchImagenet,
            &[
                "=> creating model 'resnet18'",
                "Epoch: [0][  1/128]\tTime  2.044 ( 2.044)\tData  0.289 ( 0.289)\tLoss 2.2124e+00 (2.2124e+00)\tAcc@1   0.00 (  0.00)\tAcc@5  75.00 ( 75.00)",
                "Epoch: [0][ 11/128]\tTime  0.211 ( 1.002)\tData  0.002 ( 0.033)\tLoss 4.5694e+01 (1.8111e+01)",
                "Test: [ 1/16]\tTime  0.120 ( 0.120)\tLoss 2.3e+00 (2.3e+00)\tAcc@1  12.50 ( 12.50)",
                " *   Acc@1 10.156 Acc@5 50.000",
                "Epoch: [1][  1/128]\tTime  0.300 ( 0.300)",
            ],
            None,
        );
        assert_eq!(
            got,
            vec![None, Some(10.0), Some(110.0), None, None, Some(1290.0)]
        );
        // A `Time` of 0.211 s is the iteration time.
        let re = &Preset::PytorchImagenet.regexes(false)[0];
        let c = re
            .captures("Epoch: [0][ 11/128]\tTime  0.211 ( 1.002)")
            .unwrap();
        assert_eq!(
            Reading::from_captures(&c).unwrap().iteration_time_s,
            Some(0.211)
        );

        // tqdm 4.70 with `desc=f"Epoch {epoch}"` and a postfix; the first redraw has no rate.
        let got = read_all(
            Preset::Tqdm,
            &[
                "Epoch 0:   0%|          | 0/64 [00:00<?, ?it/s]",
                "Epoch 0:   0%|          | 0/64 [00:02<?, ?it/s, loss=2.984]",
                "Epoch 0:   2%|▏         | 1/64 [00:02<02:12,  2.11s/it, loss=2.984]",
                "Epoch 0: 100%|██████████| 64/64 [00:30<00:00,  2.11it/s, loss=2.301]",
                "Epoch 1:   3%|▎         | 2/64 [00:01<00:30,  2.01it/s, loss=2.290]",
            ],
            None,
        );
        assert_eq!(
            got,
            vec![Some(0.0), Some(0.0), Some(10.0), Some(640.0), Some(660.0)]
        );

        // transformers 5 quotes every float: `f"{v:.4g}"`, so a whole epoch is `'1'`.
        let logs = [
            "{'loss': '0.6975', 'grad_norm': '1.209', 'learning_rate': '4.999e-05', 'epoch': '0.25'}",
            "{'loss': '0.7043', 'grad_norm': '0.5585', 'learning_rate': '4.995e-05', 'epoch': '1'}",
            "{'loss': '0.6916', 'grad_norm': '0.524', 'learning_rate': '4.994e-05', 'epoch': '1.25'}",
        ];
        assert_eq!(
            read_all(Preset::HfTrainer, &logs, Some(20.0)),
            vec![Some(50.0), Some(200.0), Some(250.0)]
        );
        // Without the epoch's length the bar carries the progress and log lines are no progress.
        let got = read_all(
            Preset::HfTrainer,
            &[
                "  0%|          | 43/20000 [00:29<6:44:31,  1.22s/it]",
                logs[2],
                "  0%|          | 44/20000 [00:31<7:54:37,  1.43s/it]",
            ],
            None,
        );
        assert_eq!(got, vec![Some(430.0), None, Some(440.0)]);
        let re = &Preset::HfTrainer.regexes(false)[0];
        let c = re
            .captures("{'train_runtime': '40.12', 'train_samples_per_second': '99.5', 'train_steps_per_second': '6.2', 'epoch': '3'}")
            .unwrap();
        assert_eq!(
            Reading::from_captures(&c).unwrap().rate,
            Some((99.5, super::super::captures::Counted::Samples))
        );

        // Keras 3 redraws its bar with backspaces and a carriage return, in bold and colours.
        let raw = [
            "Epoch 1/1000",
            "\u{1b}[1m 1/64\u{1b}[0m \u{1b}[37m━━━━━━━━━━━━━━━━━━━━\u{1b}[0m \u{1b}[1m9s\u{1b}[0m 149ms/step - accuracy: 0.1250 - loss: 2.3150",
            "\u{1b}[1m64/64\u{1b}[0m \u{1b}[32m━━━━━━━━━━━━━━━━━━━━\u{1b}[0m\u{1b}[37m\u{1b}[0m \u{1b}[1m10s\u{1b}[0m 149ms/step - accuracy: 0.1006 - loss: 2.3088",
            "Epoch 2/1000",
            "\u{1b}[1m 2/64\u{1b}[0m \u{1b}[32m\u{1b}[0m\u{1b}[37m━━━━━━━━━━━━━━━━━━━━\u{1b}[0m \u{1b}[1m13s\u{1b}[0m 224ms/step - accuracy: 0.0625 - loss: 2.2852    ",
        ];
        let cleaned: Vec<String> = raw
            .iter()
            .map(|l| super::super::clean_line(l).into_owned())
            .collect();
        let lines: Vec<&str> = cleaned.iter().map(String::as_str).collect();
        assert_eq!(
            read_all(Preset::Keras, &lines, None),
            vec![None, Some(10.0), Some(640.0), None, Some(660.0)]
        );
    }

    #[test]
    fn keras_lines() {
        let got = read_all(
            Preset::Keras,
            &[
                "Epoch 1/10",
                " 120/5005 [>.............................] - ETA: 1:02 - loss: 0.3000",
                "5005/5005 [==============================] - 75s 15ms/step - loss: 0.3",
                "Epoch 2/10",
                "  20/5005 ━━━━━━━━━━━━━━━━━━━━ 1:02 12ms/step - loss: 0.3",
            ],
            None,
        );
        assert_eq!(
            got,
            vec![None, Some(1200.0), Some(50050.0), None, Some(50250.0)]
        );
        let re = &Preset::Keras.regexes(false)[0];
        let c = re.captures("5005/5005 [====] - 75s 15ms/step").unwrap();
        let r = Reading::from_captures(&c).unwrap();
        assert_eq!(r.iteration_time_s, Some(0.015));
    }
}
