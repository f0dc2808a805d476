//! The clock a replayed server reads.
//!
//! Some servers answer with what the clock implies, not only with the clock itself: a weekday
//! next to a date, "09:15 today" turned into a full date, a daylight-saving flag. The `clock`
//! matching rule masks date-times, but those derived values replay as recorded only when the
//! server under test believes it is the recording's moment. [`ClockMode::Recorded`] makes
//! `replay --server` start the server under [libfaketime] with its clock set to the moment the
//! recording started ([`recorded_start`]) and running forward from there; the time between
//! messages still passes as it does (so masked seconds still differ, and the mask stays).
//!
//! A recording asks for it in its sidecar (`{"clock": "recorded"}` in `NAME.rules.json`); the
//! command line can force either mode (`--clock recorded|system`).
//!
//! Also here: parsing the header's UTC times (the calendar is `proto::timestamp`).
//! Not here: masking of clock values (`matching`), starting the child (`replay`).
//!
//! [libfaketime]: https://github.com/wolfcw/libfaketime

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use mcpwire::proto::timestamp::{civil_from_days, days_from_civil};
pub use mcpwire::proto::timestamp::{utc_date, utc_rfc3339};
use mcpwire::recording::Header;

/// Which clock the server under test reads during a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockMode {
    /// The machine's clock, untouched.
    #[default]
    System,
    /// The recording's clock, through libfaketime (see the module docs).
    Recorded,
}

impl ClockMode {
    /// `system` or `recorded`, as the command line and the sidecar spell it.
    pub fn parse(text: &str) -> Option<ClockMode> {
        match text {
            "system" => Some(ClockMode::System),
            "recorded" => Some(ClockMode::Recorded),
            _ => None,
        }
    }
}

/// The variable that names the libfaketime library to preload, overriding the search.
pub const LIBFAKETIME_ENV: &str = "MCP_LIBFAKETIME";

/// The moment the recording started, in seconds since the Unix epoch: the header's `started_at`
/// (RFC 3339, UTC: the instant of `t_ms` 0), else noon UTC of its `recorded_at` date (at noon
/// UTC every time zone from UTC-12 to UTC+11 is on that date).
///
/// # Errors
/// When the header has neither member, or one that does not parse.
pub fn recorded_start(header: &Header) -> Result<i64, String> {
    if let Some(value) = header.extra.get("started_at") {
        let text = value.as_str().ok_or("started_at is not a string")?;
        return parse_utc(text).ok_or_else(|| format!("started_at {text:?} is not a UTC RFC 3339 time"));
    }
    let Some(value) = header.extra.get("recorded_at") else {
        return Err("the header has neither started_at nor recorded_at".into());
    };
    let text = value.as_str().unwrap_or_default();
    let days = parse_date(text).ok_or_else(|| format!("recorded_at {text:?} is not a YYYY-MM-DD date"))?;
    Ok(days * 86_400 + 12 * 3600)
}

/// The libfaketime library to preload: [`LIBFAKETIME_ENV`] when set, else the multi-threaded
/// build (servers run threads: Node always, Python often) where the distributions put it.
///
/// # Errors
/// When it is nowhere, with what to install.
pub fn find_libfaketime() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(LIBFAKETIME_ENV) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("{LIBFAKETIME_ENV}={} is not a file", path.display()))
        };
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/usr/lib") {
        // Debian's multiarch directories: /usr/lib/x86_64-linux-gnu/faketime, ...
        let mut arch: Vec<PathBuf> = entries.flatten().map(|e| e.path().join("faketime")).collect();
        arch.sort();
        dirs.extend(arch);
    }
    dirs.extend(["/usr/lib/faketime", "/usr/lib64/faketime", "/usr/local/lib/faketime"].map(PathBuf::from));
    for name in ["libfaketimeMT.so.1", "libfaketime.so.1"] {
        if let Some(found) = dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()) {
            return Ok(found);
        }
    }
    Err(format!(
        "replaying under the recorded clock needs libfaketime, which is not installed \
         (Debian/Ubuntu: apt-get install faketime; or set {LIBFAKETIME_ENV} to the library), \
         or replay with --clock system"
    ))
}

/// The environment that makes a child's clock start at `start` (seconds since the epoch) and
/// run forward: libfaketime preloaded, the start given as epoch seconds (so the child's `TZ`
/// does not shift it), monotonic clocks left alone (timers and timeouts keep working).
/// `inherited_preload` is the runner's own `LD_PRELOAD`: kept, less any libfaketime in it (the
/// runner may itself run under another fake clock).
pub fn fake_clock_env(lib: &Path, start: i64, inherited_preload: Option<&str>) -> Vec<(String, String)> {
    let mut preload = vec![lib.to_string_lossy().into_owned()];
    preload.extend(
        inherited_preload
            .unwrap_or_default()
            .split([':', ' '])
            .filter(|entry| !entry.is_empty() && !entry.contains("libfaketime"))
            .map(str::to_owned),
    );
    vec![
        ("LD_PRELOAD".into(), preload.join(":")),
        ("FAKETIME".into(), format!("@{start}")),
        ("FAKETIME_FMT".into(), "%s".into()),
        ("DONT_FAKE_MONOTONIC".into(), "1".into()),
    ]
}

fn number(text: &str) -> Option<i64> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse().ok())?
}

/// Days since the epoch of `YYYY-MM-DD`, checking that the day exists.
fn parse_date(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d) = (number(&text[..4])?, number(&text[5..7])?, number(&text[8..])?);
    let days = days_from_civil(y, m, d);
    (civil_from_days(days) == (y, m, d)).then_some(days)
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SS[.fff]Z` (fractions dropped).
pub fn parse_utc(text: &str) -> Option<i64> {
    let (date, time) = text.split_once('T')?;
    let time = time.strip_suffix('Z')?;
    let whole =
        time.split_once('.').map_or(time, |(whole, fraction)| if number(fraction).is_some() { whole } else { "" });
    let mut parts = whole.split(':');
    let (h, m, s) = (number(parts.next()?)?, number(parts.next()?)?, number(parts.next()?)?);
    if parts.next().is_some() || whole.len() != 8 || h > 23 || m > 59 || s > 60 {
        return None;
    }
    Some(parse_date(date)? * 86_400 + h * 3600 + m * 60 + s)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use std::time::{Duration, SystemTime};

    use super::*;

    fn header(extra: serde_json::Value) -> Header {
        let mut value = json!({"mcp_recording": 1, "name": "n", "transport": "stdio", "protocol_version": "x"});
        value.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn calendar_conversions_agree_with_known_dates() {
        assert_eq!(utc_date(SystemTime::UNIX_EPOCH), "1970-01-01");
        assert_eq!(utc_date(SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)), "2026-01-01");
        assert_eq!(utc_date(SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29");
        assert_eq!(parse_utc("2026-11-30T01:02:12Z"), Some(1_796_000_532));
        assert_eq!(parse_utc("2028-02-29T23:59:59.999Z"), Some(1_835_481_599));
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_835_481_599_250);
        assert_eq!(utc_rfc3339(t), "2028-02-29T23:59:59.250Z");
        for bad in ["2027-02-29T00:00:00Z", "2026-11-30T24:00:00Z", "2026-11-30T01:02:12", "2026-11-30 01:02:12Z"] {
            assert_eq!(parse_utc(bad), None, "{bad}");
        }
        assert_eq!(parse_utc("2026-11-30T01:02:12+01:00"), None, "UTC only");
    }

    #[test]
    fn the_start_is_started_at_else_noon_of_recorded_at() {
        assert_eq!(recorded_start(&header(json!({"started_at": "2026-11-30T01:02:12.400Z"}))), Ok(1_796_000_532));
        let noon = recorded_start(&header(json!({"recorded_at": "2026-11-30"}))).unwrap();
        assert_eq!(noon, parse_utc("2026-11-30T12:00:00Z").unwrap());
        assert!(recorded_start(&header(json!({}))).unwrap_err().contains("neither"));
        assert!(recorded_start(&header(json!({"started_at": "yesterday"}))).unwrap_err().contains("yesterday"));
    }

    #[test]
    fn the_fake_clock_replaces_an_inherited_libfaketime_and_keeps_other_preloads() {
        let env = fake_clock_env(
            Path::new("/lib/libfaketimeMT.so.1"),
            1_796_000_532,
            Some("/x/libfaketime.so.1:/y/libother.so"),
        );
        let get = |k: &str| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        assert_eq!(get("LD_PRELOAD"), Some("/lib/libfaketimeMT.so.1:/y/libother.so"));
        assert_eq!(get("FAKETIME"), Some("@1796000532"));
        assert_eq!(get("FAKETIME_FMT"), Some("%s"));
        assert_eq!(get("DONT_FAKE_MONOTONIC"), Some("1"));
    }

    #[test]
    fn clock_modes_parse_as_spelled() {
        assert_eq!(ClockMode::parse("recorded"), Some(ClockMode::Recorded));
        assert_eq!(ClockMode::parse("system"), Some(ClockMode::System));
        assert_eq!(ClockMode::parse("fake"), None);
        let mode: ClockMode = serde_json::from_str("\"recorded\"").unwrap();
        assert_eq!(mode, ClockMode::Recorded);
    }
}
