//! `sluice freeze status|list|next-open|lint|export`: the change-freeze calendar.

use super::CacheArgs;
use crate::error::{Error, Result};
use crate::freeze::calendar::Calendar;
use crate::freeze::decide::{NextOpen, Query};
use crate::freeze::duration::IsoDuration;
use crate::freeze::overrides::Overrides;
use crate::freeze::time::{parse_instant_noted, parse_zone, utc_string};
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

/// Options every `freeze` command takes.
#[derive(clap::Args, Debug, Clone)]
pub struct CommonArgs {
    /// The calendar [default: policies/freeze.toml, or `[freeze] calendar` in sluice.toml].
    #[arg(long, value_name = "FILE")]
    pub calendar: Option<PathBuf>,
    /// Emergency overrides [default: overrides.toml beside the calendar, when present].
    #[arg(long, value_name = "FILE")]
    pub overrides: Option<PathBuf>,
    /// Where decisions that use an override are logged [default: freeze-audit.jsonl in the cache directory; never
    /// inside the policies directory].
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = FreezeFormat::Table)]
    pub format: FreezeFormat,
    /// IANA zone for times given without an offset (`--at 2026-05-16T10:00 --tz Europe/London`).
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
    #[command(flatten)]
    pub cache: CacheArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum PictureFormat {
    #[default]
    Html,
    Svg,
}

/// The options of `freeze calendar`: those of every command but `--format` (it has its own).
#[derive(clap::Args, Debug, Clone)]
pub struct CalendarArgs {
    /// The calendar [default: policies/freeze.toml, or `[freeze] calendar` in sluice.toml].
    #[arg(long, value_name = "FILE")]
    pub calendar: Option<PathBuf>,
    /// IANA zone whose days the grid shows [default: the calendar's `timezone`].
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// The deploy asked about; without them every window counts, whatever its scope.
#[derive(clap::Args, Debug, Clone)]
pub struct ScopeArgs {
    #[arg(long, value_name = "E")]
    pub env: Option<String>,
    #[arg(long, value_name = "S")]
    pub service: Option<String>,
}

#[derive(clap::Subcommand, Debug)]
pub enum FreezeCommand {
    /// Is a deploy frozen now (or at --at)? Exit 0 open, 1 frozen, 2 configuration error.
    Status {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        scope: ScopeArgs,
        /// RFC 3339 time, or a local time with --tz [default: now].
        #[arg(long)]
        at: Option<String>,
    },
    /// The expanded window occurrences in a time range, in order.
    List {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        scope: ScopeArgs,
        /// [default: now]
        #[arg(long)]
        from: Option<String>,
        /// [default: 30 days after --from]
        #[arg(long)]
        to: Option<String>,
    },
    /// The first instant from which deploys are open for at least --min-duration.
    NextOpen {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        scope: ScopeArgs,
        /// [default: now]
        #[arg(long)]
        after: Option<String>,
        /// ISO 8601 duration (PT2H, PT30M, P1D = 24 h).
        #[arg(long, default_value = "PT0S")]
        min_duration: String,
    },
    /// Validate the calendar and overrides; warn about windows that never occur, have ended, or run overnight.
    Lint {
        #[command(flatten)]
        common: CommonArgs,
        /// Exit 1 when there are warnings.
        #[arg(long)]
        strict: bool,
    },
    /// Convert an iCalendar (.ics) file into `[[event]]` entries for freeze.toml (on stdout, or -o).
    Import {
        /// The .ics file.
        file: PathBuf,
        /// Prefix for the event ids (`{prefix}{UID}`).
        #[arg(long, value_name = "P", default_value = "")]
        id_prefix: String,
        /// IANA zone for floating times and all-day dates [default: the file's X-WR-TIMEZONE, else UTC].
        /// (`--timezone`, its old spelling, still works.)
        #[arg(long, alias = "timezone", value_name = "ZONE")]
        tz: Option<String>,
        /// Write here instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// A picture of the freezes: a month grid (`--format html`, one self-contained page) or a
    /// timeline (`--format svg`).
    Calendar {
        #[command(flatten)]
        common: CalendarArgs,
        #[command(flatten)]
        scope: ScopeArgs,
        /// The first month shown (a date or time in it) [default: this month].
        #[arg(long)]
        from: Option<String>,
        /// How many months.
        #[arg(long, default_value_t = 3)]
        months: u32,
        #[arg(long, value_enum, default_value_t = PictureFormat::Html)]
        format: PictureFormat,
        /// Write here instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Write the expanded windows as an iCalendar (.ics) file to subscribe to.
    Export {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        scope: ScopeArgs,
        /// [default: 7 days ago]
        #[arg(long)]
        from: Option<String>,
        /// [default: one year after --from]
        #[arg(long)]
        to: Option<String>,
        /// Write here instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
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

impl Context {
    fn new(common: &CommonArgs) -> Result<Context> {
        let cwd =
            std::env::current_dir().map_err(|e| Error::Other(format!("cannot read the working directory: {e}")))?;
        let loaded = crate::config::load(None, &cwd, &crate::lint::rule_level_problem)?;
        let (calendar, overrides, audit_log) = (&common.calendar, &common.overrides, &common.audit_log);
        // Files are named relative to the working directory in output, as a user would type them.
        let cache_dir = common.cache.cache_dir.as_deref();
        let mut options =
            FreezeOptions::resolve(&loaded, calendar.as_deref(), overrides.as_deref(), audit_log.as_deref(), cache_dir)
                .relative_to(&cwd);
        options.cache = common.cache.calendar_cache();
        // `exists`, not `is_file`: a FIFO or a directory given as the calendar is refused by the
        // loader, naming what it is.
        if !options.calendar.exists() {
            return Err(Error::Usage(format!(
                "{}: no such calendar; pass --calendar FILE or set [freeze] calendar in sluice.toml",
                options.calendar.display()
            )));
        }
        let (calendar, overrides) = options.load()?;
        let tz =
            common.tz.as_deref().map(|z| parse_zone(z).map_err(|m| Error::Usage(format!("--tz: {m}")))).transpose()?;
        let policies_dir = loaded.policies_dir();
        Ok(Context { options, policies_dir, calendar, overrides, tz, format: common.format, notes: Vec::new() })
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
                Some(name) => ics::FloatingZone::given(parse_zone(&name).map_err(|m| Error::Usage(format!("--tz: {m}")))?),
                None => ics::FloatingZone::fallback(Zone::utc()),
            };
            let imported = ics::import(&file, &id_prefix, floating)?;
            write_out(output.as_deref(), &render::import_toml(&imported, &file), "[[event]] entries")?;
            Ok(ExitCode::SUCCESS)
        }
        FreezeCommand::Status { common, scope, at } => {
            let mut cx = Context::new(&common)?;
            cx.options.check_audit_log(std::slice::from_ref(&cx.policies_dir))?;
            let at = cx.instant("--at", at.as_deref(), Utc::now())?;
            let mut answer = freeze::status(&cx.calendar, &cx.overrides, query(&scope), at)?;
            answer.notes = cx.notes.clone();
            let (cal, log) = (&cx.calendar, &cx.options.audit_log);
            audit::log_if_overridden(log, cal, &cx.overrides, answer.query, &answer.status, "freeze status")?;
            cx.print(|| render::status_json(&answer), || render::status_table(&answer, log, cx.tz))?;
            Ok(if answer.status.frozen { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        FreezeCommand::List { common, scope, from, to } => {
            let mut cx = Context::new(&common)?;
            let (from, to) = cx.range(from.as_deref(), to.as_deref(), Utc::now(), Duration::days(30))?;
            let mut answer = freeze::list(&cx.calendar, query(&scope), from, to)?;
            answer.notes = cx.notes.clone();
            cx.print(|| render::list_json(&answer), || render::list_table(&answer))?;
            Ok(ExitCode::SUCCESS)
        }
        FreezeCommand::NextOpen { common, scope, after, min_duration } => {
            let mut cx = Context::new(&common)?;
            let after = cx.instant("--after", after.as_deref(), Utc::now())?;
            let min = IsoDuration::parse(&min_duration).map_err(|m| Error::Usage(format!("--min-duration: {m}")))?;
            if min.months > 0 {
                return Err(Error::Usage(
                    "--min-duration: months and years have no fixed length; use days (P30D)".into(),
                ));
            }
            let mut answer = freeze::next_open(&cx.calendar, &cx.overrides, query(&scope), after, min)?;
            answer.notes = cx.notes.clone();
            let tz = cx.tz.unwrap_or(cx.calendar.default_tz);
            cx.print(|| render::next_open_json(&answer), || render::next_open_text(&answer, tz))?;
            Ok(if matches!(answer.next, NextOpen::At(_)) { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        FreezeCommand::Lint { common, strict } => {
            let cx = Context::new(&common)?;
            let answer = freeze::lint(&cx.calendar, &cx.overrides, Utc::now())?;
            cx.print(|| render::lint_json(&answer), || render::lint_text(&answer))?;
            Ok(if strict && !answer.warnings.is_empty() { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        FreezeCommand::Calendar { common, scope, from, months, format, output } => {
            if !(1..=36).contains(&months) {
                return Err(Error::Usage(format!("--months {months}: give 1 to 36")));
            }
            let common = CommonArgs {
                calendar: common.calendar,
                overrides: None,
                audit_log: None,
                format: FreezeFormat::Table,
                tz: common.tz,
                cache: common.cache,
            };
            let mut cx = Context::new(&common)?;
            let zone = cx.tz.unwrap_or(cx.calendar.default_tz);
            // A `--from` without an offset (`2026-05-01`) is a day in the grid's zone.
            cx.tz = Some(zone);
            let start = cx.instant("--from", from.as_deref(), Utc::now())?;
            let (from, to) = render_calendar::month_range(start, months, zone);
            let answer = freeze::list(&cx.calendar, query(&scope), from, to)?;
            let title = match (&scope.service, &scope.env) {
                (None, None) => "Change freezes".to_string(),
                (s, e) => format!(
                    "Change freezes for {} in {}",
                    s.as_deref().unwrap_or("any service"),
                    e.as_deref().unwrap_or("any environment")
                ),
            };
            let text = match format {
                PictureFormat::Html => render_calendar::html(&answer, zone, &title),
                PictureFormat::Svg => render_calendar::svg(&answer, zone, &title),
            };
            write_out(output.as_deref(), &text, "picture")?;
            Ok(ExitCode::SUCCESS)
        }
        FreezeCommand::Export { common, scope, from, to, output } => {
            let mut cx = Context::new(&common)?;
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
