//! Markdown written from the argument definitions: the README's table of commands and
//! docs/commands.md (every command's synopsis and options). Generated, so they cannot drift from
//! what the binary parses; tests/generated_docs.rs holds both files to this output.

use clap::{Arg, ArgAction, Command};

/// Width the synopses wrap at (the README's code blocks).
const WIDTH: usize = 100;

/// The commands a user runs, by their full name (`sluice freeze status`): a command with
/// subcommands is listed by its subcommands. clap's own `help` is left out.
fn leaves(command: &Command, name: &str, out: &mut Vec<(String, Command)>) {
    let subcommands: Vec<&Command> =
        command.get_subcommands().filter(|c| c.get_name() != "help" && !c.is_hide_set()).collect();
    if subcommands.is_empty() {
        out.push((name.to_string(), command.clone()));
    }
    for sub in subcommands {
        leaves(sub, &format!("{name} {}", sub.get_name()), out);
    }
}

fn commands(root: &Command) -> Vec<(String, Command)> {
    let mut root = root.clone();
    root.build();
    let mut out = Vec::new();
    leaves(&root, root.get_name(), &mut out);
    out.retain(|(name, _)| name != root.get_name());
    out
}

/// The arguments a user sees: not hidden, not clap's `--help` / `--version`.
fn shown(command: &Command) -> impl Iterator<Item = &Arg> {
    command
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_action(), ArgAction::Help | ArgAction::Version))
}

/// What an option takes: its possible values (`table|json`), else its value name (`<FILE>`).
fn value_text(arg: &Arg) -> Option<String> {
    if !arg.get_action().takes_values() {
        return None;
    }
    let possible: Vec<String> =
        arg.get_possible_values().iter().filter(|v| !v.is_hide_set()).map(|v| v.get_name().to_string()).collect();
    if !possible.is_empty() {
        return Some(possible.join("|"));
    }
    let names = arg
        .get_value_names()
        .map(|names| names.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| arg.get_id().to_string().to_uppercase());
    Some(format!("<{names}>"))
}

fn repeatable(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Append)
        || (arg.is_positional() && arg.get_num_args().is_some_and(|n| n.max_values() > 1))
}

/// `--since <VERSION>`, `-o, --output <FILE>`, `PATHS`: the argument as the options list names it.
fn spelling(arg: &Arg) -> String {
    let value = value_text(arg);
    match arg.get_long() {
        Some(long) => {
            let short = arg.get_short().map(|s| format!("-{s}, ")).unwrap_or_default();
            match value {
                Some(value) => format!("{short}--{long} {value}"),
                None => format!("{short}--{long}"),
            }
        }
        None => value.unwrap_or_else(|| arg.get_id().to_string().to_uppercase()),
    }
}

/// The argument in a synopsis: `[--since <VERSION>]`, `[PATHS...]`, `<FILE>`.
fn usage(arg: &Arg) -> String {
    let core = match (arg.get_long(), value_text(arg)) {
        (Some(long), Some(value)) => format!("--{long} {value}"),
        (Some(long), None) => format!("--{long}"),
        (None, value) => value.unwrap_or_else(|| arg.get_id().to_string().to_uppercase()),
    };
    let core = if repeatable(arg) { format!("{core}...") } else { core };
    if arg.is_required_set() {
        core
    } else {
        format!("[{core}]")
    }
}

/// `sluice lint [PATHS...] [--since <VERSION>] …`, wrapped at [`WIDTH`] with continuation lines
/// indented past the command's name; positionals first, as they are typed.
pub fn synopsis(name: &str, command: &Command) -> String {
    let (positional, options): (Vec<&Arg>, Vec<&Arg>) = shown(command).partition(|a| a.is_positional());
    let indent = " ".repeat(name.len() + 1);
    let mut lines = vec![name.to_string()];
    for part in positional.into_iter().chain(options).map(usage) {
        let line = lines.last_mut().expect("one line at least");
        if line.len() + 1 + part.len() > WIDTH && line.trim().len() > name.len() {
            lines.push(format!("{indent}{part}"));
        } else {
            line.push(' ');
            line.push_str(&part);
        }
    }
    lines.join("\n")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// clap drops a summary's final full stop; prose keeps it.
fn sentence(text: &str) -> String {
    if text.ends_with(['.', '?', '!', ')']) {
        text.to_string()
    } else {
        format!("{text}.")
    }
}

/// Markdown's heading anchor for `sluice freeze status`.
fn anchor(name: &str) -> String {
    name.replace(' ', "-")
}

/// The README's table: each command, what it does, a link to its synopsis in docs/commands.md.
pub fn readme_table(root: &Command) -> String {
    let mut out = String::from("| command | what it does |\n|---|---|\n");
    for (name, command) in commands(root) {
        let about = command.get_about().map(|a| one_line(&a.to_string())).unwrap_or_default();
        out.push_str(&format!("| [`{name}`](docs/commands.md#{}) | {about} |\n", anchor(&name)));
    }
    out
}

/// docs/commands.md: every command's synopsis and its arguments with their help, defaults,
/// possible values and environment variables.
pub fn commands_markdown(root: &Command) -> String {
    let mut out = String::from(
        "# Commands\n\n\
         Every command's synopsis and arguments, generated from the argument definitions (`SLUICE_UPDATE_DOCS=1 \
         cargo test --test generated_docs` rewrites this file; `sluice COMMAND --help` prints the same help). \
         Exit codes: [the README](../README.md#exit-codes).\n",
    );
    for (name, command) in commands(root) {
        out.push_str(&format!("\n## `{name}`\n\n"));
        if let Some(about) = command.get_long_about().or(command.get_about()) {
            out.push_str(&format!("{}\n\n", sentence(&one_line(&about.to_string()))));
        }
        out.push_str(&format!("```\n{}\n```\n", synopsis(&name, &command)));
        let args: Vec<&Arg> = shown(&command).collect();
        if !args.is_empty() {
            out.push('\n');
        }
        for arg in args {
            let help = arg.get_long_help().or(arg.get_help()).map(|h| one_line(&h.to_string())).unwrap_or_default();
            let mut notes = Vec::new();
            let defaults: Vec<String> =
                arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
            if !defaults.is_empty() && arg.get_action().takes_values() {
                notes.push(format!("default: `{}`", defaults.join(" ")));
            }
            if let Some(env) = arg.get_env() {
                notes.push(format!("environment: `{}`", env.to_string_lossy()));
            }
            if repeatable(arg) && !help.contains("repeatable") {
                notes.push("repeatable".to_string());
            }
            let notes = if notes.is_empty() { String::new() } else { format!(" ({})", notes.join("; ")) };
            out.push_str(&format!("- `{}`: {help}{notes}\n", spelling(arg)));
        }
    }
    out
}
