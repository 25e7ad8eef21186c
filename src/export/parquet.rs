//! `--format parquet`: the long-form cell table ([`super::cells_frame`]) as Parquet (zstd).

use super::{Artifact, ExportError, ExportOptions, Exporter, Layout, Prepared, Rendered};
use polars::prelude::{ParquetCompression, ParquetWriter};

pub struct Parquet;

impl Exporter for Parquet {
    fn layout(&self) -> Layout {
        Layout::File { binary: true }
    }

    fn render(&self, matrices: &[Prepared], opts: &ExportOptions) -> Result<Rendered, ExportError> {
        let mut df = super::cells_frame(matrices, opts)?;
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes)
            .with_compression(ParquetCompression::Zstd(None))
            .finish(&mut df)
            .map_err(|e| ExportError::Table {
                path: opts.output.clone().unwrap_or_else(|| "<stdout>".into()),
                message: format!("writing Parquet: {e}"),
            })?;
        Ok(Rendered {
            artifacts: vec![Artifact {
                name: "cells.parquet".into(),
                bytes,
            }],
            notes: Vec::new(),
        })
    }
}
