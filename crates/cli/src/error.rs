//! What stops a command, typed so that its cause stays attached (`source()`): an input that
//! cannot be read or is not a snapshot, an analysis that cannot answer, output that cannot be
//! written (with where it was going), or a failure said in words (a bad argument). The message
//! a user reads is the `Display` of the outermost one. A closed pipe (`memviz trace x | head`)
//! is not reported.

use std::fmt;
use std::io;

/// Why a command stopped.
#[derive(Debug)]
pub enum CliError {
    /// The command could not do its work; the message names the input and what went wrong.
    Failed(String),
    /// An input could not be read.
    Read {
        /// The path (`standard input` for `-`).
        path: String,
        /// What the system said.
        source: io::Error,
    },
    /// An input was read but is not a snapshot memviz can load.
    Load {
        /// The path.
        path: String,
        /// Why, as the reader says it.
        source: memviz_core::Error,
    },
    /// An analysis could not answer (no such device, an entry out of range, ...).
    Analysis(memviz_core::analysis::AnalysisError),
    /// Its output could not be written.
    Write {
        /// Where the output was going (`standard output`, a path).
        target: String,
        /// What the system said.
        source: io::Error,
    },
}

impl CliError {
    /// An error writing standard output.
    pub fn stdout(source: io::Error) -> Self {
        Self::Write { target: "standard output".into(), source }
    }

    /// Whether the reader of the output went away (a closed pipe): the command ends quietly.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Self::Write { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Failed(message) => f.write_str(message),
            Self::Read { path, source } => write!(f, "cannot read {path}: {source}"),
            Self::Load { path, source } => write!(f, "{path}: {source}"),
            Self::Analysis(e) => write!(f, "{e}"),
            Self::Write { target, source } => write!(f, "cannot write {target}: {source}"),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Failed(_) => None,
            Self::Write { source, .. } | Self::Read { source, .. } => Some(source),
            Self::Load { source, .. } => Some(source),
            Self::Analysis(e) => Some(e),
        }
    }
}

impl From<memviz_core::analysis::AnalysisError> for CliError {
    fn from(e: memviz_core::analysis::AnalysisError) -> Self {
        Self::Analysis(e)
    }
}

impl From<String> for CliError {
    fn from(message: String) -> Self {
        Self::Failed(message)
    }
}

impl From<&str> for CliError {
    fn from(message: &str) -> Self {
        Self::Failed(message.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_closed_pipe_is_quiet() {
        assert!(CliError::stdout(io::Error::from(io::ErrorKind::BrokenPipe)).is_broken_pipe());
        let full = CliError::stdout(io::Error::from_raw_os_error(28));
        assert!(!full.is_broken_pipe());
        assert!(full.to_string().starts_with("cannot write standard output: "), "{full}");
        assert!(!CliError::from("x").is_broken_pipe());
    }

    /// Each typed failure says what it said before as one line and keeps its cause.
    #[test]
    fn failures_keep_their_cause() {
        use std::error::Error as _;
        let read = CliError::Read { path: "x.pickle".into(), source: io::Error::from(io::ErrorKind::NotFound) };
        assert!(read.to_string().starts_with("cannot read x.pickle: "), "{read}");
        assert!(read.source().is_some());
        let load = CliError::Load { path: "x.pickle".into(), source: memviz_core::Error::Empty };
        assert_eq!(load.to_string(), format!("x.pickle: {}", memviz_core::Error::Empty));
        assert!(load.source().is_some());
        let snap = memviz_core::load(b"{\"segments\": [], \"device_traces\": [[]]}").expect("an empty snapshot loads");
        let Err(e) = memviz_core::analysis::device_position(&snap, Some(7)) else { panic!("device 7 is not there") };
        let text = e.to_string();
        let analysis = CliError::from(e);
        assert_eq!(analysis.to_string(), text);
        assert!(analysis.source().is_some());
        assert!(CliError::from("bad").source().is_none());
    }
}
