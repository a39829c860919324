//! What the fixture build shows while it runs: on a terminal, a bar per table (rows loaded) and
//! a spinner per index build; elsewhere (CI logs, pipes) one plain line per finished step.

use crate::plan::diff::format_count;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How a table was loaded, for the progress line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    /// Binary COPY of rows drawn by Sluice; `frozen` when written frozen without WAL.
    Copy { frozen: bool },
    /// `INSERT … SELECT … FROM generate_series` inside PostgreSQL.
    Insert,
}

pub(super) struct Progress {
    /// `None` when stderr is not a terminal: plain lines instead.
    multi: Option<MultiProgress>,
}

impl Progress {
    pub(super) fn new() -> Progress {
        let multi =
            std::io::stderr().is_terminal().then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        Progress { multi }
    }

    pub(super) fn table(&self, name: &str, rows: u64) -> TableProgress {
        let bar = self.multi.as_ref().map(|m| {
            let bar = m.add(ProgressBar::new(rows));
            if let Ok(style) = ProgressStyle::with_template(
                "{prefix:>28} [{bar:30}] {human_pos}/{human_len} rows, {rows_per_second}, {elapsed}",
            ) {
                // Whole rows per second (indicatif's own `per_sec` prints four decimals).
                let style = style.with_key(
                    "rows_per_second",
                    |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{}/s", format_count(state.per_sec()));
                    },
                );
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(name.to_string());
            bar
        });
        TableProgress { bar, name: name.to_string(), rows, started: Instant::now() }
    }

    pub(super) fn index(&self, name: &str, table: &str) -> Step {
        let what = format!("index {name} on {table}");
        let bar = self.multi.as_ref().map(|m| {
            let bar = m.add(ProgressBar::new_spinner());
            if let Ok(style) = ProgressStyle::with_template("{prefix:>28} {spinner} {msg} {elapsed}") {
                bar.set_style(style);
            }
            bar.set_prefix("building");
            bar.set_message(what.clone());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Step { bar, what, started: Instant::now() }
    }

    /// A line above the bars (or a plain line).
    pub(super) fn say(&self, line: &str) {
        match &self.multi {
            Some(m) => {
                let _ = m.println(line);
            }
            None => eprintln!("{line}"),
        }
    }
}

pub(super) struct TableProgress {
    bar: Option<ProgressBar>,
    name: String,
    rows: u64,
    started: Instant,
}

impl TableProgress {
    /// Rows loaded so far.
    pub(super) fn set(&self, rows: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(rows);
        }
    }

    pub(super) fn finish(self, method: Method, progress: &Progress) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let how = match method {
            Method::Copy { frozen: true } => "binary COPY, frozen",
            Method::Copy { frozen: false } => "binary COPY",
            Method::Insert => "INSERT … SELECT",
        };
        let seconds = self.started.elapsed().as_secs_f64();
        progress.say(&format!(
            "sluice: fixture: {} rows into {} in {seconds:.1} s ({how}, {} rows/s)",
            format_count(self.rows as f64),
            self.name,
            format_count(self.rows as f64 / seconds.max(1e-3))
        ));
    }
}

pub(super) struct Step {
    bar: Option<ProgressBar>,
    what: String,
    started: Instant,
}

impl Step {
    pub(super) fn finish(self, progress: &Progress) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        progress.say(&format!("sluice: fixture: {} built in {:.1} s", self.what, self.started.elapsed().as_secs_f64()));
    }
}
