//! Drizzle Kit: `drizzle/<idx>_<tag>.sql`, applied in the order of the entries of
//! `meta/_journal.json` (`entries[].tag` names the file), not by file name. drizzle-orm's
//! migrator splits each file at `--> statement-breakpoint` and runs every pending migration in
//! one transaction (`migrator.ts` `readMigrationFiles`; `pg-core/dialect.ts` `migrate`:
//! `session.transaction(…)` around all of them), so a concurrent index always fails there.

use super::*;

pub struct Drizzle;

const JOURNAL: &str = "meta/_journal.json";
const BREAKPOINT: &str = "--> statement-breakpoint";

/// `meta/_journal.json`, its entries kept as written until each is read.
#[derive(serde::Deserialize)]
struct Journal<'a> {
    #[serde(borrow)]
    entries: Option<Vec<&'a serde_json::value::RawValue>>,
}

impl Tool for Drizzle {
    fn layout(&self) -> Layout {
        Layout::Drizzle
    }

    fn name(&self) -> &'static str {
        "drizzle"
    }

    fn evidence(&self, tree: &dyn Tree) -> Result<Option<Evidence>> {
        Ok(tree.has(Path::new(JOURNAL)).then(|| Evidence {
            strength: Strength::Marker,
            reason: format!("{} is Drizzle Kit's journal", tree.display(Path::new(JOURNAL))),
        }))
    }

    fn order(&self, tree: &dyn Tree) -> Result<Ordered> {
        let journal = Path::new(JOURNAL);
        let text = tree.read(journal)?.ok_or_else(|| {
            invalid(tree, journal, None, "Drizzle's journal is missing: drizzle-kit migrate cannot run without it")
        })?;
        let not_json = |e: serde_json::Error| invalid(tree, journal, Some(e.line()), format!("not valid JSON: {e}"));
        let document: Journal = serde_json::from_str(&text).map_err(not_json)?;
        let entries = document.entries.ok_or_else(|| invalid(tree, journal, Some(1), "has no `entries` list"))?;
        let mut ordered = Ordered::default();
        for (index, raw) in entries.into_iter().enumerate() {
            // The entry borrows the journal's text, so its address gives its line.
            let line = crate::error::line_of_offset(&text, raw.get().as_ptr() as usize - text.as_ptr() as usize);
            let entry: serde_json::Value = serde_json::from_str(raw.get()).map_err(not_json)?;
            let Some(tag) = entry.get("tag").and_then(|t| t.as_str()) else {
                return Err(invalid(tree, journal, Some(line), format!("entry {index} has no `tag`")));
            };
            let up = PathBuf::from(format!("{tag}.sql"));
            if !tree.has(&up) {
                ordered.notices.push(ignored(
                    journal,
                    format!("entry `{tag}` names {tag}.sql, which does not exist: drizzle-kit migrate fails on it"),
                ));
                continue;
            }
            let idx = entry.get("idx").and_then(|i| i.as_u64()).unwrap_or(index as u64);
            let name = split_version(tag).map(|(_, n)| n).unwrap_or(tag);
            ordered.migrations.push(Migration {
                version: format!("{idx:04}"),
                name: name.into(),
                up,
                ..Migration::default()
            });
        }
        for path in top_level(tree).filter(|p| is_sql(p)) {
            if !ordered.migrations.iter().any(|m| &m.up == path) {
                ordered.notices.push(ignored(path, "not in meta/_journal.json: drizzle-kit migrate never runs it"));
            }
        }
        Ok(ordered)
    }

    fn script(&self, _m: &Migration, text: &str, _t: &dyn Tree, options: &Options, _s: &Settings) -> Result<Script> {
        let wrap = match options.transaction_per_file {
            Some(false) => None,
            _ => Some(Wrap {
                key: 0,
                phrase: "in the one transaction drizzle-orm runs every pending migration in".into(),
                fact: "drizzle-orm's migrator runs all pending migrations in one transaction".into(),
            }),
        };
        let mut pieces = Vec::new();
        let mut start = 0;
        for (at, _) in text.match_indices(BREAKPOINT).chain(std::iter::once((text.len(), ""))) {
            pieces.push(Piece {
                range: start..at,
                sending: Sending::OneString { what: "a chunk between breakpoints drizzle-orm sends".into() },
                transaction: wrap.clone(),
            });
            start = (at + BREAKPOINT.len()).min(text.len());
        }
        Ok(Script { pieces, ..Script::default() })
    }

    fn rules(&self) -> ToolRules {
        ToolRules {
            files: "`<idx>_<tag>.sql` listed in `meta/_journal.json`",
            order: "the journal's `entries`, in order",
            transactions: "every pending migration in one transaction; files split at `--> statement-breakpoint`, each chunk sent as one string",
            source: "drizzle-orm `src/migrator.ts`, `src/pg-core/dialect.ts` (`migrate`)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    const JOURNAL_TEXT: &str = r#"{"version":"7","dialect":"postgresql","entries":[
        {"idx":0,"version":"7","when":1700000000000,"tag":"0000_init","breakpoints":true},
        {"idx":1,"version":"7","when":1700000001000,"tag":"0001_zeta","breakpoints":true},
        {"idx":2,"version":"7","when":1700000002000,"tag":"0000_alpha_fix","breakpoints":true}]}"#;

    #[test]
    fn the_journal_orders_and_breakpoints_split() {
        let tree = MemTree::new(&[
            ("meta/_journal.json", JOURNAL_TEXT),
            (
                "0000_init.sql",
                "CREATE TABLE \"a\" (\"x\" int)\n--> statement-breakpoint\nCREATE TABLE \"b\" (\"y\" int);",
            ),
            ("0001_zeta.sql", "SELECT 1;"),
            ("0000_alpha_fix.sql", "SELECT 2;"),
            ("0002_stray.sql", "SELECT 3;"),
        ]);
        assert_eq!(ups(&Drizzle, &tree), ["0000_init.sql", "0001_zeta.sql", "0000_alpha_fix.sql"]);
        assert_eq!(Drizzle.order(&tree).unwrap().notices.len(), 1, "the file the journal does not list");
        let statements = runs(&Drizzle, &tree, "0000_init.sql");
        assert_eq!(statements.len(), 2, "the breakpoint ends a statement without `;`");
        assert!(statements.iter().all(|(_, t)| *t));
    }

    #[test]
    fn a_bad_journal_is_an_error_with_its_line() {
        let tree = MemTree::new(&[("meta/_journal.json", "{\n\"entries\": [\n}")]);
        let error = Drizzle.order(&tree).unwrap_err().to_string();
        assert!(error.contains("_journal.json:3"), "{error}");
        let tree = MemTree::new(&[("meta/_journal.json", "{\"version\": \"7\"}")]);
        let error = Drizzle.order(&tree).unwrap_err().to_string();
        assert!(error.ends_with("_journal.json:1: has no `entries` list"), "{error}");
        let tree = MemTree::new(&[
            ("meta/_journal.json", "{\"entries\": [\n  {\"idx\": 0, \"tag\": \"0000_a\"},\n  {\"idx\": 1}\n]}"),
            ("0000_a.sql", "SELECT 1;"),
        ]);
        let error = Drizzle.order(&tree).unwrap_err().to_string();
        assert!(error.ends_with("_journal.json:3: entry 1 has no `tag`"), "{error}");
    }
}
