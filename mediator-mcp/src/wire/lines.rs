//! Newline-delimited messages in and out, each with a limit: a line longer than the limit is
//! skipped (its head kept, so its sender can be answered), and an outbox that holds more than
//! its limit makes the reader that fills it wait until the writer has drained it.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::{Notify, mpsc};

/// How much of a line that is too long is kept: enough to find its top-level id.
const HEAD: usize = 4 * 1024;

/// The buffer of each reader and writer. A session has several (its router's, its pooled
/// connection's, each way), held for as long as it is open: at 64 KiB each, an idle session
/// held 314 KiB, mostly these. A line longer than this passes in pieces, as it would anyway.
const BUFFER: usize = 8 * 1024;

/// One line read, without its end.
pub(crate) enum Line<'a> {
    /// A whole line. Whoever keeps it may take the buffer (`std::mem::take`) rather than copy
    /// it: a tools/list page can be megabytes, and two of it at once is what it would cost.
    Whole(&'a mut Vec<u8>),
    /// A line longer than the limit: its first bytes, and how long it was.
    TooLong { head: &'a [u8], length: usize },
}

/// Calls `each` with every line until the input ends. No more than `limit` bytes of one line are
/// ever held; before each line it waits until `ready` says the line can be taken on (the
/// outboxes it fills have room). The end of the input is noticed while it waits.
pub(crate) async fn read_lines<R: AsyncRead + Unpin>(
    input: R,
    limit: usize,
    ready: &impl Ready,
    mut each: impl FnMut(Line<'_>),
) -> io::Result<()> {
    let mut input = BufReader::with_capacity(BUFFER, input);
    let mut line = Vec::with_capacity(8 * 1024);
    loop {
        tokio::select! {
            biased;
            () = ready.ready() => {}
            filled = input.fill_buf() => match filled {
                Ok([]) => return Ok(()),
                Ok(_) => ready.ready().await,
                Err(error) => return Err(error),
            },
        }
        line.clear();
        // Keep at most the limit and a "\r\n"; count the rest.
        let (mut length, mut newline) = (0usize, false);
        loop {
            let buffer = input.fill_buf().await?;
            if buffer.is_empty() {
                break;
            }
            let (taken, found) = match buffer.iter().position(|&byte| byte == b'\n') {
                Some(end) => (end + 1, true),
                None => (buffer.len(), false),
            };
            let keep = (limit + 2).saturating_sub(line.len()).min(taken);
            line.extend_from_slice(&buffer[..keep]);
            length += taken;
            input.consume(taken);
            if found {
                newline = true;
                break;
            }
        }
        if length == 0 {
            return Ok(());
        }
        if line.len() < length {
            let content = length - usize::from(newline);
            each(Line::TooLong { head: &line[..line.len().min(HEAD)], length: content });
            // A long line's buffer is not kept for the lines after it.
            line.truncate(0);
            line.shrink_to(8 * 1024);
            continue;
        }
        if line.ends_with(b"\n") {
            line.pop();
            if line.ends_with(b"\r") {
                line.pop();
            }
        }
        if line.len() > limit {
            each(Line::TooLong { head: &line[..line.len().min(HEAD)], length: line.len() });
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        each(Line::Whole(&mut line));
        // Nor is a large one's (a tools/list page can be megabytes, and would stay held); and
        // one taken is made anew.
        if line.capacity() > 1 << 20 || line.capacity() == 0 {
            line = Vec::with_capacity(8 * 1024);
        }
    }
}

/// What a reader waits for before it takes on its next line.
pub(crate) trait Ready: Sync {
    fn ready(&self) -> impl Future<Output = ()> + Send;
}

/// Nothing to wait for.
impl Ready for () {
    async fn ready(&self) {}
}

impl Ready for Outbox {
    fn ready(&self) -> impl Future<Output = ()> + Send {
        self.has_room()
    }
}

/// A line on its way to one side, or the end of that side's input.
pub(crate) enum Outgoing {
    Line(String),
    Close,
}

/// The lines queued for one side, and how many bytes they hold. Sending never waits (the
/// router answers from synchronous code); instead the readers whose lines fill an outbox wait
/// for it before reading more, which bounds it by its limit plus what one line can produce.
pub(crate) struct Outbox {
    queue: mpsc::UnboundedSender<Outgoing>,
    queued: AtomicUsize,
    drained: Notify,
    limit: usize,
}

impl Outbox {
    pub(crate) fn new(limit: usize) -> (Outbox, mpsc::UnboundedReceiver<Outgoing>) {
        let (queue, receiver) = mpsc::unbounded_channel();
        (Outbox { queue, queued: AtomicUsize::new(0), drained: Notify::new(), limit }, receiver)
    }

    pub(crate) fn send(&self, line: String) {
        self.queued.fetch_add(line.len() + 1, Ordering::AcqRel);
        // A closed queue means that side is gone; the proxy is ending anyway.
        let _ = self.queue.send(Outgoing::Line(line));
    }

    pub(crate) fn close(&self) {
        let _ = self.queue.send(Outgoing::Close);
    }

    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    fn written(&self, bytes: usize) {
        let before = self.queued.fetch_sub(bytes, Ordering::AcqRel);
        if before > self.limit && before - bytes <= self.limit {
            self.drained.notify_waiters();
        }
    }

    /// Waits until the outbox holds no more than its limit, or its writer is gone.
    pub(crate) async fn has_room(&self) {
        // The common case, checked without registering a waiter.
        while self.queued() > self.limit && !self.queue.is_closed() {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.queued() <= self.limit || self.queue.is_closed() {
                return;
            }
            drained.await;
        }
    }

    /// Writes queued lines, flushing when the queue runs empty, until told to close.
    pub(crate) async fn write_lines<W: AsyncWrite + Unpin>(
        &self,
        output: W,
        mut queue: mpsc::UnboundedReceiver<Outgoing>,
    ) -> io::Result<()> {
        let mut output = BufWriter::with_capacity(BUFFER, output);
        let result = async {
            while let Some(mut next) = queue.recv().await {
                loop {
                    match next {
                        Outgoing::Line(line) => {
                            output.write_all(line.as_bytes()).await?;
                            output.write_all(b"\n").await?;
                            self.written(line.len() + 1);
                        }
                        Outgoing::Close => {
                            output.flush().await?;
                            return output.shutdown().await;
                        }
                    }
                    match queue.try_recv() {
                        Ok(queued) => next = queued,
                        Err(_) => break,
                    }
                }
                output.flush().await?;
            }
            output.flush().await
        }
        .await;
        // Nothing will drain this outbox any more: readers waiting on it go on (and their
        // lines are dropped by the closed queue).
        queue.close();
        self.drained.notify_waiters();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], limit: usize) -> Vec<String> {
        let mut seen = Vec::new();
        read_lines(input, limit, &(), |line| {
            seen.push(match line {
                Line::Whole(text) => String::from_utf8_lossy(text).into_owned(),
                Line::TooLong { head, length } => format!("too long ({length}): {}", String::from_utf8_lossy(head)),
            })
        })
        .await
        .unwrap();
        seen
    }

    #[tokio::test]
    async fn lines_within_the_limit_arrive_whole() {
        assert_eq!(lines(b"a\r\nbb\n\n  \nccc", 3).await, ["a", "bb", "ccc"]);
        assert_eq!(lines(b"abc\n", 3).await, ["abc"]);
    }

    #[tokio::test]
    async fn a_line_over_the_limit_keeps_only_its_head() {
        let long = format!("{{\"id\":7,\"x\":\"{}\"}}\nnext\n", "y".repeat(100_000));
        let seen = lines(long.as_bytes(), 1_000).await;
        assert_eq!(seen.len(), 2);
        assert!(seen[0].starts_with("too long (100015): {\"id\":7"), "{}", &seen[0][..40]);
        assert!(seen[0].len() < HEAD + 40);
        assert_eq!(seen[1], "next");
        assert_eq!(lines(b"abcd\nab", 3).await, ["too long (4): abcd", "ab"]);
        // Without a final newline, too.
        assert_eq!(lines(b"abcdef", 3).await, ["too long (6): abcde"]);
    }

    #[tokio::test]
    async fn a_full_outbox_holds_its_reader_until_drained() {
        let (outbox, receiver) = Outbox::new(10);
        let outbox = std::sync::Arc::new(outbox);
        outbox.send("x".repeat(20));
        let waiting = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.has_room().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        let (sink, mut read) = tokio::io::duplex(1024);
        let writer = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.write_lines(sink, receiver).await }
        });
        waiting.await.unwrap();
        assert_eq!(outbox.queued(), 0);
        outbox.close();
        writer.await.unwrap().unwrap();
        let mut written = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut read, &mut written).await.unwrap();
        assert_eq!(written, format!("{}\n", "x".repeat(20)));
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Whatever the line lengths and the limit, every line comes out once, in order:
            /// whole within the limit, as its head and true length past it.
            #[test]
            fn every_line_is_delivered_or_reported_in_order(
                lengths in prop::collection::vec(0usize..300, 0..30),
                limit in 1usize..200,
            ) {
                let lines: Vec<String> =
                    lengths.iter().enumerate().map(|(n, &length)| format!("{n:03}{}", "x".repeat(length))).collect();
                let input = lines.iter().map(|line| format!("{line}\n")).collect::<String>();
                let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
                let mut seen = Vec::new();
                runtime
                    .block_on(read_lines(input.as_bytes(), limit, &(), |line| {
                        seen.push(match line {
                            Line::Whole(text) => (String::from_utf8_lossy(text).into_owned(), text.len(), false),
                            Line::TooLong { head, length } => (String::from_utf8_lossy(head).into_owned(), length, true),
                        })
                    }))
                    .unwrap();
                prop_assert_eq!(seen.len(), lines.len());
                for ((text, length, too_long), line) in seen.iter().zip(&lines) {
                    prop_assert_eq!(*length, line.len());
                    prop_assert_eq!(*too_long, line.len() > limit);
                    prop_assert!(line.starts_with(text.as_str()));
                    prop_assert!(*too_long || text == line);
                    prop_assert!(text.len() <= line.len().min(limit + 2));
                }
            }
        }
    }
}
