//! A remote override collection: fetched over HTTPS, revalidated with its ETag, kept in the
//! cache under the same TTL; offline, the last good copy serves.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::file::{OverrideError, OverrideFile};
use crate::cache::Cache;
use tool_mediator_core::Place;

/// The largest collection read: a collection is text about tools, far below this.
pub const MAX_COLLECTION_BYTES: u64 = 32 * 1024 * 1024;

/// Where a run's remote overrides came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteState {
    /// A fresh cached copy; no request made.
    Cached,
    /// The server said the cached copy is current (304).
    Revalidated,
    /// Downloaded now.
    Downloaded,
    /// The server could not be reached or sent something unusable; the last good copy serves.
    Stale,
    /// Nothing could be had; the run goes on without remote overrides.
    Unavailable,
}

/// The collection and how it was had, with the warning to show when something went wrong.
#[derive(Debug)]
pub struct RemoteOverrides {
    pub files: Vec<OverrideFile>,
    pub state: RemoteState,
    pub warning: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Kept {
    etag: Option<String>,
    body: String,
}

/// Fetches the collection at `url`: a JSON array of override files, or `{"overrides": [...]}`.
/// Every file is validated against `overrides/schema.json`. Plain `http` is allowed only to
/// loopback addresses (local mirrors and tests). Never fails: problems become a warning.
pub async fn fetch(url: &str, cache: Option<&Cache>, http: &reqwest::Client) -> RemoteOverrides {
    let key = [crate::cache::KEPT_STALE_PREFIX, b"overrides-url:", url.as_bytes()].concat();
    let kept: Option<(Kept, bool)> = cache
        .and_then(|cache| cache.get_stale(&key))
        .and_then(|(bytes, fresh)| serde_json::from_slice(&bytes).ok().map(|kept| (kept, fresh)));
    if let Some((kept, true)) = &kept
        && let Ok(files) = parse(&kept.body, url)
    {
        return RemoteOverrides { files, state: RemoteState::Cached, warning: None };
    }
    let stale = |warning: String, kept: Option<(Kept, bool)>| match kept.map(|(kept, _)| parse(&kept.body, url)) {
        Some(Ok(files)) => RemoteOverrides {
            files,
            state: RemoteState::Stale,
            warning: Some(format!("{warning}; using the last good copy")),
        },
        _ => RemoteOverrides {
            files: Vec::new(),
            state: RemoteState::Unavailable,
            warning: Some(format!("{warning}; going on without remote overrides")),
        },
    };
    if let Err(reason) = allowed(url) {
        return stale(format!("overrides_url {url}: {reason}"), kept);
    }
    let mut request = http.get(url);
    if let Some(etag) = kept.as_ref().and_then(|(kept, _)| kept.etag.as_deref()) {
        request = request.header(reqwest::header::IF_NONE_MATCH, etag);
    }
    let response = match request.send().await {
        Ok(response) => response,
        Err(error) => return stale(format!("cannot fetch overrides from {url}: {error}"), kept),
    };
    let status = response.status();
    if status == reqwest::StatusCode::NOT_MODIFIED
        && let Some((kept, _)) = kept
    {
        return match parse(&kept.body, url) {
            Ok(files) => {
                if let (Some(cache), Ok(bytes)) = (cache, serde_json::to_vec(&kept)) {
                    cache.put(&key, &bytes);
                }
                RemoteOverrides { files, state: RemoteState::Revalidated, warning: None }
            }
            Err(error) => stale(error.to_string(), None),
        };
    }
    if !status.is_success() {
        return stale(format!("overrides from {url}: HTTP {status}"), kept);
    }
    let etag = response.headers().get(reqwest::header::ETAG).and_then(|value| value.to_str().ok()).map(str::to_owned);
    let body = match crate::http::text_limited(response, MAX_COLLECTION_BYTES).await {
        Ok(body) => body,
        Err(error) => return stale(format!("cannot read overrides from {url}: {error}"), kept),
    };
    match parse(&body, url) {
        Ok(files) => {
            if let (Some(cache), Ok(bytes)) = (cache, serde_json::to_vec(&Kept { etag, body })) {
                cache.put(&key, &bytes);
                cache.flush();
            }
            RemoteOverrides { files, state: RemoteState::Downloaded, warning: None }
        }
        Err(error) => stale(error.to_string(), kept),
    }
}

fn allowed(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|error| format!("not a URL ({error})"))?;
    allowed_url(&parsed)
}

/// HTTPS anywhere; plain HTTP only to this machine (a local mirror, a test).
fn allowed_url(url: &reqwest::Url) -> Result<(), String> {
    // A name that merely starts with "127." is a domain like any other.
    let loopback = url.host_str().is_some_and(|host| {
        host == "localhost"
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    });
    match url.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        other => Err(format!("`{other}` to {} is not allowed; use https", url.host_str().unwrap_or("?"))),
    }
}

/// The client for fetching collections: bounded in time, and following redirects only to
/// places [`fetch`] would go itself. A collection is fetched with no credential of the user's,
/// so a redirect may go to another host (a release asset's CDN); no `Referer` goes with it,
/// which would carry the first URL, a token in its query and all.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(5))
        .timeout(std::time::Duration::from_secs(20))
        .referer(false)
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            if attempt.previous().len() >= 5 {
                attempt.error("too many redirects")
            } else if let Err(reason) = allowed_url(attempt.url()) {
                attempt.error(reason)
            } else {
                attempt.follow()
            }
        }))
        .build()
        .expect("a TLS client builds")
}

/// The files of a collection, each validated; errors name the URL and the JSON pointer.
fn parse(body: &str, url: &str) -> Result<Vec<OverrideFile>, OverrideError> {
    let place = Path::new(url);
    let value: Value = tool_mediator_core::json::from_str(body).map_err(|error| OverrideError::Syntax {
        path: place.to_owned(),
        place: Place::of_json_error(body, &error),
        message: tool_mediator_core::json::message(&error),
    })?;
    let (items, base) = match value {
        Value::Array(items) => (items, String::new()),
        Value::Object(mut object) => match object.remove("overrides") {
            Some(Value::Array(items)) => (items, "/overrides".to_owned()),
            _ => {
                return Err(OverrideError::Schema {
                    path: place.to_owned(),
                    pointer: String::new(),
                    message: "an override collection is an array of override files or {\"overrides\": [...]}".into(),
                });
            }
        },
        _ => {
            return Err(OverrideError::Schema {
                path: place.to_owned(),
                pointer: String::new(),
                message: "an override collection is an array of override files".into(),
            });
        }
    };
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            OverrideFile::parse(&item.to_string(), place).map_err(|error| match error {
                OverrideError::Schema { path, pointer, message } => {
                    OverrideError::Schema { path, pointer: format!("{base}/{index}{pointer}"), message }
                }
                other => other,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    #[tokio::test]
    async fn a_redirect_never_carries_the_first_url_to_another_host() {
        // The collection's URL may hold a token in its query: no `Referer` takes it elsewhere.
        let elsewhere = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_body_string("[]"))
            .mount(&elsewhere)
            .await;
        let first = MockServer::start().await;
        let location = format!("{}/moved.json", elsewhere.uri());
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(302).insert_header("location", location.as_str()))
            .mount(&first)
            .await;
        let url = format!("{}/o.json?token=s3cret", first.uri());
        let _ = super::fetch(&url, None, &super::http_client()).await;
        let reached = elsewhere.received_requests().await.unwrap_or_default();
        assert_eq!(reached.len(), 1, "the redirect is followed");
        assert!(reached.iter().all(|request| !request.headers.contains_key("referer")), "{:?}", reached[0].headers);
    }
}
