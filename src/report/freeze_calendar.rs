//! `sluice freeze calendar`: the freeze windows as a picture.
//!
//! - HTML: a month grid, one self-contained page (inline CSS, no scripts, no external assets),
//!   where each day lists the windows that touch it, coloured by kind, with the reason and times
//!   in the native hover tooltip (`title`), and a legend. Each day cell carries `data-date` and
//!   `data-frozen` so that tests (and scripts) can read the answer from the DOM.
//! - SVG: the same occurrences as a timeline, one lane per window, for a wiki or a PR summary.
//!
//! Days are days in the zone given (`--tz`, else the calendar's default zone): a day is frozen
//! when a deny occurrence overlaps it, and marked `allow` when only allow occurrences do.

use crate::freeze::answer::ListAnswer;
use crate::freeze::calendar::Kind;
use crate::freeze::time::utc_string;
use crate::freeze::zone::Zone;
use chrono::{DateTime, Datelike, Duration, Months, NaiveDate, Utc, Weekday};
use std::fmt::Write;

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body{font:14px/1.35 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1d232a;background:#fff}
h1{font-size:20px;margin:0 0 4px}p.meta{color:#57606a;margin:0 0 12px}
ul.legend{list-style:none;padding:0;margin:0 0 16px;display:flex;gap:18px;flex-wrap:wrap}
ul.legend li{display:flex;align-items:center;gap:6px}
.swatch{display:inline-block;width:14px;height:14px;border-radius:3px;border:1px solid #0002}
.swatch.deny,li.w.deny{background:#d73a49;color:#fff}.swatch.allow,li.w.allow{background:#2da44e;color:#fff}
section.month{margin:0 0 22px;break-inside:avoid}h2{font-size:16px;margin:0 0 6px}
table.grid{border-collapse:collapse;table-layout:fixed;width:100%;max-width:1100px}
table.grid th{font-weight:600;color:#57606a;padding:4px;text-align:left;border-bottom:1px solid #d0d7de}
td.day{vertical-align:top;height:84px;border:1px solid #d0d7de;padding:3px 4px;overflow:hidden}
td.day.frozen{background:#ffebe9}td.day.allow{background:#dafbe1}td.pad{border:none;background:none}
td.day .num{font-weight:600;font-size:12px;color:#57606a}
td.day ul{list-style:none;margin:2px 0 0;padding:0}
li.w{font-size:11px;border-radius:3px;padding:1px 4px;margin:1px 0;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;cursor:help}
";

/// The months to draw: `months` calendar months from the one holding `from` (in `tz`).
pub fn month_range(from: DateTime<Utc>, months: u32, tz: Zone) -> (DateTime<Utc>, DateTime<Utc>) {
    let first = tz.local(from).date().with_day(1).unwrap_or(tz.local(from).date());
    let end = first.checked_add_months(Months::new(months.max(1))).unwrap_or(first);
    (
        tz.instant(first.and_hms_opt(0, 0, 0).unwrap_or_default()),
        tz.instant(end.and_hms_opt(0, 0, 0).unwrap_or_default()),
    )
}

/// One day: whether a deny (or only an allow) window touches it, and each window's label and
/// tooltip.
struct Day {
    frozen: bool,
    allow: bool,
    items: Vec<(Kind, String, String)>,
}

/// The windows touching each day in `[from, to)`.
fn days(answer: &ListAnswer, tz: Zone) -> Vec<(NaiveDate, Day)> {
    let (first, last) = (tz.local(answer.from).date(), tz.local(answer.to - Duration::nanoseconds(1)).date());
    let mut out = Vec::new();
    let mut d = first;
    while d <= last {
        let (start, end) = (
            tz.instant(d.and_hms_opt(0, 0, 0).unwrap_or_default()),
            tz.instant((d + Duration::days(1)).and_hms_opt(0, 0, 0).unwrap_or_default()),
        );
        let mut day = Day { frozen: false, allow: false, items: Vec::new() };
        for r in answer.rows() {
            let o = r.occurrence;
            if o.start < end && o.end > start {
                match r.window.kind {
                    Kind::Deny => day.frozen = true,
                    Kind::Allow => day.allow = true,
                }
                let event = r.event.map(|e| format!(" ({})", e.name)).unwrap_or_default();
                let label = format!("{}{event}", r.window.id);
                let reason =
                    if r.window.reason.is_empty() { String::new() } else { format!(" — {}", r.window.reason) };
                let title = format!(
                    "{} {}{event}: {}{reason}",
                    r.window.kind.as_str(),
                    r.window.id,
                    super::freeze::span_text(o.start, o.end, r.tz),
                );
                if !day.items.iter().any(|(_, l, _)| *l == label) {
                    day.items.push((r.window.kind, label, title));
                }
            }
        }
        out.push((d, day));
        d += Duration::days(1);
    }
    out
}

/// The month-grid page.
pub fn html(answer: &ListAnswer, tz: Zone, title: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n<p class=\"meta\">{} to {}, days in {} · generated by sluice {} from {} (sha256 {})</p>",
        escape(title),
        escape(title),
        utc_string(answer.from),
        utc_string(answer.to),
        escape(tz.name()),
        env!("CARGO_PKG_VERSION"),
        escape(&answer.calendar.path.display().to_string()),
        &answer.calendar.digest[..12.min(answer.calendar.digest.len())],
    );
    out.push_str("<ul class=\"legend\"><li><span class=\"swatch deny\"></span>deny: frozen (day tinted red)</li><li><span class=\"swatch allow\"></span>allow: deploys only inside (day tinted green)</li><li>hover a window for its times and reason</li></ul>\n");
    let all = days(answer, tz);
    let mut month_start = 0;
    while month_start < all.len() {
        let (first, _) = &all[month_start];
        let month_end = all[month_start..]
            .iter()
            .position(|(d, _)| d.month() != first.month())
            .map_or(all.len(), |n| month_start + n);
        let _ = write!(
            out,
            "<section class=\"month\" data-month=\"{}\">\n<h2>{}</h2>\n<table class=\"grid\"><thead><tr>",
            first.format("%Y-%m"),
            first.format("%B %Y")
        );
        for name in ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"] {
            let _ = write!(out, "<th>{name}</th>");
        }
        out.push_str("</tr></thead>\n<tbody><tr>");
        let lead = first.weekday().num_days_from_monday();
        for _ in 0..lead {
            out.push_str("<td class=\"pad\"></td>");
        }
        for (d, day) in &all[month_start..month_end] {
            if d.weekday() == Weekday::Mon && d.day() != 1 {
                out.push_str("</tr>\n<tr>");
            }
            let class = if day.frozen {
                "day frozen"
            } else if day.allow {
                "day allow"
            } else {
                "day"
            };
            let _ = write!(
                out,
                "<td class=\"{class}\" data-date=\"{d}\" data-frozen=\"{}\"><span class=\"num\">{}</span>",
                day.frozen,
                d.day()
            );
            if !day.items.is_empty() {
                out.push_str("<ul>");
                for (kind, label, title) in &day.items {
                    let _ = write!(
                        out,
                        "<li class=\"w {}\" title=\"{}\">{}</li>",
                        kind.as_str(),
                        escape(title),
                        escape(label)
                    );
                }
                out.push_str("</ul>");
            }
            out.push_str("</td>");
        }
        let trail = (7 - (lead as usize + month_end - month_start) % 7) % 7;
        for _ in 0..trail {
            out.push_str("<td class=\"pad\"></td>");
        }
        out.push_str("</tr></tbody></table>\n</section>\n");
        month_start = month_end;
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// The timeline: one lane per window, a bar per occurrence, month ticks.
pub fn svg(answer: &ListAnswer, tz: Zone, title: &str) -> String {
    let (left, lane, top, width) = (200.0, 26.0, 64.0, 1000.0);
    let mut lanes: Vec<usize> = answer.occurrences.iter().map(|o| o.window).collect();
    lanes.sort_unstable();
    lanes.dedup();
    let height = top + lane * lanes.len().max(1) as f64 + 40.0;
    let span = (answer.to - answer.from).num_seconds().max(1) as f64;
    let x =
        |t: DateTime<Utc>| left + (t.clamp(answer.from, answer.to) - answer.from).num_seconds() as f64 / span * width;
    let mut out = String::new();
    let _ = writeln!(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{height}\" viewBox=\"0 0 {w} {height}\" font-family=\"system-ui, sans-serif\" font-size=\"12\">\n<title>{t}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n<text x=\"10\" y=\"22\" font-size=\"16\" font-weight=\"600\">{t}</text>",
        w = left + width + 20.0,
        t = escape(title)
    );
    let _ = writeln!(out, "<g class=\"legend\"><rect x=\"{left}\" y=\"34\" width=\"12\" height=\"12\" fill=\"#d73a49\"/><text x=\"{}\" y=\"45\">deny (frozen)</text><rect x=\"{}\" y=\"34\" width=\"12\" height=\"12\" fill=\"#2da44e\"/><text x=\"{}\" y=\"45\">allow (deploys only inside)</text><text x=\"{}\" y=\"45\" fill=\"#57606a\">times in {}; hover a bar for its reason</text></g>", left + 16.0, left + 130.0, left + 146.0, left + 360.0, escape(tz.name()));
    // Month ticks.
    let mut m = tz.local(answer.from).date().with_day(1).unwrap_or(tz.local(answer.from).date());
    loop {
        let at = tz.instant(m.and_hms_opt(0, 0, 0).unwrap_or_default());
        if at >= answer.to {
            break;
        }
        if at >= answer.from {
            let _ = writeln!(out, "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#d0d7de\"/><text x=\"{3:.1}\" y=\"{2}\" fill=\"#57606a\">{4}</text>", x(at), top - 6.0, height - 20.0, x(at) + 3.0, m.format("%b %Y"));
        }
        match m.checked_add_months(Months::new(1)) {
            Some(next) => m = next,
            None => break,
        }
    }
    for (i, &w) in lanes.iter().enumerate() {
        let window = &answer.calendar.windows[w];
        let y = top + lane * i as f64;
        let _ = writeln!(out, "<text x=\"10\" y=\"{:.1}\">{}</text>", y + 16.0, escape(&window.id));
        let fill = match window.kind {
            Kind::Deny => "#d73a49",
            Kind::Allow => "#2da44e",
        };
        for r in answer.rows().filter(|r| r.occurrence.window == w) {
            let o = r.occurrence;
            let (x0, x1) = (x(o.start), x(o.end));
            let event = r.event.map(|e| format!(" ({})", e.name)).unwrap_or_default();
            let reason = if window.reason.is_empty() { String::new() } else { format!(" — {}", window.reason) };
            let _ = writeln!(out, "<rect class=\"{}\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"18\" rx=\"2\" fill=\"{fill}\" data-start=\"{}\" data-end=\"{}\"><title>{}{event}: {}{}</title></rect>",
                window.kind.as_str(),
                y + 3.0,
                (x1 - x0).max(1.5),
                utc_string(o.start),
                utc_string(o.end),
                escape(&window.id),
                escape(&super::freeze::span_text(o.start, o.end, r.tz)),
                escape(&reason)
            );
        }
    }
    out.push_str("</svg>\n");
    out
}
