//! Every relative link in README.md and docs/*.md leads somewhere: the file exists, and a
//! `#fragment` names a heading of the page it points at (as GitHub derives heading anchors).
//! Links are read as Markdown writes them, `[text](target)`, outside fenced blocks and code spans.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The pages checked: the README and everything in docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The lines of `text` outside fenced code blocks, with their line numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((number + 1, line));
        }
    }
    out
}

/// The targets of the inline links on a line: `[text](target)`, code spans skipped.
fn link_targets(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut targets = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '`' => {
                // A code span runs to the next run of as many backticks.
                let ticks = chars[i..].iter().take_while(|&&c| c == '`').count();
                let mut j = i + ticks;
                while j < chars.len() {
                    let run = chars[j..].iter().take_while(|&&c| c == '`').count();
                    if run == ticks {
                        break;
                    }
                    j += run.max(1);
                }
                i = j + ticks;
            }
            ']' if chars.get(i + 1) == Some(&'(') => {
                let start = i + 2;
                let mut depth = 1;
                let mut j = start;
                while j < chars.len() && depth > 0 {
                    match chars[j] {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    j += 1;
                }
                let target: String = chars[start..j.saturating_sub(1)].iter().collect();
                // `[text](target "title")`: the target is the first word.
                targets.push(target.split_whitespace().next().unwrap_or("").to_string());
                i = j;
            }
            _ => i += 1,
        }
    }
    targets
}

/// GitHub's anchor for a heading: lower case, punctuation dropped (but `-` and `_`), spaces as
/// `-`; a repeated heading gets `-1`, `-2`, ….
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line) in prose(text) {
        let Some(heading) = line.strip_prefix('#').map(|h| h.trim_start_matches('#')) else { continue };
        if !heading.starts_with(' ') {
            continue;
        }
        let slug: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut n = 0;
        while seen.contains(&unique) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
        seen.insert(unique);
    }
    seen
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let shown = page.strip_prefix(root()).unwrap().display().to_string();
        for (number, line) in prose(&text) {
            for target in link_targets(line) {
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, fragment) = match target.split_once('#') {
                    Some((path, fragment)) => (path, Some(fragment)),
                    None => (target.as_str(), None),
                };
                let file = if path.is_empty() { page.clone() } else { page.parent().unwrap().join(path) };
                if !file.exists() {
                    broken.push(format!("{shown}:{number}: {target}: no such file"));
                    continue;
                }
                if let Some(fragment) = fragment.filter(|_| file.extension().is_some_and(|e| e == "md")) {
                    let linked = std::fs::read_to_string(&file).unwrap();
                    if !anchors(&linked).contains(fragment) {
                        broken.push(format!("{shown}:{number}: {target}: no heading with that anchor"));
                    }
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} links found: the scanner no longer reads them");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_scanner_reads_markdown_as_written() {
    assert_eq!(link_targets("see [a](docs/a.md#x) and [b](../b.md \"title\")"), ["docs/a.md#x", "../b.md"]);
    assert!(link_targets("code `[a](not-a-link)` here").is_empty());
    assert_eq!(link_targets("[`sluice lint`](docs/commands.md#sluice-lint)"), ["docs/commands.md#sluice-lint"]);
    let headings = anchors(
        "# Sluice\n## `sluice check`: the pull-request gate\n```\n# not a heading\n```\n## Try it\n## Try it\n",
    );
    let expected: BTreeSet<String> =
        ["sluice", "sluice-check-the-pull-request-gate", "try-it", "try-it-1"].iter().map(|s| s.to_string()).collect();
    assert_eq!(headings, expected);
}
