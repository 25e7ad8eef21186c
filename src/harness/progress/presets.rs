//! Presets: the regexes that read what well-known training loops print, unmodified.

use regex::Regex;

/// A well-known progress output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// PyTorch's ImageNet example: `Epoch: [3][ 120/5005]  Time  0.231 ( 0.245) ...`.
    PytorchImagenet,
    /// tqdm and PyTorch Lightning bars: `Epoch 3:  45%|████▌ | 450/1000 [00:20<00:25, 22.1it/s]`.
    Tqdm,
    /// Hugging Face Trainer: its tqdm bar, `{'loss': 2.31, ..., 'epoch': 1.27}` and the final
    /// `train_samples_per_second`.
    HfTrainer,
    /// Keras' Progbar: `120/5005 [====>....] - ETA: 1:02 - loss: 0.3`, `5005/5005 [==] - 75s 15ms/step`.
    Keras,
}

/// A count as tqdm prints it, `1234` or, with `unit_scale`, `1.23k`.
const COUNT: &str = r"\d+(?:\.\d+)?[kMG]?";
/// A rate or a time as printed.
const NUMBER: &str = r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?";

impl Preset {
    pub const ALL: [Preset; 4] = [
        Preset::PytorchImagenet,
        Preset::Tqdm,
        Preset::HfTrainer,
        Preset::Keras,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::PytorchImagenet => "pytorch-imagenet",
            Preset::Tqdm => "tqdm",
            Preset::HfTrainer => "hf-trainer",
            Preset::Keras => "keras",
        }
    }

    pub fn from_name(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The valid names, for messages: `"pytorch-imagenet", "tqdm", ...`.
    pub fn names() -> String {
        Preset::ALL
            .iter()
            .map(|p| format!("{:?}", p.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether everything this output counts is iterations (so samples per iteration must be
    /// known); a tqdm bar may count samples (`img/s`).
    pub fn counts_only_iterations(self) -> bool {
        matches!(self, Preset::PytorchImagenet | Preset::Keras)
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
                r"Epoch: \[(?P<epoch>\d+)\]\[\s*(?P<iteration>\d+)/(?P<epoch_length>\d+)\](?:\s+Time\s+(?P<iteration_time_s>{NUMBER}))?"
            )],
            Preset::Tqdm => vec![tqdm_total, tqdm_open],
            Preset::HfTrainer => {
                let mut v = vec![
                    format!(r"'train_samples_per_second':\s*(?P<rate>{NUMBER})"),
                    tqdm_total,
                    tqdm_open,
                ];
                if epoch_length_given {
                    v.push(format!(r"^\{{.*'epoch':\s*(?P<epoch>{NUMBER})"));
                }
                v
            }
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
