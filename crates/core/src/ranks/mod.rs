//! A whole training run: a snapshot per rank. [`naming`] tells ranks and iterations from the
//! files' paths (no filesystem: path strings in); [`summary`] reduces one rank's snapshot to a
//! small [`RankSummary`] and picks the [`Outlier`]s among the ranks. The command line's
//! `memviz ranks` and the page's rank overview share both.

pub mod naming;
pub mod summary;

pub use naming::{assign_ranks, is_snapshot_name, NamingRule, RankFile, RankFiles};
pub use summary::{outliers, summarize, OomEvent, Outlier, PeakStack, RankSummary, CURVE_POINTS};
