//! The command line's integration tests, one binary: each module tests one area against the built
//! `memviz` ([`run`]), with the core's pickle writer ([`common`]) and test data
//! ([`test_fixtures`]) shared. The public corpus is another binary (`tests/corpus.rs`, feature
//! `corpus`).

#![allow(clippy::expect_used, clippy::unwrap_used)]

// The pickle writer of the core's tests, and where test data lives as they find it (a missing
// file fails the test).
#[path = "../../../core/tests/all/common.rs"]
#[allow(dead_code, unused_imports)] // not every helper is used here
mod common;
mod test_fixtures {
    pub use crate::common::{fixture, fixture_dir, fixture_files};
}

mod run;

mod analyses;
mod commands;
mod conformance;
mod inputs;
mod profiler;
mod ranks;
