//! What psql's meta-commands do to what PostgreSQL runs, for files a psql runner reads (`psql -f`:
//! the flat layout, Sqitch). psql executes meta-commands itself; some send SQL Sluice can read
//! (`\g`, the files `\i` names), others run SQL or commands Sluice cannot know (`\gexec` runs the
//! rows its query returns, `\!` a shell, `\if` picks branches by a value), and the rest only shape
//! output or set variables. Checked against psql 15 (`psql -f` on a scratch server) and the psql
//! documentation's "Meta-Commands" section.

/// What a meta-command does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Sends the query buffer, as `;` does: `\g`, `\gx`, `\gset`, `\gdesc`, `\crosstabview`, `\watch`.
    Sends,
    /// Sends the query buffer, then runs each value of its result as SQL: `\gexec`.
    SendsAndRunsResult,
    /// Runs the SQL of a file: `\i` / `\include` (relative to psql's working directory) and `\ir`
    /// / `\include_relative` (relative to the file being read).
    Includes { path: String, relative: bool },
    /// Changes nothing PostgreSQL runs: output and formatting, variables (their use is what
    /// matters, and psql variables in SQL are read as such), describing objects.
    Nothing,
    /// Runs what Sluice cannot read, or makes what follows depend on what it cannot know: why.
    Unreadable(String),
}

/// A meta-command as written: its name (without the backslash) and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaCommand {
    pub name: String,
    pub args: Vec<String>,
}

impl MetaCommand {
    /// Reads the text of a meta-command lexeme (`\ir other.sql`, `\set x 'a b'`).
    pub fn read(text: &str) -> MetaCommand {
        let text = text.strip_prefix('\\').unwrap_or(text);
        let text = text.strip_suffix("\\\\").unwrap_or(text);
        let name_end = text.find(|c: char| c.is_ascii_whitespace()).unwrap_or(text.len());
        MetaCommand { name: text[..name_end].to_string(), args: arguments(&text[name_end..]) }
    }

    /// What it does. Unknown commands are unreadable: the gate never passes what it cannot tell.
    pub fn effect(&self) -> Effect {
        let name = self.name.as_str();
        // `\d`, `\dt+`, `\df` …: describing objects.
        let describes = name.starts_with('d')
            && name.len() <= 5
            && name.chars().all(|c| c.is_ascii_alphabetic() || c == '+' || c == 'S');
        let first = || self.args.first().cloned().unwrap_or_default();
        match name {
            "g" | "gx" | "gset" | "gdesc" | "crosstabview" | "watch" => Effect::Sends,
            "gexec" => Effect::SendsAndRunsResult,
            "i" | "include" => Effect::Includes { path: first(), relative: false },
            "ir" | "include_relative" => Effect::Includes { path: first(), relative: true },
            "echo" | "qecho" | "warn" | "set" | "unset" | "pset" | "timing" | "x" | "a" | "t" | "f" | "H" | "C"
            | "T" | "encoding" | "errverbose" | "conninfo" | "p" | "print" | "l" | "list" | "z" | "sf" | "sv" | "h"
            | "help" | "?" | "q" | "quit" | "\\" | "copyright" | "prompt" | "setenv" | "getenv" => Effect::Nothing,
            _ if describes => Effect::Nothing,
            // Output to a file is harmless; to a command (`\o |cmd`) it runs a shell.
            "o" | "out" if !first().starts_with('|') => Effect::Nothing,
            "copy" if !self.args.iter().any(|a| a.eq_ignore_ascii_case("program")) => Effect::Nothing,
            "if" | "elif" | "else" | "endif" => Effect::Unreadable(format!(
                "psql's `\\{name}`: which branch runs depends on a value psql evaluates, so what runs is not what \
                 Sluice read (it checked every branch as if it ran)"
            )),
            "c" | "connect" => Effect::Unreadable(
                "psql's `\\connect`: the statements after it run on another connection, maybe another database".into(),
            ),
            "!" => Effect::Unreadable("psql's `\\!` runs a shell command, which can run any SQL".into()),
            "r" | "reset" => Effect::Unreadable("psql's `\\reset` throws away the statement being built".into()),
            _ => Effect::Unreadable(format!("psql's `\\{name}`, a meta-command Sluice does not know")),
        }
    }
}

/// psql's arguments: words separated by spaces, `'…'` (with `''` and backslash escapes) and
/// `"…"` quoting (`psqlscanslash.l`); backquotes are kept as written.
fn arguments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_ascii_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return out;
        }
        let mut arg = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_ascii_whitespace() {
                break;
            }
            chars.next();
            match c {
                '\'' => {
                    while let Some(c) = chars.next() {
                        match c {
                            '\'' if chars.next_if_eq(&'\'').is_some() => arg.push('\''),
                            '\'' => break,
                            '\\' => arg.extend(chars.next()),
                            c => arg.push(c),
                        }
                    }
                }
                '"' => {
                    for c in chars.by_ref() {
                        if c == '"' {
                            break;
                        }
                        arg.push(c);
                    }
                }
                c => arg.push(c),
            }
        }
        out.push(arg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effect(text: &str) -> Effect {
        MetaCommand::read(text).effect()
    }

    #[test]
    fn includes_name_their_file() {
        assert_eq!(effect("\\ir other.sql"), Effect::Includes { path: "other.sql".into(), relative: true });
        assert_eq!(effect("\\include 'a b.sql'"), Effect::Includes { path: "a b.sql".into(), relative: false });
        assert_eq!(
            effect("\\include_relative \"x.sql\" \\\\"),
            Effect::Includes { path: "x.sql".into(), relative: true }
        );
    }

    #[test]
    fn what_runs_sql_sluice_cannot_read_is_unreadable() {
        for text in [
            "\\if :ok",
            "\\else",
            "\\! psql -c 'DROP TABLE t'",
            "\\c other",
            "\\o |sh",
            "\\copy t from program 'x'",
            "\\frobnicate",
        ] {
            assert!(matches!(effect(text), Effect::Unreadable(_)), "{text}");
        }
        assert_eq!(effect("\\gexec"), Effect::SendsAndRunsResult);
        for text in ["\\g", "\\gx", "\\gset prefix_"] {
            assert_eq!(effect(text), Effect::Sends, "{text}");
        }
        for text in [
            "\\echo done",
            "\\set ON_ERROR_STOP on",
            "\\timing",
            "\\dt+",
            "\\o out.txt",
            "\\copy t from 'data.csv' csv",
        ] {
            assert_eq!(effect(text), Effect::Nothing, "{text}");
        }
    }

    #[test]
    fn arguments_are_unquoted_as_psql_unquotes_them() {
        assert_eq!(MetaCommand::read("\\set x 'it''s \\n' \"y z\"").args, ["x", "it's n", "y z"]);
    }
}
