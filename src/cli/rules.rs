//! `sluice rules [ID]`: the rule table, or one rule's documentation.

use crate::error::{Error, Result};
use crate::rules;
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct RulesArgs {
    /// Print this rule's documentation.
    pub id: Option<String>,
    /// Print the rule table as Markdown (as in the README).
    #[arg(long, conflicts_with_all = ["id", "docs"])]
    pub markdown: bool,
    /// Print every rule's documentation as Markdown (docs/rules.md).
    #[arg(long, conflicts_with = "id")]
    pub docs: bool,
}

pub fn run(args: RulesArgs) -> Result<ExitCode> {
    let text = match args.id {
        None if args.markdown => rules::markdown_table(),
        None if args.docs => rules::docs_markdown(),
        Some(id) => rules::find(&id)
            .ok_or_else(|| Error::Usage(format!("unknown rule `{id}`; `sluice rules` lists them")))?
            .markdown(),
        None => {
            let mut table = Table::new();
            table.load_style(UTF8_FULL_CONDENSED);
            // Wrapped to the terminal (`COLUMNS`), like the other tables.
            table.set_content_arrangement(ContentArrangement::Dynamic);
            table.set_width(crate::report::freeze::terminal_width());
            table.set_header(["rule", "severity", "category", "what it catches"]);
            for meta in rules::all() {
                table.add_row([meta.id, meta.severity.as_str(), meta.category.as_str(), meta.summary]);
            }
            format!("{table}\n")
        }
    };
    super::print_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}
