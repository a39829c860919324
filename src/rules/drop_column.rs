use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, Ddl};
use crate::sql::names::shown;

pub struct DropColumn;

pub static META: RuleMeta = RuleMeta {
    id: "drop-column",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "Dropping a column breaks the application code that still reads or writes it",
    what: "Flags `ALTER TABLE … DROP COLUMN` on a table that existed before this migration, whatever its size. \
The message names the query files that still mention the column.",
    why: "The old application version keeps running during the deploy: its queries naming the column fail, and \
ORMs that select every mapped column fail on every query of the table. The data is gone, so rolling back the \
code does not help.",
    fix: "Contract step of expand/contract: first ship code that no longer reads or writes the column (for ORMs, \
mark it ignored), then drop it in a later release and acknowledge it with \
`-- sluice:ignore drop-column -- <which release stopped using it>`.",
    bad: "\
-- migration: 001_users.sql
CREATE TABLE users (id bigint PRIMARY KEY, name text, nickname text);
-- migration: 002_drop_nickname.sql
SET lock_timeout = '5s';
ALTER TABLE users DROP COLUMN nickname;",
    good: "\
-- migration: 001_users.sql
CREATE TABLE users (id bigint PRIMARY KEY, name text, nickname text);
-- migration: 002_drop_nickname.sql
SET lock_timeout = '5s';
-- sluice:ignore drop-column -- release 4.2 stopped reading and writing nickname (ignored_columns)
ALTER TABLE users DROP COLUMN nickname;",
    equivalents: "squawk: ban-drop-column; strong_migrations: remove_column; eugene: none",
};

/// Query files that mention `column` (a word match: good enough to point a reviewer at them).
pub fn mentions(cx: &Context, column: &str) -> Vec<String> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    cx.facts
        .queries
        .iter()
        .filter(|q| {
            let mentions = |text: &str| {
                let text = text.to_lowercase();
                text.match_indices(column).any(|(i, _)| {
                    !text[..i].chars().next_back().is_some_and(is_word)
                        && !text[i + column.len()..].chars().next().is_some_and(is_word)
                })
            };
            // The rewritten text keeps the SQL as written between its parameters (which become
            // `$n`), so a query whose SQL does not hold the name at all cannot mention it, and
            // most queries are never rewritten. (For an ASCII name: lowercasing is per character but for
            // the final sigma, which is not ASCII.)
            let may = !column.is_ascii() || holds_lowercased(&q.query.sql, column);
            may && mentions(q.text())
        })
        .map(|q| q.query.file.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Whether `text` lowercased holds `name` (ASCII): for ASCII text, compared byte by byte
/// without lowercasing a copy of every query once per dropped column (on ente, 715 queries
/// times the history's drops); other text is lowercased as Unicode does it.
fn holds_lowercased(text: &str, name: &str) -> bool {
    if !text.is_ascii() || name.bytes().any(|b| b.is_ascii_uppercase()) {
        return text.to_lowercase().contains(name);
    }
    let (text, name) = (text.as_bytes(), name.as_bytes());
    name.is_empty() || text.windows(name.len()).any(|w| w.eq_ignore_ascii_case(name))
}

impl Rule for DropColumn {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Ddl::AlterTable { table, actions, .. } = &cx.statement.ddl else {
            return;
        };
        if !cx.is_existing_table(table) {
            return;
        }
        for action in actions {
            let AlterAction::DropColumn { name, .. } = action else {
                continue;
            };
            let users = mentions(cx, name);
            let mut message =
                format!("dropping {}.{} breaks running code that still reads or writes it", shown(table), shown(name));
            if !users.is_empty() {
                message.push_str(&format!("; still mentioned by {}", users.join(", ")));
            }
            // Never an empty fact: say what was searched when nothing mentions it.
            let mentioning = match (users.is_empty(), cx.facts.queries.len()) {
                (false, _) => users.join(", "),
                (true, 0) => "none: no query files are configured, so no application query was searched".to_string(),
                (true, n) => format!("none of the {n} query file(s)"),
            };
            out.push(
                cx.finding(&META, message).fact("table", table.as_str()).fact("query files mentioning it", mentioning),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_files, of};

    #[test]
    fn a_name_is_found_in_text_as_lowercasing_it_would() {
        for (text, name) in [
            ("SELECT NickName FROM t", "nickname"),
            ("SELECT nickname FROM t", "name"),
            ("SELECT \u{212A}ey FROM t", "key"),
            ("SELECT é, nick FROM t", "nick"),
            ("SELECT x FROM t", "nick"),
            ("SELECT \"UserId\" FROM t", "UserId"),
            ("SELECT x FROM t", ""),
        ] {
            assert_eq!(holds_lowercased(text, name), text.to_lowercase().contains(name), "{text} / {name}");
        }
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn names_the_queries_still_using_it() {
        let found = lint_files(
            &[
                ("001.sql", "CREATE TABLE t (id int, nick text, nickname text);"),
                ("queries/q.sql", "SELECT nickname FROM t;"),
                ("002.sql", "ALTER TABLE t DROP COLUMN nick;"),
                ("003.sql", "ALTER TABLE t DROP COLUMN nickname;"),
            ],
            "",
        );
        let f = of(&found, META.id);
        assert_eq!(f.len(), 2);
        assert!(!f[0].message.contains("queries/q.sql"), "{}", f[0].message);
        assert!(f[1].message.contains("still mentioned by queries/q.sql"), "{}", f[1].message);
        // Issue 37: the fact is never empty.
        let fact = |f: &Finding| f.facts.iter().find(|x| x.name == "query files mentioning it").unwrap().value.clone();
        assert_eq!(fact(f[0]), "none of the 1 query file(s)");
        assert_eq!(fact(f[1]), "queries/q.sql");
        let alone = lint_files(
            &[("001.sql", "CREATE TABLE t (id int, nick text);"), ("002.sql", "ALTER TABLE t DROP COLUMN nick;")],
            "",
        );
        assert_eq!(
            fact(of(&alone, META.id)[0]),
            "none: no query files are configured, so no application query was searched"
        );
    }
}
