//! The browser's part of sign-in: the authorization URL opened in the system browser (or
//! written to stderr for the user to open), and a listener on a loopback port (RFC 8252 §7.3)
//! that takes the authorization server's redirect back, checking its state.

use std::collections::HashMap;
use std::time::Duration;

use std::future::IntoFuture as _;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::AuthError;

/// A loopback listener waiting for the authorization server's redirect.
pub struct Callback {
    listener: TcpListener,
    port: u16,
}

impl Callback {
    /// Listens on 127.0.0.1, on `port` when it is free (a client registered with that redirect
    /// URI can be used again), else on any port.
    pub async fn bind(port: Option<u16>) -> Result<Callback, AuthError> {
        let listener = match port {
            Some(port) => match TcpListener::bind(("127.0.0.1", port)).await {
                Ok(listener) => listener,
                Err(_) => TcpListener::bind(("127.0.0.1", 0)).await?,
            },
            None => TcpListener::bind(("127.0.0.1", 0)).await?,
        };
        let port = listener.local_addr()?.port();
        Ok(Callback { listener, port })
    }

    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// The code the authorization server sends back with `state`, within `within`. A redirect
    /// with another state (a forged or stale one) is refused and the wait goes on; one that
    /// says the user or server refused ends it.
    pub async fn code(self, state: &str, within: Duration) -> Result<String, AuthError> {
        let (arrived, mut arrivals) = mpsc::channel(1);
        let expected = state.to_owned();
        let app = axum::Router::new()
            .route("/callback", axum::routing::get(redirected))
            .with_state(Waiting { expected, arrived });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(
            axum::serve(self.listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .into_future(),
        );
        let outcome = tokio::time::timeout(within, arrivals.recv()).await;
        let _ = stop.send(());
        // The browser has its page; the listener ends soon after whatever happens, a connection
        // someone holds open included.
        let ending = server.abort_handle();
        tokio::spawn(async move {
            if tokio::time::timeout(Duration::from_secs(2), server).await.is_err() {
                ending.abort();
            }
        });
        match outcome {
            Ok(Some(Ok(code))) => Ok(code),
            Ok(Some(Err(refused))) => Err(AuthError::Refused(refused)),
            Ok(None) => Err(AuthError::Refused("the sign-in page closed".into())),
            Err(_) => Err(AuthError::TimedOut(within)),
        }
    }
}

#[derive(Clone)]
struct Waiting {
    expected: String,
    arrived: mpsc::Sender<Result<String, String>>,
}

async fn redirected(State(waiting): State<Waiting>, Query(query): Query<HashMap<String, String>>) -> impl IntoResponse {
    // Compared in full: a state is single-use, unguessable, and the only tie to this sign-in.
    if query.get("state").map(String::as_str) != Some(waiting.expected.as_str()) {
        return (StatusCode::BAD_REQUEST, Html(page("This sign-in link is not the one tool-mediator is waiting for.")));
    }
    if let Some(error) = query.get("error") {
        let description = query.get("error_description").map(|text| format!(": {text}")).unwrap_or_default();
        let _ = waiting.arrived.try_send(Err(format!("{error}{description}")));
        return (StatusCode::OK, Html(page("Sign-in was refused. You can close this tab.")));
    }
    match query.get("code") {
        Some(code) => {
            let _ = waiting.arrived.try_send(Ok(code.clone()));
            (StatusCode::OK, Html(page("Signed in. You can close this tab and go back to your MCP client.")))
        }
        None => (StatusCode::BAD_REQUEST, Html(page("The authorization server sent no code."))),
    }
}

fn page(message: &str) -> String {
    format!("<!doctype html><meta charset=utf-8><title>tool-mediator</title><p>{message}</p>")
}

/// Opens `url` in the user's browser: the command `$BROWSER` names (the URL in place of `%s`,
/// else after it), else the platform's opener. `BROWSER=none` opens nothing. Whether a browser
/// was started; its output never reaches the MCP client's stream.
pub fn open(url: &str) -> bool {
    let command = match std::env::var("BROWSER") {
        Ok(browser) if browser.trim() == "none" => return false,
        Ok(browser) if !browser.trim().is_empty() => {
            let mut words: Vec<String> = browser.split_whitespace().map(str::to_owned).collect();
            if words.iter().any(|word| word.contains("%s")) {
                for word in &mut words {
                    *word = word.replace("%s", url);
                }
            } else {
                words.push(url.to_owned());
            }
            words
        }
        _ => platform_opener(url),
    };
    let Some((program, args)) = command.split_first() else { return false };
    let started = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(false)
        .spawn();
    match started {
        Ok(mut child) => {
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
            true
        }
        Err(_) => false,
    }
}

fn platform_opener(url: &str) -> Vec<String> {
    if cfg!(target_os = "macos") {
        vec!["open".into(), url.into()]
    } else if cfg!(windows) {
        vec!["rundll32".into(), "url.dll,FileProtocolHandler".into(), url.into()]
    } else {
        vec!["xdg-open".into(), url.into()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn visit(uri: &str) -> u16 {
        reqwest::get(uri).await.unwrap().status().as_u16()
    }

    #[tokio::test]
    async fn a_redirect_with_another_state_is_refused_and_the_right_one_is_taken() {
        let callback = Callback::bind(None).await.unwrap();
        let uri = callback.redirect_uri();
        assert!(uri.starts_with("http://127.0.0.1:"), "{uri}");
        let waiting = tokio::spawn(async move { callback.code("expected-state", Duration::from_secs(10)).await });
        // A forged redirect: another state, then none; the wait goes on.
        let mut status = 0;
        for _ in 0..50 {
            match reqwest::get(format!("{uri}?code=evil&state=forged")).await {
                Ok(response) => {
                    status = response.status().as_u16();
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
        assert_eq!(status, 400);
        assert_eq!(visit(&format!("{uri}?code=evil")).await, 400);
        assert_eq!(visit(&format!("{uri}?code=good&state=expected-state")).await, 200);
        assert_eq!(waiting.await.unwrap().unwrap(), "good");
    }

    #[tokio::test]
    async fn a_refusal_ends_the_wait_and_silence_times_out() {
        let callback = Callback::bind(None).await.unwrap();
        let uri = callback.redirect_uri();
        let waiting = tokio::spawn(async move { callback.code("s", Duration::from_secs(10)).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(visit(&format!("{uri}?error=access_denied&state=s")).await, 200);
        let error = waiting.await.unwrap().unwrap_err().to_string();
        assert!(error.contains("access_denied"), "{error}");

        let callback = Callback::bind(None).await.unwrap();
        let error = callback.code("s", Duration::from_millis(50)).await.unwrap_err();
        assert!(matches!(error, AuthError::TimedOut(_)), "{error}");
    }
}
