//! A raw HTTP server on 127.0.0.1, for what wiremock cannot do: never answer, or send a body
//! in chunks with no Content-Length, or announce a length and send less.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A server that reads each request whole, counts it, and hands the connection to `respond`
/// (on a thread of its own). Returns its address (`http://127.0.0.1:PORT`) and the count.
pub fn raw_server(respond: impl Fn(&mut TcpStream) + Send + Sync + 'static) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = requests.clone();
    let respond = Arc::new(respond);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (counted, respond) = (counted.clone(), respond.clone());
            std::thread::spawn(move || {
                if read_request(&mut stream).is_some() {
                    counted.fetch_add(1, Ordering::SeqCst);
                    respond(&mut stream);
                }
            });
        }
    });
    (url, requests)
}

fn read_request(stream: &mut TcpStream) -> Option<()> {
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()
}

/// Accepts, reads the request, and never writes a byte.
#[allow(dead_code)] // each test file uses some of these
pub fn never_answer(_: &mut TcpStream) {
    std::thread::sleep(Duration::from_secs(3600));
}

/// Writes `head`, then `body` as it is or, when `chunk` is given, in chunks of that many bytes
/// (the head then says `transfer-encoding: chunked`); stops when the client hangs up.
#[allow(dead_code)] // each test file uses some of these
pub fn respond_with(
    head: &'static str,
    body: Arc<Vec<u8>>,
    chunk: Option<usize>,
) -> impl Fn(&mut TcpStream) + Send + Sync {
    move |stream| {
        let mut send = || -> std::io::Result<()> {
            stream.write_all(head.as_bytes())?;
            let Some(size) = chunk else {
                return stream.write_all(&body);
            };
            for piece in body.chunks(size) {
                stream.write_all(format!("{:x}\r\n", piece.len()).as_bytes())?;
                stream.write_all(piece)?;
                stream.write_all(b"\r\n")?;
            }
            stream.write_all(b"0\r\n\r\n")
        };
        // The client hangs up once it has had enough.
        let _ = send();
    }
}
