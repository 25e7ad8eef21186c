//! The shipped Synergy model zoo (`matrices/zoo/`, the default server shape), built into the
//! binary so a replay or a prediction works from anywhere.

use super::{Matrix, parse_matrix};
use std::path::PathBuf;

const FILES: &[(&str, &str)] = &[
    (
        "alexnet",
        include_str!("../../matrices/zoo/alexnet.matrix.jsonl"),
    ),
    ("bert", include_str!("../../matrices/zoo/bert.matrix.jsonl")),
    (
        "deepspeech",
        include_str!("../../matrices/zoo/deepspeech.matrix.jsonl"),
    ),
    ("gnmt", include_str!("../../matrices/zoo/gnmt.matrix.jsonl")),
    ("lstm", include_str!("../../matrices/zoo/lstm.matrix.jsonl")),
    ("m5", include_str!("../../matrices/zoo/m5.matrix.jsonl")),
    (
        "mobilenet",
        include_str!("../../matrices/zoo/mobilenet.matrix.jsonl"),
    ),
    (
        "resnet18",
        include_str!("../../matrices/zoo/resnet18.matrix.jsonl"),
    ),
    (
        "resnet50",
        include_str!("../../matrices/zoo/resnet50.matrix.jsonl"),
    ),
    (
        "shufflenet",
        include_str!("../../matrices/zoo/shufflenet.matrix.jsonl"),
    ),
    (
        "transformer",
        include_str!("../../matrices/zoo/transformer.matrix.jsonl"),
    ),
    ("vae", include_str!("../../matrices/zoo/vae.matrix.jsonl")),
];

/// Each zoo model's name, the path its file has in the repository, and its matrix.
pub fn shipped_zoo() -> Vec<(&'static str, PathBuf, Matrix)> {
    (FILES.iter())
        .map(|(name, text)| {
            let path = PathBuf::from(format!("matrices/zoo/{name}.matrix.jsonl"));
            let matrix = parse_matrix(&path, text).expect("the shipped zoo's matrices parse");
            (*name, path, matrix)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_shipped_matrix_is_the_file_in_the_repository() {
        for (name, path, matrix) in super::shipped_zoo() {
            let on_disk = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(&path);
            let file = crate::matrix::load_matrix(&on_disk).unwrap();
            assert_eq!(file, matrix, "{name}");
        }
    }
}
