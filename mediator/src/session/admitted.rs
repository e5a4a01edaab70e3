//! What a session remembers of its sources' admissions: the order their listings came in (a
//! listing is taken in only if no later one of its source started meanwhile, so an older list
//! never overwrites a newer one, nor brings back a source that is gone), and, with trust on
//! first use, what the pins said of each last listing, to screen it again after a review.

use std::collections::HashMap;

use crate::admission::{Screened, Source};
use tool_mediator_core::ToolContext;

#[derive(Default)]
pub(super) struct Admissions {
    /// Listings started, all sources together: each listing's number.
    started: u64,
    /// By source: the number of its last listing started (or of its going).
    latest: HashMap<usize, u64>,
    kept: HashMap<usize, Kept>,
}

/// A source's last listing as the pins screened it, and how it was taken in.
#[derive(Clone)]
pub(super) struct Kept {
    pub(super) source: Source,
    pub(super) context: ToolContext,
    pub(super) screened: Screened,
    /// The number of the listing.
    number: u64,
}

impl Admissions {
    /// A listing of `source` starts: its number.
    pub(super) fn start(&mut self, source: usize) -> u64 {
        self.started += 1;
        self.latest.insert(source, self.started);
        self.started
    }

    /// A listing of `source` screened again after a review starts, unless a later listing of
    /// it started since `kept` was: its number.
    pub(super) fn start_again(&mut self, source: usize, kept: &Kept) -> Option<u64> {
        (self.latest.get(&source) == Some(&kept.number)).then(|| self.start(source))
    }

    /// Whether listing `number` is the last started of `source`.
    pub(super) fn is_latest(&self, source: usize, number: u64) -> bool {
        self.latest.get(&source) == Some(&number)
    }

    /// A listing of `source` that could not be admitted takes nothing in: unless a later one
    /// started meanwhile, the listing kept before it is the last again, screened again after a
    /// review as before.
    pub(super) fn abandon(&mut self, source: usize, number: u64) {
        if !self.is_latest(source, number) {
            return;
        }
        match self.kept.get(&source) {
            Some(kept) => self.latest.insert(source, kept.number),
            None => self.latest.remove(&source),
        };
    }

    /// What the pins say now of `kept`, `source`'s last listing, when that did not change
    /// what is held (or could not be screened): it is not screened again until the file changes.
    pub(super) fn renew(&mut self, source: usize, kept: &Kept, screened: Screened) {
        if let Some(now) = self.kept.get_mut(&source).filter(|now| now.number == kept.number) {
            now.screened = screened;
        }
    }

    /// Keeps what the pins said of listing `number`, the last of `source`.
    pub(super) fn keep(
        &mut self,
        source: usize,
        number: u64,
        from: &Source,
        context: &ToolContext,
        screened: Screened,
    ) {
        self.kept.insert(source, Kept { source: from.clone(), context: context.clone(), screened, number });
    }

    /// `source` is gone: what it listed is screened no more, and a listing of it under way is
    /// not taken in.
    pub(super) fn forget(&mut self, source: usize) {
        self.start(source);
        self.kept.remove(&source);
    }

    /// Every source's last listing as the pins screened it.
    pub(super) fn kept(&self) -> Vec<(usize, Kept)> {
        self.kept.iter().map(|(source, kept)| (*source, kept.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_started_after_another_of_its_source_is_the_one_taken_in() {
        let mut admissions = Admissions::default();
        let first = admissions.start(0);
        let other = admissions.start(1);
        let second = admissions.start(0);
        assert!(!admissions.is_latest(0, first));
        assert!(admissions.is_latest(0, second) && admissions.is_latest(1, other));
        admissions.forget(1);
        assert!(!admissions.is_latest(1, other), "a source gone takes in nothing under way");
        // A listing that failed gives way to the one before it.
        let failed = admissions.start(0);
        admissions.abandon(0, failed);
        assert!(!admissions.is_latest(0, failed) && !admissions.is_latest(0, second), "nothing was kept");
    }
}
