//! MinIO cache model used by optimistic profiling to fill the memory axis.
