//! UTC timestamps as MCP writes them (ISO 8601 / RFC 3339 with milliseconds and `Z`: a task's
//! `createdAt`), and the proleptic Gregorian calendar behind them (Howard Hinnant's
//! `days_from_civil` and `civil_from_days`). Pure arithmetic on `SystemTime` and day counts: no
//! time zones, no leap seconds, no clock reading.

use std::time::{Duration, SystemTime};

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1–12, day 1–31; not checked).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `(year, month, day)` of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Whole seconds since the epoch (0 for a time before it).
pub fn unix_seconds(time: SystemTime) -> i64 {
    time.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// `YYYY-MM-DD` of a time (UTC).
pub fn utc_date(time: SystemTime) -> String {
    let (y, m, d) = civil_from_days(unix_seconds(time).div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` of a time, e.g. `2025-11-25T10:00:00.123Z`.
pub fn utc_rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(SystemTime::UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let of_day = unix_seconds(time).rem_euclid(86_400);
    format!(
        "{}T{:02}:{:02}:{:02}.{:03}Z",
        utc_date(time),
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates_and_times() {
        assert_eq!(utc_rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_764_064_800_123);
        assert_eq!(utc_rfc3339(t), "2025-11-25T10:00:00.123Z");
        assert_eq!(utc_date(SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29");
        for days in [-719_468, -1, 0, 1, 11_016, 20_000, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
    }
}
