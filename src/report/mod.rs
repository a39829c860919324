//! Renderers over a [`Report`] (and, in [`freeze`], over the freeze answers): nothing else in Sluice
//! knows about output formats.

pub mod fingerprint;
pub mod freeze;
pub mod freeze_calendar;
pub mod github;
pub mod gitlab;
mod json;
pub mod markdown;
pub mod sarif;
mod table;

use crate::finding::{Report, Severity};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Sarif,
    Github,
    Gitlab,
    Markdown,
}

/// Options shared by the renderers.
#[derive(Clone, Debug, Default)]
pub struct RenderOptions {
    /// Colour the table output (only on a terminal without NO_COLOR).
    pub color: bool,
    /// Print the facts each finding used.
    pub explain: bool,
    /// The gate's threshold, for the markdown verdict line.
    pub fail_on: FailOn,
}

pub fn render(report: &Report, format: Format, options: &RenderOptions) -> String {
    match format {
        Format::Table => table::render(report, options),
        Format::Json => json::render(report),
        Format::Sarif => sarif::render(report),
        Format::Github => github::render(report),
        Format::Gitlab => gitlab::render(report),
        Format::Markdown => markdown::render(report, options),
    }
}

/// [`render`] into `out` (buffered by the caller, who opened it); JSON is written as it is
/// serialized rather than built whole first.
pub fn write(
    report: &Report,
    format: Format,
    options: &RenderOptions,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    match format {
        Format::Json => json::write(report, out),
        _ => out.write_all(render(report, format, options).as_bytes()),
    }
}

/// `--fail-on`: the lowest severity that fails the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum FailOn {
    #[default]
    Error,
    Warning,
    Never,
}

impl FailOn {
    pub fn fails(self, report: &Report) -> bool {
        match (self, report.worst()) {
            (FailOn::Never, _) | (_, None) => false,
            (FailOn::Error, Some(w)) => w >= Severity::Error,
            (FailOn::Warning, Some(w)) => w >= Severity::Warning,
        }
    }
}
