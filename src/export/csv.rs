//! `--format csv`: the long-form cell table ([`super::cells_frame`]) as CSV, nulls as empty
//! fields.

use super::{Artifact, ExportError, ExportOptions, Exporter, Layout, Prepared, Rendered};
use polars::prelude::{CsvWriter, SerWriter};

pub struct Csv;

impl Exporter for Csv {
    fn layout(&self) -> Layout {
        Layout::File { binary: false }
    }

    fn render(&self, matrices: &[Prepared], opts: &ExportOptions) -> Result<Rendered, ExportError> {
        let mut df = super::cells_frame(matrices, opts)?;
        let mut bytes = Vec::new();
        CsvWriter::new(&mut bytes)
            .include_header(true)
            .finish(&mut df)
            .map_err(|e| ExportError::Table {
                path: opts.output.clone().unwrap_or_else(|| "<stdout>".into()),
                message: format!("writing CSV: {e}"),
            })?;
        Ok(Rendered {
            artifacts: vec![Artifact {
                name: "cells.csv".into(),
                bytes,
            }],
            notes: Vec::new(),
        })
    }
}
