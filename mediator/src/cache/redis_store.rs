//! A store on a Redis server (or one that speaks its protocol: Valkey, KeyDB), shared by every
//! process that names it: replicas of a gateway and CI jobs pay the language model once for the
//! same tools.
//!
//! Sync, like the trait, on redis-rs's blocking client: each connection has timeouts of its own
//! ([`TIMEOUT`]), so no call waits longer than that on a server that is slow or gone. An async
//! caller runs store calls on tokio's blocking threads ([`CachedTransformer`] does), so a call
//! waiting on the network stalls no other task; `block_in_place` is not used, as it panics on
//! the current-thread runtime the command line, the proxy and the gateway run on.
//!
//! What it reads has limits a server cannot talk it out of: each value's size is asked first
//! (`STRLEN`) and one longer than the reader takes is never fetched; what is fetched is read with
//! `GETRANGE`, so a value that grew meanwhile is cut, and fails its check; one read brings
//! [`MAX_REPLY`] bytes at most; and each call of a run (not the `cache` command's questions) has
//! [`CALL_DEADLINE`] in all, however the server trickles its reply: past it the run goes on
//! uncached and the server is left alone as if it were down.
//!
//! It never fails a run: when the server cannot be reached, is slow or answers with an error
//! (a wrong password, a read-only replica, out of memory), reads are misses and writes are
//! dropped, with one warning naming the URL without its password; the server is tried again after
//! a short wait ([`RETRY_AFTER`], doubling up to half a minute while it stays away), and used
//! again once it answers. Only the questions asked of the cache itself (`records`, `clear`: the
//! `cache` command) answer with the error.
//!
//! [`CachedTransformer`]: super::CachedTransformer

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use redis::{Connection, RedisError, RedisResult};
use serde::{Deserialize, Serialize};
use tool_mediator_core::sync::lock;

use super::{CacheError, CacheStore, KEPT_STALE_PREFIX, KeyedRecord, lifetime_of};

/// How long a connection may take to open (TCP, TLS, the password), and each read and write on
/// it.
pub const TIMEOUT: Duration = Duration::from_millis(500);

/// The longest value read: a record of the cache (a remote override collection's last good copy,
/// 32 MiB, is the largest), with room for its header and tag.
pub const MAX_VALUE: usize = 33 * 1024 * 1024;

/// The most bytes one read brings, all its values together: the rest are misses.
pub const MAX_REPLY: usize = 64 * 1024 * 1024;

/// How long one call of a run may take in all, connecting included.
pub const CALL_DEADLINE: Duration = Duration::from_secs(2);

/// How long an unreachable server is left alone before it is tried again: long enough that a
/// listing of many tools costs one timeout, not one per tool.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The longest wait between tries while a server stays away.
const RETRY_AT_MOST: Duration = Duration::from_secs(30);

/// Connections kept open between calls; more are opened while more calls are in flight.
const IDLE_CONNECTIONS: usize = 8;

/// Keys per command (MGET, DEL) and per step of a SCAN: a batch of any size is one round trip of
/// several commands, none of them holding the server long.
const BATCH: usize = 500;

/// What every key starts with unless `cache_prefix` says otherwise.
pub const DEFAULT_PREFIX: &str = "tool-mediator:";

/// The environment variable a cache URL may come from, over the configuration file's.
pub const URL_VARIABLE: &str = "TOOL_MEDIATOR_CACHE_URL";

/// The environment variable holding the server's password when the URL has none: it keeps the
/// password out of files and command lines.
pub const PASSWORD_VARIABLE: &str = "TOOL_MEDIATOR_CACHE_PASSWORD";

const HIDDEN: &str = "********";

/// A cache server's URL (`redis://[user:password@]host[:port][/db]`, `rediss://` for TLS). Shown
/// (`Display`, `Debug`) without its password; only [`CacheUrl::unredacted`] gives it whole.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CacheUrl(String);

impl CacheUrl {
    pub fn new(url: impl Into<String>) -> CacheUrl {
        CacheUrl(url.into())
    }

    /// The URL as written, password and all: for connecting, never for showing.
    pub fn unredacted(&self) -> &str {
        &self.0
    }

    /// The URL with its password (if any) replaced by asterisks, for showing.
    pub fn redacted(&self) -> CacheUrl {
        CacheUrl(redact(&self.0))
    }
}

impl fmt::Display for CacheUrl {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&redact(&self.0))
    }
}

impl fmt::Debug for CacheUrl {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{:?}", redact(&self.0))
    }
}

/// `url` without its secrets, for logs and errors: the password of its user information
/// (`redis://user:********@host`; user information without a colon may be a password put where
/// the user goes, so all of it), and a `password` or `pass` query parameter (a Unix socket's).
/// Made of the text alone, so a URL that does not parse is redacted too.
pub fn redact(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(at) => url.split_at(at + 3),
        None => ("", url),
    };
    let query_at = rest.find(['?', '#']).unwrap_or(rest.len());
    let (before_query, query) = rest.split_at(query_at);
    // The last `@`: a password may hold one, a host never does.
    let location = match before_query.rfind('@') {
        Some(at) => {
            let (user_information, host) = before_query.split_at(at);
            match user_information.split_once(':') {
                Some((user, _)) => format!("{user}:{HIDDEN}{host}"),
                None => format!("{HIDDEN}{host}"),
            }
        }
        None => before_query.to_owned(),
    };
    let query = query
        .split_inclusive(['?', '&', '#'])
        .map(|part| {
            let (name, _) = part.split_once('=').unwrap_or((part, ""));
            let end = part.chars().last().filter(|last| matches!(last, '&' | '#' | '?'));
            match part.contains('=') && matches!(name, "password" | "pass") {
                true => format!("{name}={HIDDEN}{}", end.map(String::from).unwrap_or_default()),
                false => part.to_owned(),
            }
        })
        .collect::<String>();
    format!("{scheme}{location}{query}")
}

/// Keys (and their records) in a Redis server, each under the deployment's prefix.
pub struct RedisStore {
    client: redis::Client,
    /// The URL as it may be shown.
    url: String,
    /// Text never to show, taken out of every error a server or the client library words.
    secrets: Vec<String>,
    prefix: Vec<u8>,
    idle: Mutex<Vec<Connection>>,
    outage: Mutex<Outage>,
    retry_after: Duration,
    /// Whether a value too long to read was said in the log.
    told_too_long: AtomicBool,
}

/// While the server cannot be used: when to try it again, and the wait after that.
#[derive(Default)]
struct Outage {
    retry_at: Option<Instant>,
    wait: Duration,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("RedisStore")
            .field("url", &self.url)
            .field("prefix", &String::from_utf8_lossy(&self.prefix))
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// A store on the server at `url` (`redis://`, or `rediss://` for TLS, checked against the
    /// platform's roots), its keys under `prefix`; `password` is used when the URL has none.
    /// Nothing is connected yet: a server that is down at start costs the first call one
    /// warning, and is used once it is up. An error only for a URL that cannot name a server.
    pub fn open(url: &CacheUrl, prefix: &str, password: Option<&str>) -> Result<RedisStore, CacheError> {
        let shown = url.to_string();
        let mut secrets: Vec<String> =
            password.filter(|password| !password.is_empty()).map(String::from).into_iter().collect();
        let invalid = |message: String| CacheError::Remote { url: shown.clone(), message };
        let text = url.unredacted();
        if prefix.is_empty() {
            // Every key of the server would be the cache's, for `clear` to delete.
            return Err(invalid("cache_prefix is empty: the cache's keys need a prefix of their own".into()));
        }
        if !(text.starts_with("redis://") || text.starts_with("rediss://")) {
            return Err(invalid("a cache URL starts with redis:// or rediss:// (TLS)".into()));
        }
        let info = redis::IntoConnectionInfo::into_connection_info(text)
            .map_err(|error| invalid(format!("not a Redis URL: {}", scrub(&error, &secrets))))?;
        let mut settings = info.redis_settings().clone();
        if let Some(written) = settings.password() {
            secrets.push(written.to_owned());
        }
        if let (None, Some(password)) = (settings.password(), password.filter(|password| !password.is_empty())) {
            settings = settings.set_password(password);
        }
        let info = info.set_redis_settings(settings);
        if text.starts_with("rediss://") {
            // rustls asks for one provider for the process; reqwest's is aws-lc-rs too.
            let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        }
        let client = redis::Client::open(info).map_err(|error| invalid(scrub(&error, &secrets)))?;
        Ok(RedisStore {
            client,
            url: shown,
            secrets,
            prefix: prefix.as_bytes().to_vec(),
            idle: Mutex::new(Vec::new()),
            outage: Mutex::new(Outage::default()),
            retry_after: RETRY_AFTER,
            told_too_long: AtomicBool::new(false),
        })
    }

    /// How long an unreachable server is left alone before it is tried again (a test waits
    /// less than [`RETRY_AFTER`]).
    pub fn retry_after(mut self, wait: Duration) -> RedisStore {
        self.retry_after = wait;
        self
    }

    /// The server's URL, without its password.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    fn key(&self, key: &[u8]) -> Vec<u8> {
        [&self.prefix[..], key].concat()
    }

    /// Runs `work` on a connection: an idle one, else a new one. A connection the server closed
    /// while it sat idle (a restart, its idle timeout) is replaced once, not taken for an outage.
    fn attempt<T>(&self, work: impl FnMut(&mut Connection) -> RedisResult<T>) -> RedisResult<T> {
        let idle = lock(&self.idle).pop();
        let (value, connection) = on_a_connection(&self.client, idle, work, || lock(&self.idle).clear())?;
        self.keep(connection);
        Ok(value)
    }

    /// [`RedisStore::attempt`] within [`CALL_DEADLINE`]: on a thread of its own, left to end by
    /// itself (its socket's timeouts) when the server keeps it longer.
    fn attempt_within<T: Send + 'static>(
        &self,
        work: impl FnMut(&mut Connection) -> RedisResult<T> + Send + 'static,
    ) -> RedisResult<T> {
        let idle = lock(&self.idle).pop();
        let client = self.client.clone();
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        let started = std::thread::Builder::new().name("redis-call".into()).spawn(move || {
            let _ = answer.send(on_a_connection(&client, idle, work, || {}));
        });
        if let Err(error) = started {
            return Err(RedisError::from(error));
        }
        match answered.recv_timeout(CALL_DEADLINE) {
            Ok(Ok((value, connection))) => {
                self.keep(connection);
                Ok(value)
            }
            Ok(Err(error)) => {
                if error.is_connection_dropped() {
                    lock(&self.idle).clear();
                }
                Err(error)
            }
            Err(_) => Err(RedisError::from(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no whole answer within {}s", CALL_DEADLINE.as_secs()),
            ))),
        }
    }

    fn keep(&self, connection: Connection) {
        let mut idle = lock(&self.idle);
        if idle.len() < IDLE_CONNECTIONS {
            idle.push(connection);
        }
    }

    /// Runs `work` unless the server is being left alone; `None` when it cannot be used or does
    /// not answer within [`CALL_DEADLINE`], with one warning per outage.
    fn quietly<T: Send + 'static>(
        &self,
        work: impl FnMut(&mut Connection) -> RedisResult<T> + Send + 'static,
    ) -> Option<T> {
        if lock(&self.outage).retry_at.is_some_and(|at| Instant::now() < at) {
            return None;
        }
        match self.attempt_within(work) {
            Ok(value) => {
                let mut outage = lock(&self.outage);
                if outage.retry_at.take().is_some() {
                    tracing::info!("the cache at {} answers again; using it", self.url);
                }
                Some(value)
            }
            Err(error) => {
                lock(&self.idle).clear();
                let mut outage = lock(&self.outage);
                let first = outage.retry_at.is_none();
                outage.wait = match first {
                    true => self.retry_after,
                    false => outage.wait.saturating_mul(2).min(RETRY_AT_MOST.max(self.retry_after)),
                };
                outage.retry_at = Some(Instant::now() + outage.wait);
                let reason = scrub(&error, &self.secrets);
                if first {
                    tracing::warn!(
                        "the cache at {} cannot be used ({reason}); going on uncached, and trying it again from time to time",
                        self.url
                    );
                } else {
                    tracing::debug!("the cache at {} still cannot be used ({reason})", self.url);
                }
                None
            }
        }
    }

    /// Runs `work` now, whatever the last call found: for the questions asked of the cache
    /// itself, which answer with the error.
    fn asked<T>(&self, work: impl FnMut(&mut Connection) -> RedisResult<T>) -> Result<T, CacheError> {
        self.attempt(work)
            .map_err(|error| CacheError::Remote { url: self.url.clone(), message: scrub(&error, &self.secrets) })
    }

    /// The keys under the prefix, a batch at a time (SCAN: the server is never held long).
    fn each_batch(
        &self,
        connection: &mut Connection,
        mut batch: impl FnMut(&mut Connection, Vec<Vec<u8>>) -> RedisResult<()>,
    ) -> RedisResult<()> {
        let pattern = [glob_escaped(&self.prefix), b"*".to_vec()].concat();
        let mut cursor: u64 = 0;
        loop {
            let (next, keys): (u64, Vec<Vec<u8>>) =
                redis::cmd("SCAN").arg(cursor).arg("MATCH").arg(&pattern).arg("COUNT").arg(BATCH).query(connection)?;
            if !keys.is_empty() {
                batch(connection, keys)?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }
}

/// The values under `keys` of `each` bytes at most, while the read stays within [`MAX_REPLY`]:
/// each value's size asked first (`STRLEN`), then those to read (`GETRANGE`, so a value that grew
/// meanwhile is cut); a longer value, one past the budget, or a key of another type is `None`.
/// Whether a value was too long.
fn read_within(
    connection: &mut Connection,
    keys: &[Vec<u8>],
    each: usize,
) -> RedisResult<(Vec<Option<Vec<u8>>>, bool)> {
    let mut sizes = redis::pipe();
    sizes.ignore_errors();
    for key in keys {
        sizes.cmd("STRLEN").arg(key);
    }
    let sizes: Vec<RedisResult<usize>> = sizes.query(connection)?;
    // A key of another type is a miss; any other error (no password, a replica that refuses)
    // is the server's, and the call's.
    if let Some(error) =
        sizes.iter().find_map(|size| size.as_ref().err().filter(|error| error.code() != Some("WRONGTYPE")))
    {
        return Err(error.clone());
    }
    let mut budget = MAX_REPLY;
    let mut too_long = false;
    let wanted: Vec<bool> = sizes
        .iter()
        .map(|size| match size {
            Ok(0) | Err(_) => false,
            Ok(size) if *size > each || *size > budget => {
                too_long = true;
                false
            }
            Ok(size) => {
                budget -= *size;
                true
            }
        })
        .collect();
    let mut values = redis::pipe();
    values.ignore_errors();
    for (key, _) in keys.iter().zip(&wanted).filter(|(_, wanted)| **wanted) {
        values.cmd("GETRANGE").arg(key).arg(0).arg(each);
    }
    let values: Vec<RedisResult<Vec<u8>>> = if values.is_empty() { Vec::new() } else { values.query(connection)? };
    let mut values = values.into_iter();
    let found = wanted
        .iter()
        .map(|&wanted| match wanted {
            true => values.next().and_then(Result::ok).filter(|value| !value.is_empty() && value.len() <= each),
            false => None,
        })
        .collect::<Vec<_>>();
    Ok((found, too_long))
}

/// A connection to the server with the socket's timeouts.
fn connect(client: &redis::Client) -> RedisResult<Connection> {
    let connection = client.get_connection_with_timeout(TIMEOUT)?;
    connection.set_read_timeout(Some(TIMEOUT))?;
    connection.set_write_timeout(Some(TIMEOUT))?;
    Ok(connection)
}

/// `work` done on `idle`, else on a new connection (also when `idle` was closed by the server
/// meanwhile: `dropped` is told), and the connection it was done on.
fn on_a_connection<T>(
    client: &redis::Client,
    idle: Option<Connection>,
    mut work: impl FnMut(&mut Connection) -> RedisResult<T>,
    dropped: impl FnOnce(),
) -> RedisResult<(T, Connection)> {
    if let Some(mut connection) = idle {
        match work(&mut connection) {
            Ok(value) => return Ok((value, connection)),
            Err(error) if !error.is_connection_dropped() || error.is_timeout() => return Err(error),
            // The others opened as long ago are likely closed too.
            Err(_) => dropped(),
        }
    }
    let mut connection = connect(client)?;
    let value = work(&mut connection)?;
    Ok((value, connection))
}

/// `error` in words, with no secret in them.
fn scrub(error: &RedisError, secrets: &[String]) -> String {
    let mut text = error.to_string();
    for secret in secrets {
        text = text.replace(secret.as_str(), HIDDEN);
    }
    text
}

/// `text` matched literally by a SCAN pattern.
fn glob_escaped(text: &[u8]) -> Vec<u8> {
    let mut escaped = Vec::with_capacity(text.len());
    for &byte in text {
        if matches!(byte, b'*' | b'?' | b'[' | b']' | b'\\') {
            escaped.push(b'\\');
        }
        escaped.push(byte);
    }
    escaped
}

impl CacheStore for RedisStore {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, CacheError> {
        Ok(self.get_many(&[key])?.pop().flatten())
    }

    fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>, CacheError> {
        self.get_many_within(keys, MAX_VALUE)
    }

    /// Each value's size first (`STRLEN`), then the values of `each` bytes at most, while the
    /// read stays within [`MAX_REPLY`] (`GETRANGE`): a longer value, one past the budget, or a
    /// key of another type (a list, say) reads as a miss, and the next put replaces it.
    fn get_many_within(&self, keys: &[&[u8]], each: usize) -> Result<Vec<Option<Vec<u8>>>, CacheError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let count = keys.len();
        let keys: Vec<Vec<u8>> = keys.iter().map(|key| self.key(key)).collect();
        let each = each.min(MAX_VALUE);
        let found = self.quietly(move |connection| read_within(connection, &keys, each));
        let Some((found, too_long)) = found.filter(|(found, _)| found.len() == count) else {
            return Ok(vec![None; count]);
        };
        if too_long && !self.told_too_long.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "the cache at {} holds values longer than the reader takes ({each} bytes each, {MAX_REPLY} a read); \
                 they are not read, and are asked again",
                self.url
            );
        }
        Ok(found)
    }

    fn put(&self, key: &[u8], record: &[u8]) -> Result<(), CacheError> {
        self.put_many(&[(key.to_vec(), record.to_vec())])
    }

    /// SET, with the record's lifetime as the key's own expiry (PX: relative, so the server's
    /// clock need not agree with ours); a last good copy gets none, as it must outlive its TTL.
    fn put_many(&self, records: &[KeyedRecord]) -> Result<(), CacheError> {
        if records.is_empty() {
            return Ok(());
        }
        let mut pipeline = redis::pipe();
        for (key, record) in records {
            let command = pipeline.cmd("SET").arg(self.key(key)).arg(record);
            match lifetime_of(record).filter(|_| !key.starts_with(KEPT_STALE_PREFIX)) {
                Some(lifetime) => command.arg("PX").arg(lifetime.max(1)).ignore(),
                None => command.ignore(),
            };
        }
        self.quietly(move |connection| pipeline.query::<()>(connection));
        Ok(())
    }

    fn remove(&self, key: &[u8]) -> Result<(), CacheError> {
        let key = self.key(key);
        self.quietly(move |connection| redis::cmd("DEL").arg(&key).query::<()>(connection));
        Ok(())
    }

    fn records(&self) -> Result<Vec<KeyedRecord>, CacheError> {
        let prefix = self.prefix.len();
        self.asked(|connection| {
            let mut records = Vec::new();
            self.each_batch(connection, |connection, keys| {
                let (values, _) = read_within(connection, &keys, MAX_VALUE)?;
                // A key that expired between the two commands is gone; one too long is left out.
                for (key, value) in keys.into_iter().zip(values) {
                    if let Some(value) = value {
                        records.push((key[prefix..].to_vec(), value));
                    }
                }
                Ok(())
            })?;
            Ok(records)
        })
    }

    /// Deletes the keys under the prefix, and no others: other deployments may share the server.
    fn clear(&self) -> Result<(), CacheError> {
        self.asked(|connection| {
            self.each_batch(connection, |connection, keys| redis::cmd("DEL").arg(&keys).query::<()>(connection))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown() {
        for (url, shown) in [
            ("redis://:hunter22@127.0.0.1:6379/0", "redis://:********@127.0.0.1:6379/0"),
            ("rediss://cache:p%40ss@redis.internal:6380", "rediss://cache:********@redis.internal:6380"),
            ("redis://:pa@ss:w/rd@host/1", "redis://:********@host/1"),
            ("redis://lonely-secret@host", "redis://********@host"),
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
            ("redis://host/2?protocol=resp3", "redis://host/2?protocol=resp3"),
            ("redis+unix:///run/redis.sock?db=1&pass=hunter22", "redis+unix:///run/redis.sock?db=1&pass=********"),
            ("redis://host?password=hunter22&protocol=resp3", "redis://host?password=********&protocol=resp3"),
            ("not a url :hunter22@", "not a url :********@"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
        let url = CacheUrl::new("redis://:hunter22@127.0.0.1:6379/0");
        assert!(!format!("{url} {url:?} {:?}", url.redacted()).contains("hunter22"));
        assert_eq!(url.unredacted(), "redis://:hunter22@127.0.0.1:6379/0");
    }

    #[test]
    fn a_prefix_matches_itself_only() {
        assert_eq!(glob_escaped(b"team*[a]?\\:"), b"team\\*\\[a\\]\\?\\\\:".to_vec());
    }

    #[test]
    fn a_url_that_names_no_server_is_refused_without_its_password() {
        for url in
            ["http://:hunter22@127.0.0.1:6379", "redis://:hunter22@0.0.0.0:6379", "redis://:hunter22@host/notadb"]
        {
            let error = RedisStore::open(&CacheUrl::new(url), DEFAULT_PREFIX, None).expect_err(url).to_string();
            assert!(!error.contains("hunter22"), "{error}");
            assert!(error.contains("********"), "{error}");
        }
        let empty = RedisStore::open(&CacheUrl::new("redis://127.0.0.1:1/0"), "", None).expect_err("no prefix");
        assert!(empty.to_string().contains("cache_prefix is empty"), "{empty}");
        let store = RedisStore::open(&CacheUrl::new("redis://:hunter22@127.0.0.1:1/0"), "p:", Some("other")).unwrap();
        assert!(!format!("{store:?}").contains("hunter22"));
    }
}
