//! The memory axis as measured: storage and memory bandwidth, small random reads, the dataset (its size, generating it), the page cache
//! (evicting, asking what is cached), the job's resident memory, the order it opens files,
//! its reads re-read under a smaller cache, and the cells the cache model fills in below the
//! measured memory level. The model itself is `crate::cache_model`.

pub mod bandwidth;
pub mod dataset;
pub mod file_mapping;
pub mod modelled_cells;
pub mod open_trace;
pub mod page_cache;
pub mod random_read;
pub mod reread;
pub mod resident;
