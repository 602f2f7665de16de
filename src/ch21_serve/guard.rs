//! Who may talk to the service: a token, the right `Host`, no foreign `Origin`.
//!
//! A service on 127.0.0.1 is not private. Any web page the user opens can make the browser
//! send requests to it, and any program on the machine can connect. Three checks, made on
//! the head of every request before anything else happens, close the doors a browser opens:
//!
//! * **The token.** Every request carries it (`Authorization: Bearer …`; the console's page,
//!   which a browser loads from the printed URL, as `?token=…`). It is random (256 bits) or
//!   the user's own `MINI_AGENT_SERVE_TOKEN`, and it is compared in constant time: the guard
//!   keeps an HMAC of it under a random key, and `ring::hmac::verify` compares the HMAC of
//!   what was presented with it, so how long the comparison takes says nothing of how many
//!   bytes matched.
//! * **`Host`** must name the address the service is bound to. A page on `evil.example` can
//!   make its own name resolve to 127.0.0.1 (DNS rebinding); the browser then sends
//!   `Host: evil.example`, and is refused. Bound to every interface (`0.0.0.0`), any name is
//!   accepted: the service is meant to be reached by names we cannot know, and the token the
//!   user chose is the guard.
//! * **`Origin`**, when a browser sends it, must be this service's own: a page elsewhere
//!   cannot post a message or an approval in the user's name (CSRF), even on a browser that
//!   would send a token it somehow had.
//!
//! And one rule at start: a bind to an address other machines can reach needs a token the
//! user set, so that no one else reads it from a terminal or a log.

use super::request::Head;
use super::response::Refusal;
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use std::net::{IpAddr, SocketAddr};

/// The variable that sets the token instead of a random one.
pub const TOKEN_VARIABLE: &str = "MINI_AGENT_SERVE_TOKEN";
/// A token the user sets must be at least this long.
pub const MIN_TOKEN_CHARS: usize = 16;

/// The secret a request must carry.
#[derive(Clone)]
pub struct Token {
    value: String,
    /// Made here (printed in the URL), rather than set by the user.
    pub generated: bool,
}

impl Token {
    /// 32 random bytes, as 64 hex digits.
    pub fn generate() -> Result<Token, String> {
        let mut bytes = [0u8; 32];
        SystemRandom::new().fill(&mut bytes).map_err(|_| "the system's random source failed".to_string())?;
        let value = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        Ok(Token { value, generated: true })
    }

    /// The user's own token (from [`TOKEN_VARIABLE`]).
    pub fn given(value: &str) -> Result<Token, String> {
        let value = value.trim();
        if value.chars().count() < MIN_TOKEN_CHARS {
            return Err(format!("{TOKEN_VARIABLE} must be at least {MIN_TOKEN_CHARS} characters"));
        }
        if !value.bytes().all(|byte| byte.is_ascii_graphic()) {
            return Err(format!("{TOKEN_VARIABLE} must be printable ASCII without spaces"));
        }
        Ok(Token { value: value.to_string(), generated: false })
    }

    pub fn value(&self) -> &str {
        &self.value
    }
}

/// Never the value: a token printed by `{:?}` in an error or a log would be a token leaked.
impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token([{} characters], generated: {})", self.value.len(), self.generated)
    }
}

// ANCHOR: bind_policy
/// Refuses to listen where other machines can connect unless the user chose the token.
pub fn check_bind(address: IpAddr, token: &Token) -> Result<(), String> {
    if address.is_loopback() || !token.generated {
        return Ok(());
    }
    Err(format!(
        "refusing to listen on {address}, which other machines can reach, with a token printed to \
         this terminal: set {TOKEN_VARIABLE} (at least {MIN_TOKEN_CHARS} characters) to a secret \
         you give to its users, or serve on 127.0.0.1"
    ))
}
// ANCHOR_END: bind_policy

/// The checks, made once per request head.
pub struct Guard {
    key: hmac::Key,
    expected: hmac::Tag,
    /// The `Host` values accepted; empty means any (a bind to every interface).
    hosts: Vec<String>,
}

impl Guard {
    pub fn new(token: &Token, bound: SocketAddr) -> Result<Guard, String> {
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &SystemRandom::new())
            .map_err(|_| "the system's random source failed".to_string())?;
        let expected = hmac::sign(&key, token.value.as_bytes());
        Ok(Guard { key, expected, hosts: accepted_hosts(bound) })
    }

    // ANCHOR: check
    /// Host first (a rebinding page learns nothing, not even whether its token was right),
    /// then Origin, then the token.
    pub fn check(&self, head: &Head) -> Result<(), Refusal> {
        let host =
            head.header("host").ok_or_else(|| Refusal::new(400, "the request has no single Host header"))?;
        if !self.hosts.is_empty() && !self.hosts.iter().any(|accepted| accepted.eq_ignore_ascii_case(host)) {
            return Err(Refusal::new(
                403,
                format!("this service answers to {}, not to Host {host:?}", self.hosts[0]),
            ));
        }
        if head.has_header("origin") {
            let same = head
                .header("origin")
                .is_some_and(|origin| origin.eq_ignore_ascii_case(&format!("http://{host}")));
            if !same {
                return Err(Refusal::new(403, "requests from another site's pages are refused"));
            }
        }
        let presented = bearer(head).or_else(|| page_token(head));
        match presented {
            Some(token) if hmac::verify(&self.key, token.as_bytes(), self.expected.as_ref()).is_ok() => {
                Ok(())
            }
            Some(_) => Err(Refusal::new(401, "wrong token: use the one mini-agent serve printed")),
            None => Err(Refusal::new(
                401,
                "no token: send `Authorization: Bearer TOKEN`, or open the URL mini-agent serve printed",
            )),
        }
    }
    // ANCHOR_END: check
}

fn bearer(head: &Head) -> Option<String> {
    let value = head.header("authorization")?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_string())
}

/// The console's page is the one request a browser makes from a typed URL, so it alone may
/// carry the token in its query.
fn page_token(head: &Head) -> Option<String> {
    (head.method == "GET" && head.path == "/").then(|| head.query_value("token")).flatten()
}

/// `127.0.0.1:8421` and `localhost:8421` for a loopback bind; the address itself for another
/// one; nothing (any) for every interface. Port 80 may be left out, as browsers do.
pub fn accepted_hosts(bound: SocketAddr) -> Vec<String> {
    let ip = bound.ip();
    if ip.is_unspecified() {
        return Vec::new();
    }
    let port = bound.port();
    let shown = match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    };
    let mut names = vec![shown];
    if ip.is_loopback() {
        names.push("localhost".to_string());
    }
    let mut hosts: Vec<String> = names.iter().map(|name| format!("{name}:{port}")).collect();
    if port == 80 {
        hosts.extend(names);
    }
    hosts
}
