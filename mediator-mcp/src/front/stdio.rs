//! The client on the proxy's own standard input and output.

use tokio::io::{AsyncRead, AsyncWrite};

use crate::proxy::Client;

/// The client of [`stdio`], its parts boxed.
pub type StdioClient = Client<Box<dyn AsyncRead + Unpin + Send>, Box<dyn AsyncWrite + Unpin + Send>, Gone>;

/// What completes when a client is gone.
pub type Gone = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// The client behind the proxy's own stdin and stdout. When they are pipes (as an MCP client
/// makes them) they are read and written through the event loop, and the client is known to
/// be gone when nothing reads its end of the output pipe any more; otherwise (a file, a
/// terminal) through tokio's blocking standard streams, which cost a thread hop per read.
pub fn stdio() -> StdioClient {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd as _;
        use tokio::net::unix::pipe;
        let input = std::io::stdin().as_fd().try_clone_to_owned().and_then(pipe::Receiver::from_owned_fd);
        let output = std::io::stdout().as_fd().try_clone_to_owned().and_then(pipe::Sender::from_owned_fd);
        let input: Box<dyn AsyncRead + Unpin + Send> = match input {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdin()),
        };
        let (output, gone): (Box<dyn AsyncWrite + Unpin + Send>, Gone) = match output {
            Ok(pipe) => (Box::new(pipe), Box::pin(output_closed())),
            Err(_) => (Box::new(tokio::io::stdout()), Box::pin(std::future::pending())),
        };
        Client { input, output, gone }
    }
    #[cfg(not(unix))]
    {
        Client {
            input: Box::new(tokio::io::stdin()),
            output: Box::new(tokio::io::stdout()),
            gone: Box::pin(std::future::pending()),
        }
    }
}

/// Completes when the read end of the proxy's stdout pipe is closed: the client has gone.
#[cfg(unix)]
async fn output_closed() {
    use std::os::fd::AsFd as _;
    use tokio::io::Interest;
    use tokio::io::unix::AsyncFd;
    // A second descriptor of the same pipe, watched for readiness only; nothing is written to it.
    let Ok(watched) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return std::future::pending().await;
    };
    // Errors only: a pipe's write end reports one when its reader closes, and nothing else,
    // so the proxy's own writes wake nothing here.
    // SAFETY: `watched` is an OwnedFd the AsyncFd takes ownership of: it stays open, and names
    // the same pipe, until the AsyncFd is dropped.
    let Ok(watched) = (unsafe { AsyncFd::register_with_interest(watched, Interest::ERROR) }) else {
        return std::future::pending().await;
    };
    loop {
        let Ok(mut ready) = watched.ready(Interest::ERROR).await else {
            return std::future::pending().await;
        };
        if ready.ready().is_error() {
            return;
        }
        ready.clear_ready();
    }
}
