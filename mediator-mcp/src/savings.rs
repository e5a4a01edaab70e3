//! What clients were spared of the servers' tool listings, for the HTTP front's metrics: each
//! first page a client is shown, against the whole listings of the servers behind it.
//!
//! Tokens are estimated from bytes, at [`BYTES_PER_TOKEN`]. Counting them with a tokenizer
//! would cost the gateway the tokenizer's tables (o200k_base: about 45 MiB resident, measured
//! on the load benchmark: 72 MiB peak became 117 MiB) for a counter; the ratio is what
//! o200k_base gives over real listings (`tests/cli.rs` keeps it honest).

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of a JSON tool listing per o200k_base token: 4.0 over the seven real servers' listings
/// of `tests/fixtures/manifests` (186,023 bytes, 46,380 tokens; 3.9 to 4.6 by listing).
pub const BYTES_PER_TOKEN: u64 = 4;

/// The bytes spared so far, every session's.
#[derive(Debug, Default)]
pub struct Savings {
    bytes: AtomicU64,
}

impl Savings {
    /// Bytes spared so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Tokens spared so far, estimated.
    pub fn tokens(&self) -> u64 {
        self.bytes() / BYTES_PER_TOKEN
    }

    /// A client was shown `shown` bytes of listings whose whole took `listed`.
    pub(crate) fn spared(&self, listed: usize, shown: usize) {
        let spared = u64::try_from(listed.saturating_sub(shown)).unwrap_or(u64::MAX);
        self.bytes.fetch_add(spared, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_listed_less_what_was_shown_is_spared_and_never_less_than_nothing() {
        let savings = Savings::default();
        savings.spared(1000, 200);
        savings.spared(10, 400);
        assert_eq!((savings.bytes(), savings.tokens()), (800, 200));
    }
}
