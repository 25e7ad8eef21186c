//! Facts about the machine a matrix is measured on.
