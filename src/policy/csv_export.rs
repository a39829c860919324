//! Reading what `psql --csv` prints for one of Sluice's export queries (`sluice stats
//! workload`, `sluice stats indexes`): a header naming the columns, then one record per row,
//! a field quoted when it holds a comma, a quote or a line break (a query's text often does).
//! Every problem is an error naming the file and the line the record starts on.

use crate::error::{Error, Result};
use chrono::{DateTime, FixedOffset};
use std::path::{Path, PathBuf};

/// One export, read whole.
#[derive(Debug)]
pub struct Export {
    pub path: PathBuf,
    header: Vec<String>,
    records: Vec<(usize, csv::StringRecord)>,
}

/// One record of an export and the line it starts on.
#[derive(Clone, Copy)]
pub struct Record<'a> {
    export: &'a Export,
    pub line: usize,
    fields: &'a csv::StringRecord,
}

impl Export {
    /// Reads `text`; the header must name every column of `required`. `command` is the Sluice
    /// command that prints the export query, for the error's advice.
    pub fn parse(path: &Path, text: &str, required: &[&str], command: &str) -> Result<Export> {
        let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes());
        let header: Vec<String> =
            reader.headers().map_err(|e| csv_error(path, &e))?.iter().map(|h| h.trim().to_lowercase()).collect();
        if header.iter().all(String::is_empty) {
            return Err(Error::invalid(path, Some(1), format!("empty export; write it with `{command} | psql --csv`")));
        }
        let missing: Vec<&str> = required.iter().copied().filter(|c| !header.iter().any(|h| h == c)).collect();
        if !missing.is_empty() {
            return Err(Error::invalid(
                path,
                Some(1),
                format!(
                    "the header lacks the column{} {} (found `{}`); export it again with `{command} | psql --csv`",
                    if missing.len() == 1 { "" } else { "s" },
                    missing.join(", "),
                    header.join(",")
                ),
            ));
        }
        let mut records = Vec::new();
        for record in reader.records() {
            let record = record.map_err(|e| csv_error(path, &e))?;
            let line = record.position().map_or(0, |p| p.line() as usize);
            records.push((line, record));
        }
        Ok(Export { path: path.to_path_buf(), header, records })
    }

    pub fn has(&self, column: &str) -> bool {
        self.header.iter().any(|h| h == column)
    }

    pub fn records(&self) -> impl Iterator<Item = Record<'_>> {
        self.records.iter().map(|(line, fields)| Record { export: self, line: *line, fields })
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

impl<'a> Record<'a> {
    /// The field of `column` as written; empty when the export has no such column or psql
    /// printed NULL (an empty field).
    pub fn text(&self, column: &str) -> &'a str {
        self.export.header.iter().position(|h| h == column).and_then(|i| self.fields.get(i)).unwrap_or("")
    }

    pub fn error(&self, message: impl Into<String>) -> Error {
        Error::invalid(&self.export.path, Some(self.line), message.into())
    }

    /// A time or an amount: a finite number, not negative.
    pub fn float(&self, column: &str) -> Result<f64> {
        let text = self.text(column).trim();
        text.parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
            .ok_or_else(|| self.error(format!("{column} `{text}` is not a number (finite, not negative)")))
    }

    /// A 64-bit integer (a `queryid`, signed; a counter, not negative).
    pub fn integer(&self, column: &str) -> Result<i64> {
        let text = self.text(column).trim();
        text.parse::<i64>().map_err(|_| self.error(format!("{column} `{text}` is not an integer")))
    }

    pub fn count(&self, column: &str) -> Result<u64> {
        let text = self.text(column).trim();
        text.parse::<u64>()
            .map_err(|_| self.error(format!("{column} `{text}` is not a count (a whole number, not negative)")))
    }

    /// A `timestamptz` as psql prints it (`2026-12-03 18:34:06.796043+00`) or RFC 3339;
    /// `None` when the field is empty (NULL) or the export has no such column.
    pub fn timestamp(&self, column: &str) -> Result<Option<DateTime<FixedOffset>>> {
        let text = self.text(column).trim();
        if text.is_empty() {
            return Ok(None);
        }
        parse_timestamp(text).map(Some).ok_or_else(|| {
            self.error(format!(
                "{column} `{text}` is not a timestamp with a time zone (as psql prints it with DateStyle ISO: \
                 `2026-12-03 18:34:06.796+00`)"
            ))
        })
    }
}

fn parse_timestamp(text: &str) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%#z").or_else(|_| DateTime::parse_from_rfc3339(text)).ok()
}

fn csv_error(path: &Path, e: &csv::Error) -> Error {
    let line = e.position().map(|p| p.line() as usize);
    let message = match e.kind() {
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
            format!("expected {expected_len} fields as in the header, found {len}")
        }
        csv::ErrorKind::Utf8 { .. } => "not UTF-8 text".to_string(),
        _ => format!("not a CSV export: {e}"),
    };
    Error::invalid(path, line, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn export(text: &str) -> Result<Export> {
        Export::parse(Path::new("w.csv"), text, &["a", "b"], "sluice stats workload")
    }

    #[test]
    fn records_name_the_line_they_start_on() {
        let e = export("a,b,when\n1,\"two\nlines\",2026-12-03 18:34:06.796043+00\n3,x,\n").unwrap();
        let records: Vec<Record> = e.records().collect();
        assert_eq!((records[0].line, records[0].text("b")), (2, "two\nlines"));
        assert_eq!(records[1].line, 4);
        assert_eq!(records[0].timestamp("when").unwrap().unwrap().to_rfc3339(), "2026-12-03T18:34:06.796043+00:00");
        assert_eq!(records[1].timestamp("when").unwrap(), None);
        assert_eq!(records[1].timestamp("absent").unwrap(), None);
        assert_eq!(records[0].float("a").unwrap(), 1.0);
        assert_eq!(
            records[1].float("b").unwrap_err().to_string(),
            "w.csv:4: b `x` is not a number (finite, not negative)"
        );
    }

    #[test]
    fn problems_name_file_and_line() {
        assert_eq!(
            export("a,c\n1,2\n").unwrap_err().to_string(),
            "w.csv:1: the header lacks the column b (found `a,c`); export it again with `sluice stats workload | psql --csv`"
        );
        assert_eq!(
            export("a,b\n1,2\n1,2,3\n").unwrap_err().to_string(),
            "w.csv:3: expected 2 fields as in the header, found 3"
        );
        assert!(export("").unwrap_err().to_string().starts_with("w.csv:1: empty export"));
        let e = export("a,b\nNaN,inf\n").unwrap();
        let record = e.records().next().unwrap();
        assert_eq!(
            record.float("a").unwrap_err().to_string(),
            "w.csv:2: a `NaN` is not a number (finite, not negative)"
        );
        assert_eq!(
            record.count("b").unwrap_err().to_string(),
            "w.csv:2: b `inf` is not a count (a whole number, not negative)"
        );
    }
}
