//! The platform's credential store, where a sign-in's secrets are kept when there is one: the
//! Keychain on macOS, the Credential Manager on Windows, the Secret Service (GNOME Keyring,
//! KWallet) on Linux desktops. Through the `keyring` crate, one entry per server (service
//! `tool-mediator`, account the server's URL), holding the tokens and a registered client's
//! secret as JSON. Each call runs on a thread of its own, within [`WAIT`]: the store may ask the
//! user to unlock it, and the Secret Service client brings a runtime of its own, which must not
//! run inside the caller's.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The service name the entries are kept under.
const SERVICE: &str = "tool-mediator";
/// How long the store may take to answer (a user unlocking it included).
const WAIT: Duration = Duration::from_secs(30);

/// What of a sign-in is secret.
#[derive(Clone, Serialize, Deserialize)]
pub(super) struct Secrets {
    pub(super) access_token: String,
    pub(super) refresh_token: Option<String>,
    pub(super) client_secret: Option<String>,
}

/// Why the platform's store was not used.
#[derive(Debug, thiserror::Error)]
pub(super) enum PlatformError {
    /// There is none here (no Secret Service on this machine, say), or it cannot hold this
    /// entry (the Credential Manager's size limit): the file keeps it instead.
    #[error("{0}")]
    Unavailable(String),
    /// There is one, and it refused or did not answer: nothing is written elsewhere instead.
    #[error("{0}")]
    Refused(String),
}

fn classify(error: keyring::Error) -> PlatformError {
    match error {
        keyring::Error::NoStorageAccess(_) => {
            PlatformError::Refused(format!("the platform's credential store refused: {error}"))
        }
        _ => PlatformError::Unavailable(format!("the platform's credential store cannot be used: {error}")),
    }
}

/// Set once the store has let a call wait past [`WAIT`]: it is not asked again this run (a
/// prompt nobody answers must not hold up every sign-in).
static GAVE_UP: AtomicBool = AtomicBool::new(false);

/// Runs `operation` on the entry for `server`, on a thread of its own, within [`WAIT`].
fn with_entry<T: Send + 'static>(
    server: &str,
    operation: impl FnOnce(&keyring::Entry) -> Result<T, keyring::Error> + Send + 'static,
) -> Result<T, PlatformError> {
    if GAVE_UP.load(Ordering::Relaxed) {
        return Err(PlatformError::Refused(
            "the platform's credential store did not answer earlier in this run".to_owned(),
        ));
    }
    let server = server.to_owned();
    let (done, answer) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("credential-store".into()).spawn(move || {
        let result = keyring::Entry::new(SERVICE, &server).and_then(|entry| operation(&entry));
        let _ = done.send(result);
    });
    if let Err(error) = spawned {
        return Err(PlatformError::Unavailable(format!("cannot start a thread for the credential store: {error}")));
    }
    match answer.recv_timeout(WAIT) {
        Ok(result) => result.map_err(classify),
        Err(_) => {
            GAVE_UP.store(true, Ordering::Relaxed);
            Err(PlatformError::Refused(format!(
                "the platform's credential store did not answer within {}s; it is not asked again this run",
                WAIT.as_secs()
            )))
        }
    }
}

pub(super) fn put(server: &str, secrets: &Secrets) -> Result<(), PlatformError> {
    let text = serde_json::to_string(secrets).map_err(|error| PlatformError::Unavailable(error.to_string()))?;
    with_entry(server, move |entry| entry.set_password(&text))
}

/// The secrets kept for `server`; `None` when the store holds none for it.
pub(super) fn get(server: &str) -> Result<Option<Secrets>, PlatformError> {
    let text = with_entry(server, |entry| match entry.get_password() {
        Ok(text) => Ok(Some(text)),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(error) => Err(error),
    })?;
    // What the store holds is ours; one that is not (changed by hand) is no sign-in.
    Ok(text.and_then(|text| serde_json::from_str(&text).ok()))
}

pub(super) fn remove(server: &str) -> Result<(), PlatformError> {
    with_entry(server, |entry| match entry.delete_credential() {
        Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
        Err(error) => Err(error),
    })
}
