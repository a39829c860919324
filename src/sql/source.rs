//! A file of SQL as Sluice reads it: its text parsed into statements, and the path findings
//! name it by.

use super::parse::ParsedFile;
use std::sync::Arc;

/// A parsed file and the path findings name.
#[derive(Debug)]
pub struct SourceFile {
    /// Relative to the repository root (or the working directory), with `/`.
    pub display: String,
    pub parsed: ParsedFile,
}

impl SourceFile {
    pub fn parse(display: impl Into<String>, text: String) -> SourceFile {
        SourceFile::parse_shared(display, text.into())
    }

    /// [`parse`](Self::parse) of text already shared.
    pub fn parse_shared(display: impl Into<String>, text: Arc<str>) -> SourceFile {
        SourceFile { display: display.into(), parsed: super::parse::parse_shared(text) }
    }
}
