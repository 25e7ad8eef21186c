//! What users do with matrices after a sweep: best-case demands, export, plots, validation.
//! One test binary (polars makes each large to link), one module per concern.
#![warn(clippy::too_many_lines)]

mod blocks;
mod cache_model;
mod corpus;
mod demand;
mod export;
mod fuzz;
mod many_files;
mod marks;
mod plot;
mod predict;
mod reference_docs;
mod report;
