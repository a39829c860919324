//! Where a workload entry comes from and how busy it is, as findings name it.

/// Where a workload entry comes from, for findings: `workload entry at policies/workload.csv:3
/// (queryid -7318…, 2.6 k calls/s, 0.02 ms)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    pub file: String,
    pub line: usize,
    pub queryid: i64,
    /// Calls in the snapshot (since the reset), or between the two snapshots.
    pub calls: u64,
    /// Mean execution time in milliseconds, over the same calls.
    pub mean_ms: f64,
    /// Calls per second between the two snapshots; `None` with one snapshot, or when the
    /// entry was evicted between them.
    pub per_second: Option<f64>,
}

// Every figure is finite (the reader refuses NaN and infinities), so equality is total.
impl Eq for Origin {}

impl Origin {
    pub fn describe(&self) -> String {
        format!("workload entry at {}:{} ({})", self.file, self.line, self.traffic())
    }

    /// `queryid 42, 2.6 k calls/s, 0.02 ms`.
    pub fn traffic(&self) -> String {
        let how_often = match self.per_second {
            Some(rate) => format!("{} calls/s", quantity(rate)),
            None => format!("{} calls", quantity(self.calls as f64)),
        };
        format!("queryid {}, {how_often}, {} ms", self.queryid, quantity(self.mean_ms))
    }

    /// How busy the entry keeps the pool: calls per second, else calls.
    pub fn weight(&self) -> f64 {
        self.per_second.unwrap_or(self.calls as f64)
    }
}

/// `2.6 k`, `310`, `12.5`, `0.02`: three significant figures at most, thousands as `k`.
pub fn quantity(value: f64) -> String {
    if value >= 1_000_000.0 {
        return format!("{} M", quantity(value / 1_000_000.0));
    }
    if value >= 1000.0 {
        return format!("{} k", quantity(value / 1000.0));
    }
    if value >= 100.0 || value == 0.0 {
        return format!("{value:.0}");
    }
    let digits = (2 - value.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let text = format!("{value:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}
