//! Which database a file's SQL is for, by what the file declares: the driver packages a Go file
//! imports, the sqlx types or crates a Rust file names, the modules a Python or TypeScript file
//! imports. Each is read with the language's grammar (import and use declarations, type paths),
//! never by searching the text.
//!
//! Multi-database applications keep MySQL and SQLite code beside their PostgreSQL code (memos'
//! `store/db/{mysql,sqlite,postgres}`, atuin's SQLite client crates): that SQL is not for the
//! database a PostgreSQL gate checks, and read as PostgreSQL it is a column of false
//! `unparsed-statement` warnings, or worse, checked against the wrong schema. A file is set aside
//! as another database's only when everything it (or, in Go, its package) shows points to one
//! other database; a file showing PostgreSQL too, or nothing, is read as PostgreSQL.

use super::language::Language;
use super::syntax::{parse, walk, Host};
use std::collections::HashMap;
use std::path::Path;
use tree_sitter::Node;

use super::signs::POSTGRESQL;
pub use super::signs::{Evidence, OtherDatabase};
const MYSQL: &str = "MySQL";
const SQLITE: &str = "SQLite";
const SQL_SERVER: &str = "SQL Server";
const CASSANDRA: &str = "Cassandra";

/// The signs `text`, a file of `language`, gives of its database (none for a file that names
/// no driver: most files).
pub fn evidence(language: Language, text: &str) -> Vec<Evidence> {
    let mut found = match language {
        Language::Go => go(text),
        Language::Rust => rust(text),
        Language::Python => python(text),
        Language::TypeScript | Language::Tsx | Language::JavaScript => script(language, text),
        _ => Vec::new(),
    };
    found.dedup();
    found
}

/// The other database everything in `evidence` points to, if it points to one: a sign of
/// PostgreSQL, signs of two databases, or none, and the code is read as PostgreSQL.
pub fn other_database(evidence: &[Evidence]) -> Option<&Evidence> {
    let first = evidence.first()?;
    let one = evidence.iter().all(|e| e.database == first.database);
    (one && first.database != POSTGRESQL).then_some(first)
}

/// For each file (by path, with its own evidence), the other database its SQL is for, with what
/// showed it as the note says it. A Go file is judged with its package: the `.go` files of its
/// directory (the driver is imported once, in the file that opens the connection; `memo.go`
/// beside `sqlite.go` is SQLite code too).
pub fn decide<'a>(files: impl IntoIterator<Item = (&'a Path, &'a [Evidence])>) -> Vec<Option<OtherDatabase>> {
    let files: Vec<(&Path, &[Evidence])> = files.into_iter().collect();
    let is_go = |path: &Path| path.extension().is_some_and(|e| e == "go");
    let mut packages: HashMap<&Path, Vec<Evidence>> = HashMap::new();
    for (path, evidence) in files.iter().filter(|(path, _)| is_go(path)) {
        let package = packages.entry(path.parent().unwrap_or(Path::new(""))).or_default();
        for e in evidence.iter() {
            if !package.contains(e) {
                package.push(e.clone());
            }
        }
    }
    files
        .iter()
        .map(|(path, evidence)| {
            let (evidence, whose) = match is_go(path) {
                true => {
                    (packages.get(path.parent().unwrap_or(Path::new(""))).map_or(&[][..], Vec::as_slice), "package")
                }
                false => (*evidence, "file"),
            };
            other_database(evidence).map(|e| OtherDatabase {
                database: e.database.clone(),
                shown_by: format!("the {whose} {}", e.shown_by),
                statements: 0,
            })
        })
        .collect()
}

/// Go: the import paths of the file's drivers (database/sql's and GORM's, pgx and the like).
fn go(text: &str) -> Vec<Evidence> {
    if !["sqlite", "mysql", "mssql", "pq", "pgx", "postgres", "go-pg", "gocql"].iter().any(|m| text.contains(m)) {
        return Vec::new();
    }
    let tree = parse(&tree_sitter_go::LANGUAGE.into(), text);
    let host = Host::new(text);
    let mut found = Vec::new();
    walk(tree.root_node(), |node| {
        if node.kind() != "import_spec" {
            return;
        }
        let path = node.child_by_field_name("path").map_or("", |p| host.text_of(p)).trim_matches(['"', '`']);
        if let Some(database) = go_driver(path) {
            found.push(Evidence::new(database, format!("imports {path}")));
        }
    });
    found
}

fn go_driver(path: &str) -> Option<&'static str> {
    let under = |prefix: &str| path == prefix || path.starts_with(&format!("{prefix}/"));
    Some(match path {
        _ if [
            "github.com/lib/pq",
            "github.com/go-pg/pg",
            "gorm.io/driver/postgres",
            "github.com/uptrace/bun/driver/pgdriver",
        ]
        .iter()
        .any(|p| under(p)) =>
        {
            POSTGRESQL
        }
        _ if path.starts_with("github.com/jackc/pgx") => POSTGRESQL,
        _ if ["github.com/go-sql-driver/mysql", "github.com/ziutek/mymysql", "gorm.io/driver/mysql"]
            .iter()
            .any(|p| under(p)) =>
        {
            MYSQL
        }
        _ if [
            "modernc.org/sqlite",
            "github.com/mattn/go-sqlite3",
            "github.com/glebarez/go-sqlite",
            "github.com/glebarez/sqlite",
            "github.com/ncruces/go-sqlite3",
            "gorm.io/driver/sqlite",
            "zombiezen.com/go/sqlite",
            "crawshaw.io/sqlite",
        ]
        .iter()
        .any(|p| under(p)) =>
        {
            SQLITE
        }
        _ if ["github.com/denisenkom/go-mssqldb", "github.com/microsoft/go-mssqldb", "gorm.io/driver/sqlserver"]
            .iter()
            .any(|p| under(p)) =>
        {
            SQL_SERVER
        }
        // CQL, not SQL: temporal's Cassandra store beside its SQL plugins.
        _ if ["github.com/gocql/gocql", "github.com/apache/cassandra-gocql-driver"].iter().any(|p| under(p)) => {
            CASSANDRA
        }
        _ => return None,
    })
}

/// Rust: sqlx's database types and modules (`SqlitePool`, `Pool<Sqlite>`, `sqlx::mysql::…`),
/// rusqlite, and the PostgreSQL clients (`PgPool`, `sqlx::postgres`, tokio-postgres, diesel's
/// `pg`), wherever the file names them: a `use`, a type, a path.
fn rust(text: &str) -> Vec<Evidence> {
    if !["Sqlite", "sqlite", "MySql", "mysql", "Pg", "postgres", "Postgres"].iter().any(|m| text.contains(m)) {
        return Vec::new();
    }
    let tree = parse(&tree_sitter_rust::LANGUAGE.into(), text);
    let host = Host::new(text);
    let sqlx = text.contains("sqlx");
    let mut found = Vec::new();
    walk(tree.root_node(), |node| {
        let name = host.text_of(node);
        let database = match node.kind() {
            // `sqlx::sqlite::SqlitePool`, `rusqlite::Connection`, `use rusqlite;`: the crate or
            // module a path starts from.
            "scoped_identifier" | "scoped_type_identifier" | "scoped_use_list" | "use_declaration" => {
                let path = first_path(node, &host);
                match path.as_slice() {
                    ["rusqlite", ..] => Some((SQLITE, "uses rusqlite".to_string())),
                    ["tokio_postgres" | "deadpool_postgres" | "bb8_postgres" | "postgres", ..] => {
                        Some((POSTGRESQL, format!("uses {}", path[0])))
                    }
                    ["sqlx", "sqlite", ..] => Some((SQLITE, "uses sqlx::sqlite".to_string())),
                    ["sqlx", "mysql", ..] => Some((MYSQL, "uses sqlx::mysql".to_string())),
                    ["sqlx", "postgres", ..] => Some((POSTGRESQL, "uses sqlx::postgres".to_string())),
                    ["diesel", "pg", ..] => Some((POSTGRESQL, "uses diesel::pg".to_string())),
                    ["diesel", "sqlite", ..] => Some((SQLITE, "uses diesel::sqlite".to_string())),
                    ["diesel", "mysql", ..] => Some((MYSQL, "uses diesel::mysql".to_string())),
                    _ => None,
                }
            }
            "identifier" | "type_identifier" if sqlx => sqlx_type(name).map(|db| (db, format!("uses sqlx's {name}"))),
            _ => None,
        };
        if let Some((database, shown_by)) = database {
            found.push(Evidence::new(database, shown_by));
        }
    });
    found
}

/// The leading segments of the path `node` writes (`a::b::c` → `[a, b, c]`), through a `use`'s
/// argument and a `{…}` list's path.
fn first_path<'a>(node: Node, host: &Host<'a>) -> Vec<&'a str> {
    let mut node = node;
    loop {
        let next = match node.kind() {
            "use_declaration" => node.child_by_field_name("argument"),
            "scoped_use_list" | "use_as_clause" => node.child_by_field_name("path"),
            _ => None,
        };
        match next {
            Some(next) => node = next,
            None => break,
        }
    }
    match node.kind() {
        "identifier" | "crate" => vec![host.text_of(node)],
        "scoped_identifier" | "scoped_type_identifier" => {
            let mut segments = node.child_by_field_name("path").map_or_else(Vec::new, |p| first_path(p, host));
            segments.extend(node.child_by_field_name("name").map(|n| host.text_of(n)));
            segments
        }
        _ => Vec::new(),
    }
}

/// sqlx's per-database types: `Sqlite`, `SqlitePool`, `SqliteRow`…, `MySql`, `MySqlPool`…,
/// `Postgres`, `PgPool`, `PgRow`….
fn sqlx_type(name: &str) -> Option<&'static str> {
    let family = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(|c: char| c.is_ascii_uppercase()))
    };
    if family("Sqlite") {
        Some(SQLITE)
    } else if family("MySql") {
        Some(MYSQL)
    } else if name == "Postgres" || (family("Pg") && name.len() > 2) {
        Some(POSTGRESQL)
    } else {
        None
    }
}

/// Python: the DB-API drivers a module imports.
fn python(text: &str) -> Vec<Evidence> {
    if !text.contains("import") {
        return Vec::new();
    }
    let driver = |module: &str| -> Option<&'static str> {
        let top = module.split('.').next().unwrap_or(module);
        Some(match top {
            "sqlite3" | "aiosqlite" | "apsw" => SQLITE,
            "pymysql" | "MySQLdb" | "aiomysql" | "asyncmy" => MYSQL,
            "mysql" if module.starts_with("mysql.connector") => MYSQL,
            "psycopg2" | "psycopg" | "asyncpg" | "pg8000" | "aiopg" => POSTGRESQL,
            _ => return None,
        })
    };
    if !["sqlite", "apsw", "mysql", "MySQL", "psycopg", "asyncpg", "pg8000", "aiopg"].iter().any(|m| text.contains(m)) {
        return Vec::new();
    }
    let tree = parse(&tree_sitter_python::LANGUAGE.into(), text);
    let host = Host::new(text);
    let mut found = Vec::new();
    walk(tree.root_node(), |node| {
        let modules: Vec<Node> = match node.kind() {
            "import_statement" => {
                let mut cursor = node.walk();
                node.children_by_field_name("name", &mut cursor)
                    .map(|n| if n.kind() == "aliased_import" { n.child_by_field_name("name").unwrap_or(n) } else { n })
                    .collect()
            }
            "import_from_statement" => node.child_by_field_name("module_name").into_iter().collect(),
            _ => return,
        };
        for module in modules {
            let module = host.text_of(module);
            if let Some(database) = driver(module) {
                found.push(Evidence::new(database, format!("imports {module}")));
            }
        }
    });
    found
}

/// TypeScript and JavaScript: the driver packages a module imports or `require`s.
fn script(language: Language, text: &str) -> Vec<Evidence> {
    let driver = |package: &str| -> Option<&'static str> {
        Some(match package {
            "mysql" | "mysql2" | "mysql2/promise" | "@planetscale/database" | "mariadb" => MYSQL,
            "sqlite3" | "better-sqlite3" | "sqlite" | "bun:sqlite" | "node:sqlite" | "@libsql/client" => SQLITE,
            "pg"
            | "pg-pool"
            | "postgres"
            | "pg-promise"
            | "@neondatabase/serverless"
            | "@vercel/postgres"
            | "slonik" => POSTGRESQL,
            _ => return None,
        })
    };
    if !["sqlite", "mysql", "mariadb", "planetscale", "pg", "postgres", "neon", "slonik"]
        .iter()
        .any(|m| text.contains(m))
    {
        return Vec::new();
    }
    let grammar = match language {
        Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
        Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX,
        _ => tree_sitter_javascript::LANGUAGE,
    };
    let tree = parse(&grammar.into(), text);
    let host = Host::new(text);
    let mut found = Vec::new();
    walk(tree.root_node(), |node| {
        let source = match node.kind() {
            "import_statement" | "export_statement" => node.child_by_field_name("source"),
            "call_expression" => {
                let function = node.child_by_field_name("function").map(|f| host.text_of(f));
                let first = node.child_by_field_name("arguments").and_then(|a| a.named_child(0));
                match function {
                    Some("require") | Some("import") => first.filter(|a| a.kind() == "string"),
                    _ => None,
                }
            }
            _ => None,
        };
        let Some(source) = source else { return };
        let package = host.text_of(source).trim_matches(['"', '\'', '`']);
        if let Some(database) = driver(package) {
            found.push(Evidence::new(database, format!("imports {package}")));
        }
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn databases(language: Language, text: &str) -> Vec<(String, String)> {
        evidence(language, text).into_iter().map(|e| (e.database, e.shown_by)).collect()
    }

    fn one(database: &str, shown_by: &str) -> Vec<(String, String)> {
        vec![(database.to_string(), shown_by.to_string())]
    }

    #[test]
    fn go_drivers_are_read_from_the_import_declarations() {
        let sqlite =
            "package sqlite\n\nimport (\n\t\"database/sql\"\n\n\t// SQLite driver.\n\t_ \"modernc.org/sqlite\"\n)\n";
        assert_eq!(databases(Language::Go, sqlite), one(SQLITE, "imports modernc.org/sqlite"));
        let mysql = "package mysql\n\nimport _ \"github.com/go-sql-driver/mysql\"\n";
        assert_eq!(databases(Language::Go, mysql), one(MYSQL, "imports github.com/go-sql-driver/mysql"));
        let pgx = "package db\n\nimport \"github.com/jackc/pgx/v5/pgxpool\"\n";
        assert_eq!(databases(Language::Go, pgx), one(POSTGRESQL, "imports github.com/jackc/pgx/v5/pgxpool"));
        let cql = "package cassandra\n\nimport \"github.com/gocql/gocql\"\n";
        assert_eq!(databases(Language::Go, cql), one(CASSANDRA, "imports github.com/gocql/gocql"));
        // A string that names a driver is not an import.
        let mention = "package doc\n\nconst Driver = \"github.com/go-sql-driver/mysql\"\n";
        assert!(databases(Language::Go, mention).is_empty());
        // A package whose path merely starts like a driver's is not it.
        assert!(databases(Language::Go, "package x\n\nimport \"github.com/lib/pqueue\"\n").is_empty());
    }

    #[test]
    fn rust_sqlx_types_modules_and_crates() {
        let pool = "use sqlx::{sqlite::SqlitePoolOptions, Result};\nstruct Db { pool: sqlx::Pool<sqlx::Sqlite> }\n";
        let found = databases(Language::Rust, pool);
        assert!(found.iter().all(|(db, _)| db == SQLITE), "{found:?}");
        assert!(found.contains(&(SQLITE.into(), "uses sqlx's SqlitePoolOptions".into())), "{found:?}");
        assert!(found.contains(&(SQLITE.into(), "uses sqlx's Sqlite".into())), "{found:?}");
        let module = "use sqlx::sqlite::{SqlitePool, SqliteRow};\n";
        assert_eq!(databases(Language::Rust, module)[0], (SQLITE.into(), "uses sqlx::sqlite".into()));
        let rusqlite = "use rusqlite::{params, Connection};\nfn open() -> Connection { todo!() }\n";
        assert_eq!(databases(Language::Rust, rusqlite), one(SQLITE, "uses rusqlite"));
        let mysql = "async fn f(pool: &sqlx::MySqlPool) {}\n";
        assert_eq!(databases(Language::Rust, mysql), one(MYSQL, "uses sqlx's MySqlPool"));
        let pg = "use sqlx::PgPool;\n";
        assert_eq!(databases(Language::Rust, pg), one(POSTGRESQL, "uses sqlx's PgPool"));
        // `Sqlite` in a file that does not use sqlx is a type of the application's own.
        assert!(databases(Language::Rust, "struct Sqlite;\n").is_empty());
    }

    #[test]
    fn python_and_script_imports() {
        assert_eq!(databases(Language::Python, "import sqlite3\n"), one(SQLITE, "imports sqlite3"));
        assert_eq!(databases(Language::Python, "import MySQLdb as db\n"), one(MYSQL, "imports MySQLdb"));
        assert_eq!(
            databases(Language::Python, "from pymysql.cursors import DictCursor\n"),
            one(MYSQL, "imports pymysql.cursors")
        );
        assert!(databases(Language::Python, "# import sqlite3\nx = 'sqlite3'\n").is_empty());
        let ts = "import Database from 'better-sqlite3';\n";
        assert_eq!(databases(Language::TypeScript, ts), one(SQLITE, "imports better-sqlite3"));
        let js = "const mysql = require('mysql2/promise');\n";
        assert_eq!(databases(Language::JavaScript, js), one(MYSQL, "imports mysql2/promise"));
        assert_eq!(
            databases(Language::JavaScript, "const { Pool } = require(\"pg\");\n"),
            one(POSTGRESQL, "imports pg")
        );
    }

    #[test]
    fn one_other_database_sets_code_aside_and_anything_else_is_postgres() {
        let e = |db: &str| Evidence::new(db, format!("imports {db}"));
        assert_eq!(other_database(&[e(SQLITE)]).map(|e| e.database.as_str()), Some(SQLITE));
        assert_eq!(other_database(&[]), None, "nothing shown: PostgreSQL");
        assert_eq!(other_database(&[e(SQLITE), e(POSTGRESQL)]), None, "both: PostgreSQL");
        assert_eq!(other_database(&[e(SQLITE), e(MYSQL)]), None, "two others: PostgreSQL");
    }

    #[test]
    fn a_go_file_is_judged_with_its_package() {
        let sqlite = vec![Evidence::new(SQLITE, "imports modernc.org/sqlite".into())];
        let pg = vec![Evidence::new(POSTGRESQL, "imports github.com/lib/pq".into())];
        let files: Vec<(&Path, &[Evidence])> = vec![
            (Path::new("store/db/sqlite/sqlite.go"), &sqlite),
            (Path::new("store/db/sqlite/memo.go"), &[]),
            (Path::new("store/db/postgres/postgres.go"), &pg),
            (Path::new("store/db/postgres/memo.go"), &[]),
            (Path::new("store/db/sqlite/tool/main.rs"), &[]),
        ];
        let decided: Vec<Option<String>> = decide(files).into_iter().map(|d| d.map(|d| d.shown_by)).collect();
        let by_sqlite = Some("the package imports modernc.org/sqlite".to_string());
        assert_eq!(decided, vec![by_sqlite.clone(), by_sqlite, None, None, None]);
    }
}
