//! Chapter 2 — what went wrong, said so the user knows where to look.
//!
//! A server that refuses us answers with a status and a body in one of several shapes (JSON of
//! various dialects, an HTML error page, plain text); a transport failure is a refused
//! connection, a name that does not resolve, or a silence longer than the idle timeout. Each
//! becomes one line that quotes the server's own words, shortened, and says what to do next:
//! check the address, the key or the server, or try again. A failure after the request left
//! says that it was not sent again (chapter 8 retries only what it safely can), and why.

use super::{CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT, IDLE_TIMEOUT_VARIABLE, REQUEST_LIMIT_VARIABLE};
use crate::ch02_loop::Error;
use crate::text::{one_line, shorten};
use serde_json::Value;
use std::time::Duration;
use std::time::{SystemTime, UNIX_EPOCH};

// ANCHOR: errors
/// Turns a non-2xx response into `Error::Http` with the server's own words.
pub fn error_from_response(response: ureq::http::Response<ureq::Body>) -> Error {
    let status = response.status();
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let retry_after_ms = header("retry-after-ms")
        .and_then(|ms| ms.trim().parse::<f64>().ok())
        .map(|ms| ms.max(0.0) as u64)
        .or_else(|| header("retry-after").and_then(|value| parse_retry_after(&value, SystemTime::now())));
    if status.is_redirection() {
        return redirected(status.as_u16(), header("location"));
    }
    let body = response.into_body().read_to_vec().map(|b| String::from_utf8_lossy(&b).into_owned());
    let body = body.unwrap_or_default();
    let (message, code) = server_message(&body);
    let message = message.unwrap_or_else(|| status.canonical_reason().unwrap_or("(no message)").to_owned());
    // Error pages often repeat the status ("<title>502 Bad Gateway</title>"); say it once.
    let mut message = match message.strip_prefix(status.as_str()).and_then(|rest| rest.strip_prefix(' ')) {
        Some(rest) if !rest.is_empty() => rest.to_owned(),
        _ => message,
    };
    if messages_api_error(&body) {
        message.push_str(MESSAGES_API_ERROR);
    }
    Error::Http { status: status.as_u16(), message, retry_after_ms, code }
}
// ANCHOR_END: errors

/// Said of an error whose body has the shape of Anthropic's Messages API, which a Chat
/// Completions client did not expect: the base URL points at a server of the other API.
pub const MESSAGES_API_ERROR: &str =
    " (an error in the shape of Anthropic's Messages API: that API is reached with --api anthropic)";

/// `{"type": "error", "error": {…}}`: Anthropic's error shape (OpenAI's has no top-level type).
fn messages_api_error(body: &str) -> bool {
    let value = serde_json::from_str::<Value>(body.trim()).unwrap_or_default();
    value.get("type").and_then(Value::as_str) == Some("error")
}

// ANCHOR: output_not_parsed
/// llama.cpp's `500 The model produced output that does not match the expected <format>
/// format`: the server sampled a reply, then could not read it as the model's tool-call
/// syntax. A slip of sampling, not a broken server: the request did nothing else, and the
/// next sample usually parses (chapter 8 retries it).
pub fn output_not_parsed(message: &str) -> bool {
    message.starts_with("The model produced output that does not match the expected")
}
// ANCHOR_END: output_not_parsed

// ANCHOR: redirected
/// A 3xx: we do not follow it (see [`new_agent`]); the user learns where the server pointed,
/// so that they can check the address and pass the right one.
fn redirected(status: u16, location: Option<String>) -> Error {
    let target = location.map_or_else(|| "no Location given".to_owned(), |to| quote(&to));
    Error::Http {
        status,
        message: format!(
            "redirect to {target} not followed (API requests are never redirected); \
             if that is the right server, pass it as --base-url"
        ),
        retry_after_ms: None,
        code: None,
    }
}

// ANCHOR_END: redirected
// ANCHOR: server_message
/// The message and error code in an error body: OpenAI's `{"error": {"message", "code",
/// "type"}}`, the `{"error": "…"}` or `{"message": …}` or `{"detail": …}` of other servers,
/// the `<title>` of an HTML page, or else the text itself, shortened.
pub fn server_message(body: &str) -> (Option<String>, Option<String>) {
    let text = body.trim();
    if text.is_empty() {
        return (None, None);
    }
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        let error = value.get("error").unwrap_or(&value);
        let message =
            [error.get("message"), error.as_str().map(|_| error), value.get("message"), value.get("detail")]
                .into_iter()
                .flatten()
                .find_map(|m| {
                    m.as_str().map(str::to_owned).or_else(|| (!m.is_null()).then(|| m.to_string()))
                });
        let code = [error.get("code"), error.get("type")]
            .into_iter()
            .flatten()
            .find_map(|c| c.as_str().map(str::to_owned).or_else(|| c.as_u64().map(|n| n.to_string())));
        return (Some(shorten(&message.unwrap_or_else(|| text.to_owned()), 300)), code);
    }
    if text.starts_with('<') {
        let lower = text.to_ascii_lowercase();
        if let (Some(start), Some(end)) = (lower.find("<title>"), lower.find("</title>"))
            && start + 7 < end
        {
            let title = one_line(&text[start + 7..end]);
            if !title.is_empty() {
                return (Some(shorten(&title, 300)), None);
            }
        }
        return (Some(shorten(&one_line(&strip_tags(text)), 300)), None);
    }
    (Some(shorten(&one_line(text), 300)), None)
}
// ANCHOR_END: server_message

/// `Retry-After` is either seconds or an HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`); the
/// wait it asks for is chapter 8's.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<u64> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(seconds.saturating_mul(1000));
    }
    let at = parse_http_date(value)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_millis() as u64;
    Some(at.saturating_mul(1000).saturating_sub(now))
}

/// Seconds since the epoch for an IMF-fixdate; the other two legacy forms are not worth it.
fn parse_http_date(value: &str) -> Option<u64> {
    let parts: Vec<&str> = value.split_whitespace().collect();
    let [_weekday, day, month, year, time, "GMT"] = parts.as_slice() else { return None };
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? as i64 + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let mut clock = time.split(':').map(|n| n.parse::<i64>().ok());
    let (hour, minute, second) = (clock.next()??, clock.next()??, clock.next()??);
    let days = days_from_civil(year, month, day);
    u64::try_from(days * 86_400 + hour * 3600 + minute * 60 + second).ok()
}

/// Days from 1970-01-01 to the date (Howard Hinnant's days_from_civil; chapter 5 has its
/// inverse, `civil_from_days`, and a test runs one into the other).
pub(crate) fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

// ANCHOR: network_error
/// A transport failure, said in a way that tells the user where to look.
pub fn network_error(url: &str, error: ureq::Error, idle: Duration) -> Error {
    use ureq::Timeout;
    let text = match &error {
        // Nothing was sent: chapter 8 may try again.
        ureq::Error::ConnectionFailed => {
            return Error::Refused(format!(
                "cannot connect to {url} — is the server running? check --base-url"
            ));
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            return Error::Refused(format!(
                "cannot connect to {url} (connection refused) — is the server running? check --base-url"
            ));
        }
        // std reports a failed DNS lookup as a plain I/O error with this text; the request
        // never left this machine, so there is nothing the server could have done.
        dns if matches!(dns, ureq::Error::HostNotFound)
            || dns.to_string().contains("failed to lookup address information") =>
        {
            format!("cannot resolve the host of {url} — check --base-url and your network")
        }
        ureq::Error::Timeout(Timeout::Connect | Timeout::Resolve) => {
            format!(
                "cannot connect to {url} within {} s — check --base-url and your network",
                CONNECT_TIMEOUT.as_secs()
            )
        }
        ureq::Error::Timeout(Timeout::PerWrite) => {
            format!(
                "the server took no byte of the request for {} s ({IDLE_TIMEOUT_VARIABLE}); check the \
                 server, then try again",
                seconds(idle)
            )
        }
        ureq::Error::Timeout(Timeout::Global) => return limit_error(),
        // The only other timeout we set is the per-read one: the server fell silent.
        ureq::Error::Timeout(_) => return idle_error(idle),
        // A TLS client reading a plain-HTTP answer ("HTTP/1.1 400…") sees a record type that
        // does not exist: the base URL says https:// to a server that speaks plain HTTP.
        tls if url.starts_with("https://") && tls.to_string().contains("InvalidContentType") => {
            format!(
                "{url}: the server answered in plain HTTP, not HTTPS — use http:// instead of https:// \
                 in --base-url"
            )
        }
        other => format!("{url}: {other} — {SENT_NOT_REPEATED}; check the server, then try again"),
    };
    Error::Network(text)
}
// ANCHOR_END: network_error
/// Why a failure after the request left is not retried, in plain words.
pub const SENT_NOT_REPEATED: &str =
    "the request had been sent, so it is not sent again (the server may already be running it)";

// ANCHOR: idle_error
/// The server sent nothing for `idle`: one line that names the variable that sets the bound.
pub fn idle_error(idle: Duration) -> Error {
    Error::Network(format!("{}; {SENT_NOT_REPEATED}", idle_message(idle)))
}

/// The request took longer in all than `MINI_AGENT_REQUEST_TIMEOUT_SECS` allows.
pub fn limit_error() -> Error {
    Error::Network(format!("{}; {SENT_NOT_REPEATED}", limit_message()))
}

/// "the reply did not end within the request's time limit (MINI_AGENT_REQUEST_TIMEOUT_SECS)".
pub fn limit_message() -> String {
    format!("the reply did not end within the request's time limit ({REQUEST_LIMIT_VARIABLE})")
}

/// "no byte from the server for 300 s (MINI_AGENT_IDLE_TIMEOUT_SECS)".
pub fn idle_message(idle: Duration) -> String {
    format!("no byte from the server for {} s ({IDLE_TIMEOUT_VARIABLE})", seconds(idle))
}

/// `300` for whole seconds, `0.2` for the short bounds tests use.
pub fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 { format!("{secs:.0}") } else { format!("{secs}") }
}

/// The idle timeout from `MINI_AGENT_IDLE_TIMEOUT_SECS`'s value: unset or empty is the
/// default; anything but a whole number of seconds, at least 1, is a clear error.
pub fn parse_idle_timeout(value: Option<&str>) -> Result<Duration, Error> {
    let default = format!("default {}", DEFAULT_IDLE_TIMEOUT.as_secs());
    Ok(whole_seconds(IDLE_TIMEOUT_VARIABLE, value, &default)?.unwrap_or(DEFAULT_IDLE_TIMEOUT))
}
// ANCHOR_END: idle_error

/// A short, one-line quote of a body, for "this is not what we expected" errors.
pub fn quote(body: &str) -> String {
    let text = one_line(body);
    if text.is_empty() { "(empty body)".into() } else { format!("{:?}", shorten(&text, 300)) }
}

fn strip_tags(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

/// The request limit from `MINI_AGENT_REQUEST_TIMEOUT_SECS`'s value: unset or empty is no
/// limit; anything but a whole number of seconds, at least 1, is a clear error.
pub fn parse_request_limit(value: Option<&str>) -> Result<Option<Duration>, Error> {
    whole_seconds(REQUEST_LIMIT_VARIABLE, value, "unset: no limit")
}

/// A variable's whole seconds (`None` when unset or empty); `unset` says what that means.
pub(crate) fn whole_seconds(
    variable: &str,
    value: Option<&str>,
    unset: &str,
) -> Result<Option<Duration>, Error> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => match text.parse::<u64>() {
            Ok(secs) if secs >= 1 => Ok(Some(Duration::from_secs(secs))),
            _ => Err(Error::Config(format!(
                "{variable} must be a whole number of seconds, at least 1 ({unset}), got {text:?}"
            ))),
        },
    }
}
