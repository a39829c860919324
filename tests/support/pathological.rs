//! The inputs that broke Sluice (issue 16), at the sizes that broke it: each one is a
//! regression test in `tests/pathological.rs` and a seed of `tests/mutation.rs`.

/// A migration nested 25 subqueries deep: past the parser's recursion limit.
pub fn nested_update() -> String {
    format!(
        "UPDATE t SET a = 1 WHERE b IN {}(SELECT 1){};\n",
        "(SELECT b FROM t WHERE b IN ".repeat(25),
        ")".repeat(25)
    )
}

/// About 8,700 `[]` on a column type.
pub fn array_brackets() -> String {
    format!("ALTER TABLE t ADD COLUMN c int{};\n", "[]".repeat(8_700))
}

/// A UNION ALL chain of about 43,900 branches.
pub fn union_chain(prefix: &str) -> String {
    format!("{prefix}SELECT a FROM t{};\n", " UNION ALL SELECT a FROM t".repeat(43_900))
}

/// 32,000 statements, then a string or comment that never ends (`opener`).
pub fn unterminated_after(opener: &str) -> String {
    format!("{}SELECT {opener} never closed;\nDROP TABLE t;\n", "SELECT 1;\n".repeat(32_000))
}

/// Valid PostgreSQL that sqlparser's tokenizer rejects, followed by a statement that must be checked.
pub const TOKENIZER_REJECTS: &[&str] = &["SELECT U&' \\' UESCAPE '!';", "SELECT a |> b FROM t;"];

/// Builds one case's SQL.
pub type Case = fn() -> String;

/// Every SQL case, named.
pub const SQL: &[(&str, Case)] = &[
    ("nested update", nested_update),
    ("array brackets", array_brackets),
    ("union chain in a view", || union_chain("CREATE VIEW v AS ")),
    ("union chain in a query", || union_chain("")),
    ("unterminated dollar quote", || unterminated_after("$$")),
    ("unterminated comment", || unterminated_after("/*")),
    ("unterminated string", || unterminated_after("'")),
    ("unicode escape string", || format!("{}\nDROP INDEX i;\n", TOKENIZER_REJECTS[0])),
    ("custom operator", || format!("{}\nDROP INDEX i;\n", TOKENIZER_REJECTS[1])),
    ("byte-order mark", || "\u{feff}CREATE INDEX i ON t (a);\n".to_string()),
];
