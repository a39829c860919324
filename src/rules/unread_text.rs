use super::meta::Category;
use super::meta::RuleMeta;
use super::rule::Rule;
use crate::finding::{Finding, Severity};
use crate::sql::source::SourceFile;
use crate::sql::split::{Unread, Unreadable};

/// Findings come from the lint engine, from what the splitter could not read
/// (`sql::split::Unread`); no directive or severity override hides them.
pub struct UnreadText;

pub static META: RuleMeta = RuleMeta {
    id: "unread-text",
    severity: Severity::Error,
    category: Category::Meta,
    summary: "Text Sluice could not read at all, so it was not checked: an unterminated string or comment, or a statement the SQL tokenizer rejects",
    what: "Reports every byte range of a file that was never read. After an unterminated quoted string, quoted \
identifier, dollar-quoted string or `/*` comment, the rest of the file cannot be split into statements: the \
finding names where the string or comment starts and the lines left unchecked. A statement the SQL tokenizer \
rejects (valid PostgreSQL it does not know, such as a custom operator `|>` or `U&' \\' UESCAPE '!'`) is \
reported on its own; its boundaries are found with PostgreSQL's lexical rules, so the statements after it are \
still checked. A whole file is reported the same way when what stands where a migration should be is not \
its text: a Git LFS pointer (git stores the pointer; the migration is in LFS storage), or a git submodule in \
the migrations directory (`sluice check`: its files are another repository's). Unlike `unparsed-statement`, which is about a statement that was read but not understood, this \
finding cannot be suppressed (`sluice:ignore`, `sluice:ignore-file`) or lowered in `[rules]`.",
    why: "A gate that stops reading passes whatever follows: on a real corpus one tokenizer error left 1,030 lines \
unchecked behind a warning, and an unterminated comment turned a failing verdict into a pass. Sluice never \
passes what it did not read.",
    fix: "Close the string or comment (PostgreSQL rejects the file as it is). For a statement the tokenizer \
rejects, write it in a form Sluice reads: call the operator's function instead of a custom operator, write a \
`U&'…'` string with the default escape, or move the statement to a file Sluice does not lint and review it by \
hand.",
    bad: "CREATE FUNCTION one() RETURNS int LANGUAGE sql AS $$ SELECT 1;\nDROP TABLE observations;",
    good: "CREATE FUNCTION one() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;",
    equivalents: "squawk stops at the first syntax error; Sluice reports what it skipped and reads on where it can.",
};

impl Rule for UnreadText {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }
}

/// One error per range of `file` that was not read; template placeholders, which fill a whole
/// templated history, are one error per file naming the first.
pub fn findings(file: &SourceFile) -> impl Iterator<Item = Finding> + '_ {
    findings_at(file, &|line, column| (line, column))
}

/// [`findings`], with every position moved by `at` (line, column → line, column): where the
/// text that was read stands in the file that holds it (a query whose parameters were
/// rewritten, SQL in application code).
pub fn findings_at<'a>(
    file: &'a SourceFile,
    at: &'a dyn Fn(usize, usize) -> (usize, usize),
) -> impl Iterator<Item = Finding> + 'a {
    let is_template = |u: &&Unread| matches!(u.reason, Unreadable::Template { .. });
    let templated: Vec<&Unread> = file.parsed.unread.iter().filter(is_template).collect();
    let first_template = templated.first().map(|first| {
        let mut finding = finding(file, first, at);
        if templated.len() > 1 {
            let lines: Vec<String> =
                templated[1..].iter().take(5).map(|u| at(u.span.line, u.span.column).0.to_string()).collect();
            let more = if templated.len() > 6 { ", …" } else { "" };
            finding.message = format!(
                "{}; {} more statement(s) hold placeholders (line {}{more}), none of them checked",
                finding.message,
                templated.len() - 1,
                lines.join(", ")
            );
        }
        finding
    });
    file.parsed.unread.iter().filter(move |u| !is_template(u)).map(move |u| finding(file, u, at)).chain(first_template)
}

fn finding(file: &SourceFile, unread: &Unread, at: &dyn Fn(usize, usize) -> (usize, usize)) -> Finding {
    let span = &unread.span;
    let (line, column) = unread.reason.at().unwrap_or((span.line, span.column));
    let first_line = line_text(&file.parsed.text, line);
    let (start, end) = (at(span.line, span.column), at(span.end_line, span.end_column));
    let (line, column) = at(line, column);
    Finding::new(META.id, META.severity, file.display.clone(), unread.message())
        .at(line, column, end.0, end.1)
        .snippet(line, first_line)
        .fact("unread", format!("{}:{}-{}:{}", start.0, start.1, end.0, end.1))
        .help(META.fix.trim())
}

fn line_text(text: &str, line: usize) -> String {
    text.lines().nth(line.saturating_sub(1)).unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_files, of};

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn an_unterminated_comment_names_where_it_starts_and_what_was_skipped() {
        let sql = "CREATE TABLE t (a int);\n/* never closed\nCREATE INDEX i ON t (a);\n";
        let found = lint_files(&[("001.sql", sql)], "");
        let unread = of(&found, META.id);
        assert_eq!(unread.len(), 1, "{found:#?}");
        assert_eq!((unread[0].line, unread[0].column, unread[0].severity), (2, 1, Severity::Error));
        assert!(
            unread[0].message.contains("unterminated /* comment starting at line 2, column 1"),
            "{}",
            unread[0].message
        );
    }

    #[test]
    fn directives_never_hide_unread_text() {
        let sql = "-- sluice:ignore-file unparsed-statement -- vendored\nSELECT 1;\nSELECT a |> b FROM t;\nCREATE INDEX i ON t (a);\nSELECT 'never closed;\n";
        let found = lint_files(&[("000.sql", "CREATE TABLE t (a int);"), ("001.sql", sql)], "");
        let lines: Vec<usize> = of(&found, META.id).iter().map(|f| f.line).collect();
        assert_eq!(lines, vec![3, 5], "{found:#?}");
        // The statement after the one the tokenizer rejects is checked.
        assert_eq!(of(&found, "create-index-non-concurrently")[0].line, 4);
    }
}
