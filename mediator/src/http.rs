//! An HTTP body read within a limit: a reply larger than we will ever use is refused as soon as
//! it says so (`Content-Length`) or, sent without one, as soon as it passes the limit, never read
//! whole first.

use std::fmt;

/// A byte count as people read it: `16 MiB`, `512 KiB`, `1000 bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const KIB: u64 = 1024;
        const MIB: u64 = 1024 * KIB;
        const GIB: u64 = 1024 * MIB;
        match self.0 {
            0 => f.write_str("0 bytes"),
            n if n % GIB == 0 => write!(f, "{} GiB", n / GIB),
            n if n % MIB == 0 => write!(f, "{} MiB", n / MIB),
            n if n % KIB == 0 => write!(f, "{} KiB", n / KIB),
            1 => f.write_str("1 byte"),
            n => write!(f, "{n} bytes"),
        }
    }
}

/// Why a body could not be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
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
pub(crate) async fn read_limited(mut response: reqwest::Response, limit: u64) -> Result<Vec<u8>, BodyError> {
    let declared = response.content_length();
    if let Some(length) = declared.filter(|&length| length > limit) {
        return Err(BodyError::TooLarge { limit, declared: Some(length) });
    }
    // Reserve what the server announced (never more than the limit), else a modest start.
    let reserve = declared.unwrap_or(8 * 1024).min(limit);
    let mut body = Vec::with_capacity(usize::try_from(reserve).unwrap_or(0));
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Read)? {
        if (body.len() as u64).saturating_add(chunk.len() as u64) > limit {
            return Err(BodyError::TooLarge { limit, declared: None });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// [`read_limited`] as text; bytes that are not UTF-8 become U+FFFD, as `Response::text` does.
pub(crate) async fn text_limited(response: reqwest::Response, limit: u64) -> Result<String, BodyError> {
    let body = read_limited(response, limit).await?;
    Ok(match String::from_utf8(body) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::Bytes;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(Bytes(16 * 1024 * 1024).to_string(), "16 MiB");
        assert_eq!(Bytes(32 * 1024 * 1024).to_string(), "32 MiB");
        assert_eq!(Bytes(2048).to_string(), "2 KiB");
        assert_eq!(Bytes(1000).to_string(), "1000 bytes");
        assert_eq!(Bytes(1).to_string(), "1 byte");
    }
}
