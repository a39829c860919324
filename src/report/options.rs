//! How a report is rendered and when it fails the gate: what the CLI passes every renderer.

use crate::finding::{Report, Severity};

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
