//! `sluice reviewers`: the domain reviewers the base revision's `identity.toml` names, for the
//! GitHub action to resolve (expand teams) before it runs `sluice check --approved-by`.

use crate::check::{self, Options};
use crate::error::{Error, Result};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ReviewersArgs {
    /// A directory inside the repository (default: the working directory).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Base revision, as for `sluice check` (its merge base with the head is read).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Head revision, as for `sluice check`.
    #[arg(long, value_name = "REV")]
    pub head: Option<String>,
    /// sluice.toml to use, as for `sluice check` (read from the base revision inside the repository).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Only the team entries (`org/team`).
    #[arg(long)]
    pub teams: bool,
}

pub fn run(args: ReviewersArgs) -> Result<ExitCode> {
    let cwd = super::current_dir()?;
    let dir = cwd.join(args.repo.unwrap_or_else(|| PathBuf::from(".")));
    if !dir.is_dir() {
        return Err(Error::Usage(format!("{}: --repo is not a directory", dir.display())));
    }
    let options = Options {
        dir,
        base: args.base,
        head: args.head,
        ci: crate::git::in_ci(),
        config: args.config.map(|c| cwd.join(c)),
        ..Options::default()
    };
    let reviewers: Vec<String> =
        check::reviewers(&options)?.into_iter().filter(|r| !args.teams || r.contains('/')).collect();
    let mut text = reviewers.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    super::print_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}
