use crate::error::{Error, Result};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct PlanArgs {}

pub fn run(_args: PlanArgs) -> Result<ExitCode> {
    Err(Error::Other("`sluice plan` is not built yet".into()))
}
