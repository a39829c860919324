//! `sluice reviewers`: the domain reviewers the base revision's `identity.toml` names, for the
//! GitHub action to resolve (expand teams) before it runs `sluice check --approved-by`.

use super::check::RevisionArgs;
use crate::check::{self, Options};
use crate::error::Result;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ReviewersArgs {
    #[command(flatten)]
    pub revisions: RevisionArgs,
    /// sluice.toml to use, as for `sluice check` (read from the base revision inside the repository).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Only the team entries (`org/team`).
    #[arg(long)]
    pub teams: bool,
}

pub fn run(args: ReviewersArgs) -> Result<ExitCode> {
    let cwd = super::current_dir()?;
    let options = Options {
        dir: args.revisions.repo_dir(&cwd)?,
        base: args.revisions.base,
        head: args.revisions.head,
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
