//! Chapter 5 — session ids and timestamps.
//!
//! Ids are the UTC date and time plus a fraction of the second, so that sorting file names
//! sorts sessions by time and a prefix such as `20261129-09` finds one without opening files.
//! The calendar arithmetic is a few lines of civil-from-days, not a date library.

use std::time::{SystemTime, UNIX_EPOCH};

// ANCHOR: ids
/// A session id for this instant: UTC date and time, then 4 hex digits counting the fraction
/// of that second in 65,536ths, so that ids sort by time even within one second (`-c` picks
/// the latest by sorting names). `salt` moves to the next value when that id is taken.
pub fn new_session_id(now: SystemTime, salt: u64) -> String {
    let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let (date, time) = civil_parts(since_epoch.as_secs());
    let fraction = (u64::from(since_epoch.subsec_nanos()) << 16) / 1_000_000_000;
    let suffix = (fraction + salt).min(0xffff);
    format!("{:04}{:02}{:02}-{:02}{:02}{:02}-{suffix:04x}", date.0, date.1, date.2, time.0, time.1, time.2)
}

/// Now as RFC 3339 in UTC with milliseconds: `2026-11-29T09:15:00.123Z`.
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

pub fn rfc3339(time: SystemTime) -> String {
    let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let ((year, month, day), (hour, minute, second)) = civil_parts(since_epoch.as_secs());
    let millis = since_epoch.subsec_millis();
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z")
}

// ANCHOR_END: ids

// ANCHOR: civil
type Date = (i64, u32, u32);
type Clock = (u64, u64, u64);

fn civil_parts(seconds: u64) -> (Date, Clock) {
    let days = (seconds / 86_400) as i64;
    let of_day = seconds % 86_400;
    (civil_from_days(days), (of_day / 3600, of_day / 60 % 60, of_day % 60))
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's algorithm: count in 400-year eras that start on March 1st, so the
/// leap day is the last day of the shifted year).
pub(crate) fn civil_from_days(days: i64) -> Date {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
// ANCHOR_END: civil
