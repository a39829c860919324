use crate::error::{Error, Result};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct LintArgs {}

pub fn run(_args: LintArgs) -> Result<ExitCode> {
    Err(Error::Other("`sluice lint` is not built yet".into()))
}
