//! GPU telemetry through NVML, loaded at run time.
