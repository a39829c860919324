//! `sluice man`: the manual page, generated from the argument definitions.

use crate::error::{Error, Result};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Read it with `sluice man | man -l -`, or install the pages:
  sluice man --out-dir /usr/local/share/man/man1")]
pub struct ManArgs {
    /// Write one page per command (sluice.1, sluice-lint.1, …) into DIR instead of printing sluice.1.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// Prints the man page of `command` (the whole command line), or writes one per subcommand.
pub fn run(args: ManArgs, command: clap::Command) -> Result<ExitCode> {
    match args.out_dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .and_then(|_| clap_mangen::generate_to(command, &dir))
                .map_err(|e| Error::Other(format!("{}: cannot write the man pages: {e}", dir.display())))?;
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command)
                .render(&mut page)
                .map_err(|e| Error::Other(format!("cannot render the man page: {e}")))?;
            super::print_stdout(&String::from_utf8_lossy(&page))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
