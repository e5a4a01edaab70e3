//! A redis-server of a test's own (Debian's package): on a free port on 127.0.0.1, saving
//! nothing, in a temporary directory, stopped when dropped. Shared by the cache's tests
//! (tests/redis_store.rs), the command line's (tests/redis_cache.rs), the replicas' and the
//! cache benchmark.
//!
//! Where redis-server is missing, [`RedisServer::start`] gives `None`. A test that needs it is
//! ignored on such a machine (`#[cfg_attr(no_redis, ignore = ...)]`, see tests/build.rs) and
//! fails with [`MISSING`] should it run anyway.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why a test that needs redis-server fails without it.
pub const MISSING: &str = "redis-server is missing: TOOL_MEDIATOR_REDIS=1 tests/peers/install installs Debian's";

pub struct RedisServer {
    program: PathBuf,
    child: Option<Child>,
    port: u16,
    password: Option<String>,
    /// The certificate and key it serves TLS with, only TLS.
    tls: Option<(PathBuf, PathBuf)>,
    dir: tempfile::TempDir,
}

/// Where redis-server is, if anywhere.
fn program() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join("redis-server"))
        .find(|candidate| candidate.is_file())
}

impl RedisServer {
    /// A server without a password, or `None` where there is none to run.
    pub fn start() -> Option<RedisServer> {
        RedisServer::start_with(None)
    }

    /// A server that asks for `password`.
    pub fn start_with_password(password: &str) -> Option<RedisServer> {
        RedisServer::start_with(Some(password.to_owned()))
    }

    /// A server that speaks TLS only, with the certificate and key given (PEM files).
    pub fn start_with_tls(certificate: &std::path::Path, key: &std::path::Path) -> Option<RedisServer> {
        let mut server = RedisServer::start_with_options(None, Some((certificate.to_owned(), key.to_owned())))?;
        server.restart();
        Some(server)
    }

    fn start_with(password: Option<String>) -> Option<RedisServer> {
        let mut server = RedisServer::start_with_options(password, None)?;
        server.restart();
        Some(server)
    }

    fn start_with_options(password: Option<String>, tls: Option<(PathBuf, PathBuf)>) -> Option<RedisServer> {
        let program = program()?;
        let port =
            TcpListener::bind("127.0.0.1:0").and_then(|listener| listener.local_addr()).expect("a free port").port();
        let dir = tempfile::tempdir().expect("a temporary directory");
        Some(RedisServer { program, child: None, port, password, tls, dir })
    }

    /// Starts the server (again, after [`RedisServer::stop`]) on the same port, empty.
    pub fn restart(&mut self) {
        self.stop();
        let mut command = Command::new(&self.program);
        let port = self.port.to_string();
        match &self.tls {
            None => command.args(["--port", &port]),
            Some((certificate, key)) => command
                .args(["--port", "0", "--tls-port", &port, "--tls-auth-clients", "no", "--tls-cert-file"])
                .arg(certificate)
                .arg("--tls-key-file")
                .arg(key),
        };
        command
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--daemonize", "no", "--logfile", ""])
            .arg("--dir")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(password) = &self.password {
            command.args(["--requirepass", password]);
        }
        // Ended with the process that started it, even when nothing drops it (a benchmark's
        // static, a test that aborts).
        #[cfg(target_os = "linux")]
        // SAFETY: prctl is async-signal-safe, and touches nothing of the parent's.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        self.child = Some(command.spawn().expect("redis-server starts"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.answers() {
            assert!(Instant::now() < deadline, "redis-server did not answer on port {} within 10 s", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the server answers a PING (a refusal for want of a password is an answer); over
    /// TLS, whether it takes connections.
    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else { return false };
        if self.tls.is_some() {
            return true;
        }
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let mut reply = [0u8; 64];
        stream.write_all(b"PING\r\n").is_ok() && stream.read(&mut reply).is_ok_and(|read| read > 0)
    }

    /// Kills the server, as a crash or an operator would.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the server answering while it keeps its connections open (SIGSTOP), as a server
    /// that hangs does; [`RedisServer::resume`] lets it go on.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    fn signal(&self, signal: libc::c_int) {
        let child = self.child.as_ref().expect("a running server");
        let pid = libc::pid_t::try_from(child.id()).expect("a pid");
        // SAFETY: a signal to our own child, which has not been waited for.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "signal {signal} to redis-server");
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>/0` (`rediss://` over TLS), without the password.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}/0", self.port)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // A paused server is killed all the same: SIGKILL ends a stopped process.
        self.stop();
    }
}
