//! Chapter 3 — credentials inside a URL.
//!
//! A base URL can carry a secret in two places: the user-info (`http://user:pass@host`) and a
//! query parameter named like a credential (`?api-key=…`). [`without_credentials`] gives the
//! URL that is safe to record, and the redactor in [`super::secrets`] uses the rest to learn
//! which values to hide and to blank the user-info of any URL in passing text. Plain string
//! scanning, no URL parser: the shapes are few and a parser would be a dependency.

use super::secrets::REDACTED;

/// `https://user:pw@host/v1?api-version=1&key=sk` → `https://host/v1?api-version=1`: the
/// userinfo and any query parameter named like a credential are dropped.
pub fn without_credentials(url: &str) -> String {
    // A fragment is never sent to a server: nothing of it is worth keeping.
    let before_fragment = url.split_once('#').map_or(url, |(kept, _)| kept);
    let (base, query) =
        before_fragment.split_once('?').map_or((before_fragment, None), |(a, b)| (a, Some(b)));
    let mut clean = match base.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => base.to_string(),
    };
    let kept: Vec<&str> = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|pair| !pair.is_empty() && !credential_name(pair.split('=').next().unwrap_or_default()))
        .collect();
    if !kept.is_empty() {
        clean.push('?');
        clean.push_str(&kept.join("&"));
    }
    clean
}

/// Whether `url` holds a password or token (`user:pass@`, `?key=…`).
pub(super) fn has_credentials(url: &str) -> bool {
    !credentials_of(url).is_empty()
}

/// A query parameter that carries a credential (`api-key`, `token`, `sig`…).
pub(super) fn credential_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["key", "token", "secret", "pass", "sig", "auth"].iter().any(|word| name.contains(word))
}

/// The credentials in a URL: the user-info password (or the user alone, when there is no
/// password: `https://TOKEN@host` is how tokens are put in URLs) and credential query values.
pub(super) fn credentials_of(url: &str) -> Vec<&str> {
    let mut found: Vec<&str> = password_of(url).or_else(|| lone_user_of(url)).into_iter().collect();
    if let Some((_, query)) = url.split_once('?') {
        let query = query.split('#').next().unwrap_or_default();
        for pair in query.split('&') {
            if let Some((name, value)) = pair.split_once('=')
                && credential_name(name)
                && !value.is_empty()
            {
                found.push(value);
            }
        }
    }
    found
}

/// The password of a URL's user-info (`pass` in `http://user:pass@host`), if any.
pub(super) fn password_of(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let userinfo = &rest[..rest[..end].rfind('@')?];
    userinfo.split_once(':').map(|(_, password)| password).filter(|p| !p.is_empty())
}

/// The user of a URL's user-info that has no password (`TOKEN` in `https://TOKEN@host`).
fn lone_user_of(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let userinfo = &rest[..rest[..end].rfind('@')?];
    (!userinfo.is_empty() && !userinfo.contains(':')).then_some(userinfo)
}

/// Every `scheme://user:pass@` in `text` becomes `scheme://[redacted]@`; `None` if none.
pub fn redact_userinfo(text: &str) -> Option<String> {
    if !text.contains('@') || !text.contains("://") {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut from) = (0, 0);
    while let Some(found) = text[from..].find("://") {
        let start = from + found + 3;
        let end = text[start..]
            .find(|c: char| c.is_whitespace() || "/?#\"'<>`()[]{},;\\".contains(c))
            .map_or(text.len(), |i| start + i);
        if let Some(at) = text[start..end].rfind('@')
            && at > 0
        {
            out.push_str(&text[copied..start]);
            out.push_str(REDACTED);
            copied = start + at;
        }
        from = end.max(start);
    }
    (copied > 0).then(|| {
        out.push_str(&text[copied..]);
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_credentials_and_password_of() {
        assert_eq!(without_credentials("http://u:p@h:1/v1"), "http://h:1/v1");
        assert_eq!(without_credentials("https://h/v1/@x"), "https://h/v1/@x");
        assert!(has_credentials("https://h/v1?api-key=abc") && !has_credentials("https://h/v1?v=1"));
        assert_eq!(password_of("http://u:p4ssw0rd@h/v1"), Some("p4ssw0rd"));
        assert_eq!(password_of("http://u@h/v1"), None);
        assert_eq!(credentials_of("http://u:pw@h/v1?v=1&api-key=abc#x"), ["pw", "abc"]);
        assert_eq!(credentials_of("https://ghp-token-123@h/v1"), ["ghp-token-123"]);
    }
}
