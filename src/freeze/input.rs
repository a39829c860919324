//! Opening the freeze files: only regular files, never a hang.
//!
//! A FIFO given as the calendar, the overrides, an imported `.ics` or the audit log used to
//! block forever in `open` (a FIFO's reader waits for a writer and its writer for a reader). Each
//! file is opened with `O_NONBLOCK`, which returns at once for FIFOs, then checked with `fstat`
//! on the open descriptor (no race with a swapped path): anything but a regular file — FIFO,
//! socket, device, directory — is refused with an error that names it.

use crate::error::{check_size, text_from_bytes, Error, Result, MAX_INPUT_BYTES};
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::Path;

fn kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Opens `path` with `options` without blocking, and checks that it is a regular file.
fn open_regular(path: &Path, options: &mut OpenOptions, what: &str) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = options.custom_flags(nix::libc::O_NONBLOCK).open(path).map_err(|e| match e.raw_os_error() {
        // O_NONBLOCK write-open of a FIFO without a reader.
        Some(nix::libc::ENXIO) => {
            Error::invalid(path, None, format!("{what} is a FIFO (named pipe); give a regular file"))
        }
        _ => Error::io(path, e),
    })?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::invalid(path, None, format!("{what} is {}; give a regular file", kind(&meta))));
    }
    Ok(file)
}

/// Reads a freeze input (calendar, overrides, `.ics`) as UTF-8 text.
pub fn read_regular_text(path: &Path) -> Result<String> {
    let mut file = open_regular(path, OpenOptions::new().read(true), "this input")?;
    // Sized up front: a 1 MB calendar would otherwise be copied through several doublings.
    let size = file.metadata().map_or(0, |m| m.len());
    // The limit every other input has (issue 38, item 7), also for a file that grows as it is read.
    check_size(path, size)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
    file.by_ref().take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    check_size(path, bytes.len() as u64)?;
    text_from_bytes(path, bytes)
}

/// Opens the audit log for appending, creating it if needed.
pub fn open_append(path: &Path) -> Result<File> {
    open_regular(path, OpenOptions::new().create(true).append(true), "the audit log")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calendar_over_the_input_limit_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("freeze.toml");
        let file = File::create(&path).unwrap();
        // Sparse: no 257 MiB written to disk.
        file.set_len(MAX_INPUT_BYTES + 1).unwrap();
        let e = read_regular_text(&path).unwrap_err().to_string();
        assert!(e.contains("freeze.toml") && e.contains("more than Sluice reads (256 MiB)"), "{e}");
    }

    #[test]
    fn fifos_directories_and_devices_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("calendar.toml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = read_regular_text(&fifo).unwrap_err().to_string();
        assert!(e.contains("is a FIFO (named pipe); give a regular file"), "{e}");
        let e = open_append(&fifo).unwrap_err().to_string();
        assert!(e.contains("the audit log is a FIFO"), "{e}");
        let e = read_regular_text(dir.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
        let e = read_regular_text(Path::new("/dev/null")).unwrap_err().to_string();
        assert!(e.contains("is a device"), "{e}");
        let file = dir.path().join("ok.toml");
        std::fs::write(&file, "x = 1\n").unwrap();
        assert_eq!(read_regular_text(&file).unwrap(), "x = 1\n");
        let log = dir.path().join("audit.jsonl");
        open_append(&log).unwrap();
        assert!(log.is_file());
    }
}
