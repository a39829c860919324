//! dbmate: `<version>_<name>.sql` holding `-- migrate:up` and `-- migrate:down` sections (several
//! pairs since 2.28), files in file-name order (`db.go`: `migrationFileRegexp`, `sort.Slice` on
//! the name). A directive is the exact marker at the start of a line followed by a space or the
//! end of the line: `-- migrate:downgrade notes` is a comment (`migration.go`: `upRegExp`,
//! `downRegExp`). Each up section is sent as one query string (`tx.Exec(migrationSection.Up)`,
//! lib/pq's simple protocol) inside a transaction, unless its directive says
//! `transaction:false`: then several statements are still one implicit transaction.

use super::*;
use std::ops::Range;

pub struct Dbmate;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
}

/// A `-- migrate:up` / `-- migrate:down` directive line as dbmate's regular expressions read it
/// (`(?m)^--\s*migrate:up(\s*$|\s+\S+)`): the direction and whether it says `transaction:false`.
fn directive(line: &str) -> Option<(Direction, bool)> {
    let rest = line.strip_prefix("--")?.trim_start();
    let rest = rest.strip_prefix("migrate:")?;
    let (direction, options) = if let Some(o) = rest.strip_prefix("up") {
        (Direction::Up, o)
    } else {
        (Direction::Down, rest.strip_prefix("down")?)
    };
    if !(options.is_empty() || options.starts_with(char::is_whitespace)) {
        return None;
    }
    let no_transaction = options.split_whitespace().any(|pair| {
        let parts: Vec<&str> = pair.split(':').collect();
        parts.len() == 2 && parts[0] == "transaction" && parts[1] == "false"
    });
    Some((direction, no_transaction))
}

/// A section of a dbmate file: its direction, whether it opts out of the transaction, its body.
struct Section {
    direction: Direction,
    no_transaction: bool,
    line: usize,
    body: Range<usize>,
}

fn sections(text: &str) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    for (number, (range, line)) in script::lines(text).enumerate() {
        if let Some((direction, no_transaction)) = directive(line.trim_end_matches(['\n', '\r'])) {
            if let Some(previous) = out.last_mut() {
                previous.body.end = range.start;
            }
            out.push(Section { direction, no_transaction, line: number + 1, body: range.end..text.len() });
        }
    }
    out
}

/// Whether a file is a dbmate migration: it has a `-- migrate:up` directive.
pub fn is_dbmate_file(text: &str) -> bool {
    // Every up directive contains `migrate:up`: one substring search rules out most files, which
    // detection otherwise splits into lines one by one.
    text.contains("migrate:up") && sections(text).iter().any(|s| s.direction == Direction::Up)
}

impl Tool for Dbmate {
    fn layout(&self) -> Layout {
        Layout::Dbmate
    }

    fn name(&self) -> &'static str {
        "dbmate"
    }

    fn evidence(&self, tree: &dyn Tree) -> Result<Option<Evidence>> {
        let candidates: Vec<&PathBuf> =
            top_level(tree).filter(|p| is_sql(p) && split_version(file_name(p)).is_some()).collect();
        Ok(first_marked(tree, &candidates, is_dbmate_file)?.map(|path| Evidence {
            strength: Strength::Marker,
            reason: format!("{} has a `-- migrate:up` section", tree.display(path)),
        }))
    }

    fn order(&self, tree: &dyn Tree) -> Result<Ordered> {
        let mut migrations: Vec<Migration> = top_level(tree)
            .filter(|p| is_sql(p))
            .filter_map(|p| {
                let (version, name) = split_version(file_name(p))?;
                Some(Migration {
                    version: version.into(),
                    name: name.trim_end_matches(".sql").into(),
                    up: p.clone(),
                    ..Migration::default()
                })
            })
            .collect();
        migrations.sort_by(|a, b| file_name(&a.up).cmp(file_name(&b.up)));
        Ok(Ordered { migrations, ..Ordered::default() })
    }

    fn script(&self, _m: &Migration, text: &str, _t: &dyn Tree, options: &Options, _s: &Settings) -> Result<Script> {
        let sections = sections(text);
        let mut script = Script::default();
        let Some(first) = sections.first() else {
            script.problems.push(Problem {
                line: 1,
                message: "dbmate rejects this file: it has no `-- migrate:up` section".into(),
            });
            return Ok(script);
        };
        if first.direction == Direction::Down {
            script.problems.push(Problem {
                line: first.line,
                message: "dbmate rejects this file: `-- migrate:down` comes before `-- migrate:up`".into(),
            });
        }
        let before = &text[..text.lines().take(first.line - 1).map(|l| l.len() + 1).sum::<usize>().min(text.len())];
        if before.lines().any(|l| !l.trim().is_empty() && !l.trim_start().starts_with("--")) {
            script.problems.push(Problem {
                line: 1,
                message: "dbmate rejects statements before the first `-- migrate:up`".into(),
            });
        }
        let ups = sections.iter().filter(|s| s.direction == Direction::Up).count();
        let downs = sections.iter().filter(|s| s.direction == Direction::Down).count();
        if downs < ups {
            script.problems.push(Problem {
                line: first.line,
                message: "dbmate rejects this file: every `-- migrate:up` needs a `-- migrate:down` section (dbmate 2)"
                    .into(),
            });
        }
        let mut rollback = Vec::new();
        for (index, section) in sections.iter().enumerate() {
            match section.direction {
                Direction::Up => {
                    let wrap = if section.no_transaction {
                        None
                    } else {
                        file_wrap(
                            options,
                            true,
                            "dbmate runs each `-- migrate:up` section in a transaction (no `transaction:false`)",
                        )
                        .map(|w| Wrap { key: index, ..w })
                    };
                    script.pieces.push(Piece {
                        range: section.body.clone(),
                        sending: Sending::OneString { what: "a `-- migrate:up` section dbmate sends".into() },
                        transaction: wrap,
                    });
                }
                Direction::Down => rollback.push(section.body.clone()),
            }
        }
        script.rollback = (!rollback.is_empty()).then(|| script::keep_only(text, &rollback));
        Ok(script)
    }

    fn rules(&self) -> ToolRules {
        ToolRules {
            files: "`<version>_<name>.sql` with `-- migrate:up` / `-- migrate:down` sections",
            order: "file name",
            transactions: "each up section in a transaction unless `-- migrate:up transaction:false`; the section is sent as one query string, so a multi-statement section is then still one implicit transaction",
            source: "dbmate `pkg/dbmate/migration.go` (directive regular expressions, options), `db.go` (order, `Exec`)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn the_down_marker_is_matched_exactly() {
        assert_eq!(directive("-- migrate:down"), Some((Direction::Down, false)));
        assert_eq!(directive("--migrate:up transaction:false"), Some((Direction::Up, true)));
        assert_eq!(directive("-- migrate:downgrade notes"), None);
        assert_eq!(directive("  -- migrate:down"), None, "dbmate's regular expression anchors at the line start");
        let text = "-- migrate:up\nCREATE TABLE t (a int);\n-- migrate:downgrade notes: nothing to undo by hand\nCREATE INDEX i ON t (a);\n-- migrate:down\nDROP TABLE t;\n";
        let tree = MemTree::new(&[("20240101_t.sql", text)]);
        let statements = runs(&Dbmate, &tree, "20240101_t.sql");
        assert_eq!(statements.len(), 2, "the index after the look-alike comment runs on deploy: {statements:?}");
    }

    #[test]
    fn transaction_false_still_shares_the_implicit_transaction_of_one_string() {
        let text = "-- migrate:up transaction:false\nSET lock_timeout = '1s';\nCREATE INDEX CONCURRENTLY i ON t (a);\n-- migrate:down\nDROP INDEX i;\n";
        let tree = MemTree::new(&[("1_i.sql", text)]);
        let script = script_of(&Dbmate, &tree, "1_i.sql");
        assert!(script.pieces[0].transaction.is_none());
        assert!(runs(&Dbmate, &tree, "1_i.sql").iter().all(|(_, t)| *t));
        assert!(script.rollback.unwrap().contains("DROP INDEX i;"));
    }

    #[test]
    fn files_dbmate_rejects_are_problems_and_order_is_by_name() {
        let tree = MemTree::new(&[
            ("2_b.sql", "CREATE TABLE x (a int);\n-- migrate:up\nSELECT 1;\n"),
            ("10_a.sql", "-- migrate:up\nSELECT 1;\n-- migrate:down\n"),
        ]);
        assert_eq!(versions(&Dbmate, &tree), ["10", "2"], "dbmate sorts file names as text");
        let problems = script_of(&Dbmate, &tree, "2_b.sql").problems;
        assert_eq!(problems.len(), 2, "statements before the up section, and no down section: {problems:?}");
    }
}
