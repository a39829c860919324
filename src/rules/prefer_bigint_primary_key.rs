use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;

pub struct PreferBigintPrimaryKey;

pub static META: RuleMeta = RuleMeta {
    id: "prefer-bigint-primary-key",
    severity: Severity::Info,
    category: Category::Style,
    summary: "A primary key column is a 32- or 16-bit integer",
    what: "Flags primary key columns declared `integer`/`int`/`int4`/`serial` or `smallint`/`int2`/`smallserial`, \
in CREATE TABLE, ADD COLUMN and ADD PRIMARY KEY.",
    why: "An `integer` key runs out at 2,147,483,647 rows (sooner with sequence gaps); widening it later is a full \
table rewrite of the table and of every table referencing it — the change-column-type outage, scheduled by \
growth.",
    fix: "Use `bigint GENERATED ALWAYS AS IDENTITY` (or `bigserial`) from the start.",
    bad: "CREATE TABLE species (id serial PRIMARY KEY, code text NOT NULL);",
    good: "CREATE TABLE species (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, code text NOT NULL);",
    equivalents: "squawk: prefer-bigint-over-int, prefer-bigint-over-smallint; strong_migrations: none; eugene: none",
};

const NARROW: &[&str] = &["int", "integer", "int4", "serial", "serial4", "smallint", "int2", "smallserial", "serial2"];

impl Rule for PreferBigintPrimaryKey {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        if cx.migration().is_none() {
            return;
        }
        for column in cx.declared_columns() {
            if column.primary_key && NARROW.contains(&column.base_type()) {
                out.push(cx.column_finding(
                    &META,
                    column,
                    format!(
                        "primary key {}.{} is {}; it runs out of values long before bigint would",
                        column.table, column.name, column.data_type
                    ),
                ));
            }
        }
    }
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
    fn column_and_table_level_keys() {
        let count = |sql: &str| of(&lint_files(&[("001.sql", sql)], ""), META.id).len();
        assert_eq!(count("CREATE TABLE t (id integer, PRIMARY KEY (id));"), 1);
        assert_eq!(count("CREATE TABLE t (id smallint PRIMARY KEY, n int);"), 1);
        assert_eq!(count("CREATE TABLE t (id int4, n int); ALTER TABLE t ADD PRIMARY KEY (id);"), 1);
        assert_eq!(count("CREATE TABLE t (id bigserial PRIMARY KEY, n int);"), 0);
    }
}
