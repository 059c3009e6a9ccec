//! What stops a command, typed so that its cause stays attached (`source()`): arguments that
//! cannot be acted on, an input that cannot be read or is not a snapshot, an analysis that cannot
//! answer, output that cannot be written (with where it was going). The message a user reads is
//! the `Display` of the outermost one, one line that names the input and says the cause. A closed
//! pipe (`memviz trace x | head`) is not reported.

use std::io;

use memviz_core::analysis::AnalysisError;

/// Why a command stopped.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The arguments cannot be acted on (a missing option, a bad window, no snapshot files where
    /// they were looked for); the message says which and what to do.
    #[error("{0}")]
    Usage(String),
    /// An argument that the analyses read (`--by`, `--at`) is not one they know.
    #[error("{source}{hint}")]
    Argument {
        /// Why, as the analyses say it.
        source: AnalysisError,
        /// What else the command accepts (`; or stack, line`), or nothing.
        hint: &'static str,
    },
    /// An input could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path (`standard input` for `-`).
        path: String,
        /// What the system said.
        source: io::Error,
    },
    /// A folder could not be listed.
    #[error("cannot list {path}: {source}")]
    List {
        /// The folder.
        path: String,
        /// What the system said.
        source: io::Error,
    },
    /// An input was read but is not a snapshot memviz can load, or not one the command can use
    /// (`trace` of a snapshot without a trace).
    #[error("{path}: {source}")]
    Load {
        /// The path (`-` for standard input).
        path: String,
        /// Why, as the reader says it.
        source: memviz_core::Error,
    },
    /// An analysis could not answer (no such device, an entry out of range, ...).
    #[error("{0}")]
    Analysis(#[from] AnalysisError),
    /// An analysis could not answer for one of several inputs, or an input it reads itself (a
    /// profiler timeline) is not what it expects.
    #[error("{path}: {source}")]
    AnalysisOf {
        /// The input.
        path: String,
        /// Why, as the analysis says it.
        source: AnalysisError,
    },
    /// JSON output could not be made.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// An output folder could not be made.
    #[error("cannot create {path}: {source}")]
    Create {
        /// The folder.
        path: String,
        /// What the system said.
        source: io::Error,
    },
    /// Its output could not be written.
    #[error("cannot write {target}: {source}")]
    Write {
        /// Where the output was going (`standard output`, a path).
        target: String,
        /// What the system said.
        source: io::Error,
    },
    /// A Parquet file could not be written.
    #[error("cannot write {path}: {source}")]
    Parquet {
        /// The file.
        path: String,
        /// What the Parquet writer said.
        source: parquet::errors::ParquetError,
    },
    /// A batch of Parquet rows could not be made (columns that do not fit the table).
    #[error("cannot write {path}: {source}")]
    Arrow {
        /// The file.
        path: String,
        /// What Arrow said.
        source: arrow_schema::ArrowError,
    },
}

impl CliError {
    /// An error writing standard output.
    pub fn stdout(source: io::Error) -> Self {
        Self::Write { target: "standard output".into(), source }
    }

    /// An argument the analyses refused, with nothing more to suggest.
    pub fn argument(source: AnalysisError) -> Self {
        Self::Argument { source, hint: "" }
    }

    /// Whether the reader of the output went away (a closed pipe): the command ends quietly.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Self::Write { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn only_a_closed_pipe_is_quiet() {
        assert!(CliError::stdout(io::Error::from(io::ErrorKind::BrokenPipe)).is_broken_pipe());
        let full = CliError::stdout(io::Error::from_raw_os_error(28));
        assert!(!full.is_broken_pipe());
        assert!(full.to_string().starts_with("cannot write standard output: "), "{full}");
        assert!(!CliError::Usage("x".into()).is_broken_pipe());
    }

    /// Each typed failure says what it said before as one line and keeps its cause.
    #[test]
    fn failures_keep_their_cause() {
        let read = CliError::Read { path: "x.pickle".into(), source: io::Error::from(io::ErrorKind::NotFound) };
        assert!(read.to_string().starts_with("cannot read x.pickle: "), "{read}");
        assert!(read.source().is_some());
        let load = CliError::Load { path: "x.pickle".into(), source: memviz_core::Error::Empty };
        assert_eq!(load.to_string(), format!("x.pickle: {}", memviz_core::Error::Empty));
        assert!(load.source().is_some());
        let snap = memviz_core::load(b"{\"segments\": [], \"device_traces\": [[]]}").expect("an empty snapshot loads");
        let Err(e) = memviz_core::analysis::device_position(&snap, Some(7)) else { panic!("device 7 is not there") };
        let text = e.to_string();
        let of = CliError::AnalysisOf { path: "b.pickle".into(), source: e.clone() };
        assert_eq!(of.to_string(), format!("b.pickle: {text}"));
        assert!(of.source().is_some());
        let analysis = CliError::from(e);
        assert_eq!(analysis.to_string(), text);
        assert!(analysis.source().is_some());
        let Err(bad) = memviz_core::analysis::grouping::GroupBy::parse("colour") else { panic!("not a grouping") };
        let by = CliError::Argument { source: bad.clone(), hint: "; or stack, line" };
        assert_eq!(by.to_string(), format!("{bad}; or stack, line"));
        assert!(by.source().is_some());
        let json = CliError::from(serde_json::from_str::<serde_json::Value>("{").expect_err("not JSON"));
        assert!(json.source().is_some());
        assert!(CliError::Usage("bad".into()).source().is_none());
    }
}
