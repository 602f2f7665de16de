//! The console: one page, built into the binary, that drives the API like any other client.
//!
//! The page is three files in `console/` (markup, style, script) joined into one answer when
//! the service starts: no external asset, no web font, nothing fetched but this service's own
//! API, so it works offline and shows nothing a network could change. It is also locked
//! down: its Content-Security-Policy allows exactly its own script and style (by their
//! SHA-256, computed here), requests to this service only, no frames and no forms; and
//! `Referrer-Policy: no-referrer` keeps the token in its URL from leaving with a link.
//!
//! Everything it shows that came from a model or a tool is inserted as text, never as HTML:
//! the script's Markdown renderer escapes first and builds elements from the escaped text.

use super::response::Response;
use ring::digest::{SHA256, digest};

const PAGE: &str = include_str!("console/page.html");
const STYLE: &str = include_str!("console/console.css");
const SCRIPT: &str = include_str!("console/console.js");

// ANCHOR: console
/// The page and the policy that goes with it.
pub struct Console {
    html: Vec<u8>,
    policy: String,
}

impl Console {
    pub fn new() -> Console {
        let html = PAGE.replace("/*STYLE*/", STYLE).replace("/*SCRIPT*/", SCRIPT);
        let policy = format!(
            "default-src 'none'; script-src '{}'; style-src '{}'; connect-src 'self'; img-src data:; \
             base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            source_hash(SCRIPT),
            source_hash(STYLE)
        );
        Console { html: html.into_bytes(), policy }
    }

    pub fn response(&self) -> Response {
        Response {
            status: 200,
            content_type: "text/html; charset=utf-8",
            headers: Vec::new(),
            body: self.html.clone(),
        }
        .with_header("Content-Security-Policy", self.policy.clone())
        .with_header("Referrer-Policy", "no-referrer")
        .with_header("X-Frame-Options", "DENY")
    }
}
// ANCHOR_END: console

impl Default for Console {
    fn default() -> Console {
        Console::new()
    }
}

/// `sha256-…` of an inline script or style, as a CSP source.
fn source_hash(text: &str) -> String {
    format!("sha256-{}", base64(digest(&SHA256, text.as_bytes()).as_ref()))
}

/// Standard base64 with padding (RFC 4648), all a CSP hash needs.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let word =
            chunk.iter().enumerate().fold(0u32, |word, (at, byte)| word | u32::from(*byte) << (16 - 8 * at));
        for at in 0..4 {
            if at <= chunk.len() {
                out.push(ALPHABET[(word >> (18 - 6 * at) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
