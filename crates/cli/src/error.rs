//! What stops a command: a failure with its message (an unreadable input, a bad argument, a
//! snapshot without what the command needs), or output that cannot be written, with where it
//! was going. A closed pipe (`memviz trace x | head`) is not reported.

use std::fmt;
use std::io;

/// Why a command stopped.
#[derive(Debug)]
pub enum CliError {
    /// The command could not do its work; the message names the input and what went wrong.
    Failed(String),
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
            Self::Write { target, source } => write!(f, "cannot write {target}: {source}"),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Failed(_) => None,
            Self::Write { source, .. } => Some(source),
        }
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
}
