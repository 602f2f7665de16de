//! Chapter 3 — the key goes nowhere.
//!
//! The API key has one job: to be the `Authorization` header of a request. Everywhere else it
//! is a leak waiting to happen. A `bash` child inherits the environment, so `env` would print
//! it; the model sees that output and sends it back in the next request; the journal, `--json`,
//! `-v` and spill files record it; a server that echoes the key in an error body gets it
//! printed. A password in `--base-url http://user:pass@host/v1` travels the same roads.
//!
//! So the key is handled in three moves, each cheap:
//!
//! * **Taken, not read.** [`Keys::take`] reads the key variables once, at start-up, and
//!   removes them from the process environment — overwriting the original bytes, so that
//!   `/proc/<pid>/environ` no longer holds them either. No child can inherit what is gone;
//!   [`remove_keys`] is still applied to every command the agent spawns, so the rule holds
//!   for library users who never called `take`.
//! * **One redactor for the process.** A [`Redactor`] knows the secrets (values of at least
//!   [`MIN_SECRET_BYTES`], so a placeholder like `sk-...` does not mangle ordinary text) and
//!   replaces each, and the user-info of any URL, with `[redacted]`. It is installed once and
//!   used wherever text leaves the process: tool results before they are recorded, spilled or
//!   sent, model replies and errors at the model seam ([`Redacted`]), the journal, `--json`
//!   and the last error line. With no secrets, redacting is one `memchr` for `@`.
//! * **Streams keep a tail.** A key can arrive split across two chunks of a command's output
//!   or of a streamed reply. A [`RedactingStream`] holds back only the end of a chunk that
//!   could be the start of a secret, so ordinary text is never delayed.
//!
//! What it does not promise: the server receives the key (that is its purpose), and a model
//! can still reason about a secret it never sees. See README "Honest limits".

use crate::ch02_loop::{Error, Event, Model, Observer, Reply, Request};
use crate::ch02_model::layers::RegisterModel;
use std::borrow::Cow;
use std::process::Command;
use std::sync::OnceLock;

use super::url_credentials::{credentials_of, has_credentials, redact_userinfo};

/// What replaces a secret.
pub(crate) const REDACTED: &str = "[redacted]";
/// Shorter values are placeholders (`sk-...`, `none`), and redacting them would mangle text.
pub(crate) const MIN_SECRET_BYTES: usize = 8;

// ANCHOR: key_variables
/// An environment variable that holds a secret of the agent's own: taken out of the
/// environment at start-up, so no command the agent runs can read it, and redacted from
/// everything printed, recorded or sent. Chapter 3 lists OpenAI's; a later chapter that reads
/// another (a webhook's signing secret, a second provider's key) lists its own, and the
/// composition root hands every list to [`Keys::take`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SecretVariable {
    pub name: &'static str,
    /// A base URL: a secret only when it holds a password or a token (`http://user:pass@host/v1`,
    /// `?api-key=…`); otherwise it stays in the environment and is not redacted.
    pub url: bool,
}

/// A variable whose whole value is secret.
pub const fn secret(name: &'static str) -> SecretVariable {
    SecretVariable { name, url: false }
}

/// A base-URL variable: secret only when it carries credentials.
pub const fn base_url_secret(name: &'static str) -> SecretVariable {
    SecretVariable { name, url: true }
}

/// Chapter 3's own: the API key, and the base URL when it holds a password or a token.
pub const OPENAI_API_KEY: SecretVariable = secret("OPENAI_API_KEY");
pub const OPENAI_BASE_URL: SecretVariable = base_url_secret("OPENAI_BASE_URL");
pub const SECRETS: &[SecretVariable] = &[OPENAI_API_KEY, OPENAI_BASE_URL];
// ANCHOR_END: key_variables

/// What a chapter registers from this one on: chapter 2's flags, help and model layers, and
/// its secrets. A capability flag takes a URL that is its own credential (whoever knows it may
/// use it), so the command line wipes its path from what `ps` shows. This chapter registers the
/// redactor: `install` makes the run's (its keys, its base URL), `line` cleans a line the
/// command line prints.
pub trait RegisterSecrets: RegisterModel {
    fn secret(&mut self, variable: SecretVariable);
    fn capability_flag(&mut self, long: &'static str);
    fn redactor(&mut self, install: fn(&Keys, &str), line: fn(&str) -> String);
}

/// Every list [`Keys::take`] was given, so that [`remove_keys`] knows the later chapters' too.
static TAKEN: OnceLock<Vec<SecretVariable>> = OnceLock::new();

/// The secret variables of this process: chapter 3's, and those `Keys::take` was given.
fn secret_variables() -> impl Iterator<Item = &'static SecretVariable> {
    SECRETS.iter().chain(TAKEN.get().into_iter().flatten())
}

// ANCHOR: remove_keys
/// Removes the key variables from a child's environment (the rule for every spawned process).
pub fn remove_keys(command: &mut Command) -> &mut Command {
    for variable in secret_variables() {
        if !variable.url || std::env::var(variable.name).is_ok_and(|url| has_credentials(&url)) {
            command.env_remove(variable.name);
        }
    }
    command
}
// ANCHOR_END: remove_keys

// ANCHOR: keys
/// The secrets of this run, taken out of the environment: chapter 2's `Keys` (each variable
/// that was set and not blank, by name), which chapter 2 only read, here taken.
pub use crate::ch02_model::Keys;

impl Keys {
    /// The value `variable` had at start-up, if it was set and not blank.
    pub fn get(&self, variable: SecretVariable) -> Option<String> {
        self.taken.iter().find(|(name, _)| *name == variable.name).map(|(_, value)| value.clone())
    }
    // ANCHOR_END: keys

    /// Keys as if these variables had been set (for tests and library users).
    pub fn with(mut self, variable: SecretVariable, value: &str) -> Keys {
        self.taken.push((variable.name, value.to_string()));
        self
    }
}

// ANCHOR: take
impl Keys {
    /// Reads chapter 3's variables and `others` (the later chapters' lists), and removes the
    /// secret ones from the process environment, overwriting their bytes in place first (the
    /// kernel shows the original block as `/proc/<pid>/environ`). A base URL is removed only
    /// when it holds a password or a token.
    ///
    /// # Safety
    /// Changes the environment: call it first thing in `main`, before any thread starts.
    pub unsafe fn take(others: &[SecretVariable]) -> Keys {
        let _ = TAKEN.set(others.to_vec());
        let read = |name: &str| std::env::var(name).ok().filter(|value| !value.trim().is_empty());
        let mut keys = Keys::default();
        for variable in secret_variables() {
            if let Some(value) = read(variable.name) {
                keys.taken.push((variable.name, value));
            }
        }
        for variable in secret_variables() {
            if variable.url && !read(variable.name).as_deref().is_some_and(has_credentials) {
                continue;
            }
            // SAFETY: the caller promises a single thread; see `wipe_environ_entries`.
            unsafe {
                let entries = environ_entries(variable.name);
                std::env::remove_var(variable.name);
                wipe(entries);
            }
        }
        keys
    }
}
// ANCHOR_END: take

/// Start-up, first thing in `main`: the credentials of `words` wiped from what `ps` shows,
/// the secret `variables` (chapter 3's and the later chapters') taken out of the environment,
/// and this process's memory closed to the user's other processes.
///
/// # Safety
/// Changes the environment and the argument block: call it before any thread starts.
pub unsafe fn take_at_start_up(
    words: &[String],
    (variables, capability_flags): &(Vec<SecretVariable>, Vec<&'static str>),
) -> Keys {
    // SAFETY: the caller's promise, passed on.
    let keys = unsafe {
        wipe_credentials_in_command_line(words, capability_flags);
        Keys::take(variables)
    };
    seal_memory();
    keys
}

/// Makes this process non-dumpable (Linux). Without Yama (`ptrace_scope` 0: Debian's
/// default, most containers) any process of the same user may open `/proc/<pid>/mem` and
/// read the key the agent must hold to send it: a command `bash` runs found it there. A
/// non-dumpable process's memory, environment and file descriptors are closed to every
/// other process of its user (root excepted); the commands it starts are dumpable again,
/// as `exec` resets the flag.
pub fn seal_memory() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments only changes this process's dumpable flag.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

unsafe extern "C" {
    /// The C library's environment: a null-terminated array of `NAME=value` strings.
    static mut environ: *mut *mut std::ffi::c_char;
}

/// The C strings `NAME=value` of `name` in the environment block.
///
/// # Safety
/// No other thread may read or change the environment meanwhile.
unsafe fn environ_entries(name: &str) -> Vec<(*mut u8, usize)> {
    let prefix = format!("{name}=");
    let mut found = Vec::new();
    // SAFETY: `environ` is a valid null-terminated array of valid C strings.
    unsafe {
        let mut entry = environ;
        while !entry.is_null() && !(*entry).is_null() {
            let text = std::ffi::CStr::from_ptr(*entry).to_bytes();
            if text.starts_with(prefix.as_bytes()) {
                found.push(((*entry).cast::<u8>(), text.len()));
            }
            entry = entry.add(1);
        }
    }
    found
}

/// Overwrites entries, already unset, with zero bytes: the kernel shows the original block
/// as `/proc/<pid>/environ`, and unsetting only drops the pointer to it.
///
/// # Safety
/// The entries come from [`environ_entries`] and were removed from the environment since:
/// the C library never frees them (they live on the initial stack, or were leaked by
/// `setenv`), and nothing points to them any more.
unsafe fn wipe(entries: Vec<(*mut u8, usize)>) {
    for (start, len) in entries {
        // SAFETY: see above; we write within the string, before its terminating NUL.
        unsafe { std::ptr::write_bytes(start, 0, len) };
    }
}

/// Overwrites the credentials of a `--base-url` (a password, an `api-key=` value) on this
/// process's command line (what `ps` and `/proc/<pid>/cmdline` show) with `*`. The copy Rust made of the arguments is untouched.
/// `capability_flags` name the flags whose URL is its own credential (chapter 17's
/// `--webhook`: whoever knows a Slack or Discord webhook URL may post to it), so that `ps`
/// shows only the scheme and host of their value.
/// Linux only; elsewhere, and when the kernel does not tell where the arguments are, nothing
/// happens.
///
/// # Safety
/// Writes the process's original argument block: call it from `main`, before threads start.
pub unsafe fn wipe_credentials_in_command_line(words: &[String], capability_flags: &[&str]) {
    let holders: Vec<(&str, Vec<&str>)> = words
        .iter()
        .map(|word| (word.as_str(), credentials_of(word)))
        .filter(|(_, found)| !found.is_empty())
        .collect();
    let holders =
        capability_flags.iter().fold(holders, |holders, flag| with_capability(holders, words, flag));
    if holders.is_empty() {
        return;
    }
    // Fields 48 and 49 of /proc/self/stat: where the argument strings start and end.
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return };
    let Some((_, after_name)) = stat.rsplit_once(')') else { return };
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let (Some(start), Some(end)) = (
        fields.get(45).and_then(|f| f.parse::<usize>().ok()),
        fields.get(46).and_then(|f| f.parse::<usize>().ok()),
    ) else {
        return;
    };
    if start == 0 || end <= start {
        return;
    }
    // SAFETY: [start, end) is this process's own argument block, mapped and writable (it is
    // on the initial stack); we replace bytes of a secret with `*`, never a NUL or the length.
    let block = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, end - start) };
    for (word, secrets) in holders {
        // Only inside the word that holds the URL: a short password elsewhere is left alone.
        let Some(at) = find(block, word.as_bytes()) else { continue };
        let held = &mut block[at..at + word.len()];
        for secret in secrets {
            let mut from = 0;
            while let Some(found) = find(&held[from..], secret.as_bytes()) {
                held[from + found..from + found + secret.len()].fill(b'*');
                from += found + secret.len();
            }
        }
    }
}

/// The path and query of the URL after `flag`, added to what is wiped: a URL that is its own
/// credential shows only its scheme and host.
fn with_capability<'a>(
    mut holders: Vec<(&'a str, Vec<&'a str>)>,
    words: &'a [String],
    flag: &str,
) -> Vec<(&'a str, Vec<&'a str>)> {
    let capability = || {
        let url = words.get(words.iter().position(|word| word == flag)? + 1)?;
        let (_, rest) = url.split_once("://")?;
        let path = &rest[rest.find(['/', '?', '#'])? + 1..];
        (!path.is_empty()).then_some((url.as_str(), path))
    };
    if let Some((url, path)) = capability() {
        // First: the path holds any credential of the query, which would otherwise change it.
        match holders.iter_mut().find(|(word, _)| *word == url) {
            Some((_, secrets)) => secrets.insert(0, path),
            None => holders.push((url, vec![path])),
        }
    }
    holders
}

// ANCHOR: redactor
/// Replaces secrets, and the user-info of URLs, with `[redacted]`.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// Longest first, so that a secret containing another is replaced whole.
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor for these secrets; values shorter than [`MIN_SECRET_BYTES`] are ignored.
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Redactor {
        let mut secrets: Vec<String> = secrets.into_iter().filter(|s| s.len() >= MIN_SECRET_BYTES).collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// The redactor for a run: every secret taken at start-up (for a base URL, its
    /// credentials), and the credentials in the base URL this run talks to.
    pub fn for_run(keys: &Keys, base_url: &str) -> Redactor {
        let taken = keys.taken.iter().flat_map(|(name, value)| {
            match secret_variables().any(|variable| variable.name == *name && variable.url) {
                true => credentials_of(value).into_iter().map(str::to_owned).collect(),
                false => vec![value.clone()],
            }
        });
        Redactor::new(taken.chain(credentials_of(base_url).into_iter().map(str::to_owned)))
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with every secret replaced; borrowed when unchanged. Only our own secrets: a
    /// `postgres://app:pw@db` the model writes or a file holds is the user's data, and is
    /// left whole (changing it would corrupt what the tools read and write).
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_secrets(Cow::Borrowed(text))
    }

    // ANCHOR_END: redactor
    // ANCHOR: redact_line
    /// For a line the agent itself prints about an error: [`Redactor::redact`], and every
    /// URL user-info too (an error can quote a URL we never saw as a secret).
    pub fn redact_line<'a>(&self, text: &'a str) -> Cow<'a, str> {
        // User-info first: once a password inside it is `[redacted]`, the URL no longer parses.
        self.redact_secrets(match redact_userinfo(text) {
            Some(cleaned) => Cow::Owned(cleaned),
            None => Cow::Borrowed(text),
        })
    }

    fn redact_secrets<'a>(&self, mut text: Cow<'a, str>) -> Cow<'a, str> {
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = Cow::Owned(text.replace(secret.as_str(), REDACTED));
            }
        }
        text
    }

    /// [`Redactor::redact`] for an owned string: no copy when nothing matched.
    pub fn redact_string(&self, text: String) -> String {
        match self.redact(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(cleaned) => cleaned,
        }
    }

    /// A stream redactor with these secrets.
    pub fn stream(&self) -> RedactingStream {
        RedactingStream { secrets: self.secrets.clone(), pending: Vec::new() }
    }
}
// ANCHOR_END: redact_line

// ANCHOR: install_redactor
static PROCESS: OnceLock<Redactor> = OnceLock::new();
static NONE: Redactor = Redactor { secrets: Vec::new() };

/// Makes `redactor` the one every output of this process goes through. The first call wins.
pub fn install(redactor: Redactor) -> &'static Redactor {
    PROCESS.get_or_init(|| redactor)
}

/// Installs the redactor of a run: its keys, and the credentials of its base URL.
pub fn install_for_run(keys: &Keys, base_url: &str) {
    install(Redactor::for_run(keys, base_url));
}

/// The process's redactor: the installed one, else one that knows no secrets (it still
/// removes URL user-info).
pub fn redactor() -> &'static Redactor {
    PROCESS.get().unwrap_or(&NONE)
}
// ANCHOR_END: install_redactor

// ANCHOR: stream
/// Redacts a stream that arrives in pieces: a secret split across two pieces is still
/// caught, because the end of a piece that could start a secret is held back until the next
/// piece (or [`RedactingStream::finish`]) shows whether it does.
pub struct RedactingStream {
    secrets: Vec<String>,
    pending: Vec<u8>,
}

impl RedactingStream {
    /// Takes a piece; returns what can be passed on now.
    pub fn push(&mut self, piece: &[u8]) -> Vec<u8> {
        if self.secrets.is_empty() {
            return piece.to_vec();
        }
        self.pending.extend_from_slice(piece);
        let mut text = std::mem::take(&mut self.pending);
        for secret in &self.secrets {
            text = replace_bytes(text, secret.as_bytes(), REDACTED.as_bytes());
        }
        let keep = self.possible_start(&text);
        self.pending = text.split_off(text.len() - keep);
        text
    }

    /// The end of the stream: whatever was held back.
    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.pending)
    }

    /// The length of the longest end of `text` that is the beginning of a secret.
    fn possible_start(&self, text: &[u8]) -> usize {
        let longest = self.secrets.first().map_or(0, String::len).saturating_sub(1).min(text.len());
        (1..=longest)
            .rev()
            .find(|&k| self.secrets.iter().any(|s| s.as_bytes().starts_with(&text[text.len() - k..])))
            .unwrap_or(0)
    }
}
// ANCHOR_END: stream

// ANCHOR: redacted_model
/// A model whose replies, streamed text and errors are redacted at the seam, once, before
/// the loop, the journal or the screen sees them. A server knows the key — it received it —
/// and may echo it in an error body or put it in a reply.
pub struct Redacted<M> {
    inner: M,
    redactor: &'static Redactor,
}

impl<M: Model> Redacted<M> {
    pub fn new(inner: M, redactor: &'static Redactor) -> Redacted<M> {
        Redacted { inner, redactor }
    }
}

/// Chapter 3's layer of a run's model: redacted by the run's redactor.
pub fn redacted(model: Box<dyn Model>) -> Box<dyn Model> {
    Box::new(Redacted::new(model, redactor()))
}
// ANCHOR_END: redacted_model

// ANCHOR: redacted_complete
impl<M: Model> Model for Redacted<M> {
    fn complete(&mut self, request: &Request, observer: &mut dyn Observer) -> Result<Reply, Error> {
        let mut watch = RedactingObserver { inner: observer, redactor: self.redactor };
        let result = self.inner.complete(request, &mut watch);
        let r = self.redactor;
        match result {
            Ok(mut reply) => {
                reply.content = reply.content.map(|text| r.redact_string(text));
                for call in &mut reply.tool_calls {
                    call.arguments = r.redact_string(std::mem::take(&mut call.arguments));
                }
                Ok(reply)
            }
            Err(error) => Err(redact_error(r, error)),
        }
    }
}

// ANCHOR_END: redacted_complete

/// The same error with every text in it redacted.
pub(crate) fn redact_error(r: &Redactor, error: Error) -> Error {
    let line = |text: String| r.redact_line(&text).into_owned();
    match error {
        Error::Usage(text) => Error::Usage(line(text)),
        Error::Config(text) => Error::Config(line(text)),
        Error::Network(text) => Error::Network(line(text)),
        Error::Refused(text) => Error::Refused(line(text)),
        Error::Model(text) => Error::Model(line(text)),
        Error::Http { status, message, retry_after_ms, code } => {
            Error::Http { status, message: line(message), retry_after_ms, code: code.map(line) }
        }
        Error::Io { context, source } => Error::Io { context: line(context), source },
        Error::Interrupted => Error::Interrupted,
        // Counts and a finish reason (one of four fixed words): nothing echoed.
        cut @ Error::ReplyCut { .. } => cut,
        // A later chapter's failure cleans its own words (a tool name is the model's text).
        Error::Other(failure) => Error::Other(failure.cleaned(&|text| line(text.to_string()))),
    }
}

/// Passes the model's events on, redacted.
struct RedactingObserver<'a> {
    inner: &'a mut dyn Observer,
    redactor: &'static Redactor,
}

impl Observer for RedactingObserver<'_> {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        let r = self.redactor;
        match event {
            Event::Warning(text) => self.inner.event(Event::Warning(&r.redact(text))),
            // A later chapter's notice (a retry's reason, a stream's text) cleans its own words.
            Event::Notice(notice) => {
                self.inner.event(Event::Notice(&*notice.cleaned(&|text| r.redact(text).into_owned())))
            }
            other => self.inner.event(other),
        }
    }

    fn queued_input(&mut self) -> Vec<String> {
        self.inner.queued_input()
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    let first = needle[0];
    let mut at = 0;
    while let Some(offset) = haystack[at..=haystack.len() - needle.len()].iter().position(|&b| b == first) {
        let candidate = at + offset;
        if &haystack[candidate..candidate + needle.len()] == needle {
            return Some(candidate);
        }
        at = candidate + 1;
    }
    None
}

fn replace_bytes(text: Vec<u8>, needle: &[u8], with: &[u8]) -> Vec<u8> {
    let Some(mut found) = find(&text, needle) else { return text };
    let mut out = Vec::with_capacity(text.len());
    let mut copied = 0;
    loop {
        out.extend_from_slice(&text[copied..copied + found]);
        out.extend_from_slice(with);
        copied += found + needle.len();
        match find(&text[copied..], needle) {
            Some(next) => found = next,
            None => break,
        }
    }
    out.extend_from_slice(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-test-0123456789abcdef";

    #[test]
    fn secrets_and_userinfo_are_replaced_and_short_values_ignored() {
        let r = Redactor::new([KEY.to_string(), "short".to_string()]);
        assert_eq!(r.redact(&format!("KEY={KEY}\n")), "KEY=[redacted]\n");
        assert_eq!(r.redact("a short word"), "a short word");
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
        assert_eq!(r.redact("DATABASE_URL=postgres://app:pw@db/x"), "DATABASE_URL=postgres://app:pw@db/x");
        assert_eq!(
            r.redact_line("GET http://bob:hunter2@127.0.0.1:9/v1 failed"),
            "GET http://[redacted]@127.0.0.1:9/v1 failed"
        );
        assert_eq!(
            r.redact_line("mail me at a@b.c, see https://x.org/@me"),
            "mail me at a@b.c, see https://x.org/@me"
        );
    }

    #[test]
    fn a_secret_split_across_pieces_is_caught_and_plain_text_is_not_held() {
        let r = Redactor::new([KEY.to_string()]);
        let mut stream = r.stream();
        let mut out = stream.push(b"plain text ");
        assert_eq!(out, b"plain text ");
        for piece in [&b"x=sk-te"[..], b"st-0123", b"456789abcdef and more"] {
            out.extend(stream.push(piece));
        }
        out.extend(stream.finish());
        assert_eq!(String::from_utf8(out).unwrap(), "plain text x=[redacted] and more");
    }
}
