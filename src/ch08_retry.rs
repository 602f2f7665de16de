//! Chapter 8 — retries.
//!
//! Servers are busy sometimes: a 429 says "slow down", a 502/503/504 says a proxy or the
//! model's backend is overloaded for a moment. Trying again after a short wait usually works,
//! so [`Retrying`] wraps any [`Model`] and does exactly that — and nothing more. What it does
//! *not* retry matters as much:
//!
//! * a timeout or a cut connection: the server may have received the request and acted on it;
//! * Ctrl+C: the user wants to stop, not to wait;
//! * a 429 that means the quota is used up (`insufficient_quota`): waiting will not help;
//! * a stream that has begun: its text has been shown, a second try would repeat it. Every
//!   failure retried here — a status, a refused connection — happens before the first byte of
//!   the body, so a streaming request is retried exactly when nothing was shown yet; a stream
//!   cut in the middle is a network error, never retried;
//! * a `Retry-After` longer than a minute: we say how long instead of hanging silently.
//!
//! One 500 is retried although 500s are not: llama.cpp's "The model produced output that does
//! not match the expected … format". The server sampled a reply and could not read it as the
//! model's tool-call syntax. That is a slip of sampling, not a broken server, and the request
//! did nothing else, so the next sample is worth asking for.
//!
//! The waits grow exponentially with some randomness ("jitter") so that many clients that
//! failed together do not all come back at the same instant. Every retry is an event, so the
//! terminal shows it and the journal records it.

use crate::ch02_loop::command_line::Help;
use crate::ch02_loop::{Error, Event, Model, Notice, Observer, Reply, Request, interrupted};
use crate::ch02_model::errors::output_not_parsed;
use crate::ch02_model::layers::{ModelLayer, OPENAI_API, RegisterModel};
use crate::ch03_tools::url_credentials::redact_userinfo;
use crate::ch04_terminal::sanitize::sanitize;
use crate::ch05_sessions::Body;
use crate::random::XorShift;
use crate::text::{first_line, one_line};
use serde_json::{Value, json};
use std::any::Any;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest `Retry-After` we honour; a server asking for more gets an error that says so.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// The first backoff; each further retry doubles it, up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// The statuses worth another try: "slow down", and a gateway or backend busy for a moment.
/// Another API may say so with other statuses too (chapter 19's 500 and 529).
pub const RETRY_STATUSES: &[u16] = &[429, 502, 503, 504];
/// How often a backoff sleep looks at the Ctrl+C flag.
const SLEEP_SLICE: Duration = Duration::from_millis(50);

/// How many retries after the first request, from `MINI_AGENT_REQUEST_MAX_RETRIES`'s value.
pub fn parse_max_retries(value: Option<&str>) -> Result<u32, Error> {
    match value.map(str::trim) {
        None | Some("") => Ok(2),
        Some(text) => text.parse().map_err(|_| {
            Error::Config(format!(
                "MINI_AGENT_REQUEST_MAX_RETRIES must be a whole number (0 disables retries), got {text:?}"
            ))
        }),
    }
}

// ANCHOR: retrying
/// A Model that retries its inner Model's transient failures.
pub struct Retrying<M: Model> {
    pub inner: M,
    max_retries: u32,
    /// Waits between attempts; interruptible. Tests replace it to run instantly.
    sleep: fn(Duration) -> Result<(), Error>,
    /// The statuses retried ([`RETRY_STATUSES`] unless changed).
    statuses: &'static [u16],
}

impl<M: Model> Retrying<M> {
    /// `max_retries` retries after the first request (0 disables retrying).
    pub fn new(inner: M, max_retries: u32) -> Self {
        Retrying { inner, max_retries, sleep: sleep_interruptibly, statuses: RETRY_STATUSES }
    }

    /// Retries these statuses instead of [`RETRY_STATUSES`].
    pub fn with_statuses(mut self, statuses: &'static [u16]) -> Self {
        self.statuses = statuses;
        self
    }

    /// Replaces the wait between attempts (tests use a sleep that returns at once).
    pub fn with_sleep(mut self, sleep: fn(Duration) -> Result<(), Error>) -> Self {
        self.sleep = sleep;
        self
    }
}
// ANCHOR_END: retrying

// ANCHOR: retrying_complete
impl<M: Model> Model for Retrying<M> {
    fn complete(&mut self, request: &Request, observer: &mut dyn Observer) -> Result<Reply, Error> {
        let mut attempt = 0;
        loop {
            let error = match self.inner.complete(request, observer) {
                Ok(reply) => return Ok(reply),
                Err(error) => error,
            };
            let Retry { wait, reason } = decide(error, attempt, self.max_retries, self.statuses)?;
            attempt += 1;
            let wait_ms = wait.as_millis() as u64;
            observer.event(Event::Notice(&RetryNotice { attempt, wait_ms, reason }))?;
            (self.sleep)(wait)?;
        }
    }
}
// ANCHOR_END: retrying_complete

// ANCHOR: retry_notice
/// A failed request will be tried again after `wait_ms`: a line on the screen, a `retry`
/// record in the journal, a `retry` event for `--json`.
#[derive(Clone, Debug)]
pub struct RetryNotice {
    pub attempt: u32,
    pub wait_ms: u64,
    pub reason: String,
}

impl Notice for RetryNotice {
    fn line(&self, width: Option<usize>) -> Option<String> {
        let seconds = self.wait_ms as f64 / 1000.0;
        let line = format!("retry {} in {seconds:.1}s: ", self.attempt);
        let reason = match width {
            Some(width) => first_line(&sanitize(&self.reason), width.saturating_sub(line.len() + 1).max(40)),
            None => one_line(&sanitize(&self.reason)),
        };
        Some(format!("{line}{reason}"))
    }

    fn spinner(&self) -> &'static str {
        "retrying…"
    }

    fn records(&self) -> Vec<Value> {
        let RetryNotice { attempt, wait_ms, reason } = self.clone();
        vec![json!(Body::Retry { attempt, wait_ms, reason })]
    }

    fn json(&self) -> Option<Value> {
        let RetryNotice { attempt, wait_ms, reason } = self;
        Some(json!({"type": "retry", "attempt": attempt, "wait_ms": wait_ms, "reason": reason}))
    }

    /// The reason is the agent's own line about an error, which may quote the request's URL:
    /// its user-info goes too, however short the password (too short to be one of the
    /// redactor's secrets, it would otherwise reach the screen and the journal).
    fn cleaned(&self, clean: &dyn Fn(&str) -> String) -> Box<dyn Notice> {
        let reason = redact_userinfo(&self.reason).unwrap_or_else(|| self.reason.clone());
        Box::new(RetryNotice { reason: clean(&reason), ..self.clone() })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
// ANCHOR_END: retry_notice

// ANCHOR: retry
/// Try again after `wait`; `reason` is what failed, for the user and the journal.
struct Retry {
    wait: Duration,
    reason: String,
}
// ANCHOR_END: retry

// ANCHOR: decide
/// The whole policy, in one place: is this failure worth another try, and after how long?
/// If not, the error to return, with the reason added where the user would wonder why.
fn decide(error: Error, attempt: u32, max_retries: u32, statuses: &[u16]) -> Result<Retry, Error> {
    let (status, message, retry_after_ms, code) = match error {
        Error::Http { status, message, retry_after_ms, code } => (status, message, retry_after_ms, code),
        // Nothing reached the server: as safe to retry as a 503 (a server restarting).
        Error::Refused(message) if attempt < max_retries => {
            return Ok(Retry { wait: backoff(attempt), reason: message });
        }
        // Network: the request had left, and the server may already be running it.
        // Interrupted: the user said stop. The others
        // would fail the same way again.
        Error::Refused(_)
        | Error::Network(_)
        | Error::Interrupted
        | Error::Model(_)
        | Error::ReplyCut { .. }
        | Error::Usage(_)
        | Error::Config(_)
        | Error::Io { .. }
        | Error::Other(_) => return Err(error),
    };
    let give_up = |why: Option<String>| {
        let message = match why {
            Some(why) => format!("{message} ({why})"),
            None => message.clone(),
        };
        Err(Error::Http { status, message, retry_after_ms, code: code.clone() })
    };
    // llama.cpp's 500 for a reply it sampled but could not parse is a slip of sampling, not a
    // failing server: nothing ran, and the next sample usually parses.
    let slip = status == 500 && output_not_parsed(&message);
    if !statuses.contains(&status) && !slip {
        return give_up(None);
    }
    if code.as_deref() == Some("insufficient_quota") {
        let why = "not retried: insufficient_quota means the account's quota is used up and waiting \
                   will not help; check the plan and billing";
        return give_up(Some(why.into()));
    }
    if attempt >= max_retries {
        let retries = if max_retries == 1 { "retry" } else { "retries" };
        return give_up((max_retries > 0).then(|| format!("still failing after {max_retries} {retries}")));
    }
    let wait = match retry_after_ms.map(Duration::from_millis) {
        Some(wait) if wait > MAX_RETRY_AFTER => {
            let (asked, limit) = (wait.as_secs().max(1), MAX_RETRY_AFTER.as_secs());
            return give_up(Some(format!(
                "not retried: the server asks to wait {asked} s, longer than the {limit} s we wait"
            )));
        }
        Some(wait) => wait,
        None => backoff(attempt),
    };
    let reason = match slip {
        // What it means first: a retry line is one line, and the server's words are long.
        true => format!("a sampling slip of the model, nothing ran: asking again ({status} {message})"),
        false => format!("{status} {message}"),
    };
    Ok(Retry { wait, reason })
}
// ANCHOR_END: decide

// ANCHOR: backoff
/// Exponential backoff with "equal jitter": half the delay is fixed, half is random.
fn backoff(attempt: u32) -> Duration {
    let delay = FIRST_BACKOFF.saturating_mul(1 << attempt.min(16)).min(MAX_BACKOFF);
    let half = delay / 2;
    half + half.mul_f64(random_fraction())
}

/// A number in [0, 1) that differs from call to call; no need for a random-number crate.
fn random_fraction() -> f64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    // xorshift64 scrambles the clock's low bits into all 64.
    XorShift::new(nanos).fraction()
}

/// Sleeps `duration` in small slices, returning early with `Interrupted` on Ctrl+C.
pub(crate) fn sleep_interruptibly(duration: Duration) -> Result<(), Error> {
    let mut left = duration;
    while !left.is_zero() {
        if interrupted() {
            return Err(Error::Interrupted);
        }
        let slice = left.min(SLEEP_SLICE);
        std::thread::sleep(slice);
        left -= slice;
    }
    if interrupted() { Err(Error::Interrupted) } else { Ok(()) }
}
// ANCHOR_END: backoff

// ANCHOR: register
/// Chapter 8's part: how many times a failed request is tried again, and the layer that tries
/// it, around chapter 2's Chat Completions client (a chapter that brings another wire format
/// retries it with its own statuses).
pub fn register(registry: &mut dyn RegisterModel) {
    registry.model_layer(ModelLayer::Retries, |model, context| match context.wire {
        OPENAI_API => retrying(model?, RETRY_STATUSES),
        _ => model,
    });
    registry.help(Help {
        chapter: 8,
        page: "",
        section: "ENVIRONMENT",
        lines: &[
            "  MINI_AGENT_REQUEST_MAX_RETRIES  retries of a failed model request (default 2; 0 disables)",
        ],
    });
}
// ANCHOR_END: register

/// Chapter 8's layer: `model`, retried as `MINI_AGENT_REQUEST_MAX_RETRIES` says (default 2) on
/// these statuses.
pub fn retrying(model: Box<dyn Model>, statuses: &'static [u16]) -> Result<Box<dyn Model>, Error> {
    let retries = parse_max_retries(std::env::var("MINI_AGENT_REQUEST_MAX_RETRIES").ok().as_deref())?;
    Ok(Box::new(Retrying::new(model, retries).with_statuses(statuses)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ch02_loop::Message;
    use crate::ch02_model::{ChatClient, ClientConfig};
    use crate::scripted_server::{ScriptedServer, Step};

    /// Records every retry event as `(attempt, wait_ms, reason)`.
    #[derive(Default)]
    struct Retries(Vec<(u32, u64, String)>);
    impl Observer for Retries {
        fn event(&mut self, event: Event) -> Result<(), Error> {
            if let Event::Notice(notice) = event
                && let Some(RetryNotice { attempt, wait_ms, reason }) = notice.as_any().downcast_ref()
            {
                self.0.push((*attempt, *wait_ms, reason.clone()));
            }
            Ok(())
        }
    }

    fn no_wait(_: Duration) -> Result<(), Error> {
        Ok(())
    }

    /// Runs one request through `Retrying<ChatClient>` against `steps`; returns the result,
    /// the retries seen and how many requests reached the server.
    fn run(steps: Vec<Step>, max_retries: u32) -> (Result<Reply, Error>, Retries, usize) {
        let server = ScriptedServer::scripted(steps).expect("server");
        let config = ClientConfig { base_url: server.url.clone(), api_key: None, model: "m".into() };
        let client = ChatClient::new(config).expect("client");
        let mut model = Retrying::new(client, max_retries).with_sleep(no_wait);
        let mut retries = Retries::default();
        let messages = [Message::User { content: "hi".into() }];
        let result = model.complete(&Request { messages: &messages, tools: &[] }, &mut retries);
        (result, retries, server.requests().len())
    }

    fn with_header(status: u16, name: &str, value: &str) -> Step {
        let body = serde_json::json!({"error": {"message": "slow down", "type": "requests"}}).to_string();
        Step::Reply { status, headers: vec![(name.into(), value.into())], body }
    }

    #[test]
    fn each_transient_status_is_retried_until_success() {
        for status in [429, 502, 503, 504] {
            let (result, retries, requests) = run(vec![Step::error(status, "busy"), Step::text("ok")], 2);
            assert_eq!(result.expect("second try succeeds").content.as_deref(), Some("ok"));
            assert_eq!(requests, 2);
            assert_eq!(retries.0.len(), 1);
            assert_eq!((retries.0[0].0, retries.0[0].2.clone()), (1, format!("{status} busy")));
            assert!((250..=500).contains(&retries.0[0].1), "first backoff 0.25–0.5 s: {:?}", retries.0);
        }
    }

    #[test]
    fn a_retry_reason_loses_the_user_info_of_a_url_however_short_the_password() {
        let notice = RetryNotice {
            attempt: 1,
            wait_ms: 500,
            reason: "cannot connect to http://u:pw@127.0.0.1:1/v1/chat/completions".into(),
        };
        let cleaned = notice.cleaned(&|text| text.to_string());
        let line = cleaned.line(None).expect("a retry has a line");
        assert_eq!(
            line,
            "retry 1 in 0.5s: cannot connect to http://[redacted]@127.0.0.1:1/v1/chat/completions"
        );
        assert!(!cleaned.records()[0].to_string().contains("pw@"), "{:?}", cleaned.records());
    }

    #[test]
    fn other_statuses_are_not_retried() {
        for status in [400, 401, 404, 500] {
            let (result, retries, requests) = run(vec![Step::error(status, "no"), Step::text("ok")], 2);
            assert!(matches!(result, Err(Error::Http { status: s, .. }) if s == status));
            assert_eq!((requests, retries.0.len()), (1, 0));
        }
    }

    #[test]
    fn llama_cpps_unparsed_output_is_retried_within_the_bound_and_said_so() {
        // llama-server's exact body when the model's tool call does not parse.
        let slip = || {
            let body = serde_json::json!({"error": {"code": 500, "message":
                "The model produced output that does not match the expected peg-native format",
                "type": "server_error"}});
            Step::Reply { status: 500, headers: vec![], body: body.to_string() }
        };
        let (result, retries, requests) = run(vec![slip(), slip(), Step::text("ok")], 2);
        assert_eq!(result.expect("the third sample parses").content.as_deref(), Some("ok"));
        assert_eq!((requests, retries.0.len()), (3, 2));
        assert!(
            retries.0[0].2.starts_with("a sampling slip of the model, nothing ran: asking again (500 The")
        );
        let (result, retries, requests) = run(vec![slip(), slip(), slip(), Step::text("ok")], 2);
        assert_eq!((requests, retries.0.len()), (3, 2), "bounded by the retry count");
        let text = result.expect_err("still slipping").to_string();
        assert!(text.contains("(still failing after 2 retries) — the server could not read"), "{text}");
    }

    #[test]
    fn retries_stop_at_the_limit_and_say_so() {
        let steps = vec![Step::error(503, "busy"), Step::error(503, "busy"), Step::error(503, "busy")];
        let (result, retries, requests) = run(steps, 2);
        assert_eq!(requests, 3);
        assert_eq!(retries.0.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 2]);
        assert!((500..=1000).contains(&retries.0[1].1), "second backoff doubles: {:?}", retries.0);
        assert_eq!(
            result.expect_err("gives up").to_string(),
            "model request failed: 503 busy (still failing after 2 retries) — the server failed; try again later"
        );
    }

    #[test]
    fn zero_retries_disables_retrying() {
        let (result, retries, requests) = run(vec![Step::error(429, "busy"), Step::text("ok")], 0);
        assert!(matches!(result, Err(Error::Http { status: 429, ref message, .. }) if message == "busy"));
        assert_eq!((requests, retries.0.len()), (1, 0));
    }

    #[test]
    fn exhausted_quota_is_not_retried_and_says_why() {
        let body = serde_json::json!({"error": {"message": "You exceeded your current quota",
            "type": "insufficient_quota", "code": "insufficient_quota"}});
        let step = Step::Reply { status: 429, headers: vec![], body: body.to_string() };
        let (result, retries, requests) = run(vec![step, Step::text("ok")], 2);
        assert_eq!((requests, retries.0.len()), (1, 0));
        let text = result.expect_err("quota").to_string();
        assert!(text.starts_with(
            "model request failed: 429 You exceeded your current quota (not retried: insufficient_quota means"
        ));
    }

    #[test]
    fn retry_after_seconds_is_honoured() {
        let (result, retries, _) = run(vec![with_header(429, "Retry-After", "3"), Step::text("ok")], 2);
        assert!(result.is_ok());
        assert_eq!(retries.0, [(1, 3000, "429 slow down".to_owned())]);
    }

    #[test]
    fn retry_after_as_an_http_date_is_honoured() {
        let in_ten_seconds = SystemTime::now() + Duration::from_secs(10);
        let date = http_date(in_ten_seconds);
        let (result, retries, _) = run(vec![with_header(503, "Retry-After", &date), Step::text("ok")], 2);
        assert!(result.is_ok());
        // The date has whole seconds, so the wait is 9–10 s less the time the request took
        // (generous bounds for a loaded machine; a backoff would be under 0.5 s).
        assert!((5000..=10_000).contains(&retries.0[0].1), "{:?} for {date}", retries.0);
    }

    #[test]
    fn a_retry_after_beyond_a_minute_fails_with_the_wait() {
        let (result, retries, requests) =
            run(vec![with_header(429, "Retry-After", "600"), Step::text("ok")], 2);
        assert_eq!((requests, retries.0.len()), (1, 0));
        let text = result.expect_err("too long").to_string();
        assert!(text.contains("the server asks to wait 600 s, longer than the 60 s we wait"), "{text}");
    }

    #[test]
    fn an_html_502_is_retried() {
        let page = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>";
        let step = Step::Reply { status: 502, headers: vec![], body: page.into() };
        let (result, retries, _) = run(vec![step, Step::text("ok")], 2);
        assert!(result.is_ok());
        assert_eq!(retries.0[0].2, "502 Bad Gateway");
    }

    #[test]
    fn disconnects_are_not_retried() {
        let (result, retries, requests) = run(vec![Step::Close, Step::text("ok")], 2);
        assert!(matches!(result, Err(Error::Network(_))), "{result:?}");
        assert_eq!((requests, retries.0.len()), (1, 0));
    }

    #[cfg(feature = "ch11")]
    #[test]
    fn a_stream_is_retried_before_its_first_byte_and_never_after() {
        use crate::ch11_streaming::StreamingClient;
        let chunk = |text: &str| {
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
                .to_string()
        };
        let stream = |finish| Step::Stream { chunks: vec![chunk("shown")], delay_ms: 0, finish };
        for (steps, requests_expected, ok) in [
            (vec![Step::error(503, "busy"), stream(true)], 2, true),
            (vec![Step::error(429, "slow"), Step::error(502, "bad"), stream(true)], 3, true),
            (vec![stream(false), stream(true)], 1, false),
        ] {
            let server = ScriptedServer::scripted(steps).expect("server");
            let config = ClientConfig { base_url: server.url.clone(), api_key: None, model: "m".into() };
            let client = StreamingClient::new(config).expect("client");
            let mut model = Retrying::new(client, 2).with_sleep(no_wait);
            let messages = [Message::User { content: "hi".into() }];
            let result =
                model.complete(&Request { messages: &messages, tools: &[] }, &mut Retries::default());
            assert_eq!(result.is_ok(), ok, "{result:?}");
            assert_eq!(server.request_count(), requests_expected);
        }
    }

    #[test]
    fn a_refused_connection_is_retried_nothing_was_sent() {
        let port =
            std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
        let config = ClientConfig {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            api_key: None,
            model: "m".into(),
        };
        let mut model = Retrying::new(ChatClient::new(config).expect("client"), 2).with_sleep(no_wait);
        let mut retries = Retries::default();
        let messages = [Message::User { content: "hi".into() }];
        let result = model.complete(&Request { messages: &messages, tools: &[] }, &mut retries);
        assert!(matches!(result, Err(Error::Refused(_))), "{result:?}");
        assert_eq!(retries.0.len(), 2, "two retries, then the refusal is reported");
    }

    #[test]
    fn ctrl_c_cuts_a_backoff_short() {
        crate::ch02_model::in_own_process("ch08_retry::tests::ctrl_c_cuts_a_backoff_short", || {
            let server =
                ScriptedServer::scripted(vec![with_header(503, "Retry-After", "30"), Step::text("ok")])
                    .expect("server");
            let config = ClientConfig { base_url: server.url.clone(), api_key: None, model: "m".into() };
            let mut model = Retrying::new(ChatClient::new(config).expect("client"), 2);
            let started = std::time::Instant::now();
            let messages = [Message::User { content: "hi".into() }];
            let result = std::thread::scope(|scope| {
                // Ctrl+C once the 503 has come (the server has the request): the 30 s backoff
                // has begun. Pressed after a fixed nap, it could land before the request.
                scope.spawn(|| {
                    while server.requests().is_empty() {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    crate::ch02_loop::set_interrupted(true);
                });
                model.complete(&Request { messages: &messages, tools: &[] }, &mut Retries::default())
            });
            assert!(matches!(result, Err(Error::Interrupted)), "{result:?}");
            assert_eq!(server.requests().len(), 1);
            println!(
                "figure: a 30 s backoff ended {:?} after the request, Ctrl+C once the 503 came",
                started.elapsed()
            );
        });
    }

    #[test]
    fn the_retry_count_comes_from_the_environment_value() {
        assert_eq!(parse_max_retries(None).ok(), Some(2));
        assert_eq!(parse_max_retries(Some("0")).ok(), Some(0));
        assert_eq!(parse_max_retries(Some(" 5 ")).ok(), Some(5));
        assert!(matches!(parse_max_retries(Some("many")), Err(Error::Config(_))));
    }

    #[test]
    fn backoff_grows_and_stays_bounded() {
        for attempt in 0..40 {
            let wait = backoff(attempt);
            let full = FIRST_BACKOFF.saturating_mul(1 << attempt.min(16)).min(MAX_BACKOFF);
            assert!(wait >= full / 2 && wait <= full, "attempt {attempt}: {wait:?}");
        }
    }

    /// Formats an IMF-fixdate, the inverse of what chapter 2 parses, with chapter 5's calendar.
    fn http_date(at: SystemTime) -> String {
        let secs = at.duration_since(UNIX_EPOCH).expect("after 1970").as_secs() as i64;
        let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        let (year, month, day) = crate::ch05_sessions::ids::civil_from_days(days);
        const MONTHS: [&str; 12] =
            ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][days.rem_euclid(7) as usize];
        format!(
            "{weekday}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
            MONTHS[(month - 1) as usize],
            rest / 3600,
            rest % 3600 / 60,
            rest % 60
        )
    }

    /// Issue 22: retry lines were cut at 120 characters even in a log, where the whole reason
    /// is what a person reads later; only a terminal's width cuts them.
    #[test]
    fn a_retry_line_is_cut_only_for_a_terminal() {
        use crate::ch04_terminal::tests::Captured;
        use crate::ch04_terminal::{Screen, TerminalObserver};
        let reason = format!("503 from the server: {}", "upstream connect error or disconnect ".repeat(8));
        let (out, err) = (Captured::default(), Captured::default());
        let mut observer =
            TerminalObserver::new(Screen::new(Box::new(out), Box::new(err.clone()), false, false), None);
        let notice = RetryNotice { attempt: 1, wait_ms: 500, reason: reason.clone() };
        observer.event(Event::Notice(&notice)).unwrap();
        assert_eq!(err.text(), format!("retry 1 in 0.5s: {}\n", reason.trim_end()));
        let cut = notice.line(Some(80)).unwrap();
        assert!(cut.chars().count() <= 80 && cut.ends_with('…'), "{cut}");
    }
}
