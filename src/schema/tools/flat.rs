//! Plain SQL files run in file-name order by a psql-style runner (`psql -f`, a shell loop):
//! each statement on its own in autocommit, unless `[migrations] transaction_per_file = true`.

use super::*;

pub struct Flat;

impl Tool for Flat {
    fn layout(&self) -> Layout {
        Layout::Flat
    }

    fn name(&self) -> &'static str {
        "flat"
    }

    fn evidence(&self, _tree: &dyn Tree) -> Result<Option<Evidence>> {
        // The fallback when no tool fits: never evidence of its own.
        Ok(None)
    }

    fn order(&self, tree: &dyn Tree) -> Result<Ordered> {
        let mut migrations: Vec<Migration> = top_level(tree)
            .filter(|p| is_sql(p) && !file_name(p).ends_with(".down.sql"))
            .map(|p| {
                let name = file_name(p);
                let stem = name.strip_suffix(".up.sql").or_else(|| name.strip_suffix(".sql")).unwrap_or(name);
                let (version, name) = split_version(stem).unwrap_or((stem, stem));
                Migration { version: version.into(), name: name.into(), up: p.clone(), ..Migration::default() }
            })
            .collect();
        migrations.sort_by(|a, b| a.up.cmp(&b.up));
        Ok(Ordered { migrations, ..Ordered::default() })
    }

    fn script(&self, m: &Migration, text: &str, tree: &dyn Tree, options: &Options, _s: &Settings) -> Result<Script> {
        Script::psql(&m.up, text, tree, file_wrap(options, false, ""))
    }

    fn rules(&self) -> ToolRules {
        ToolRules {
            files: "`*.sql` in the directory",
            order: "file name",
            transactions:
                "none: psql sends each statement on its own (`transaction_per_file = true` if your runner wraps files)",
            source: "psql: statements are sent one by one as they end with `;` (PostgreSQL docs, psql)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn orders_by_file_name_and_sends_each_statement_alone() {
        let tree =
            MemTree::new(&[("002_b.sql", "SELECT 1;"), ("001_a.sql", "SET x = 1; SELECT 2;"), ("readme.txt", "")]);
        assert_eq!(versions(&Flat, &tree), ["001", "002"]);
        assert_eq!(runs(&Flat, &tree, "001_a.sql"), [("SET x = 1".into(), false), ("SELECT 2".into(), false)]);
    }
}
