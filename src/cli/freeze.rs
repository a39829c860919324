//! `sluice freeze status|list|next-open|lint|export`: the change-freeze calendar.

use super::CacheArgs;
use crate::error::{Error, Result};
use crate::freeze::answer::OpenQuestion;
use crate::freeze::calendar::Calendar;
use crate::freeze::decide::{NextOpen, Query};
use crate::freeze::duration::IsoDuration;
use crate::freeze::overrides::Overrides;
use crate::freeze::time::{parse_instant_noted, parse_zone, utc_string};
use crate::freeze::within::Within;
use crate::freeze::zone::Zone;
use crate::freeze::{self, audit, export, ics, FreezeOptions};
use crate::report::freeze as render;
use crate::report::freeze_calendar as render_calendar;
use chrono::{DateTime, Duration, Utc};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum FreezeFormat {
    #[default]
    Table,
    Json,
}

/// The calendar every `freeze` command reads, and the cache of validated calendars.
#[derive(clap::Args, Debug, Clone)]
pub struct CalendarArgs {
    /// The calendar [default: `[freeze] calendar` in sluice.toml, else policies/freeze.toml].
    #[arg(long, value_name = "FILE")]
    pub calendar: Option<PathBuf>,
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// `--format` of the commands that answer in a table or JSON.
#[derive(clap::Args, Debug, Clone)]
pub struct FormatArgs {
    /// A table (or text) for people, or JSON for scripts.
    #[arg(long, value_enum, default_value_t = FreezeFormat::Table)]
    pub format: FreezeFormat,
}

/// `--overrides`, for the commands that read them.
#[derive(clap::Args, Debug, Clone)]
pub struct OverridesArgs {
    /// Emergency overrides [default: `[freeze] overrides`, else overrides.toml beside the calendar, when present].
    #[arg(long, value_name = "FILE")]
    pub overrides: Option<PathBuf>,
}

/// `--tz`, for the commands that take times.
#[derive(clap::Args, Debug, Clone)]
pub struct TzArgs {
    /// IANA zone for times given without an offset (`--at 2026-05-16T10:00 --tz Europe/London`), and for local times
    /// shown.
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
}

/// Flags that earlier versions offered on every `freeze` command, where on this one they did
/// nothing. Still accepted, since scripts may pass them, but hidden from the help and warned
/// about (see docs/freeze.md, "Command line").
#[derive(clap::Args, Debug, Clone)]
pub struct Unused {
    #[arg(long = "audit-log", value_name = "FILE", hide = true)]
    pub audit_log: Option<PathBuf>,
    #[arg(long = "overrides", value_name = "FILE", hide = true)]
    pub overrides: Option<PathBuf>,
}

/// `Unused` without `--overrides`, for the commands that read them.
#[derive(clap::Args, Debug, Clone)]
pub struct UnusedAuditLog {
    #[arg(long = "audit-log", value_name = "FILE", hide = true)]
    pub audit_log: Option<PathBuf>,
}

/// `lint`'s: it takes no times, and never audits.
#[derive(clap::Args, Debug, Clone)]
pub struct UnusedOnLint {
    #[arg(long = "audit-log", value_name = "FILE", hide = true)]
    pub audit_log: Option<PathBuf>,
    #[arg(long = "tz", value_name = "ZONE", hide = true)]
    pub tz: Option<String>,
}

/// Warns that `flag` does nothing for `freeze {command}`.
fn unused(flag: &str, given: bool, command: &str, why: &str) {
    if given {
        eprintln!(
            "sluice: warning: {flag} does nothing for `freeze {command}` ({why}); it is accepted for old scripts only"
        );
    }
}

const AUDITS: &str = "only `freeze status` and `sluice check` decide with overrides, and audit that";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum PictureFormat {
    #[default]
    Html,
    Svg,
}

/// `freeze export` writes iCalendar only: `--format json` is refused, not answered in `.ics`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ExportFormat {
    #[default]
    Ics,
}

/// The deploy asked about; without them every window counts, whatever its scope (the most
/// restrictive answer).
#[derive(clap::Args, Debug, Clone)]
pub struct ScopeArgs {
    /// The environment deployed to (matched against each window's `environments`) [default: any].
    #[arg(long, value_name = "ENV")]
    pub env: Option<String>,
    /// The service deployed (matched against each window's `services`) [default: any].
    #[arg(long, value_name = "SERVICE")]
    pub service: Option<String>,
}

#[derive(clap::Subcommand, Debug)]
pub enum FreezeCommand {
    /// Is a deploy frozen now (or at --at)? Exit 0 open, 1 frozen, 2 configuration error.
    Status {
        #[command(flatten)]
        calendar: CalendarArgs,
        #[command(flatten)]
        overrides: OverridesArgs,
        /// Where a decision that uses an override is logged [default: `[freeze] audit_log`, else freeze-audit.jsonl in
        /// the cache directory; never inside the policies directory].
        #[arg(long, value_name = "FILE")]
        audit_log: Option<PathBuf>,
        #[command(flatten)]
        format: FormatArgs,
        #[command(flatten)]
        tz: TzArgs,
        #[command(flatten)]
        scope: ScopeArgs,
        /// The deploy's time: RFC 3339, or a local time with --tz [default: now].
        #[arg(long, value_name = "TIME")]
        at: Option<String>,
    },
    /// The expanded window occurrences in a time range, in order.
    List {
        #[command(flatten)]
        calendar: CalendarArgs,
        #[command(flatten)]
        format: FormatArgs,
        #[command(flatten)]
        tz: TzArgs,
        #[command(flatten)]
        scope: ScopeArgs,
        /// The start of the range: RFC 3339, or a local time with --tz [default: now].
        #[arg(long, value_name = "TIME")]
        from: Option<String>,
        /// The end of the range [default: 30 days after --from].
        #[arg(long, value_name = "TIME")]
        to: Option<String>,
        #[command(flatten)]
        unused: Unused,
    },
    /// The first instant from which deploys are open for at least --min-duration (the next --count of them), within
    /// --within hours.
    NextOpen {
        #[command(flatten)]
        calendar: CalendarArgs,
        #[command(flatten)]
        overrides: OverridesArgs,
        #[command(flatten)]
        format: FormatArgs,
        #[command(flatten)]
        tz: TzArgs,
        #[command(flatten)]
        scope: ScopeArgs,
        /// Search from this time: RFC 3339, or a local time with --tz [default: now].
        #[arg(long, value_name = "TIME")]
        after: Option<String>,
        /// How long the deploy must stay open: an ISO 8601 duration (PT2H, PT30M, P1D = 24 h).
        #[arg(long, value_name = "DURATION", default_value = "PT0S")]
        min_duration: String,
        /// How many open windows to list, one after the other.
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
        count: u32,
        /// Only these hours count as open, in --tz (else the calendar's zone): "Mon-Fri 09:00-17:00", or several
        /// separated by `;` ("Mon-Thu 09:00-17:00; Fri 09:00-12:00").
        #[arg(long, value_name = "HOURS")]
        within: Option<String>,
        #[command(flatten)]
        unused: UnusedAuditLog,
    },
    /// Validate the calendar and overrides; warn about windows that never occur, have ended, or run overnight.
    Lint {
        #[command(flatten)]
        calendar: CalendarArgs,
        #[command(flatten)]
        overrides: OverridesArgs,
        #[command(flatten)]
        format: FormatArgs,
        /// Exit 1 when there are warnings.
        #[arg(long)]
        strict: bool,
        #[command(flatten)]
        unused: UnusedOnLint,
    },
    /// Convert an iCalendar (.ics) file into `[[event]]` entries for freeze.toml (on stdout, or -o).
    Import {
        /// The .ics file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Prefix for the event ids (`{prefix}{UID}`) [default: none].
        #[arg(long, value_name = "PREFIX", default_value = "", hide_default_value = true)]
        id_prefix: String,
        /// IANA zone for floating times and all-day dates [default: the file's X-WR-TIMEZONE, else UTC]. (`--timezone`,
        /// its old spelling, still works.)
        #[arg(long, alias = "timezone", value_name = "ZONE")]
        tz: Option<String>,
        /// Write here instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// A picture of the freezes: a month grid with each day's frozen hours (`--format html`, one self-contained
    /// page) or a timeline (`--format svg`).
    Calendar {
        #[command(flatten)]
        calendar: CalendarArgs,
        /// IANA zone whose days and hours the picture shows [default: the calendar's `timezone`].
        #[arg(long, value_name = "ZONE")]
        tz: Option<String>,
        #[command(flatten)]
        scope: ScopeArgs,
        /// The first month shown: a date or a time in it [default: this month].
        #[arg(long, value_name = "TIME")]
        from: Option<String>,
        /// How many months (1 to 36).
        #[arg(long, value_name = "N", default_value_t = 3)]
        months: u32,
        /// A month grid page, or a timeline.
        #[arg(long, value_enum, default_value_t = PictureFormat::Html)]
        format: PictureFormat,
        /// Write here instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Write the expanded windows as an iCalendar (.ics) file to subscribe to.
    Export {
        #[command(flatten)]
        calendar: CalendarArgs,
        #[command(flatten)]
        tz: TzArgs,
        #[command(flatten)]
        scope: ScopeArgs,
        /// The start of the range: RFC 3339, or a local time with --tz [default: 7 days ago].
        #[arg(long, value_name = "TIME")]
        from: Option<String>,
        /// The end of the range [default: one year after --from].
        #[arg(long, value_name = "TIME")]
        to: Option<String>,
        /// iCalendar is the only format (`freeze list --format json` has the same occurrences as JSON).
        #[arg(long, value_enum, default_value_t = ExportFormat::Ics)]
        format: ExportFormat,
        /// Write here instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        unused: Unused,
    },
}

type Range = (DateTime<Utc>, DateTime<Utc>);

struct Context {
    options: FreezeOptions,
    /// Where the gate reads its configuration: no audit log may be written there.
    policies_dir: PathBuf,
    calendar: Calendar,
    overrides: Overrides,
    tz: Option<Zone>,
    format: FreezeFormat,
    /// What was said about the question (a local time in a DST gap, read as adjusted).
    notes: Vec<String>,
}

/// What a command reads: the calendar, its overrides (`None`: none), the audit log, `--tz`.
struct Inputs<'a> {
    calendar: &'a CalendarArgs,
    overrides: Option<&'a OverridesArgs>,
    audit_log: Option<&'a PathBuf>,
    tz: Option<&'a str>,
    format: FreezeFormat,
}

impl Context {
    fn new(inputs: Inputs<'_>) -> Result<Context> {
        let cwd =
            std::env::current_dir().map_err(|e| Error::Other(format!("cannot read the working directory: {e}")))?;
        let loaded = crate::config::load(None, &cwd, &crate::lint::rule_level_problem)?;
        let overrides = inputs.overrides.and_then(|o| o.overrides.as_deref());
        // Files are named relative to the working directory in output, as a user would type them.
        let cache = &inputs.calendar.cache;
        let mut options = FreezeOptions::resolve(
            &loaded,
            inputs.calendar.calendar.as_deref(),
            overrides,
            inputs.audit_log.map(PathBuf::as_path),
            cache.cache_dir.as_deref(),
        )
        .relative_to(&cwd);
        if inputs.overrides.is_none() {
            options.overrides = None;
        }
        options.cache = cache.calendar_cache();
        // `exists`, not `is_file`: a FIFO or a directory given as the calendar is refused by the
        // loader, naming what it is.
        if !options.calendar.exists() {
            return Err(Error::Usage(format!(
                "{}: no such calendar; pass --calendar FILE or set [freeze] calendar in sluice.toml",
                options.calendar.display()
            )));
        }
        let (calendar, overrides) = options.load()?;
        let tz = inputs.tz.map(|z| parse_zone(z).map_err(|m| Error::Usage(format!("--tz: {m}")))).transpose()?;
        let policies_dir = loaded.policies_dir();
        Ok(Context { options, policies_dir, calendar, overrides, tz, format: inputs.format, notes: Vec::new() })
    }

    fn instant(&mut self, flag: &str, value: Option<&str>, default: DateTime<Utc>) -> Result<DateTime<Utc>> {
        match value {
            None => Ok(default),
            Some(v) => {
                let read = parse_instant_noted(v, self.tz).map_err(|m| Error::Usage(format!("{flag}: {m}")))?;
                self.notes.extend(read.note.map(|n| format!("{flag} {v}: {n}")));
                Ok(read.at)
            }
        }
    }

    /// `--from` (default `start`) and `--to` (default `span` after `--from`), which must come later.
    fn range(&mut self, from: Option<&str>, to: Option<&str>, start: DateTime<Utc>, span: Duration) -> Result<Range> {
        let from = self.instant("--from", from, start)?;
        let to = self.instant("--to", to, from + span)?;
        if to <= from {
            return Err(Error::Usage(format!("--to {} is not after --from {}", utc_string(to), utc_string(from))));
        }
        Ok((from, to))
    }

    /// Prints what the renderer for `--format` returns.
    fn print(&self, json: impl FnOnce() -> Result<String>, table: impl FnOnce() -> String) -> Result<()> {
        let text = match self.format {
            FreezeFormat::Json => json()?,
            FreezeFormat::Table => table(),
        };
        super::print_stdout(&text)
    }
}

fn query(scope: &ScopeArgs) -> Query<'_> {
    Query { env: scope.env.as_deref(), service: scope.service.as_deref() }
}

/// Writes `text` to `output`, or to stdout.
fn write_out(output: Option<&std::path::Path>, text: &str, what: &str) -> Result<()> {
    match output {
        Some(path) => {
            std::fs::write(path, text)
                .map_err(|e| Error::invalid(path, None, format!("cannot write the {what}: {e}")))?;
            eprintln!("wrote the {what} to {}", path.display());
            Ok(())
        }
        None => super::print_stdout(text),
    }
}

pub fn run(command: FreezeCommand) -> Result<ExitCode> {
    // A freeze command is short and allocates a few megabytes at once (a 10,000-event calendar):
    // transparent huge pages made the kernel zero 2 MiB per first touch, most of the run time
    // (measured with perf on bench/freeze.sh). The flag is per process and inherited by nothing
    // else; failing to set it changes nothing but speed.
    let _ = nix::sys::prctl::set_thp_disable(true);
    match command {
        FreezeCommand::Import { file, id_prefix, tz, output } => {
            let floating = match tz {
                Some(name) => {
                    ics::FloatingZone::given(parse_zone(&name).map_err(|m| Error::Usage(format!("--tz: {m}")))?)
                }
                None => ics::FloatingZone::fallback(Zone::utc()),
            };
            let imported = ics::import(&file, &id_prefix, floating)?;
            write_out(output.as_deref(), &render::import_toml(&imported, &file), "[[event]] entries")?;
            Ok(ExitCode::SUCCESS)
        }
        FreezeCommand::Status { calendar, overrides, audit_log, format, tz, scope, at } => {
            let inputs = Inputs {
                calendar: &calendar,
                overrides: Some(&overrides),
                audit_log: audit_log.as_ref(),
                tz: tz.tz.as_deref(),
                format: format.format,
            };
            let mut cx = Context::new(inputs)?;
            cx.options.check_audit_log(std::slice::from_ref(&cx.policies_dir))?;
            let at = cx.instant("--at", at.as_deref(), Utc::now())?;
            let mut answer = freeze::status(&cx.calendar, &cx.overrides, query(&scope), at)?;
            answer.notes = cx.notes.clone();
            let (cal, log) = (&cx.calendar, &cx.options.audit_log);
            audit::log_if_overridden(log, cal, &cx.overrides, answer.query, &answer.status, "freeze status")?;
            cx.print(|| render::status_json(&answer), || render::status_table(&answer, log, cx.tz))?;
            Ok(if answer.status.frozen { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        FreezeCommand::List { calendar, format, tz, scope, from, to, unused: old } => {
            unused("--audit-log", old.audit_log.is_some(), "list", AUDITS);
            unused(
                "--overrides",
                old.overrides.is_some(),
                "list",
                "it lists the calendar's windows; overrides lift none",
            );
            let inputs = Inputs {
                calendar: &calendar,
                overrides: None,
                audit_log: None,
                tz: tz.tz.as_deref(),
                format: format.format,
            };
            let mut cx = Context::new(inputs)?;
            let (from, to) = cx.range(from.as_deref(), to.as_deref(), Utc::now(), Duration::days(30))?;
            let mut answer = freeze::list(&cx.calendar, query(&scope), from, to)?;
            answer.notes = cx.notes.clone();
            cx.print(|| render::list_json(&answer), || render::list_table(&answer))?;
            Ok(ExitCode::SUCCESS)
        }
        FreezeCommand::NextOpen {
            calendar,
            overrides,
            format,
            tz,
            scope,
            after,
            min_duration,
            count,
            within,
            unused: old,
        } => {
            unused("--audit-log", old.audit_log.is_some(), "next-open", AUDITS);
            let inputs = Inputs {
                calendar: &calendar,
                overrides: Some(&overrides),
                audit_log: None,
                tz: tz.tz.as_deref(),
                format: format.format,
            };
            let mut cx = Context::new(inputs)?;
            let after = cx.instant("--after", after.as_deref(), Utc::now())?;
            let min = IsoDuration::parse(&min_duration).map_err(|m| Error::Usage(format!("--min-duration: {m}")))?;
            if min.months > 0 {
                return Err(Error::Usage(
                    "--min-duration: months and years have no fixed length; use days (P30D)".into(),
                ));
            }
            let zone = cx.tz.unwrap_or(cx.calendar.default_tz);
            let within = within
                .map(|w| Within::parse(&w, zone).map_err(|m| Error::Usage(format!("--within: {m}"))))
                .transpose()?;
            let question = OpenQuestion { after, min_duration: min, count: count as usize, within: within.as_ref() };
            let mut answer = freeze::next_open(&cx.calendar, &cx.overrides, query(&scope), question)?;
            answer.notes = cx.notes.clone();
            cx.print(|| render::next_open_json(&answer), || render::next_open_text(&answer, zone))?;
            Ok(if matches!(answer.next, NextOpen::At(_)) { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        FreezeCommand::Lint { calendar, overrides, format, strict, unused: old } => {
            unused("--audit-log", old.audit_log.is_some(), "lint", AUDITS);
            unused("--tz", old.tz.is_some(), "lint", "it takes no times");
            let inputs = Inputs {
                calendar: &calendar,
                overrides: Some(&overrides),
                audit_log: None,
                tz: None,
                format: format.format,
            };
            let cx = Context::new(inputs)?;
            let answer = freeze::lint(&cx.calendar, &cx.overrides, Utc::now())?;
            cx.print(|| render::lint_json(&answer), || render::lint_text(&answer))?;
            Ok(if strict && !answer.warnings.is_empty() { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        FreezeCommand::Calendar { calendar, tz, scope, from, months, format, output } => {
            if !(1..=36).contains(&months) {
                return Err(Error::Usage(format!("--months {months}: give 1 to 36")));
            }
            let inputs = Inputs {
                calendar: &calendar,
                overrides: None,
                audit_log: None,
                tz: tz.as_deref(),
                format: FreezeFormat::Table,
            };
            let mut cx = Context::new(inputs)?;
            let zone = cx.tz.unwrap_or(cx.calendar.default_tz);
            // A `--from` without an offset (`2026-05-01`) is a day in the grid's zone.
            cx.tz = Some(zone);
            let start = cx.instant("--from", from.as_deref(), Utc::now())?;
            let (from, to) = render_calendar::month_range(start, months, zone);
            let answer = freeze::list(&cx.calendar, query(&scope), from, to)?;
            let frozen = freeze::answer::frozen_hours(&cx.calendar, query(&scope), from, to)?;
            let title = match (&scope.service, &scope.env) {
                (None, None) => "Change freezes".to_string(),
                (s, e) => format!(
                    "Change freezes for {} in {}",
                    s.as_deref().unwrap_or("any service"),
                    e.as_deref().unwrap_or("any environment")
                ),
            };
            let text = match format {
                PictureFormat::Html => render_calendar::html(&answer, query(&scope), &frozen, zone, &title),
                PictureFormat::Svg => render_calendar::svg(&answer, zone, &title),
            };
            write_out(output.as_deref(), &text, "picture")?;
            Ok(ExitCode::SUCCESS)
        }
        FreezeCommand::Export { calendar, tz, scope, from, to, format: ExportFormat::Ics, output, unused: old } => {
            unused("--audit-log", old.audit_log.is_some(), "export", AUDITS);
            unused(
                "--overrides",
                old.overrides.is_some(),
                "export",
                "it exports the calendar's windows; overrides lift none",
            );
            let inputs = Inputs {
                calendar: &calendar,
                overrides: None,
                audit_log: None,
                tz: tz.tz.as_deref(),
                format: FreezeFormat::Table,
            };
            let mut cx = Context::new(inputs)?;
            let (from, to) =
                cx.range(from.as_deref(), to.as_deref(), Utc::now() - Duration::days(7), Duration::days(365))?;
            let answer = freeze::list(&cx.calendar, query(&scope), from, to)?;
            let text = export::export(&cx.calendar, &answer.occurrences, Utc::now());
            let what = format!("{} occurrence(s)", answer.occurrences.len());
            write_out(output.as_deref(), &text, &what)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
