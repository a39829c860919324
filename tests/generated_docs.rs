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

/// Replaces (with SLUICE_UPDATE_DOCS=1) or checks the README's text between `<!-- {name}:start -->`
/// and `<!-- {name}:end -->`.
fn readme_section(name: &str, generated: &str) {
    let (start_marker, end_marker) = (format!("<!-- {name}:start -->\n"), format!("<!-- {name}:end -->"));
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md");
    let start = readme.find(&start_marker).unwrap_or_else(|| panic!("README has {start_marker}")) + start_marker.len();
    let end = readme.find(&end_marker).unwrap_or_else(|| panic!("README has {end_marker}"));
    if updating() {
        std::fs::write(&path, format!("{}{}{}", &readme[..start], generated, &readme[end..])).unwrap();
        return;
    }
    assert_eq!(
        &readme[start..end],
        generated,
        "the README's {name} section is stale: run SLUICE_UPDATE_DOCS=1 cargo test --test generated_docs"
    );
}

/// The README's table of commands comes from the argument definitions (issue 40, item 3).
#[test]
fn readme_command_table_equals_the_argument_definitions() {
    use clap::CommandFactory;
    let table = sluice::cli::synopsis::readme_table(&sluice::cli::command::Cli::command());
    assert!(table.contains("[`sluice freeze status`](docs/commands.md#sluice-freeze-status)"), "{table}");
    readme_section("commands", &table);
}

/// docs/commands.md, every command's synopsis and arguments, too: a flag added, renamed or
/// hidden changes it.
#[test]
fn docs_commands_md_equals_the_argument_definitions() {
    use clap::CommandFactory;
    let docs = sluice::cli::synopsis::commands_markdown(&sluice::cli::command::Cli::command());
    for flag in ["--write-baseline <FILE>", "--trust-head-config", "--min-duration <DURATION>", "--format table|json"] {
        assert!(docs.contains(flag), "{flag} missing from\n{docs}");
    }
    let path = root().join("docs/commands.md");
    if updating() {
        std::fs::write(&path, docs).unwrap();
        return;
    }
    let current = std::fs::read_to_string(&path).expect("docs/commands.md");
    assert_eq!(current, docs, "docs/commands.md is stale: run SLUICE_UPDATE_DOCS=1 cargo test --test generated_docs");
}
