//! sqlc (<https://docs.sqlc.dev/en/stable/reference/config.html>): a `sqlc.yaml`, `sqlc.yml`
//! or `sqlc.json` names, per package (version 1, `packages`) or per SQL block (version 2,
//! `sql`), the `queries` it compiles: a file, a directory, or a list of them, relative to the
//! configuration's directory. Only the blocks whose `engine` is `postgresql` are PostgreSQL
//! (version 1 defaults to it); the others are counted and left out.
//!
//! sqlc reads a directory without descending into it, and only its `.sql` files that are
//! neither hidden nor down migrations (`internal/sql/sqlpath/read.go`, `Glob`): so does Sluice.
//! Each query is named by its `-- name: GetUser :one` header (see [`super::QueryName`]).

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The configuration file names sqlc looks for, in its order.
pub const CONFIG_FILES: [&str; 3] = ["sqlc.yaml", "sqlc.yml", "sqlc.json"];

/// What a sqlc configuration says about queries.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Config {
    /// The `queries` paths of its PostgreSQL blocks, joined to the configuration's directory.
    pub queries: Vec<PathBuf>,
    /// Blocks for other engines (MySQL, SQLite), left out.
    pub other_engines: Vec<String>,
}

/// Reads a sqlc configuration's text; `path` is where it is (its directory is what the query
/// paths are relative to) and names it in errors.
pub fn parse(path: &Path, text: &str) -> Result<Config> {
    let value = if path.extension().is_some_and(|e| e == "json") {
        serde_json::from_str::<serde_json::Value>(text)
            .map_err(|e| Error::invalid(path, Some(e.line()), format!("not valid JSON: {e}")))?
    } else {
        yaml_to_json(path, text)?
    };
    let version = match &value["version"] {
        serde_json::Value::String(v) => v.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => String::new(),
    };
    let (blocks, default_engine) = match version.as_str() {
        "1" => ("packages", Some("postgresql")),
        "2" => ("sql", None),
        other => {
            return Err(Error::invalid(
                path,
                line_of(text, "version"),
                format!(
                    "sqlc configuration version `{other}` is not one Sluice reads; sqlc's versions are \"1\" and \"2\""
                ),
            ))
        }
    };
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut config = Config::default();
    for (index, block) in value[blocks].as_array().into_iter().flatten().enumerate() {
        let engine = block["engine"].as_str().or(default_engine).unwrap_or("");
        if engine != "postgresql" {
            config.other_engines.push(format!("{blocks}[{index}] (engine `{engine}`)"));
            continue;
        }
        let queries: Vec<&str> = match &block["queries"] {
            serde_json::Value::String(one) => vec![one.as_str()],
            serde_json::Value::Array(many) => many.iter().filter_map(|q| q.as_str()).collect(),
            _ => {
                return Err(Error::invalid(
                    path,
                    line_of(text, blocks),
                    format!("{blocks}[{index}] names no `queries` (a path or a list of paths)"),
                ))
            }
        };
        config.queries.extend(queries.into_iter().map(|q| dir.join(q.trim_start_matches("./"))));
    }
    Ok(config)
}

/// YAML read into the JSON value model (sqlc's configurations are plain maps, lists and strings).
fn yaml_to_json(path: &Path, text: &str) -> Result<serde_json::Value> {
    use yaml_rust2::{Yaml, YamlLoader};
    fn convert(yaml: &Yaml) -> serde_json::Value {
        match yaml {
            Yaml::String(s) | Yaml::Real(s) => serde_json::Value::String(s.clone()),
            Yaml::Integer(i) => serde_json::Value::String(i.to_string()),
            Yaml::Boolean(b) => serde_json::Value::Bool(*b),
            Yaml::Array(items) => serde_json::Value::Array(items.iter().map(convert).collect()),
            Yaml::Hash(map) => serde_json::Value::Object(
                map.iter().filter_map(|(k, v)| Some((k.as_str()?.to_string(), convert(v)))).collect(),
            ),
            _ => serde_json::Value::Null,
        }
    }
    let documents = YamlLoader::load_from_str(text)
        .map_err(|e| Error::invalid(path, Some(e.marker().line()), format!("not valid YAML: {e}")))?;
    Ok(documents.first().map(convert).unwrap_or(serde_json::Value::Null))
}

fn line_of(text: &str, key: &str) -> Option<usize> {
    text.lines().position(|l| l.trim_start().trim_start_matches(['"', '-', ' ']).starts_with(key)).map(|i| i + 1)
}

/// Whether sqlc reads a file it finds in a query directory.
pub fn reads(file_name: &str) -> bool {
    file_name.ends_with(".sql") && !file_name.starts_with('.') && !file_name.ends_with(".down.sql")
}

/// The query files `paths` name on disk, as sqlc lists them: a file as it is, a directory's
/// own `.sql` files (not its subdirectories'). A path that does not exist is an error naming
/// the configuration, as it is for sqlc.
pub fn files_on_disk(config: &Path, paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        let metadata = std::fs::metadata(path)
            .map_err(|_| Error::invalid(config, None, format!("query path {} does not exist", path.display())))?;
        if !metadata.is_dir() {
            files.push(path.clone());
            continue;
        }
        let entries = std::fs::read_dir(path).map_err(|e| Error::io(path, e))?;
        let mut listed = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(path, e))?;
            let name = entry.file_name().to_string_lossy().to_string();
            if reads(&name) && entry.file_type().is_ok_and(|t| !t.is_dir()) {
                listed.push(entry.path());
            }
        }
        listed.sort();
        files.extend(listed);
    }
    files.dedup();
    Ok(files)
}

/// The sqlc configuration at the root of `dir`, if there is one.
pub fn find_in(dir: &Path) -> Option<PathBuf> {
    CONFIG_FILES.iter().map(|name| dir.join(name)).find(|path| path.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_versions_and_only_postgresql_blocks() {
        let v2 = "version: \"2\"\nsql:\n  - engine: postgresql\n    queries: ./db/query/\n    schema: db/migration\n  - engine: mysql\n    queries: mysql/\n  - engine: \"postgresql\"\n    queries: [\"a.sql\", \"b/\"]\n";
        let config = parse(Path::new("svc/sqlc.yaml"), v2).unwrap();
        assert_eq!(
            config.queries,
            [PathBuf::from("svc/db/query/"), PathBuf::from("svc/a.sql"), PathBuf::from("svc/b/")]
        );
        assert_eq!(config.other_engines, ["sql[1] (engine `mysql`)"]);

        let v1 = r#"{"version": "1", "packages": [{"name": "db", "path": "internal/db", "queries": "./sql/query/", "schema": "./sql/schema/"}]}"#;
        let config = parse(Path::new("sqlc.json"), v1).unwrap();
        assert_eq!(config.queries, [PathBuf::from("sql/query/")]);
    }

    #[test]
    fn bad_configurations_name_the_file_and_line() {
        let err = parse(Path::new("sqlc.yaml"), "version: \"3\"\n").unwrap_err().to_string();
        assert_eq!(
            err,
            "sqlc.yaml:1: sqlc configuration version `3` is not one Sluice reads; sqlc's versions are \"1\" and \"2\""
        );
        let err = parse(Path::new("sqlc.yaml"), "version: \"2\"\nsql:\n  - engine: postgresql\n    schema: s\n")
            .unwrap_err()
            .to_string();
        assert_eq!(err, "sqlc.yaml:2: sql[0] names no `queries` (a path or a list of paths)");
        let err = parse(Path::new("sqlc.yaml"), "version: \"2\"\nsql: [\n").unwrap_err().to_string();
        assert!(err.starts_with("sqlc.yaml:3: not valid YAML"), "{err}");
    }

    #[test]
    fn lists_a_directory_as_sqlc_does() {
        let dir = tempfile::tempdir().unwrap();
        let queries = dir.path().join("query");
        std::fs::create_dir_all(queries.join("nested")).unwrap();
        for name in ["users.sql", "a.sql", ".hidden.sql", "001.down.sql", "notes.md", "nested/deep.sql"] {
            std::fs::write(queries.join(name), "SELECT 1;").unwrap();
        }
        let files = files_on_disk(&dir.path().join("sqlc.yaml"), std::slice::from_ref(&queries)).unwrap();
        assert_eq!(files, [queries.join("a.sql"), queries.join("users.sql")]);
        let err = files_on_disk(Path::new("sqlc.yaml"), &[dir.path().join("missing")]).unwrap_err().to_string();
        assert!(err.starts_with("sqlc.yaml: query path ") && err.ends_with("missing does not exist"), "{err}");
    }
}
