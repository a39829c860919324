//! Sqitch: `sqitch.plan` lists the changes in deploy order (not alphabetical); each change's
//! `deploy/<name>.sql` is replayed and `revert/<name>.sql` is its down file. A change reworked
//! later in the plan keeps its old script as `deploy/<name>@<tag>.sql` (`App::Sqitch::Plan`,
//! `Plan::Change` `path_segments`). Sqitch runs each script with `psql -f` (`Engine::pg`), which
//! sends statements one by one in autocommit; scripts carry their own `BEGIN; … COMMIT;`, which
//! the rules follow as written.

use super::*;

pub struct Sqitch;

const PLAN: &str = "sqitch.plan";

/// A change line of the plan: its name, and the tags that follow it until the next change.
struct Change {
    name: String,
    line: usize,
    tags: Vec<String>,
}

fn parse_plan(tree: &dyn Tree, text: &str) -> Result<Vec<Change>> {
    let mut changes: Vec<Change> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() || line.starts_with('%') {
            continue;
        }
        if let Some(tag) = line.strip_prefix('@') {
            let tag = tag.split_whitespace().next().unwrap_or("").to_string();
            match changes.last_mut() {
                Some(change) => change.tags.push(tag),
                None => return Err(invalid(tree, Path::new(PLAN), Some(index + 1), "a tag before any change")),
            }
            continue;
        }
        let name = line.split_whitespace().next().unwrap_or("");
        if let Some(reverted) = name.strip_prefix('-') {
            return Err(invalid(
                tree,
                Path::new(PLAN),
                Some(index + 1),
                format!("`-{reverted}` reverts a change in the plan; Sluice cannot replay plans that revert"),
            ));
        }
        changes.push(Change { name: name.trim_start_matches('+').to_string(), line: index + 1, tags: Vec::new() });
    }
    Ok(changes)
}

impl Tool for Sqitch {
    fn layout(&self) -> Layout {
        Layout::Sqitch
    }

    fn name(&self) -> &'static str {
        "sqitch"
    }

    fn evidence(&self, tree: &dyn Tree) -> Result<Option<Evidence>> {
        Ok(tree.has(Path::new(PLAN)).then(|| Evidence {
            strength: Strength::Marker,
            reason: format!("{} is Sqitch's plan", tree.display(Path::new(PLAN))),
        }))
    }

    fn order(&self, tree: &dyn Tree) -> Result<Ordered> {
        let plan = Path::new(PLAN);
        let text = tree.read(plan)?.ok_or_else(|| invalid(tree, plan, None, "sqitch.plan is missing; set [migrations] dir to the Sqitch project (the directory holding sqitch.plan)"))?;
        let changes = parse_plan(tree, &text)?;
        let mut ordered = Ordered::default();
        for (index, change) in changes.iter().enumerate() {
            // A change reworked later keeps its old script under the first tag (latest first) that has one.
            let later = changes[index + 1..].iter().any(|c| c.name == change.name);
            let script = |dir: &str| -> Option<PathBuf> {
                if !later {
                    return Some(PathBuf::from(format!("{dir}/{}.sql", change.name)));
                }
                let next = changes[index + 1..]
                    .iter()
                    .position(|c| c.name == change.name)
                    .map(|p| p + index + 1)
                    .unwrap_or(changes.len());
                let tags =
                    changes[index + 1..next].iter().rev().flat_map(|c| c.tags.iter().rev()).chain(change.tags.iter());
                tags.map(|tag| PathBuf::from(format!("{dir}/{}@{tag}.sql", change.name))).find(|p| tree.has(p))
            };
            match script("deploy").filter(|p| tree.has(p)) {
                Some(up) => {
                    let down = script("revert").filter(|p| tree.has(p));
                    ordered.migrations.push(Migration {
                        version: format!("{:06}", index + 1),
                        name: change.name.clone(),
                        up,
                        down,
                        ..Migration::default()
                    });
                }
                None => ordered.notices.push(ignored(
                    plan,
                    format!(
                        "line {}: change `{}` has no deploy script: sqitch deploy fails on it",
                        change.line, change.name
                    ),
                )),
            }
        }
        Ok(ordered)
    }

    fn script(&self, m: &Migration, text: &str, tree: &dyn Tree, options: &Options, _s: &Settings) -> Result<Script> {
        Script::psql(&m.up, text, tree, file_wrap(options, false, ""))
    }

    fn rules(&self) -> ToolRules {
        ToolRules {
            files: "`sqitch.plan`, `deploy/<change>.sql`, `revert/<change>.sql`",
            order: "`sqitch.plan` (reworked changes: `deploy/<change>@<tag>.sql` for the old version)",
            transactions:
                "none opened: `psql -f` sends statements one by one; the scripts' own `BEGIN; … COMMIT;` are followed",
            source: "Sqitch `App::Sqitch::Plan`, `Plan::Change`, `Engine::pg`; sqitch-changes and sqitchtutorial docs",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    const PLAN_TEXT: &str = "%syntax-version=1.0.0\n%project=app\n\nusers 2024-01-01T00:00:00Z Ann <ann@example.com> # users\nappschema 2024-01-02T00:00:00Z Ann <ann@example.com>\n@v1.0 2024-01-03T00:00:00Z Ann <ann@example.com>\nusers [users@v1.0] 2024-01-04T00:00:00Z Ann <ann@example.com> # rework\n";

    #[test]
    fn the_plan_orders_and_reworked_changes_use_their_tagged_script() {
        let tree = MemTree::new(&[
            ("sqitch.plan", PLAN_TEXT),
            ("deploy/users.sql", "BEGIN; CREATE TABLE users (id int, email text); COMMIT;"),
            ("deploy/users@v1.0.sql", "BEGIN; CREATE TABLE users (id int); COMMIT;"),
            ("deploy/appschema.sql", "CREATE SCHEMA app;"),
            ("revert/users.sql", "DROP TABLE users;"),
            ("revert/appschema.sql", "DROP SCHEMA app;"),
        ]);
        assert_eq!(ups(&Sqitch, &tree), ["deploy/users@v1.0.sql", "deploy/appschema.sql", "deploy/users.sql"]);
        let ordered = Sqitch.order(&tree).unwrap();
        assert_eq!(ordered.migrations[1].down, Some(PathBuf::from("revert/appschema.sql")));
        assert!(runs(&Sqitch, &tree, "deploy/appschema.sql").iter().all(|(_, t)| !*t), "psql: no transaction opened");
    }

    #[test]
    fn a_change_without_a_script_is_reported() {
        let tree = MemTree::new(&[("sqitch.plan", "ghost 2024-01-01T00:00:00Z Ann <a@b.c>\n")]);
        assert_eq!(Sqitch.order(&tree).unwrap().notices.len(), 1);
    }
}
