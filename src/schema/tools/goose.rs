//! goose: `<version>_<name>.sql` (or `.go`), version a positive 64-bit integer in numeric order
//! (`migration.go`, `NumericComponent`). A SQL file starts with `-- +goose Up`; only the Up
//! section runs on deploy, the `-- +goose Down` section is its rollback. goose splits the section
//! itself, line by line (`internal/sqlparser/parser.go`): a statement ends at a line whose last
//! word ends with `;`, and a `-- +goose StatementBegin` … `StatementEnd` block is one statement
//! whatever it holds. Each statement is sent with its own `ExecContext`, inside one transaction
//! per file unless the file says `-- +goose NO TRANSACTION` (`provider_run.go`, `runSQL`).

use super::*;
use crate::sql::split::split;
use std::ops::Range;

pub struct Goose;

/// The goose version of a file name: the positive integer before the first `_`.
fn version(name: &str) -> Option<i64> {
    let (digits, _) = name.split_once('_')?;
    digits.parse::<i64>().ok().filter(|v| *v > 0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Annotation {
    Up,
    Down,
    StatementBegin,
    StatementEnd,
    NoTransaction,
    Envsub,
}

/// A `-- +goose …` annotation line, as goose's `extractAnnotation` reads it.
fn annotation(line: &str) -> Option<std::result::Result<Annotation, String>> {
    if !(line.trim().starts_with("--") && line.contains("+goose")) {
        return None;
    }
    if line.starts_with([' ', '\t']) {
        return Some(Err("goose rejects an annotation with leading whitespace".into()));
    }
    let command = line.replace("--", "").replacen("+goose", "", 1);
    let command = command.trim();
    let known = [
        ("Up", Annotation::Up),
        ("Down", Annotation::Down),
        ("StatementBegin", Annotation::StatementBegin),
        ("StatementEnd", Annotation::StatementEnd),
        ("NO TRANSACTION", Annotation::NoTransaction),
        ("ENVSUB ON", Annotation::Envsub),
        ("ENVSUB OFF", Annotation::Envsub),
    ];
    Some(
        known
            .iter()
            .find(|(text, _)| text.eq_ignore_ascii_case(command))
            .map(|(_, a)| *a)
            .ok_or_else(|| format!("goose does not know the annotation `{command}`")),
    )
}

/// goose's `endsWithSemicolon`: the last word before a `--` word ends with `;`.
fn ends_statement(line: &str) -> bool {
    line.split_whitespace().take_while(|w| !w.starts_with("--")).last().is_some_and(|w| w.ends_with(';'))
}

/// What goose makes of a file: its Up statements (byte ranges, and whether each is a
/// StatementBegin block), its Down text ranges, NO TRANSACTION, and what it would reject.
#[derive(Default)]
struct Parsed {
    up: Vec<(Range<usize>, bool)>,
    down: Vec<Range<usize>>,
    no_transaction: bool,
    problems: Vec<Problem>,
}

fn parse(text: &str) -> Parsed {
    let mut out = Parsed::default();
    #[derive(PartialEq)]
    enum Section {
        Start,
        Up,
        Down,
    }
    let mut section = Section::Start;
    let mut in_block = false;
    let mut statement: Option<usize> = None;
    let mut block_start = 0;
    for (index, (range, line)) in script::lines(text).enumerate() {
        let line_number = index + 1;
        let bare = line.trim_end_matches(['\n', '\r']);
        if let Some(annotation) = annotation(bare) {
            match annotation {
                Err(message) => out.problems.push(Problem { line: line_number, message }),
                Ok(Annotation::Up) if section == Section::Start => section = Section::Up,
                Ok(Annotation::Up) => out
                    .problems
                    .push(Problem { line: line_number, message: "goose rejects a second `-- +goose Up`".into() }),
                Ok(Annotation::Down) => {
                    if section == Section::Start {
                        out.problems.push(Problem {
                            line: line_number,
                            message: "goose rejects a file whose first annotation is not `-- +goose Up`".into(),
                        });
                    }
                    if let Some(start) = statement.take().filter(|_| section == Section::Up) {
                        out.problems.push(unfinished(text, start));
                    }
                    section = Section::Down;
                }
                Ok(Annotation::StatementBegin) => {
                    in_block = true;
                    block_start = range.end;
                    statement = None;
                }
                Ok(Annotation::StatementEnd) if in_block => {
                    in_block = false;
                    match section {
                        Section::Up => out.up.push((block_start..range.start, true)),
                        Section::Down => out.down.push(block_start..range.start),
                        Section::Start => {}
                    }
                }
                Ok(Annotation::StatementEnd) => out.problems.push(Problem {
                    line: line_number,
                    message: "goose rejects `StatementEnd` without `StatementBegin`".into(),
                }),
                Ok(Annotation::NoTransaction) => out.no_transaction = true,
                Ok(Annotation::Envsub) => {}
            }
            continue;
        }
        if in_block {
            continue;
        }
        if statement.is_none() {
            // Comments and blank lines before a statement are not sent.
            if bare.trim().is_empty() || bare.trim_start().starts_with("--") {
                continue;
            }
            statement = Some(range.start);
        }
        if ends_statement(bare) {
            let start = statement.take().unwrap_or(range.start);
            match section {
                Section::Up => out.up.push((start..range.end, false)),
                Section::Down => out.down.push(start..range.end),
                Section::Start => out.problems.push(Problem {
                    line: line_number,
                    message: "goose rejects SQL before `-- +goose Up`: the file must start with it".into(),
                }),
            }
        }
    }
    if section == Section::Start {
        out.problems
            .push(Problem { line: 1, message: "goose rejects this file: it has no `-- +goose Up` annotation".into() });
    }
    if in_block {
        out.problems.push(Problem {
            line: line_of(text, block_start),
            message: "goose rejects this file: `-- +goose StatementBegin` has no `StatementEnd`".into(),
        });
    }
    if let Some(start) = statement.filter(|_| section == Section::Up) {
        out.problems.push(unfinished(text, start));
    }
    out
}

fn line_of(text: &str, offset: usize) -> usize {
    script::line_of(text, offset)
}

fn unfinished(text: &str, start: usize) -> Problem {
    Problem {
        line: line_of(text, start),
        message:
            "goose rejects this file: the statement here never ends with a line ending in `;` (missing semicolon?)"
                .into(),
    }
}

/// goose cuts at every line ending in `;`, even inside a dollar-quoted body or a string: such a
/// cut leaves PostgreSQL an unterminated piece. Rejoin the pieces the author meant as one
/// statement, and say where goose cuts it.
fn rejoin_cut_statements(
    text: &str,
    up: Vec<(Range<usize>, bool)>,
    problems: &mut Vec<Problem>,
) -> Vec<(Range<usize>, bool)> {
    let mut out: Vec<(Range<usize>, bool)> = Vec::new();
    let mut pending: Option<Range<usize>> = None;
    for (range, block) in up {
        if block {
            out.extend(pending.take().map(|r| (r, false)));
            out.push((range, true));
            continue;
        }
        let joined = match pending.take() {
            Some(open) => open.start..range.end,
            None => range,
        };
        if split(&text[joined.clone()]).unterminated().is_some() {
            pending = Some(joined);
        } else {
            out.push((joined, false));
        }
    }
    out.extend(pending.map(|r| (r, false)));
    // Report each rejoined statement once, at the line goose ends its first piece.
    for (range, block) in &out {
        if *block {
            continue;
        }
        let first_cut = script::lines(&text[range.clone()])
            .take_while(|(r, _)| r.end < range.len())
            .find(|(_, line)| ends_statement(line.trim_end_matches(['\n', '\r'])));
        if let Some((cut, _)) = first_cut {
            problems.push(Problem {
                line: line_of(text, range.start + cut.start),
                message: "goose ends a statement at this line (it ends in `;`) although the SQL goes on inside a \
                          quoted string or dollar-quoted body: PostgreSQL receives it cut in two and the migration \
                          fails. Wrap the statement in `-- +goose StatementBegin` / `-- +goose StatementEnd`"
                    .into(),
            });
        }
    }
    out
}

impl Tool for Goose {
    fn layout(&self) -> Layout {
        Layout::Goose
    }

    fn name(&self) -> &'static str {
        "goose"
    }

    fn evidence(&self, tree: &dyn Tree) -> Result<Option<Evidence>> {
        let candidates: Vec<&PathBuf> =
            top_level(tree).filter(|p| is_sql(p) && version(file_name(p)).is_some()).collect();
        // Every annotation contains `+goose`: one substring search rules out most files.
        let annotated = |text: &str| {
            text.contains("+goose") && text.lines().any(|l| matches!(annotation(l), Some(Ok(Annotation::Up))))
        };
        if let Some(path) = first_marked(tree, &candidates, annotated)? {
            return Ok(Some(Evidence {
                strength: Strength::Marker,
                reason: format!("{} has a `-- +goose Up` annotation", tree.display(path)),
            }));
        }
        if top_level(tree).any(|p| version(file_name(p)).is_some()) {
            if let Some(manifest) = manifest_naming(tree, &["go.mod"], "github.com/pressly/goose")? {
                return Ok(Some(Evidence {
                    strength: Strength::Manifest,
                    reason: format!("{manifest} requires goose"),
                }));
            }
        }
        Ok(None)
    }

    fn order(&self, tree: &dyn Tree) -> Result<Ordered> {
        let mut ordered = Ordered::default();
        let mut keyed: Vec<(i64, Migration)> = Vec::new();
        for path in top_level(tree) {
            let name = file_name(path);
            let Some(version) = version(name) else { continue };
            if name.ends_with(".go") && !name.ends_with("_test.go") {
                ordered.notices.push(ignored(path, "goose runs this Go migration; Sluice replays SQL only, so what it does to the schema was not checked"));
            } else if is_sql(path) {
                let title = name.split_once('_').map(|(_, n)| n.trim_end_matches(".sql")).unwrap_or(name);
                keyed.push((
                    version,
                    Migration {
                        version: version.to_string(),
                        name: title.into(),
                        up: path.clone(),
                        ..Migration::default()
                    },
                ));
            }
        }
        keyed.sort_by_key(|k| k.0);
        ordered.migrations = keyed.into_iter().map(|(_, m)| m).collect();
        Ok(ordered)
    }

    fn script(&self, _m: &Migration, text: &str, _t: &dyn Tree, options: &Options, _s: &Settings) -> Result<Script> {
        let Parsed { up, down, no_transaction, mut problems } = parse(text);
        let up = rejoin_cut_statements(text, up, &mut problems);
        let wrap = if no_transaction {
            None
        } else {
            file_wrap(options, true, "goose runs each file in a transaction (no `-- +goose NO TRANSACTION`)")
        };
        let pieces = up
            .into_iter()
            .map(|(range, block)| Piece {
                range,
                sending: Sending::OneString {
                    what: if block {
                        "a StatementBegin … StatementEnd block goose sends".into()
                    } else {
                        "the lines goose sends up to one ending in `;`".into()
                    },
                },
                transaction: wrap.clone(),
            })
            .collect();
        let rollback = (!down.is_empty()).then(|| script::keep_only(text, &down));
        Ok(Script { pieces, rollback, problems, ..Script::default() })
    }

    fn rules(&self) -> ToolRules {
        ToolRules {
            files: "`<version>_<name>.sql` with `-- +goose Up` / `-- +goose Down`",
            order: "version (positive 64-bit integer) numerically",
            transactions: "each file in a transaction unless `-- +goose NO TRANSACTION`; a statement ends at a line ending in `;` and a `StatementBegin`/`StatementEnd` block is one statement, each sent on its own (a block holding several statements is one implicit transaction)",
            source: "goose `internal/sqlparser/parser.go`, `migration.go` (`NumericComponent`), `provider_run.go`",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    const FILE: &str = "-- +goose Up\n-- +goose StatementBegin\nCREATE FUNCTION f() RETURNS trigger AS $$\nBEGIN\n  RETURN NEW;\nEND;\n$$ LANGUAGE plpgsql;\n-- +goose StatementEnd\nCREATE TABLE t (a int);\n\n-- +goose Down\nDROP TABLE t;\nDROP FUNCTION f();\n";

    #[test]
    fn only_the_up_section_runs_blocks_are_one_statement_and_down_is_the_rollback() {
        let tree = MemTree::new(&[
            ("00002_t.sql", FILE),
            ("00001_a.sql", "-- +goose Up\nSELECT 1;\n"),
            ("00003_go.go", "package x"),
        ]);
        assert_eq!(versions(&Goose, &tree), ["1", "2"]);
        assert_eq!(Goose.order(&tree).unwrap().notices.len(), 1, "the Go migration is reported, not skipped silently");
        let runs = runs(&Goose, &tree, "00002_t.sql");
        assert_eq!(runs.len(), 2);
        assert!(runs[0].0.starts_with("CREATE FUNCTION") && runs[0].0.ends_with("plpgsql"));
        assert!(runs.iter().all(|(_, t)| *t), "each file in a transaction by default");
        let script = script_of(&Goose, &tree, "00002_t.sql");
        let rollback = script.rollback.unwrap();
        assert_eq!(rollback.lines().count(), FILE.lines().count());
        assert!(rollback.contains("DROP TABLE t;") && !rollback.contains("CREATE TABLE"));
        assert!(script.problems.is_empty(), "{:?}", script.problems);
    }

    #[test]
    fn no_transaction_and_goose_s_own_line_splitting() {
        let text = "-- +goose NO TRANSACTION\n-- +goose Up\nSET lock_timeout = '1s'; CREATE INDEX CONCURRENTLY i ON t (a);\nCREATE INDEX CONCURRENTLY j ON t (b);\n";
        let tree = MemTree::new(&[("1_i.sql", text)]);
        // goose sends the first line as one string: two statements, one implicit transaction.
        assert_eq!(
            runs(&Goose, &tree, "1_i.sql"),
            [
                ("SET lock_timeout = '1s'".into(), true),
                ("CREATE INDEX CONCURRENTLY i ON t (a)".into(), true),
                ("CREATE INDEX CONCURRENTLY j ON t (b)".into(), false)
            ]
        );
    }

    #[test]
    fn a_function_without_statement_begin_is_cut_by_goose_and_reported() {
        let text =
            "-- +goose Up\nCREATE FUNCTION f() RETURNS int AS $$\nBEGIN\n  RETURN 1;\nEND;\n$$ LANGUAGE plpgsql;\n";
        let tree = MemTree::new(&[("1_f.sql", text)]);
        let script = script_of(&Goose, &tree, "1_f.sql");
        assert_eq!(script.problems.len(), 1, "{:?}", script.problems);
        assert_eq!(script.problems[0].line, 4);
        assert_eq!(runs(&Goose, &tree, "1_f.sql").len(), 1, "replayed as the author meant it");
    }

    #[test]
    fn goose_rejections_are_problems() {
        for (text, line) in [
            ("CREATE TABLE t (a int);\n", 1),
            ("-- +goose Up\nCREATE TABLE t (a int)\n", 2),
            ("-- +goose Up\n-- +goose StatementBegin\nSELECT 1;\n", 3),
        ] {
            let tree = MemTree::new(&[("1_x.sql", text)]);
            let script = script_of(&Goose, &tree, "1_x.sql");
            assert!(script.problems.iter().any(|p| p.line == line), "{text:?}: {:?}", script.problems);
        }
    }
}
