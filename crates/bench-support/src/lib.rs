//! What the benchmarks and measuring examples of this workspace share, so that every figure in
//! `docs/BENCHMARKS.md` is computed the same way: percentiles and medians ([`stats`]) and the
//! threads, CPU times and `/proc/PID/stat` fields of processes ([`procfs`], Linux), and the
//! inventory's floor ([`floor`]).
//!
//! Used as a dev-dependency of `crates/benchmarks` only (its benches and examples); never shipped.
#![deny(missing_docs)]

pub mod floor;
pub mod procfs;
pub mod stats;
