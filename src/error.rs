//! Errors are values with context (file, line, what to do), turned into exit code 2 at the edge.

use std::path::{Path, PathBuf};

/// The largest input file Sluice reads (SQL, TOML, CSV, iCalendar): a bound that turns a file
/// pointed at by mistake (a data dump, a disk image) into a clear error instead of an
/// out-of-memory abort. Schema dumps of large databases stay far below it.
pub const MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: cannot {action}: {source}", path.display())]
    Io { path: PathBuf, action: IoAction, source: std::io::Error },

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

/// What Sluice was doing with a file when the operating system refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoAction {
    Read,
    Write,
    Create,
    Lock,
    List,
}

impl std::fmt::Display for IoAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IoAction::Read => "read",
            IoAction::Write => "write",
            IoAction::Create => "create",
            IoAction::Lock => "lock",
            IoAction::List => "list",
        })
    }
}

impl Error {
    /// Reading `path` failed.
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::io_while(IoAction::Read, path, source)
    }

    /// Writing (or appending to) `path` failed.
    pub fn write(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::io_while(IoAction::Write, path, source)
    }

    pub fn io_while(action: IoAction, path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::Io { path: path.as_ref().to_path_buf(), action, source }
    }

    pub fn invalid(path: impl AsRef<Path>, line: Option<usize>, message: impl Into<String>) -> Self {
        Error::Invalid { path: path.as_ref().to_path_buf(), line, message: message.into() }
    }
}

/// Reads a text file, with errors that name the file (and the line of a bad UTF-8 byte). Only
/// regular files (or symlinks to them): a FIFO would block forever, a directory is a mistake.
pub fn read_text(path: &Path) -> Result<String> {
    read_bytes(path).and_then(|bytes| text_from_bytes(path, bytes))
}

/// Reads a regular file's bytes, refusing anything else and anything over [`MAX_INPUT_BYTES`].
/// The file is opened once and asked what it is through the open handle: a history is hundreds
/// of small files, and each system call saved is one per file. Opened without blocking, so that
/// a FIFO is refused rather than waited on (for a regular file the flag changes nothing).
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let metadata = file.metadata().map_err(|e| Error::io(path, e))?;
    if !metadata.is_file() {
        let what = not_a_file(&metadata.file_type());
        return Err(Error::invalid(path, None, format!("cannot read: {what}, not a regular file")));
    }
    check_size(path, metadata.len())?;
    // One byte more than the size, so that the read that finds the end needs no reallocation.
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0).saturating_add(1));
    // Through `Take`: `File`'s own `read_to_end` asks the file for its size and position again
    // (two more system calls per file of a history). The limit also holds for a file that grew
    // after it was measured.
    file.by_ref().take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    check_size(path, bytes.len() as u64)?;
    Ok(bytes)
}

/// Refuses input over [`MAX_INPUT_BYTES`] before it is read.
pub fn check_size(path: &Path, bytes: u64) -> Result<()> {
    if bytes > MAX_INPUT_BYTES {
        return Err(Error::invalid(
            path,
            None,
            format!(
                "cannot read: the file is {} MiB, more than Sluice reads ({} MiB); is it the file you meant?",
                bytes.div_ceil(1024 * 1024),
                MAX_INPUT_BYTES / (1024 * 1024)
            ),
        ));
    }
    Ok(())
}

fn not_a_file(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// Turns bytes into text, or an error naming the file and the line of the first bad byte. A
/// leading UTF-8 byte-order mark is dropped: editors on Windows write one, and PostgreSQL's
/// tools and the migration runners accept it.
pub fn text_from_bytes(path: &Path, mut bytes: Vec<u8>) -> Result<String> {
    if bytes.starts_with(UTF8_BOM) {
        bytes.drain(..UTF8_BOM.len());
    }
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
        Error::NotUtf8 { path: path.to_path_buf(), line, offset }
    })
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// 1-based line of a byte offset in `text` (for TOML errors, which report spans).
pub fn line_of_offset(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// 1-based line of the first line assigning `key` (`key = …`, `key=…`), for errors about a
/// value that serde accepted but Sluice does not.
pub fn line_of_key(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| l.trim_start().strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with('=')))
        .map(|i| i + 1)
}

/// Parses a TOML document into `T`, turning errors into [`Error::Invalid`] naming the file and line.
pub fn parse_toml<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T> {
    toml::from_str(text).map_err(|e: toml::de::Error| {
        let line = e.span().map(|s| line_of_offset(text, s.start));
        Error::invalid(path, line, e.message().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_order_mark_is_not_text() {
        let text = text_from_bytes(Path::new("a.sql"), b"\xEF\xBB\xBFCREATE TABLE t ();".to_vec()).unwrap();
        assert_eq!(text, "CREATE TABLE t ();");
        // Only a leading one.
        let text = text_from_bytes(Path::new("a.sql"), b"a\xEF\xBB\xBF".to_vec()).unwrap();
        assert_eq!(text, "a\u{feff}");
    }

    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_text(dir.path()).unwrap_err().to_string();
        assert!(err.ends_with("cannot read: a directory, not a regular file"), "{err}");
        #[cfg(unix)]
        {
            let fifo = dir.path().join("queries.sql");
            nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
            // Returns at once: a FIFO is never opened, so nothing waits for a writer.
            let err = read_text(&fifo).unwrap_err().to_string();
            assert!(err.ends_with("cannot read: a FIFO (named pipe), not a regular file"), "{err}");
        }
        let err = read_text(&dir.path().join("missing.toml")).unwrap_err().to_string();
        assert!(err.contains("missing.toml: cannot read: No such file"), "{err}");
    }

    #[test]
    fn oversized_input_is_refused_before_it_is_read() {
        let err = check_size(Path::new("dump.sql"), MAX_INPUT_BYTES + 1).unwrap_err().to_string();
        assert_eq!(
            err,
            "dump.sql: cannot read: the file is 257 MiB, more than Sluice reads (256 MiB); is it the file you meant?"
        );
        assert!(check_size(Path::new("dump.sql"), MAX_INPUT_BYTES).is_ok());
    }

    #[test]
    fn finds_the_line_of_a_key() {
        let text = "# sizes\n[pool]\nsize_hint = 1\nsize = 0\n";
        assert_eq!(line_of_key(text, "size"), Some(4));
        assert_eq!(line_of_key(text, "instances"), None);
    }

    #[test]
    fn write_errors_say_write() {
        let err = Error::write("report.sarif", std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert!(err.to_string().starts_with("report.sarif: cannot write: "), "{err}");
    }
}
