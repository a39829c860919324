//! Renderers over a [`Report`] (and, in [`freeze`], over the freeze answers): nothing else in Sluice
//! knows about output formats.

pub mod freeze;
pub mod freeze_calendar;
pub mod github;
pub mod gitlab;
mod json;
pub mod markdown;
mod options;
pub mod sarif;
mod table;

use crate::finding::Report;
pub use options::{FailOn, RenderOptions};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Sarif,
    Github,
    Gitlab,
    Markdown,
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
