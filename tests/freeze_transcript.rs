//! The `sluice freeze` transcripts the README and docs/freeze.md show are what the binary prints:
//! each `$ sluice freeze …` line in a fenced block is run in the repository (on its worked example,
//! `policies/freeze.toml`), at 100 columns, and the lines under it must be its output, line for
//! line, up to a `…` (the rest elided) or the next command.

use assert_cmd::Command;
use std::path::Path;

/// `(file, command, expected lines, whether the rest is elided)` for every transcript.
fn transcripts(file: &str) -> Vec<(String, Vec<String>, bool)> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
    let mut out: Vec<(String, Vec<String>, bool)> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ").filter(|c| c.starts_with("sluice freeze ")) {
            out.push((command.to_string(), Vec::new(), false));
        } else if let Some((_, expected, elided)) = out.last_mut().filter(|(_, _, elided)| !elided) {
            match line {
                "…" => *elided = true,
                l if l.starts_with("$ ") => {}
                l => expected.push(l.to_string()),
            }
        }
    }
    out
}

#[test]
fn the_freeze_transcripts_in_the_docs_are_what_the_binary_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cache = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for file in ["README.md", "docs/freeze.md"] {
        for (command, expected, elided) in transcripts(file) {
            let words: Vec<&str> = command.split_whitespace().skip(1).collect();
            let out = Command::cargo_bin("sluice")
                .unwrap()
                .current_dir(root)
                .args(&words)
                .env("COLUMNS", "100")
                .env("SLUICE_CACHE_DIR", cache.path())
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let got: Vec<&str> = stdout.lines().collect();
            let shown = if elided { got.len().min(expected.len()) } else { got.len() };
            assert_eq!(got[..shown], expected, "{file}: `{command}` prints\n{stdout}");
            checked += 1;
        }
    }
    assert!(checked >= 2, "the transcripts were not found");
}
