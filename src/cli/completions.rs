//! `sluice completions SHELL`: a completion script generated from the argument definitions,
//! so it never falls behind the commands.

use crate::error::Result;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Install, for example:
  bash:       sluice completions bash > ~/.local/share/bash-completion/completions/sluice
  zsh:        sluice completions zsh > ~/.zfunc/_sluice   (with fpath+=~/.zfunc before compinit)
  fish:       sluice completions fish > ~/.config/fish/completions/sluice.fish
  powershell: sluice completions powershell >> $PROFILE")]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Prints the completion script for `command` (the whole command line).
pub fn run(args: CompletionsArgs, mut command: clap::Command) -> Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "sluice", &mut script);
    super::print_stdout(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}
