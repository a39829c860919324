//! `sluice freeze calendar`: the freeze windows as a picture.
//!
//! - HTML: a month grid, one self-contained page (inline CSS, no scripts, no external assets).
//!   Each day shows its frozen hours, as a bar over the day's 24 hours and written out
//!   (`frozen 07:00–10:00`), and lists the windows that touch it with their times printed (a
//!   screenshot or a wiki page has no hover; the reason is also in the tooltip), coloured by
//!   kind; a day is tinted red only when it is frozen all day. Each day cell carries
//!   `data-date`, `data-frozen` (any frozen time), `data-frozen-hours` and `data-frozen-intervals`,
//!   so that tests (and scripts) can read the answer from the DOM.
//! - SVG: the same occurrences as a timeline, one lane per window, with month and day ticks,
//!   for a wiki or a PR summary.
//!
//! Days and hours are those of the zone given (`--tz`, else the calendar's default zone). The
//! frozen hours are [`crate::freeze::answer::frozen_hours`]: for one deploy (`--service` and
//! `--env`) exactly what `freeze status` decides; otherwise the deny windows of every scope, with
//! allow windows drawn as the slots they are. The page says which.

use crate::freeze::answer::ListAnswer;
use crate::freeze::calendar::Kind;
use crate::freeze::decide::Query;
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
td.day{vertical-align:top;min-height:84px;height:84px;border:1px solid #d0d7de;padding:3px 4px;overflow:hidden}
td.day.frozen{background:#ffebe9}td.day.allow{background:#dafbe1}td.day.partly{background:#fff8f7}td.pad{border:none;background:none}
.bar{position:relative;height:8px;margin:3px 0 2px;background:#dafbe1;border:1px solid #d0d7de;border-radius:2px;overflow:hidden}
.bar .seg{position:absolute;top:0;bottom:0;background:#d73a49}
.hours{font-size:11px;font-weight:600;color:#a40e26}.hours.open{color:#1a7f37;font-weight:400}
td.day .num{font-weight:600;font-size:12px;color:#57606a}
td.day ul{list-style:none;margin:2px 0 0;padding:0}
li.w{font-size:11px;line-height:1.25;border-radius:3px;padding:1px 4px;margin:1px 0;overflow-wrap:anywhere;cursor:help}
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

/// One day: its frozen stretches (clipped to the day), whether an allow window touches it, and
/// each window's label, printed times and tooltip.
struct Day {
    frozen: Vec<(DateTime<Utc>, DateTime<Utc>)>,
    /// The day's length (23 or 25 hours across a DST change).
    length: Duration,
    start: DateTime<Utc>,
    allow: bool,
    items: Vec<(Kind, String, String)>,
}

impl Day {
    fn frozen_seconds(&self) -> i64 {
        self.frozen.iter().map(|(a, b)| (*b - *a).num_seconds()).sum()
    }

    fn all_day(&self) -> bool {
        self.frozen_seconds() >= self.length.num_seconds()
    }
}

/// `07:00–10:00` in `tz`, `24:00` for the end of the day.
fn hours(start: DateTime<Utc>, end: DateTime<Utc>, day_end: DateTime<Utc>, tz: Zone) -> String {
    let end_text = if end >= day_end { "24:00".to_string() } else { tz.local(end).format("%H:%M").to_string() };
    format!("{}–{end_text}", tz.local(start).format("%H:%M"))
}

/// The windows touching each day in `[from, to)`, and its frozen hours out of `frozen`.
fn days(answer: &ListAnswer, frozen: &[(DateTime<Utc>, DateTime<Utc>)], tz: Zone) -> Vec<(NaiveDate, Day)> {
    let (first, last) = (tz.local(answer.from).date(), tz.local(answer.to - Duration::nanoseconds(1)).date());
    let mut out = Vec::new();
    let mut d = first;
    while d <= last {
        let (start, end) = (
            tz.instant(d.and_hms_opt(0, 0, 0).unwrap_or_default()),
            tz.instant((d + Duration::days(1)).and_hms_opt(0, 0, 0).unwrap_or_default()),
        );
        let clipped =
            frozen.iter().filter(|(a, b)| *a < end && *b > start).map(|(a, b)| (*a.max(&start), *b.min(&end)));
        let mut day = Day { frozen: clipped.collect(), length: end - start, start, allow: false, items: Vec::new() };
        for r in answer.rows() {
            let o = r.occurrence;
            if o.start < end && o.end > start {
                day.allow |= r.window.kind == Kind::Allow;
                let event = r.event.map(|e| format!(" ({})", e.name)).unwrap_or_default();
                let when = hours(o.start.max(start), o.end.min(end), end, tz);
                let label = format!("{} {when}{event}", r.window.id);
                let reason =
                    if r.window.reason.is_empty() { String::new() } else { format!(" — {}", r.window.reason) };
                let title = format!(
                    "{} {}{event} for {}: {}{reason}",
                    r.window.kind.as_str(),
                    r.window.id,
                    super::freeze::scope_text(r.window),
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

/// What the picture shows, for the page's and the timeline's subtitle.
fn showing(query: Query) -> &'static str {
    if query.env.is_some() && query.service.is_some() {
        "Frozen hours for this deploy, as `freeze status` decides them (allow windows included, overrides not)"
    } else {
        "Frozen hours of the deny windows of every scope the question leaves open; allow windows (green) are deploy \
         slots for the services they name — pass --service and --env for one deploy's exact hours"
    }
}

/// The month-grid page; `frozen` are the frozen stretches ([`crate::freeze::answer::frozen_hours`]).
pub fn html(
    answer: &ListAnswer,
    query: Query,
    frozen: &[(DateTime<Utc>, DateTime<Utc>)],
    tz: Zone,
    title: &str,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n<p class=\"meta\">{}</p>\n<p class=\"meta\">{} to {}, days and hours in {} · generated by sluice {} from {} (sha256 {})</p>",
        escape(title),
        escape(title),
        escape(showing(query)),
        utc_string(answer.from),
        utc_string(answer.to),
        escape(tz.name()),
        env!("CARGO_PKG_VERSION"),
        escape(&answer.calendar.path.display().to_string()),
        &answer.calendar.digest[..12.min(answer.calendar.digest.len())],
    );
    out.push_str("<ul class=\"legend\"><li><span class=\"swatch deny\"></span>frozen (the bar's red part over the day's 24 hours; the day tinted red when frozen all day)</li><li><span class=\"swatch allow\"></span>open, or an allow window's deploy slot</li><li>hover a window for its reason</li></ul>\n");
    let all = days(answer, frozen, tz);
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
            let day_end = day.start + day.length;
            let class = match (day.frozen.is_empty(), day.all_day(), day.allow) {
                (false, true, _) => "day frozen",
                (false, false, _) => "day partly",
                (true, _, true) => "day allow",
                (true, _, false) => "day",
            };
            let intervals: Vec<String> = day.frozen.iter().map(|(a, b)| hours(*a, *b, day_end, tz)).collect();
            let _ = write!(
                out,
                "<td class=\"{class}\" data-date=\"{d}\" data-frozen=\"{}\" data-frozen-hours=\"{}\" data-frozen-intervals=\"{}\"><span class=\"num\">{}</span>",
                !day.frozen.is_empty(),
                (day.frozen_seconds() as f64 / 36.0).round() / 100.0,
                intervals.join(" "),
                d.day()
            );
            out.push_str("<div class=\"bar\">");
            let share = |t: DateTime<Utc>| {
                (t - day.start).num_seconds() as f64 / day.length.num_seconds().max(1) as f64 * 100.0
            };
            for (a, b) in &day.frozen {
                let _ = write!(
                    out,
                    "<span class=\"seg\" style=\"left:{:.2}%;width:{:.2}%\"></span>",
                    share(*a),
                    share(*b) - share(*a)
                );
            }
            out.push_str("</div>");
            let _ = match (intervals.is_empty(), day.all_day()) {
                (true, _) => write!(out, "<div class=\"hours open\">open all day</div>"),
                (false, true) => write!(out, "<div class=\"hours\">frozen all day</div>"),
                (false, false) => write!(out, "<div class=\"hours\">frozen {}</div>", intervals.join(", ")),
            };
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
    let height = top + lane * lanes.len().max(1) as f64 + 50.0;
    let span = (answer.to - answer.from).num_seconds().max(1) as f64;
    let x =
        |t: DateTime<Utc>| left + (t.clamp(answer.from, answer.to) - answer.from).num_seconds() as f64 / span * width;
    let mut out = String::new();
    let _ = writeln!(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{height}\" viewBox=\"0 0 {w} {height}\" font-family=\"system-ui, sans-serif\" font-size=\"12\">\n<title>{t}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n<text x=\"10\" y=\"22\" font-size=\"16\" font-weight=\"600\">{t}</text>",
        w = left + width + 20.0,
        t = escape(title)
    );
    let _ = writeln!(out, "<g class=\"legend\"><rect x=\"{left}\" y=\"34\" width=\"12\" height=\"12\" fill=\"#d73a49\"/><text x=\"{}\" y=\"45\">deny (frozen)</text><rect x=\"{}\" y=\"34\" width=\"12\" height=\"12\" fill=\"#2da44e\"/><text x=\"{}\" y=\"45\">allow (deploys only inside)</text><text x=\"{}\" y=\"45\" fill=\"#57606a\">times in {}; hover a bar for its reason</text></g>", left + 16.0, left + 130.0, left + 146.0, left + 360.0, escape(tz.name()));
    // Day ticks (a label every Monday), then month ticks.
    let mut day = tz.local(answer.from).date();
    loop {
        let at = tz.instant(day.and_hms_opt(0, 0, 0).unwrap_or_default());
        if at >= answer.to {
            break;
        }
        if at >= answer.from {
            let monday = day.weekday() == Weekday::Mon;
            let _ = writeln!(out, "<line class=\"day-tick\" data-date=\"{day}\" x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#d0d7de\"/>", x(at), height - 36.0, height - if monday { 26.0 } else { 31.0 });
            if monday {
                let _ = writeln!(
                    out,
                    "<text x=\"{:.1}\" y=\"{}\" font-size=\"9\" fill=\"#57606a\">{}</text>",
                    x(at) + 2.0,
                    height - 28.0,
                    day.format("%d")
                );
            }
        }
        day += Duration::days(1);
    }
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
