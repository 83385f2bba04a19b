//! Errors of the engine. Input errors name the file, the place and what was expected.

use std::fmt;
use std::path::PathBuf;

/// Anything that stops a simulation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The scene (or a file it refers to) is invalid.
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// A file could not be read or written.
    #[error("cannot {action} `{path}`: {}", crate::input::io_reason(cause))]
    Io {
        /// What was being done ("write", "read", "create directory").
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause (in the message, so not chained as a source: it would print twice).
        cause: std::io::Error,
    },
    /// The simulation produced non-finite or runaway values.
    #[error(
        "the simulation became unstable in frame {frame} (t = {time:.4} s): {reason}. Every frame \
         written before it is intact; a smaller `simulation.cfl` or a finer grid may help"
    )]
    BlowUp {
        /// The frame being computed.
        frame: u32,
        /// Simulated time when it was detected (s).
        time: f64,
        /// What was found.
        reason: String,
    },
    /// A checkpoint could not be used.
    #[error("checkpoint `{path}`: {message}")]
    Checkpoint {
        /// The checkpoint file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl Error {
    /// Wraps an I/O error with the action and file.
    pub fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |cause| Error::Io { action, path, cause }
    }
}

/// An invalid scene: where it is and what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct SceneError {
    /// The scene file (or `<built-in default scene>`).
    pub file: String,
    /// 1-based line and column of the offending text, when known.
    pub position: Option<(usize, usize)>,
    /// Dotted key path of the offending value, when known (`liquid.region[1].shape`).
    pub key: Option<String>,
    /// What is wrong and what was expected.
    pub message: String,
}

impl SceneError {
    /// An error with its message folded onto one line (messages from mesh and TOML parsers may
    /// span several).
    pub fn new(file: &str, position: Option<(usize, usize)>, key: Option<String>, message: &str) -> Self {
        SceneError { file: file.to_string(), position, key, message: message.split_whitespace().collect::<Vec<_>>().join(" ") }
    }
}

impl fmt::Display for SceneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some((line, column)) = self.position {
            write!(f, ":{line}:{column}")?;
        }
        write!(f, ": ")?;
        if let Some(key) = &self.key {
            write!(f, "`{key}`: ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for SceneError {}

/// Result with the engine's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
