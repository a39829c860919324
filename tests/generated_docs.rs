//! The README rule table and docs/rules.md are generated from the registry; these tests keep
//! them equal. Run with SLUICE_UPDATE_DOCS=1 to rewrite them after changing a rule.

use assert_cmd::Command;
use std::path::Path;

const START: &str = "<!-- rules:start -->\n";
const END: &str = "<!-- rules:end -->";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn sluice_stdout(args: &[&str]) -> String {
    let output = Command::cargo_bin("sluice").unwrap().args(args).output().unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap()
}

fn updating() -> bool {
    std::env::var_os("SLUICE_UPDATE_DOCS").is_some()
}

#[test]
fn readme_rule_table_equals_sluice_rules() {
    let table = sluice_stdout(&["rules", "--markdown"]);
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md");
    let start = readme.find(START).expect("README has <!-- rules:start -->") + START.len();
    let end = readme.find(END).expect("README has <!-- rules:end -->");
    if updating() {
        std::fs::write(&path, format!("{}{}{}", &readme[..start], table, &readme[end..])).unwrap();
        return;
    }
    assert_eq!(
        &readme[start..end],
        table,
        "README rule table is stale: run SLUICE_UPDATE_DOCS=1 cargo test --test generated_docs"
    );
}

#[test]
fn docs_rules_md_equals_the_registry() {
    let docs = sluice_stdout(&["rules", "--docs"]);
    let path = root().join("docs/rules.md");
    if updating() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, docs).unwrap();
        return;
    }
    let current = std::fs::read_to_string(&path).expect("docs/rules.md");
    assert_eq!(current, docs, "docs/rules.md is stale: run SLUICE_UPDATE_DOCS=1 cargo test --test generated_docs");
}
