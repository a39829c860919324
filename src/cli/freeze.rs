use crate::error::{Error, Result};
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum FreezeCommand {
    Status,
}

pub fn run(_command: FreezeCommand) -> Result<ExitCode> {
    Err(Error::Other("`sluice freeze` is not built yet".into()))
}
