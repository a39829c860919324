//! Errors are values with context (file, line, what to do), turned into exit code 2 at the edge.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: cannot read: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },

    #[error("{}:{line}: not valid UTF-8 (first bad byte at offset {offset}); save the file as UTF-8", path.display())]
    NotUtf8 { path: PathBuf, line: usize, offset: usize },

    /// Malformed configuration, policy or input file.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid { path: PathBuf, line: Option<usize>, message: String },

    /// Bad command-line usage.
    #[error("{0}")]
    Usage(String),

    /// Anything else that stops a command from giving a verdict (git, PostgreSQL…).
    #[error("{0}")]
    Other(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::Io { path: path.as_ref().to_path_buf(), source }
    }

    pub fn invalid(path: impl AsRef<Path>, line: Option<usize>, message: impl Into<String>) -> Self {
        Error::Invalid { path: path.as_ref().to_path_buf(), line, message: message.into() }
    }
}

/// Reads a text file, with errors that name the file (and the line of a bad UTF-8 byte).
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    text_from_bytes(path, bytes)
}

/// Turns bytes into text, or an error naming the file and the line of the first bad byte.
pub fn text_from_bytes(path: &Path, bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
        Error::NotUtf8 { path: path.to_path_buf(), line, offset }
    })
}

/// 1-based line of a byte offset in `text` (for TOML errors, which report spans).
pub fn line_of_offset(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// Parses a TOML document into `T`, turning errors into [`Error::Invalid`] naming the file and line.
pub fn parse_toml<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T> {
    toml::from_str(text).map_err(|e: toml::de::Error| {
        let line = e.span().map(|s| line_of_offset(text, s.start));
        Error::invalid(path, line, e.message().to_string())
    })
}
