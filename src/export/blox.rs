//! `--format blox`: Blox (msr-fiddle/blox) model files, `workload/models/<model>_1.py`: Synergy's
//! layout (see `super::synergy`) with Blox's memory grid, which has no 20.83 GB column
//! (`mem_val` in Blox's `workload/job.py`), so `tput` is 9 x 4 and `mem` is at least 62.5.

use super::synergy::{Target, render_model_files};
use super::{ExportError, ExportOptions, Exporter, Layout, Prepared, Rendered};

/// Columns of Blox's table: GB per GPU.
pub const BLOX_MEM_GB_PER_GPU: [f64; 4] = [62.5, 125.0, 187.5, 250.0];

const BLOX: Target = Target {
    tool: "Blox",
    format: "blox",
    mem_columns: &BLOX_MEM_GB_PER_GPU,
    install_dir: "workload/models/",
};

pub struct Blox;

impl Exporter for Blox {
    fn layout(&self) -> Layout {
        Layout::Directory
    }

    fn render(&self, matrices: &[Prepared], opts: &ExportOptions) -> Result<Rendered, ExportError> {
        render_model_files(matrices, opts, &BLOX)
    }
}
