//! Policy entries that name no table of the replayed schema: a typo, a mixed-case name written
//! without its quotes (`Account` is `account` to PostgreSQL; `'"Account"'` is `Account`), or a
//! table since dropped. A policy that applies to nothing passes silently what it was written to
//! catch, so each is an error naming the file, the line and the nearest table name.

use crate::error::{Error, Result};
use crate::policy::Policies;
use crate::schema::Schema;
use crate::sql::names::shown;
use std::path::Path;

/// Checks every hand-written policy entry (`identity.toml` tables, `tables.toml` `[rows]`)
/// against `schema`; the statistics snapshot's rows are production's catalog and may name
/// tables the history does not create.
pub fn check(policies: &Policies, schema: &Schema) -> Result<()> {
    let identity = policies.identity.source.as_deref().unwrap_or("identity.toml");
    let mut entries: Vec<(&str, usize, &str)> = policies
        .identity
        .tables
        .values()
        .map(|e| (identity, e.line, e.name.as_str()))
        .chain(policies.identity.pending_entries().map(|(name, line)| (identity, line, name)))
        .collect();
    entries.extend(
        policies.tables.rows.iter().filter_map(|(name, rows)| Some((rows.source.as_str(), rows.line?, name.as_str()))),
    );
    entries.sort();
    for (file, line, name) in entries {
        if schema.tables.contains_key(name) {
            continue;
        }
        let hint = match nearest(schema, name) {
            Some(near) => format!("; did you mean `{}`?", shown(near)),
            None => String::new(),
        };
        let message = format!(
            "`{}` names no table of the migration history, so the policy applies to nothing{hint} (names are read as SQL reads them: unquoted they fold to lower case, `'\"Account\"'` keeps its case)",
            shown(name)
        );
        return Err(Error::invalid(Path::new(file), Some(line), message));
    }
    Ok(())
}

/// The table whose name is nearest `name`: the same letters in another case first, else the
/// closest within a third of its length.
fn nearest<'s>(schema: &'s Schema, name: &str) -> Option<&'s str> {
    let lower = name.to_lowercase();
    let tables = || schema.tables.keys().map(String::as_str);
    if let Some(same) = tables().find(|t| t.to_lowercase() == lower) {
        return Some(same);
    }
    tables()
        .map(|t| (strsim::levenshtein(&t.to_lowercase(), &lower), t))
        .filter(|(distance, _)| *distance <= (lower.chars().count() / 3).max(1))
        .min()
        .map(|(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::identity::IdentityPolicy;
    use crate::policy::tables::TablesPolicy;
    use crate::sql::parse::parse_file;

    fn schema() -> Schema {
        let mut schema = Schema::default();
        let history =
            "CREATE TABLE \"Account\" (\"id\" int PRIMARY KEY, \"isPaused\" boolean); CREATE TABLE orders (id int);";
        schema.apply_all(&parse_file(history.into()).statements, "001.sql", Some(0));
        schema
    }

    fn policies(identity: &str, tables: &str) -> Policies {
        Policies {
            identity: IdentityPolicy::parse(Path::new("policies/identity.toml"), identity).unwrap(),
            tables: TablesPolicy::parse(Path::new("policies/tables.toml"), tables, &|_| unreachable!()).unwrap(),
            index_usage: None,
        }
    }

    /// Issue 37: every Prisma project names its tables in mixed case.
    #[test]
    fn policy_names_resolve_as_postgresql_resolves_identifiers() {
        let quoted = policies(
            "[[table]]\nname = '\"Account\"'\nidentity = [['\"id\"']]\n",
            "[rows]\n'\"Account\"' = 10\norders = 5\n",
        );
        check(&quoted, &schema()).expect("quoted names match");
        assert_eq!(quoted.tables.rows("Account").map(|r| r.rows), Some(10));
        let folded = policies("\n[[table]]\nname = \"Account\"\nidentity = [[\"id\"]]\n", "");
        let error = check(&folded, &schema()).unwrap_err().to_string();
        assert!(error.starts_with("policies/identity.toml:2:"), "{error}");
        assert!(error.contains("`account` names no table") && error.contains("did you mean `\"Account\"`?"), "{error}");
        let rows = policies("", "[rows]\norders = 5\nordres = 7\n");
        let error = check(&rows, &schema()).unwrap_err().to_string();
        assert!(error.starts_with("policies/tables.toml:3:") && error.contains("did you mean `orders`?"), "{error}");
        let unrelated = policies("", "[rows]\nshipments = 7\n");
        assert!(!check(&unrelated, &schema()).unwrap_err().to_string().contains("did you mean"));
    }
}
