//! Liquibase, formatted SQL changelogs (`--liquibase formatted sql`).
//!
//! Order: the master changelog (`changeLogFile` in `liquibase.properties`, else
//! `db.changelog-master.{xml,yaml,yml,json}`), its `include` and `includeAll` entries in document
//! order (`includeAll`: the directory's files in path order, recursively), followed through
//! nested changelogs; without a master changelog, the formatted SQL files in path order.
//!
//! A file is a list of `--changeset author:id` sections run in file order. Each changeset runs in
//! its own transaction unless `runInTransaction:false`; its text is split at `;` (and `GO` lines)
//! and each statement sent on its own, unless `splitStatements:false` (the whole changeset is one
//! JDBC statement) or `endDelimiter:<d>` (each stretch up to `<d>` is one). pgjdbc sends a
//! multi-statement string as one batch, which PostgreSQL runs as one implicit transaction: a
//! concurrent index must be alone in its changeset (liquibase/liquibase#3806). `--rollback` lines
//! and `/* liquibase rollback */` blocks are the rollback, never run on deploy; changesets for
//! other databases (`dbms:`) or with `ignore:true` are skipped.
//! Sources: Liquibase docs "SQL format changelogs", `AbstractFormattedChangeLogParser`.

use super::*;
use std::collections::BTreeSet;
use std::ops::Range;

pub struct Liquibase;

const MASTERS: &[&str] = &[
    "db.changelog-master.xml",
    "db.changelog-master.yaml",
    "db.changelog-master.yml",
    "db.changelog-master.json",
    "changelog-master.xml",
    "changelog-master.yaml",
    "changelog-master.yml",
    "changelog-master.json",
];

fn is_formatted(text: &str) -> bool {
    text.lines().find(|l| !l.trim().is_empty()).is_some_and(|l| {
        let words: String =
            l.trim().trim_start_matches('-').split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
        l.trim_start().starts_with("--") && words.starts_with("liquibase formatted")
    })
}

/// An `include` / `includeAll` entry of a changelog.
struct Include {
    path: String,
    all: bool,
    relative_to_changelog: bool,
    line: usize,
}

/// What a changelog holds: includes in order, and changesets Sluice cannot replay.
#[derive(Default)]
struct Changelog {
    includes: Vec<Include>,
    opaque_changesets: usize,
}

fn flag(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

fn parse_xml(tree: &dyn Tree, path: &Path, text: &str) -> Result<Changelog> {
    let document = roxmltree::Document::parse(text)
        .map_err(|e| invalid(tree, path, Some(e.pos().row as usize), format!("not valid XML: {e}")))?;
    let mut changelog = Changelog::default();
    for node in document.root_element().children().filter(|n| n.is_element()) {
        let line = document.text_pos_at(node.range().start).row as usize;
        match node.tag_name().name() {
            "include" | "includeAll" => {
                let all = node.tag_name().name() == "includeAll";
                let Some(target) = node.attribute(if all { "path" } else { "file" }) else {
                    return Err(invalid(
                        tree,
                        path,
                        Some(line),
                        format!("<{}> names no {}", node.tag_name().name(), if all { "path" } else { "file" }),
                    ));
                };
                changelog.includes.push(Include {
                    path: target.into(),
                    all,
                    relative_to_changelog: flag(node.attribute("relativeToChangelogFile")),
                    line,
                });
            }
            "changeSet" => changelog.opaque_changesets += 1,
            _ => {}
        }
    }
    Ok(changelog)
}

/// YAML and JSON changelogs: `databaseChangeLog: [ {include: {file, relativeToChangelogFile}}, … ]`.
fn parse_entries(
    tree: &dyn Tree,
    path: &Path,
    text: &str,
    entries: Vec<(String, Vec<(String, String)>)>,
) -> Result<Changelog> {
    let mut changelog = Changelog::default();
    let line_of = |needle: &str| text.lines().position(|l| l.contains(needle)).map(|i| i + 1).unwrap_or(1);
    for (kind, fields) in entries {
        let field = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        match kind.as_str() {
            "include" | "includeAll" => {
                let all = kind == "includeAll";
                let Some(target) = field(if all { "path" } else { "file" }) else {
                    return Err(invalid(
                        tree,
                        path,
                        Some(line_of(&kind)),
                        format!("`{kind}` names no {}", if all { "path" } else { "file" }),
                    ));
                };
                changelog.includes.push(Include {
                    path: target.into(),
                    all,
                    relative_to_changelog: flag(field("relativeToChangelogFile")),
                    line: line_of(target),
                });
            }
            "changeSet" => changelog.opaque_changesets += 1,
            _ => {}
        }
    }
    Ok(changelog)
}

fn parse_yaml(tree: &dyn Tree, path: &Path, text: &str) -> Result<Changelog> {
    use yaml_rust2::{Yaml, YamlLoader};
    let documents = YamlLoader::load_from_str(text)
        .map_err(|e| invalid(tree, path, Some(e.marker().line()), format!("not valid YAML: {e}")))?;
    let mut entries = Vec::new();
    if let Some(Yaml::Array(items)) = documents.first().map(|d| &d["databaseChangeLog"]) {
        for item in items {
            let Yaml::Hash(map) = item else { continue };
            for (key, value) in map {
                let fields = match value {
                    Yaml::Hash(fields) => fields
                        .iter()
                        .filter_map(|(k, v)| {
                            let value = match v {
                                Yaml::String(s) => s.clone(),
                                Yaml::Boolean(b) => b.to_string(),
                                _ => return None,
                            };
                            Some((k.as_str()?.to_string(), value))
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                entries.push((key.as_str().unwrap_or("").to_string(), fields));
            }
        }
    }
    parse_entries(tree, path, text, entries)
}

fn parse_json(tree: &dyn Tree, path: &Path, text: &str) -> Result<Changelog> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| invalid(tree, path, Some(e.line()), format!("not valid JSON: {e}")))?;
    let mut entries = Vec::new();
    for item in value.get("databaseChangeLog").and_then(|v| v.as_array()).into_iter().flatten() {
        for (key, fields) in item.as_object().into_iter().flatten() {
            let fields = fields
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| {
                    Some((k.clone(), v.as_str().map(str::to_string).or_else(|| v.as_bool().map(|b| b.to_string()))?))
                })
                .collect();
            entries.push((key.clone(), fields));
        }
    }
    parse_entries(tree, path, text, entries)
}

/// Where an included path is: relative to the including changelog, or a search-path (classpath)
/// path such as `db/changelog/changes/001.sql`, found by its longest suffix under the directory.
fn resolve(tree: &dyn Tree, from: &Path, include: &Include) -> Option<PathBuf> {
    let exists = |p: &Path| if include.all { tree.files().iter().any(|f| f.starts_with(p)) } else { tree.has(p) };
    if include.relative_to_changelog {
        let joined = tree::normalize(&from.parent().unwrap_or(Path::new("")).join(&include.path))?;
        return exists(&joined).then_some(joined);
    }
    let wanted = tree::normalize(Path::new(include.path.trim_start_matches("classpath:").trim_start_matches('/')))?;
    let parts: Vec<_> = wanted.components().collect();
    (0..parts.len()).map(|skip| parts[skip..].iter().collect::<PathBuf>()).find(|p| exists(p))
}

fn extension(path: &Path) -> &str {
    path.extension().and_then(|e| e.to_str()).unwrap_or("")
}

/// Follows a changelog's includes, appending SQL changelogs to `out` in run order.
fn follow(tree: &dyn Tree, path: &Path, seen: &mut BTreeSet<PathBuf>, out: &mut Ordered) -> Result<()> {
    if !seen.insert(path.to_path_buf()) {
        return Ok(());
    }
    let text = tree.read(path)?.ok_or_else(|| invalid(tree, path, None, "changelog not found"))?;
    let changelog = match extension(path) {
        "sql" => {
            out.migrations.push(Migration {
                version: format!("{:06}", out.migrations.len() + 1),
                name: file_name(path).trim_end_matches(".sql").into(),
                up: path.to_path_buf(),
                ..Migration::default()
            });
            return Ok(());
        }
        "xml" => parse_xml(tree, path, &text)?,
        "yaml" | "yml" => parse_yaml(tree, path, &text)?,
        "json" => parse_json(tree, path, &text)?,
        _ => return Ok(()),
    };
    if changelog.opaque_changesets > 0 {
        out.notices.push(ignored(
            path,
            format!(
                "{} changeset(s) written as {} change types, not SQL: Sluice did not check them",
                changelog.opaque_changesets,
                extension(path).to_uppercase()
            ),
        ));
    }
    for include in &changelog.includes {
        let Some(target) = resolve(tree, path, include) else {
            return Err(invalid(
                tree,
                path,
                Some(include.line),
                format!(
                    "includes `{}`, which is not under the migrations directory {}",
                    include.path,
                    tree.display(Path::new(""))
                ),
            ));
        };
        if include.all {
            let mut files: Vec<PathBuf> = tree
                .files()
                .iter()
                .filter(|f| f.starts_with(&target) && matches!(extension(f), "sql" | "xml" | "yaml" | "yml" | "json"))
                .cloned()
                .collect();
            files.sort_by_key(|f| crate::source::slash(f));
            for file in files {
                follow(tree, &file, seen, out)?;
            }
        } else {
            follow(tree, &target, seen, out)?;
        }
    }
    Ok(())
}

/// The master changelog: named by `liquibase.properties`, else a conventional name.
fn master(tree: &dyn Tree) -> Result<Option<PathBuf>> {
    if let Some((dir, text)) = tree.nearby("liquibase.properties")? {
        for (number, line) in text.lines().enumerate() {
            let Some((key, value)) = line.split_once(['=', ':']) else { continue };
            let key = key.trim().to_lowercase();
            if matches!(key.as_str(), "changelogfile" | "changelog-file" | "liquibase.command.changelogfile") {
                let include =
                    Include { path: value.trim().into(), all: false, relative_to_changelog: false, line: number + 1 };
                let relative_to_properties = tree::normalize(&dir.join(value.trim()))
                    .and_then(|p| p.strip_prefix(tree.dir()).ok().map(Path::to_path_buf));
                let found =
                    relative_to_properties.filter(|p| tree.has(p)).or_else(|| resolve(tree, Path::new(""), &include));
                return match found {
                    Some(path) => Ok(Some(path)),
                    None => Err(Error::invalid(
                        Path::new(&crate::source::slash(&dir.join("liquibase.properties"))),
                        Some(number + 1),
                        format!(
                            "changelog `{}` is not under the migrations directory {}",
                            value.trim(),
                            tree.display(Path::new(""))
                        ),
                    )),
                };
            }
        }
    }
    Ok(tree.files().iter().filter(|p| MASTERS.contains(&file_name(p))).min_by_key(|p| p.components().count()).cloned())
}

/// A `--changeset author:id attributes` line: (label, attributes).
fn changeset_header(line: &str) -> Option<(String, String)> {
    let rest = line.trim_start().strip_prefix("--")?.trim_start();
    if rest.len() < 9 || !rest[..9].eq_ignore_ascii_case("changeset") {
        return None;
    }
    let rest = rest[9..].trim();
    let (label, attributes) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    Some((label.to_string(), attributes.to_string()))
}

fn attribute<'a>(attributes: &'a str, name: &str) -> Option<&'a str> {
    attributes.split_whitespace().find_map(|pair| {
        let (key, value) = pair.split_once(':')?;
        key.eq_ignore_ascii_case(name).then_some(value)
    })
}

/// Whether a `dbms:` list includes PostgreSQL (`postgresql`, `all`, or a `!other` exclusion).
fn runs_on_postgres(dbms: Option<&str>) -> bool {
    let Some(list) = dbms else { return true };
    let items: Vec<String> = list.split(',').map(|d| d.trim().to_lowercase()).collect();
    if items.iter().any(|d| d == "!postgresql") {
        return false;
    }
    items.iter().any(|d| d == "postgresql" || d == "all" || d == "none") || items.iter().all(|d| d.starts_with('!'))
}

/// A rollback line: `--rollback <sql>`; the byte range of the SQL within the line.
fn rollback_sql(line: &str) -> Option<Range<usize>> {
    let trimmed = line.trim_start();
    let rest = trimmed.strip_prefix("--")?;
    let rest_trimmed = rest.trim_start();
    if rest_trimmed.len() < 9 || !rest_trimmed[..9].eq_ignore_ascii_case("rollback ") {
        return None;
    }
    let start = line.len() - rest_trimmed.len() + 9;
    Some(start..line.trim_end_matches(['\n', '\r']).len())
}

/// The pieces of a changeset body as Liquibase sends them.
fn body_pieces(text: &str, body: Range<usize>, attributes: &str, wrap: Option<Wrap>, label: &str) -> Vec<Piece> {
    let split_statements = !attribute(attributes, "splitStatements").is_some_and(|v| v.eq_ignore_ascii_case("false"));
    let delimiter = attribute(attributes, "endDelimiter").filter(|d| !d.is_empty() && *d != ";");
    let one_string = |range: Range<usize>| Piece {
        range,
        sending: Sending::OneString { what: format!("changeset {label}, a stretch Liquibase sends") },
        transaction: wrap.clone(),
    };
    if !split_statements {
        return vec![one_string(body)];
    }
    // Stretches between delimiter lines (`GO`, `/`) or delimiter text.
    let mut cuts: Vec<Range<usize>> = Vec::new();
    for (range, line) in script::lines(&text[body.clone()]) {
        let bare = line.trim();
        let is_line_delimiter = match delimiter {
            None => bare.eq_ignore_ascii_case("go"),
            Some(d) => bare == d || (d.eq_ignore_ascii_case("go") && bare.eq_ignore_ascii_case("go")),
        };
        if is_line_delimiter {
            cuts.push(range.start + body.start..range.end + body.start);
        } else if let Some(d) = delimiter {
            for (at, _) in line.match_indices(d) {
                let start = body.start + range.start + at;
                cuts.push(start..start + d.len());
            }
        }
    }
    let mut pieces = Vec::new();
    let mut start = body.start;
    for cut in cuts.iter().cloned().chain(std::iter::once(body.end..body.end)) {
        if !text[start..cut.start].trim().is_empty() {
            pieces.push(match delimiter {
                Some(_) => one_string(start..cut.start),
                None => Piece { range: start..cut.start, sending: Sending::EachStatement, transaction: wrap.clone() },
            });
        }
        start = cut.end;
    }
    pieces
}

impl Tool for Liquibase {
    fn layout(&self) -> Layout {
        Layout::Liquibase
    }

    fn name(&self) -> &'static str {
        "liquibase"
    }

    fn evidence(&self, tree: &dyn Tree) -> Result<Option<Evidence>> {
        if let Some(master) = tree.files().iter().find(|p| MASTERS.contains(&file_name(p))) {
            return Ok(Some(Evidence {
                strength: Strength::Marker,
                reason: format!("{} is a Liquibase master changelog", tree.display(master)),
            }));
        }
        if let Some((dir, _)) = tree.nearby("liquibase.properties")? {
            return Ok(Some(Evidence {
                strength: Strength::Marker,
                reason: format!("{} configures Liquibase", crate::source::slash(&dir.join("liquibase.properties"))),
            }));
        }
        let sql: Vec<&PathBuf> = tree.files().iter().filter(|p| is_sql(p)).collect();
        Ok(first_marked(tree, &sql, is_formatted)?.map(|path| Evidence {
            strength: Strength::Marker,
            reason: format!("{} starts with `--liquibase formatted sql`", tree.display(path)),
        }))
    }

    fn order(&self, tree: &dyn Tree) -> Result<Ordered> {
        let mut ordered = Ordered::default();
        match master(tree)? {
            Some(master) => follow(tree, &master, &mut BTreeSet::new(), &mut ordered)?,
            None => {
                for path in tree.files().iter().filter(|p| is_sql(p)) {
                    if tree.peek(path)?.is_some_and(|t| is_formatted(&t)) {
                        follow(tree, path, &mut BTreeSet::new(), &mut ordered)?;
                    }
                }
            }
        }
        Ok(ordered)
    }

    fn script(&self, _m: &Migration, text: &str, _t: &dyn Tree, options: &Options, _s: &Settings) -> Result<Script> {
        let mut script = Script::default();
        if !is_formatted(text) {
            // A plain SQL changelog is one changeset: split at `;`, in a transaction.
            let wrap =
                file_wrap(options, true, "Liquibase runs a plain SQL changelog as one changeset, in a transaction");
            return Ok(Script::whole(text, Sending::EachStatement, wrap));
        }
        let mut headers: Vec<(Range<usize>, String, String)> = Vec::new();
        let mut rollback: Vec<Range<usize>> = Vec::new();
        let mut in_rollback_block = false;
        for (range, line) in script::lines(text) {
            let bare = line.trim();
            if in_rollback_block {
                if bare.ends_with("*/") {
                    in_rollback_block = false;
                } else {
                    rollback.push(range);
                }
                continue;
            }
            if let Some((label, attributes)) = changeset_header(line) {
                headers.push((range, label, attributes));
            } else if let Some(sql) = rollback_sql(line) {
                rollback.push(range.start + sql.start..range.start + sql.end);
            } else if bare.starts_with("/*")
                && bare.trim_start_matches("/*").trim().eq_ignore_ascii_case("liquibase rollback")
            {
                in_rollback_block = true;
            }
        }
        for (index, (header, label, attributes)) in headers.iter().enumerate() {
            let end = headers.get(index + 1).map(|(h, _, _)| h.start).unwrap_or(text.len());
            if !label.contains(':') {
                script.problems.push(Problem {
                    line: script::line_of(text, header.start),
                    message: "Liquibase rejects a changeset without `author:id`".into(),
                });
            }
            if !runs_on_postgres(attribute(attributes, "dbms"))
                || attribute(attributes, "ignore").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            {
                continue;
            }
            let in_transaction =
                !attribute(attributes, "runInTransaction").is_some_and(|v| v.eq_ignore_ascii_case("false"));
            let wrap = if in_transaction {
                file_wrap(options, true, &format!("Liquibase runs changeset {label} in a transaction")).map(|w| Wrap {
                    key: index,
                    phrase: format!("in changeset {label}, which Liquibase runs in a transaction"),
                    ..w
                })
            } else {
                None
            };
            script.pieces.extend(body_pieces(text, header.end..end, attributes, wrap, label));
        }
        script.rollback = (!rollback.is_empty()).then(|| script::keep_only(text, &rollback));
        Ok(script)
    }

    fn rules(&self) -> ToolRules {
        ToolRules {
            files: "formatted SQL changelogs (`--liquibase formatted sql`, `--changeset author:id`) included from `db.changelog-master.{xml,yaml,json}`",
            order: "the master changelog's `include` / `includeAll` (path order), else the SQL files by path; changesets in file order",
            transactions: "each changeset in a transaction unless `runInTransaction:false`; statements split at `;`/`GO`, sent one by one, unless `splitStatements:false` or `endDelimiter` (then one string, one implicit transaction); `--rollback` is the rollback",
            source: "Liquibase docs (SQL changelogs, include); `AbstractFormattedChangeLogParser`; liquibase#3806",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    const CHANGES: &str = "--liquibase formatted sql\n\n--changeset ann:1\nCREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint);\n--rollback DROP TABLE orders;\n\n--changeset ann:2 runInTransaction:false\nCREATE INDEX CONCURRENTLY orders_customer ON orders (customer_id);\n--rollback DROP INDEX orders_customer;\n\n--changeset ann:3 dbms:oracle\nCREATE TABLE oracle_only (a int);\n\n--changeset ann:4 splitStatements:false runInTransaction:false\nSET lock_timeout = '1s';\nCREATE INDEX CONCURRENTLY orders_id ON orders (id);\n";

    #[test]
    fn changesets_their_transactions_and_rollbacks() {
        let tree = MemTree::new(&[("changes/001.sql", CHANGES)]);
        let statements = runs(&Liquibase, &tree, "changes/001.sql");
        let texts: Vec<&str> = statements.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(texts.len(), 4, "{texts:?}: the Oracle changeset is skipped");
        assert!(statements[0].1, "changeset 1 in a transaction");
        assert!(!statements[1].1, "runInTransaction:false, alone");
        assert!(statements[2].1 && statements[3].1, "splitStatements:false: one string, one implicit transaction");
        let rollback = script_of(&Liquibase, &tree, "changes/001.sql").rollback.unwrap();
        assert!(rollback.contains("DROP TABLE orders;") && rollback.contains("DROP INDEX orders_customer;"));
        assert!(!rollback.contains("--rollback"));
    }

    #[test]
    fn the_master_changelog_orders_includes() {
        let master = r#"<?xml version="1.0" encoding="UTF-8"?>
<databaseChangeLog xmlns="http://www.liquibase.org/xml/ns/dbchangelog">
    <include file="db/changelog/changes/b.sql"/>
    <includeAll path="later/" relativeToChangelogFile="true"/>
    <include file="changes/a.sql" relativeToChangelogFile="true"/>
    <changeSet id="x" author="y"><createTable tableName="t"/></changeSet>
</databaseChangeLog>"#;
        let tree = MemTree::new(&[
            ("db.changelog-master.xml", master),
            ("changes/a.sql", "--liquibase formatted sql\n--changeset a:1\nSELECT 1;\n"),
            ("changes/b.sql", "--liquibase formatted sql\n--changeset a:2\nSELECT 2;\n"),
            ("later/2.sql", "--liquibase formatted sql\n--changeset a:4\nSELECT 4;\n"),
            (
                "later/1.yaml",
                "databaseChangeLog:\n  - include:\n      file: changes/a.sql\n      relativeToChangelogFile: false\n",
            ),
        ]);
        assert_eq!(ups(&Liquibase, &tree), ["changes/b.sql", "changes/a.sql", "later/2.sql"]);
        assert_eq!(Liquibase.order(&tree).unwrap().notices.len(), 1, "the XML changeset is reported as not checked");
        let missing = MemTree::new(&[(
            "db.changelog-master.yaml",
            "databaseChangeLog:\n  - include:\n      file: nowhere.sql\n",
        )]);
        let error = Liquibase.order(&missing).unwrap_err().to_string();
        assert!(error.contains("db.changelog-master.yaml:3") && error.contains("nowhere.sql"), "{error}");
    }

    #[test]
    fn end_delimiter_stretches_are_one_string() {
        let text = "--liquibase formatted sql\n--changeset a:1 endDelimiter:/ runInTransaction:false\nSET search_path = app;\nCREATE INDEX CONCURRENTLY i ON t (a)\n/\nCREATE INDEX CONCURRENTLY j ON t (b)\n/\n";
        let tree = MemTree::new(&[("c.sql", text)]);
        let statements = runs(&Liquibase, &tree, "c.sql");
        assert_eq!(statements.len(), 3);
        assert!(statements[0].1 && statements[1].1, "the first stretch holds two statements");
        assert!(!statements[2].1);
    }
}
