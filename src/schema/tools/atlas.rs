//! Atlas versioned migrations: `migrations/*.sql` with `atlas.sum`, applied in the order
//! `atlas.sum` lists them (Atlas refuses a directory whose files do not match it). Each file runs
//! in its own transaction (`--tx-mode file`, the default); a file directive `-- atlas:txmode none`
//! runs it without one (`file` is also accepted, `all` only on the command line). Statements are
//! sent one by one; `-- atlas:delimiter <d>` on the first line makes `<d>` (with `\n`, `\t`
//! escapes) the statement delimiter (`sql/migrate/lex.go`, `dir.go`; `cmd/atlas/…/migrate.go`).

use super::*;

pub struct Atlas;

const SUM: &str = "atlas.sum";

/// The file directives: the comment lines at the top of the file, before the first blank line.
fn directives(text: &str) -> Vec<(usize, &str, &str)> {
    let mut out = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || !line.starts_with("--") {
            break;
        }
        if let Some(rest) = line.split_once("atlas:").map(|(_, r)| r) {
            let (name, argument) = rest.split_once(' ').unwrap_or((rest, ""));
            out.push((index + 1, name, argument.trim()));
        }
    }
    out
}

impl Tool for Atlas {
    fn layout(&self) -> Layout {
        Layout::Atlas
    }

    fn name(&self) -> &'static str {
        "atlas"
    }

    fn evidence(&self, tree: &dyn Tree) -> Result<Option<Evidence>> {
        Ok(tree.has(Path::new(SUM)).then(|| Evidence {
            strength: Strength::Marker,
            reason: format!("{} is Atlas's integrity file", tree.display(Path::new(SUM))),
        }))
    }

    fn order(&self, tree: &dyn Tree) -> Result<Ordered> {
        let sum = Path::new(SUM);
        let text = tree.read(sum)?.ok_or_else(|| {
            invalid(tree, sum, None, "atlas.sum is missing: Atlas refuses the directory (run `atlas migrate hash`)")
        })?;
        let mut ordered = Ordered::default();
        for (index, line) in text.lines().enumerate().skip(1) {
            let Some((file, _hash)) = line.rsplit_once(" h1:") else {
                if line.trim().is_empty() {
                    continue;
                }
                return Err(invalid(tree, sum, Some(index + 1), "expected `<file> h1:<hash>`"));
            };
            let up = PathBuf::from(file);
            if !tree.has(&up) {
                ordered.notices.push(ignored(
                    sum,
                    format!(
                        "lists {file}, which does not exist: Atlas refuses the directory until `atlas migrate hash`"
                    ),
                ));
                continue;
            }
            let stem = file.trim_end_matches(".sql");
            let (version, name) = stem.split_once('_').unwrap_or((stem, stem));
            ordered.migrations.push(Migration {
                version: version.into(),
                name: name.into(),
                up,
                ..Migration::default()
            });
        }
        for path in top_level(tree).filter(|p| is_sql(p)) {
            if !ordered.migrations.iter().any(|m| &m.up == path) {
                ordered
                    .notices
                    .push(ignored(path, "not in atlas.sum: Atlas refuses the directory until `atlas migrate hash`"));
            }
        }
        Ok(ordered)
    }

    fn script(&self, m: &Migration, text: &str, _t: &dyn Tree, options: &Options, _s: &Settings) -> Result<Script> {
        let mut script = Script::default();
        let mut in_transaction = true;
        for (line, name, argument) in directives(text) {
            match (name, argument) {
                ("txmode", "none") => in_transaction = false,
                ("txmode", "file") => in_transaction = true,
                ("txmode", other) => script.problems.push(Problem {
                    line,
                    message: format!("Atlas rejects `txmode {other}` in a file (only `none` or `file`)"),
                }),
                _ => {}
            }
        }
        let fact = "Atlas runs each file in a transaction (--tx-mode file, no `-- atlas:txmode none`)";
        let wrap = if in_transaction { file_wrap(options, true, fact) } else { None };
        let first_line = text.lines().next().unwrap_or("");
        match first_line.strip_prefix("-- atlas:delimiter ") {
            Some(delimiter) => {
                let delimiter =
                    delimiter.trim_end_matches('\r').replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r");
                let body = (first_line.len() + 1).min(text.len());
                let mut start = body;
                for (at, _) in text[body..]
                    .match_indices(delimiter.as_str())
                    .map(|(i, d)| (i + body, d))
                    .chain(std::iter::once((text.len(), "")))
                {
                    if !text[start..at].trim().is_empty() {
                        script.pieces.push(Piece {
                            range: start..at,
                            sending: Sending::OneString {
                                what: format!(
                                    "a statement Atlas sends (delimiter `{}` in {})",
                                    delimiter.escape_default(),
                                    file_name(&m.up)
                                ),
                            },
                            transaction: wrap.clone(),
                        });
                    }
                    start = (at + delimiter.len()).min(text.len());
                }
            }
            None => {
                script.pieces.push(Piece { range: 0..text.len(), sending: Sending::EachStatement, transaction: wrap })
            }
        }
        Ok(script)
    }

    fn rules(&self) -> ToolRules {
        ToolRules {
            files: "`*.sql` listed in `atlas.sum`",
            order: "`atlas.sum`",
            transactions: "each file in a transaction (`--tx-mode file`), `-- atlas:txmode none` opts out; statements sent one by one, `-- atlas:delimiter` changes what ends one",
            source: "Atlas `sql/migrate/dir.go`, `lex.go`, `cmd/atlas/internal/cmdapi/migrate.go`; docs: versioned migrations, directives",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    const SUM_TEXT: &str = "h1:abc=\n20240102_b.sql h1:x=\n20240101_a.sql h1:y=\n";

    #[test]
    fn atlas_sum_orders_and_txmode_none_opts_out() {
        let tree = MemTree::new(&[
            ("atlas.sum", SUM_TEXT),
            ("20240101_a.sql", "-- atlas:txmode none\n\nCREATE INDEX CONCURRENTLY i ON t (a);\n"),
            ("20240102_b.sql", "CREATE TABLE t (a int);\n"),
            ("20240103_c.sql", "SELECT 1;"),
        ]);
        assert_eq!(ups(&Atlas, &tree), ["20240102_b.sql", "20240101_a.sql"]);
        assert_eq!(Atlas.order(&tree).unwrap().notices.len(), 1, "the unhashed file");
        assert_eq!(runs(&Atlas, &tree, "20240101_a.sql"), [("CREATE INDEX CONCURRENTLY i ON t (a)".into(), false)]);
        assert_eq!(runs(&Atlas, &tree, "20240102_b.sql"), [("CREATE TABLE t (a int)".into(), true)]);
    }

    #[test]
    fn a_custom_delimiter_ends_statements() {
        let text = "-- atlas:delimiter -- end\nCREATE TABLE a (x int)\n-- end\nCREATE TABLE b (y int)\n-- end\n";
        let tree = MemTree::new(&[("atlas.sum", "h1:a=\n1_a.sql h1:b=\n"), ("1_a.sql", text)]);
        let statements = runs(&Atlas, &tree, "1_a.sql");
        assert_eq!(
            statements.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(),
            ["CREATE TABLE a (x int)", "CREATE TABLE b (y int)"]
        );
    }
}
