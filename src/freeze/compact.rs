//! Times as the calendar cache stores them: numbers, not text.
//!
//! chrono serializes its times as ISO 8601 strings whatever the format, and parsing 20,000 of
//! them back was the largest cost of reading a cached 10,000-event calendar. Fields marked
//! `#[serde(with = "compact")]` are stored as seconds and nanoseconds instead (any nesting of
//! `Vec`, `Option` and tuples of the types below).

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, NaiveTime, Timelike, Utc};
use serde::de::{DeserializeOwned, Error};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A value with a compact stored form.
pub trait Compact: Sized {
    type Stored: Serialize + DeserializeOwned;
    fn store(&self) -> Self::Stored;
    /// `None`: out of range (a file another build wrote).
    fn restore(stored: Self::Stored) -> Option<Self>;
}

pub fn serialize<T: Compact, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    value.store().serialize(s)
}

pub fn deserialize<'de, T: Compact, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    T::restore(T::Stored::deserialize(d)?).ok_or_else(|| D::Error::custom("a stored time out of range"))
}

/// Wall-clock time: seconds since 1970-01-01T00:00 (as if UTC) and nanoseconds.
impl Compact for NaiveDateTime {
    type Stored = (i64, u32);
    fn store(&self) -> (i64, u32) {
        let t = self.and_utc();
        (t.timestamp(), t.timestamp_subsec_nanos())
    }
    fn restore((seconds, nanos): (i64, u32)) -> Option<NaiveDateTime> {
        DateTime::from_timestamp(seconds, nanos).map(|t| t.naive_utc())
    }
}

impl Compact for DateTime<Utc> {
    type Stored = (i64, u32);
    fn store(&self) -> (i64, u32) {
        (self.timestamp(), self.timestamp_subsec_nanos())
    }
    fn restore((seconds, nanos): (i64, u32)) -> Option<DateTime<Utc>> {
        DateTime::from_timestamp(seconds, nanos)
    }
}

impl Compact for NaiveTime {
    type Stored = (u32, u32);
    fn store(&self) -> (u32, u32) {
        (self.num_seconds_from_midnight(), self.nanosecond())
    }
    fn restore((seconds, nanos): (u32, u32)) -> Option<NaiveTime> {
        NaiveTime::from_num_seconds_from_midnight_opt(seconds, nanos)
    }
}

impl Compact for NaiveDate {
    type Stored = i32;
    fn store(&self) -> i32 {
        chrono::Datelike::num_days_from_ce(self)
    }
    fn restore(days: i32) -> Option<NaiveDate> {
        NaiveDate::from_num_days_from_ce_opt(days)
    }
}

/// An exact duration (chrono has no serde for it).
impl Compact for Duration {
    type Stored = (i64, i32);
    fn store(&self) -> (i64, i32) {
        (self.num_seconds(), self.subsec_nanos())
    }
    fn restore((seconds, nanos): (i64, i32)) -> Option<Duration> {
        Duration::try_seconds(seconds)?.checked_add(&Duration::nanoseconds(nanos.into()))
    }
}

impl Compact for usize {
    type Stored = u64;
    fn store(&self) -> u64 {
        *self as u64
    }
    fn restore(n: u64) -> Option<usize> {
        usize::try_from(n).ok()
    }
}

impl<T: Compact> Compact for Vec<T> {
    type Stored = Vec<T::Stored>;
    fn store(&self) -> Self::Stored {
        self.iter().map(T::store).collect()
    }
    fn restore(stored: Self::Stored) -> Option<Vec<T>> {
        stored.into_iter().map(T::restore).collect()
    }
}

impl<T: Compact> Compact for Option<T> {
    type Stored = Option<T::Stored>;
    fn store(&self) -> Self::Stored {
        self.as_ref().map(T::store)
    }
    fn restore(stored: Self::Stored) -> Option<Option<T>> {
        match stored {
            None => Some(None),
            Some(s) => T::restore(s).map(Some),
        }
    }
}

impl<A: Compact, B: Compact> Compact for (A, B) {
    type Stored = (A::Stored, B::Stored);
    fn store(&self) -> Self::Stored {
        (self.0.store(), self.1.store())
    }
    fn restore((a, b): Self::Stored) -> Option<(A, B)> {
        Some((A::restore(a)?, B::restore(b)?))
    }
}

impl<A: Compact, B: Compact, C: Compact> Compact for (A, B, C) {
    type Stored = (A::Stored, B::Stored, C::Stored);
    fn store(&self) -> Self::Stored {
        (self.0.store(), self.1.store(), self.2.store())
    }
    fn restore((a, b, c): Self::Stored) -> Option<(A, B, C)> {
        Some((A::restore(a)?, B::restore(b)?, C::restore(c)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Times {
        #[serde(with = "super")]
        at: Vec<(NaiveDateTime, DateTime<Utc>, usize)>,
        #[serde(with = "super")]
        time: Option<NaiveTime>,
        #[serde(with = "super")]
        length: Duration,
    }

    #[test]
    fn times_read_back_equal_across_the_years_a_calendar_can_name() {
        let local = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").unwrap();
        let times = Times {
            at: ["0001-01-01T00:00:00", "1601-01-01T02:00:00", "2026-03-08T02:30:00.5", "9999-12-31T23:59:59"]
                .iter()
                .enumerate()
                .map(|(i, s)| (local(s), local(s).and_utc(), i))
                .collect(),
            time: NaiveTime::from_hms_nano_opt(23, 59, 59, 999_999_999),
            length: Duration::seconds(-90) + Duration::nanoseconds(5),
        };
        let bytes = postcard::to_stdvec(&times).unwrap();
        assert_eq!(postcard::from_bytes::<Times>(&bytes).unwrap(), times);
    }
}
