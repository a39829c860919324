//! `.sql` files in the query directories (`[queries] dirs`): every `.sql` file below them
//! (hidden and git-ignored files left out), each the text of its queries, placeholders in any
//! style (see [`crate::sql::placeholders`]).

use super::{Query, Source};
use crate::error::{read_text, Error, Result};
use std::path::{Path, PathBuf};

/// The `.sql` files below `dirs` (those that are directories), sorted, each once.
pub fn list(dirs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        let walker = ignore::WalkBuilder::new(dir).hidden(true).git_ignore(true).build();
        for entry in walker {
            let entry = entry.map_err(|e| Error::Other(format!("{}: {e}", dir.display())))?;
            if entry.file_type().is_some_and(|t| t.is_file()) && entry.path().extension().is_some_and(|e| e == "sql") {
                files.push(entry.into_path());
            }
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// Reads one query file from disk; `display` is how findings name it.
pub fn read(path: &Path, display: String, source: Source) -> Result<Query> {
    Ok(Query::whole_file(display, read_text(path)?, source))
}
