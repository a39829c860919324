//! The CI renderers over one realistic report: SARIF validated against the official schema,
//! github and markdown output snapshotted, the markdown size cap exercised with a huge report.

use sluice::finding::{Finding, Report, Severity};
use sluice::report::{self, FailOn, Format, RenderOptions};
use std::path::PathBuf;

fn sample_report() -> Report {
    let mut report = Report {
        findings: vec![
            Finding::new(
                "require-concurrent-index",
                Severity::Error,
                "migrations/0042_sightings_site_idx.sql",
                "CREATE INDEX on `sightings` without CONCURRENTLY blocks writes to the table while the index builds",
            )
            .at(3, 1, 4, 28)
            .snippet(3, "CREATE INDEX sightings_site_idx\n    ON sightings (site_id, observed_at);")
            .help("Use CREATE INDEX CONCURRENTLY in a migration that does not run in a transaction")
            .fact("table", "sightings")
            .fact("transaction", "per file"),
            Finding::new(
                "migration-edited",
                Severity::Error,
                "migrations/0007_species.sql",
                "migration 0007 exists on the base revision (main) and was modified: the edit will never run in production",
            )
            .help("Revert the edit and put the change in a new migration"),
            Finding::new(
                "function-on-indexed-column",
                Severity::Warning,
                "queries/report: daily, by site.sql",
                "convert_timezone(...) on indexed column `observed_at` defeats index sightings_observed_idx",
            )
            .at(12, 7, 12, 58)
            .snippet(
                10,
                "SELECT site_id, count(*)\nFROM sightings\nWHERE convert_timezone('UTC', 'America/Chicago', observed_at) >= $1\nGROUP BY site_id;",
            )
            .help("Compare the raw column with a converted parameter: observed_at >= $1 AT TIME ZONE 'America/Chicago'"),
            Finding::new("migration-renamed", Severity::Warning, "migrations/0009_sites.sql", "renamed from migrations/0009_site.sql (100% similar)\r\nsecond line"),
            Finding::new("unparsed-statement", Severity::Info, "queries/odd.sql", "statement not understood: `PRAGMA x`")
                .at(1, 1, 1, 10)
                .snippet(1, "PRAGMA x; -- ```"),
        ],
        notes: vec!["5 migrations, 3 query files checked".into()],
    };
    report.sort();
    report
}

fn options(fail_on: FailOn) -> RenderOptions {
    RenderOptions { color: false, explain: false, fail_on }
}

fn sarif_schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/sarif-schema-2.1.0.json")
}

fn escape_stray_bracket(value: &mut serde_json::Value) -> usize {
    const STRAY: &str = "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$";
    match value {
        serde_json::Value::Object(map) => {
            let mut fixed = 0;
            for (key, child) in map.iter_mut() {
                if key == "pattern" && child == STRAY {
                    *child = serde_json::json!("^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$");
                    fixed += 1;
                } else {
                    fixed += escape_stray_bracket(child);
                }
            }
            fixed
        }
        serde_json::Value::Array(items) => items.iter_mut().map(escape_stray_bracket).sum(),
        _ => 0,
    }
}

#[test]
fn sarif_validates_against_the_official_schema() {
    let path = sarif_schema_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read the SARIF 2.1.0 schema at {} ({e}): it is part of the repository (tests/data/README.md)",
            path.display()
        )
    });
    let mut schema: serde_json::Value = serde_json::from_str(&text).expect("SARIF schema is JSON");
    // The official schema's `language` patterns end in a stray `]`: a literal only under
    // ECMA-262's legacy Annex B, a syntax error for jsonschema's `regex` format check of the
    // schema itself. Escape it; the patterns mean the same and Sluice never emits `language`.
    let fixed = escape_stray_bracket(&mut schema);
    assert!(fixed <= 2, "unexpected schema shape: {fixed} patterns rewritten");
    // This copy keeps the log's own schema under `definitions.Root` with nothing at the top
    // level, so validating against the document root alone would accept anything. Point it there.
    if schema.get("properties").is_none() && schema["definitions"].get("Root").is_some() {
        schema["allOf"] = serde_json::json!([{ "$ref": "#/definitions/Root" }]);
    }
    // The draft-07 meta-schema is bundled with the crate; `offline` makes sure nothing is fetched.
    let validator = jsonschema::draft7::options().offline().build(&schema).expect("SARIF schema compiles offline");

    for report in [sample_report(), Report::default()] {
        let rendered = report::render(&report, Format::Sarif, &options(FailOn::Error));
        let sarif: serde_json::Value = serde_json::from_str(&rendered).expect("SARIF output is JSON");
        let errors: Vec<String> =
            validator.iter_errors(&sarif).map(|e| format!("{} at {}", e, e.instance_path())).collect();
        assert!(errors.is_empty(), "SARIF output does not validate:\n{}", errors.join("\n"));
    }

    // The validator is not vacuous: it reaches into results, rules and the root.
    let good: serde_json::Value =
        serde_json::from_str(&report::render(&sample_report(), Format::Sarif, &options(FailOn::Error))).unwrap();
    let mut broken = good.clone();
    broken["runs"][0]["results"][0].as_object_mut().unwrap().remove("message");
    assert!(!validator.is_valid(&broken), "a result without a message must be rejected");
    let mut broken = good.clone();
    broken["runs"][0]["tool"]["driver"]["rules"][0]["defaultConfiguration"]["level"] = serde_json::json!("fatal");
    assert!(!validator.is_valid(&broken), "an unknown rule level must be rejected");
    let mut broken = good.clone();
    broken["version"] = serde_json::json!("2.0.0");
    assert!(!validator.is_valid(&broken), "a wrong version must be rejected");
}

#[test]
fn sarif_carries_rule_metadata_and_locations() {
    let sarif: serde_json::Value =
        serde_json::from_str(&report::render(&sample_report(), Format::Sarif, &options(FailOn::Error))).unwrap();
    let run = &sarif["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let edited = rules.iter().find(|r| r["id"] == "migration-edited").expect("registry rules are listed");
    assert_eq!(edited["defaultConfiguration"]["level"], "error");
    assert!(edited["shortDescription"]["text"].as_str().unwrap().contains("modified"));
    assert!(edited["fullDescription"]["text"].as_str().unwrap().contains("production"));
    assert!(edited["help"]["markdown"].as_str().unwrap().contains("## How to fix"));
    let renamed = rules.iter().find(|r| r["id"] == "migration-renamed").unwrap();
    assert_eq!(renamed["defaultConfiguration"]["level"], "warning");

    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    for result in results {
        let index = result["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[index]["id"], result["ruleId"]);
    }
    let query = results.iter().find(|r| r["ruleId"] == "function-on-indexed-column").unwrap();
    assert_eq!(query["level"], "warning");
    let location = &query["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "queries/report%3A%20daily%2C%20by%20site.sql");
    assert_eq!(location["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    assert_eq!(location["region"]["startLine"], 12);
    assert_eq!(location["region"]["startColumn"], 7);
    assert_eq!(location["region"]["endColumn"], 58);
    let info = results.iter().find(|r| r["ruleId"] == "unparsed-statement").unwrap();
    assert_eq!(info["level"], "note");
}

#[test]
fn sarif_fingerprints_survive_an_unrelated_line_shift() {
    let render = |report: &Report| -> serde_json::Value {
        serde_json::from_str(&report::render(report, Format::Sarif, &options(FailOn::Error))).unwrap()
    };
    let before = render(&sample_report());
    let mut shifted = sample_report();
    for finding in &mut shifted.findings {
        finding.line += 17;
        finding.end_line += 17;
        if let Some(snippet) = &mut finding.snippet {
            snippet.first_line += 17;
        }
    }
    let after = render(&shifted);
    let prints = |doc: &serde_json::Value| -> Vec<serde_json::Value> {
        doc["runs"][0]["results"].as_array().unwrap().iter().map(|r| r["partialFingerprints"].clone()).collect()
    };
    assert_eq!(prints(&before), prints(&after));
    let distinct: std::collections::BTreeSet<String> = prints(&before).iter().map(|p| p.to_string()).collect();
    assert_eq!(distinct.len(), 5, "every finding has its own fingerprint");
}

#[test]
fn gitlab_fingerprints_match_sarif_and_survive_line_shifts() {
    let gitlab: serde_json::Value =
        serde_json::from_str(&report::render(&sample_report(), Format::Gitlab, &options(FailOn::Error))).unwrap();
    let sarif: serde_json::Value =
        serde_json::from_str(&report::render(&sample_report(), Format::Sarif, &options(FailOn::Error))).unwrap();
    let issues = gitlab.as_array().unwrap();
    assert_eq!(issues.len(), 5);
    for (issue, result) in issues.iter().zip(sarif["runs"][0]["results"].as_array().unwrap()) {
        assert_eq!(issue["fingerprint"], result["partialFingerprints"]["sluice/v1"]);
        assert_eq!(issue["check_name"], result["ruleId"]);
    }
}

#[test]
fn github_annotations_snapshot() {
    insta::assert_snapshot!(report::render(&sample_report(), Format::Github, &options(FailOn::Error)));
}

#[test]
fn markdown_report_snapshot() {
    insta::assert_snapshot!(report::render(&sample_report(), Format::Markdown, &options(FailOn::Error)));
}

#[test]
fn markdown_verdicts() {
    let pass = report::render(&sample_report(), Format::Markdown, &options(FailOn::Never));
    assert!(pass.starts_with("## ✅ Sluice: the gate passes"), "{pass}");
    let clean = report::render(&Report::default(), Format::Markdown, &options(FailOn::Error));
    assert_eq!(clean, "## ✅ Sluice: no findings\n");
    let warnings_only = Report {
        findings: vec![Finding::new("migration-renamed", Severity::Warning, "m/1.sql", "renamed")],
        notes: vec![],
    };
    assert!(report::render(&warnings_only, Format::Markdown, &options(FailOn::Error)).starts_with("## ✅"));
    assert!(report::render(&warnings_only, Format::Markdown, &options(FailOn::Warning)).starts_with("## ❌"));
}

#[test]
fn markdown_long_excerpts_fold_into_details() {
    let statement = (1..=30).map(|i| format!("    column_{i} integer,")).collect::<Vec<_>>().join("\n");
    let report = Report {
        findings: vec![Finding::new("wide-table", Severity::Warning, "migrations/1.sql", "wide")
            .snippet(5, format!("CREATE TABLE t (\n{statement}\n    last integer\n);"))],
        notes: vec![],
    };
    let text = report::render(&report, Format::Markdown, &options(FailOn::Error));
    assert!(text.contains("<details><summary>SQL excerpt (line 5, 33 lines)</summary>"), "{text}");
    assert!(text.contains("column_30 integer"));
}

#[test]
fn markdown_huge_report_stays_under_the_limit_and_says_what_was_cut() {
    let statement =
        "UPDATE sightings SET species = 'unknown' WHERE species IS NULL AND site_id IN (SELECT id FROM sites);";
    let mut report = Report::default();
    for file in 0..200 {
        for line in 0..20 {
            report.findings.push(
                Finding::new(
                    "update-without-batching",
                    if line % 4 == 0 { Severity::Error } else { Severity::Warning },
                    format!("migrations/{file:04}_backfill.sql"),
                    format!("full-table UPDATE number {line}"),
                )
                .at(line * 3 + 1, 1, line * 3 + 1, 40)
                .snippet(line * 3 + 1, statement)
                .help("Backfill in batches of a few thousand rows, each in its own transaction"),
            );
        }
    }
    report.notes.push("200 migrations checked".into());
    let text = report::render(&report, Format::Markdown, &options(FailOn::Error));
    assert!(text.len() < 65_000, "{} bytes", text.len());
    assert!(text.chars().count() < 65_000);
    assert!(text.contains("Report cut to stay under 65000 characters"), "no truncation note");
    let shown = text.matches("full-table UPDATE number").count();
    assert!(shown > 50, "only {shown} findings shown: the cap cut far too early");
    let cut = 4000 - shown;
    assert!(text.contains(&format!("{cut} of 4000 findings not shown")), "{}", &text[text.len() - 600..]);
    // Every code fence that was opened is closed: nothing was cut mid-block.
    assert_eq!(text.matches("```").count() % 2, 0);
}

/// Issue 37: a finding without an excerpt (a line of `sluice.toml`) was shown at column 0.
#[test]
fn table_positions_are_one_based_without_an_excerpt_too() {
    let report = Report {
        findings: vec![
            Finding::new("gate-config-changed", Severity::Warning, "sluice.toml", "changed").at(14, 1, 14, 1)
        ],
        notes: Vec::new(),
    };
    let rendered = report::render(&report, Format::Table, &options(FailOn::Error));
    assert!(rendered.contains("sluice.toml:14:1"), "{rendered}");
    assert!(!rendered.contains(":14:0"), "{rendered}");
}

/// Issue 37: a baselined history of thousands of info findings hid the one new error.
#[test]
fn markdown_shows_errors_then_warnings_and_cuts_the_least_severe() {
    let statement = "CREATE INDEX users_email ON users (email);";
    let mut report = Report::default();
    for file in 0..400 {
        for line in 0..10 {
            report.findings.push(
                Finding::new(
                    "create-index-non-concurrently",
                    Severity::Info,
                    format!("migrations/{file:04}_old.sql"),
                    "recorded",
                )
                .at(line + 1, 1, line + 1, 10)
                .snippet(line + 1, statement),
            );
        }
    }
    report.findings.push(
        Finding::new("drop-column", Severity::Warning, "migrations/9998_new.sql", "the new warning").at(1, 1, 1, 5),
    );
    report
        .findings
        .push(Finding::new("drop-table", Severity::Error, "migrations/9999_new.sql", "the new error").at(1, 1, 1, 5));
    report.sort();
    let text = report::render(&report, Format::Markdown, &options(FailOn::Error));
    assert!(text.len() < 65_000);
    let (error, warning, info) = (text.find("the new error"), text.find("the new warning"), text.find("recorded"));
    assert!(error.is_some() && warning.is_some(), "cut: {}", &text[text.len() - 600..]);
    assert!(error < warning && warning < info, "errors first, then warnings, then the rest");
    assert!(text.contains("### 🔴 Errors") && text.contains("### 🔵 Info"));
    assert!(text.contains("0 errors, 0 warnings,") && text.contains("info) in"), "{}", &text[text.len() - 600..]);
}
