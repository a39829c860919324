use crate::error::{Error, Result};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct CheckArgs {}

pub fn run(_args: CheckArgs) -> Result<ExitCode> {
    Err(Error::Other("`sluice check` is not built yet".into()))
}
