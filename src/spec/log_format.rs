//! The words a spec's `[throughput]` may use for a job's output: the well-known outputs a
//! `format` names and the captures a `regex` may have. Reading them is
//! `crate::harness::measure::job_output`.

/// A well-known progress output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// PyTorch's ImageNet example: `Epoch: [3][ 121/5005]\tTime  0.231 ( 0.245) ...` (since
    /// 2022 it prints `i + 1`, the iterations done; older copies print `i`, unpadded).
    PytorchImagenet,
    /// tqdm and PyTorch Lightning bars: `Epoch 3:  45%|████▌ | 450/1000 [00:20<00:25, 22.1it/s]`.
    Tqdm,
    /// Hugging Face Trainer: its tqdm bar, `{'loss': 2.31, ..., 'epoch': 1.27}` (transformers 5
    /// quotes the values: `{'loss': '2.31', ..., 'epoch': '1.27'}`) and the final
    /// `train_samples_per_second`.
    HfTrainer,
    /// Keras' Progbar: `120/5005 [====>....] - ETA: 1:02 - loss: 0.3`, `5005/5005 [==] - 75s
    /// 15ms/step`; Keras 3: `120/5005 ━━━━━━━━━━━━━━━━━━━━ 1:02 12ms/step - loss: 0.3` (in
    /// bold and colours, which are dropped before matching).
    Keras,
    /// PyTorch Lightning's default bar: Rich's where `rich` is installed, `Epoch 3/9
    /// ━━━━━━━╸━━━━ 450/1000 0:00:20 • 0:00:25 22.10it/s v_num: 0 loss: 0.5`, drawn only on a
    /// terminal (so the job runs under one), else tqdm's, `Epoch 3:  45%|████▌ | 450/1000
    /// [00:20<00:25, 22.1it/s, v_num=0]`. Only the training bar (`Epoch N`) is read, never the
    /// validation or sanity-check bars.
    Lightning,
}

impl Preset {
    pub const ALL: [Preset; 5] = [
        Preset::PytorchImagenet,
        Preset::Tqdm,
        Preset::HfTrainer,
        Preset::Keras,
        Preset::Lightning,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::PytorchImagenet => "pytorch-imagenet",
            Preset::Tqdm => "tqdm",
            Preset::HfTrainer => "hf-trainer",
            Preset::Keras => "keras",
            Preset::Lightning => "lightning",
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
        matches!(
            self,
            Preset::PytorchImagenet | Preset::Keras | Preset::Lightning
        )
    }
}

/// Every capture name a progress regex may use.
pub const CAPTURE_NAMES: [&str; 8] = [
    "samples",
    "iterations",
    "epoch",
    "iteration",
    "epoch_length",
    "rate",
    "unit",
    "iteration_time_s",
];
