//! `sluice freeze calendar` in a real browser: headless Chromium loads the HTML month grid and
//! the SVG timeline from disk, takes screenshots, and the DOM it built must say exactly what
//! `sluice freeze list` says: the frozen days are the days a deny occurrence touches.
//!
//! Needs Debian's `chromium` (`.ci/run` installs it). Without it the test fails, never passes.

mod support;

use assert_cmd::Command;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::freeze::calendar_project;

const CALENDAR: &str = r#"
timezone = "UTC"

[[event]]
id = "spring-bird-count-2026"
name = "Spring Bird Count"
timezone = "Europe/London"
start = "2026-05-17T00:00"
end = "2026-05-19T00:00"

[[window]]
id = "bird-count-freeze"
kind = "deny"
event = "spring-bird-count-2026"
lead = "P7D"
reason = "No production changes from seven days before the count <until> it ends & after."

[[window]]
id = "commuter-peak"
kind = "deny"
timezone = "America/New_York"
rrule = "FREQ=WEEKLY;BYDAY=MO,TH"
start_time = "22:00"
end_time = "01:00"
reason = "Night batch."

[[window]]
id = "deploy-slots"
kind = "allow"
timezone = "Europe/London"
rrule = "FREQ=WEEKLY;BYDAY=WE"
start_time = "10:00"
end_time = "16:00"
services = ["warehouse-*"]
reason = "Staffed hours."
"#;

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"].iter().find_map(|name| {
        std::env::var_os("PATH")?.to_str()?.split(':').map(|dir| Path::new(dir).join(name)).find(|p| p.is_file())
    })
}

/// The stdout of `sluice ARGS`, which must succeed.
fn sluice(dir: &Path, args: &[&str]) -> String {
    let (code, out, err) = support::freeze::sluice(dir, args);
    assert!(code == 0, "{args:?}: {err}");
    out
}

/// Runs headless Chromium on `url` with `mode` (`--dump-dom` or `--screenshot=…`).
fn browse(browser: &Path, profile: &Path, mode: &str, url: &str) -> String {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1200,1600",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(mode)
        .arg(url)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium {mode}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `(data-date, data-frozen)` of every day cell in the DOM Chromium built.
fn days_in_dom(dom: &str) -> Vec<(String, bool)> {
    dom.split("<td")
        .skip(1)
        .filter_map(|cell| {
            let tag = &cell[..cell.find('>')?];
            let attr = |name: &str| {
                let at = tag.find(&format!("{name}=\""))? + name.len() + 2;
                Some(tag[at..at + tag[at..].find('"')?].to_string())
            };
            Some((attr("data-date")?, attr("data-frozen")? == "true"))
        })
        .collect()
}

#[test]
fn the_month_grid_in_a_real_browser_shows_the_frozen_days_list_reports() {
    // Never skipped: a missing browser fails the test (`.ci/run` installs it).
    let browser = chromium().expect("Chromium is not installed: `apt-get install chromium` (as .ci/run does)");
    let dir = calendar_project(CALENDAR, None);
    let page = dir.path().join("freeze.html");
    let timeline = dir.path().join("freeze.svg");
    let common = ["freeze", "calendar", "--from", "2026-05-01", "--months", "2", "--tz", "UTC"];
    sluice(dir.path(), &[&common[..], &["-o", page.to_str().unwrap()]].concat());
    sluice(dir.path(), &[&common[..], &["--format", "svg", "-o", timeline.to_str().unwrap()]].concat());
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: no scripts, no external assets.
    for forbidden in ["<script", "src=", "href=", "http://", "https://", "@import", "url("] {
        assert!(!html.contains(forbidden), "the page must be self-contained, found {forbidden}");
    }
    assert!(html.contains("class=\"legend\""));
    // The reason is in the hover tooltip, escaped.
    assert!(html.contains("title=\"deny bird-count-freeze (Spring Bird Count) for any / any: 2026-05-10 00:00 BST → 2026-05-19 00:00 BST — No production"), "{html}");
    assert!(html.contains("&lt;until&gt; it ends &amp; after"));

    // What `freeze list` says is frozen, as UTC days.
    let list = sluice(
        dir.path(),
        &["freeze", "list", "--from", "2026-05-01T00:00:00Z", "--to", "2026-07-01T00:00:00Z", "--format", "json"],
    );
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    let mut expected = BTreeSet::new();
    let parse = |t: &serde_json::Value| chrono::DateTime::parse_from_rfc3339(t.as_str().unwrap()).unwrap();
    for o in list["occurrences"].as_array().unwrap().iter().filter(|o| o["kind"] == "deny") {
        let (start, end) = (parse(&o["start"]), parse(&o["end"]) - chrono::Duration::nanoseconds(1));
        let mut d = start.date_naive();
        while d <= end.date_naive() {
            if d >= chrono::NaiveDate::from_ymd_opt(2026, 5, 1).unwrap()
                && d < chrono::NaiveDate::from_ymd_opt(2026, 7, 1).unwrap()
            {
                expected.insert(d.to_string());
            }
            d += chrono::Duration::days(1);
        }
    }
    assert!(expected.len() > 10, "{expected:?}");

    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", page.display());
    let dom = browse(&browser, profile.path(), "--dump-dom", &url);
    let days = days_in_dom(&dom);
    assert_eq!(days.len(), 61, "every day of May and June has a cell");
    let frozen: BTreeSet<String> = days.iter().filter(|(_, f)| *f).map(|(d, _)| d.clone()).collect();
    assert_eq!(frozen, expected, "the frozen days in the browser's DOM are the ones `freeze list` reports");
    // 2026-05-06 is a Wednesday with only the allow window: tinted green, not frozen.
    assert!(dom.contains("class=\"day allow\" data-date=\"2026-05-06\" data-frozen=\"false\""), "{dom}");
    // Tuesday 2026-05-05: the night window (22:00–01:00 in New York) freezes 02:00–05:00 UTC, three
    // hours of 24. The day is not tinted as frozen; its hours are drawn and written.
    let cell = day_cell(&dom, "2026-05-05");
    assert!(cell.starts_with("<td class=\"day partly\" data-date=\"2026-05-05\" data-frozen=\"true\" data-frozen-hours=\"3\" data-frozen-intervals=\"02:00–05:00\""), "{cell}");
    assert!(cell.contains("<span class=\"seg\" style=\"left:8.33%;width:12.50%\"></span>"), "{cell}");
    assert!(cell.contains("<div class=\"hours\">frozen 02:00–05:00</div>"), "{cell}");
    assert!(
        cell.contains("commuter-peak 02:00–05:00</li>"),
        "the window's times are printed, not only hovered: {cell}"
    );
    // Inside the bird-count freeze: frozen all day, tinted.
    assert!(day_cell(&dom, "2026-05-12").starts_with(
        "<td class=\"day frozen\" data-date=\"2026-05-12\" data-frozen=\"true\" data-frozen-hours=\"24\""
    ));
    // Every day's frozen hours are those of the deny occurrences `freeze list` gives, merged.
    let mut deny: Vec<(i64, i64)> = list["occurrences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "deny")
        .map(|o| (parse(&o["start"]).timestamp(), parse(&o["end"]).timestamp()))
        .collect();
    deny.sort();
    for (date, _) in &days {
        let start = chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d")
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc()
            .timestamp();
        let (mut seconds, mut cursor) = (0, start);
        for &(a, b) in &deny {
            let (a, b) = (a.max(cursor), b.min(start + 86_400));
            if a < b {
                seconds += b - a;
                cursor = b;
            }
        }
        let hours = format!("data-frozen-hours=\"{}\"", (seconds as f64 / 36.0).round() / 100.0);
        assert!(day_cell(&dom, date).contains(&hours), "{date}: {hours} expected in {}", day_cell(&dom, date));
    }

    let shot = dir.path().join("grid.png");
    browse(&browser, profile.path(), &format!("--screenshot={}", shot.display()), &url);
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 20_000, "a real screenshot ({} bytes)", png.len());
    keep(&shot);

    let svg_url = format!("file://{}", timeline.display());
    let svg_dom = browse(&browser, profile.path(), "--dump-dom", &svg_url);
    let bars = svg_dom.matches("<rect class=\"deny\"").count() + svg_dom.matches("<rect class=\"allow\"").count();
    assert_eq!(bars, list["occurrences"].as_array().unwrap().len(), "one bar per occurrence");
    let shot = dir.path().join("timeline.png");
    browse(&browser, profile.path(), &format!("--screenshot={}", shot.display()), &svg_url);
    assert!(std::fs::read(&shot).unwrap().starts_with(b"\x89PNG"));
    keep(&shot);
    // Day ticks under the lanes, one per day.
    assert_eq!(svg_dom.matches("class=\"day-tick\"").count(), 61);
}

/// `SLUICE_SCREENSHOT_DIR=DIR` keeps the screenshots there, to look at them.
fn keep(shot: &Path) {
    if let Some(dir) = std::env::var_os("SLUICE_SCREENSHOT_DIR") {
        std::fs::copy(shot, Path::new(&dir).join(shot.file_name().unwrap())).unwrap();
    }
}

/// The `<td …>` of one day, up to its end.
fn day_cell<'a>(dom: &'a str, date: &str) -> &'a str {
    let at = dom.find(&format!("data-date=\"{date}\"")).unwrap();
    let start = dom[..at].rfind("<td").unwrap();
    &dom[start..start + dom[start..].find("</td>").unwrap()]
}
