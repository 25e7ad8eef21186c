//! `profiler replay`: cluster-scheduling replay (issue 3).
