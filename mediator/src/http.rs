//! An HTTP body read within a limit: a reply larger than we will ever use is refused as soon as
//! it says so (`Content-Length`) or, sent without one, as soon as it passes the limit, never read
//! whole first. And where a request may go: a redirect is followed only within the origin the
//! user named, so no header of theirs ever reaches another.

use crate::read::Bytes;

/// Why a body could not be had.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The body is, or says it is, larger than the limit.
    #[error("{}", too_large(*.limit, *.declared))]
    TooLarge { limit: u64, declared: Option<u64> },
    /// The connection failed (or timed out) while the body was read.
    #[error("{0}")]
    Read(#[source] reqwest::Error),
}

fn too_large(limit: u64, declared: Option<u64>) -> String {
    match declared {
        Some(length) => format!("the body is {} (Content-Length), over the limit of {}", Bytes(length), Bytes(limit)),
        None => format!("the body passed the limit of {} and was not read further", Bytes(limit)),
    }
}

/// Reads `response`'s body chunk by chunk, stopping with [`BodyError::TooLarge`] as soon as it
/// passes `limit` bytes (or at once when its `Content-Length` says it will).
pub async fn read_limited(mut response: reqwest::Response, limit: u64) -> Result<Vec<u8>, BodyError> {
    let declared = response.content_length();
    if let Some(length) = declared.filter(|&length| length > limit) {
        return Err(BodyError::TooLarge { limit, declared: Some(length) });
    }
    // Reserve what the server announced (never more than the limit), else a modest start.
    let reserve = declared.unwrap_or(8 * 1024).min(limit);
    let mut body = Vec::with_capacity(usize::try_from(reserve).unwrap_or(0));
    while let Some(chunk) = response.chunk().await.map_err(|error| BodyError::Read(error.without_url()))? {
        if (body.len() as u64).saturating_add(chunk.len() as u64) > limit {
            return Err(BodyError::TooLarge { limit, declared: None });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// [`read_limited`] as text; bytes that are not UTF-8 become U+FFFD, as `Response::text` does.
pub async fn text_limited(response: reqwest::Response, limit: u64) -> Result<String, BodyError> {
    let body = read_limited(response, limit).await?;
    Ok(match String::from_utf8(body) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    })
}

/// Redirects followed in a row, at most.
const MAX_REDIRECTS: usize = 5;

/// The origin of `url` as people write it (`https://example.com:8443`), or its scheme alone
/// (`file://`) when it has none: never its path, query or user, which may hold a secret.
pub fn origin_of(url: &reqwest::Url) -> String {
    let origin = url.origin();
    match origin.is_tuple() {
        true => origin.ascii_serialization(),
        false => format!("{}://", url.scheme()),
    }
}

/// `url` for a log or an error: its origin and path, without the user, password or query a
/// secret may be written in.
pub fn shown(url: &reqwest::Url) -> String {
    let query = if url.query().is_some() { "?…" } else { "" };
    format!("{}{}{query}", origin_of(url), url.path())
}

/// Follows a redirect only to the origin the request was first sent to (same scheme, host and
/// port: no https to http), and [`MAX_REDIRECTS`] in a row at most. The headers a user gives
/// for a server (a key, a token) go with every request to it; a redirect elsewhere would carry
/// them to a host the user never named, so it is refused with both origins named. Use it with
/// `referer(false)`: a `Referer` would carry the first URL, query and all.
pub fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().map(origin_of).unwrap_or_default();
        let next = origin_of(attempt.url());
        if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects in a row, from {first}"))
        } else if next != first || !attempt.url().origin().is_tuple() {
            attempt.error(format!(
                "{first} redirected to {next}, another origin: requests and their headers stay with the \
                 origin configured; configure the new URL if it is to be trusted"
            ))
        } else {
            attempt.follow()
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_origin_is_scheme_host_and_port_and_never_a_secret() {
        let url = |text: &str| reqwest::Url::parse(text).unwrap();
        let origin = super::origin_of;
        assert_eq!(origin(&url("https://user:pw@example.com/mcp?key=k")), "https://example.com");
        // https to http on the same host is another origin, as is another port or name.
        assert_ne!(origin(&url("https://example.com/a")), origin(&url("http://example.com/a")));
        assert_ne!(origin(&url("http://127.0.0.1:1/a")), origin(&url("http://127.0.0.1:2/a")));
        assert_ne!(origin(&url("http://127.0.0.1:1/a")), origin(&url("http://localhost:1/a")));
        assert_eq!(origin(&url("http://example.com:80/a")), origin(&url("http://example.com/b")));
        assert_eq!(origin(&url("file:///etc/passwd")), "file://");
        assert_eq!(super::shown(&url("https://u:p@example.com/mcp?api_key=k")), "https://example.com/mcp?…");
    }
}
