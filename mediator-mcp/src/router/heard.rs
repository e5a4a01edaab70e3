//! Which changes of the tool list a session's client has been told of, so that the changes it
//! hears of late (the session's events are read on a task of their own) come as one
//! `list_changed`, after the listing being answered: a legacy client's first listing, whose
//! servers' tools came in one by one while it waited, was followed by one per server.

/// The announcements of tool list changes to one client.
#[derive(Debug, Default)]
pub(super) struct Heard {
    /// Listings being answered now: an announcement waits for them.
    listing: usize,
    /// The session's generation the client was last told of: an event for it or an earlier
    /// one is told already.
    told: Option<u64>,
    /// A change came while a listing was being answered.
    owed: bool,
}

impl Heard {
    pub(super) fn listing_started(&mut self) {
        self.listing += 1;
    }

    /// A listing was answered (or failed), and the session is at generation `now`: whether to
    /// announce the changes that came while it was being answered, as one.
    pub(super) fn listing_ended(&mut self, now: u64) -> bool {
        self.listing = self.listing.saturating_sub(1);
        if self.listing > 0 || !self.owed {
            return false;
        }
        self.owed = false;
        self.news(now)
    }

    /// What the client sees changed, and the session is at generation `now`: whether to tell
    /// the client now. While a listing is being answered the answer waits for it.
    pub(super) fn changed(&mut self, now: u64) -> bool {
        if self.listing > 0 {
            self.owed = true;
            return false;
        }
        self.news(now)
    }

    /// Whether generation `now` is one the client was not told of; if so, it is told now.
    fn news(&mut self, now: u64) -> bool {
        let news = self.told.is_none_or(|told| now > told);
        if news {
            self.told = Some(now);
        }
        news
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three servers' tools come in while the client's first listing waits for them (the
    /// session's generations 1, 2, 3): the client is told once, after the listing, and the
    /// events read later change nothing.
    #[test]
    fn changes_during_a_listing_are_told_once_after_it() {
        let mut heard = Heard::default();
        heard.listing_started();
        assert!(!heard.changed(1) && !heard.changed(2), "held while the listing is answered");
        assert!(heard.listing_ended(3), "told once, after the answer");
        assert!(!heard.changed(3), "an event read late is told already");
        assert!(heard.changed(4), "a change after it is told");
    }

    #[test]
    fn events_read_late_are_told_once() {
        let mut heard = Heard::default();
        // Three events, read when the session is already at their last generation.
        assert!(heard.changed(3));
        assert!(!heard.changed(3) && !heard.changed(3));
        // A listing no change came during announces nothing.
        heard.listing_started();
        assert!(!heard.listing_ended(3));
        assert!(heard.changed(4));
    }

    #[test]
    fn listings_at_once_wait_for_each_other() {
        let mut heard = Heard::default();
        heard.listing_started();
        heard.listing_started();
        assert!(!heard.changed(1));
        assert!(!heard.listing_ended(1), "the other listing is still being answered");
        assert!(heard.listing_ended(2), "told when both are");
        assert!(!heard.changed(2));
    }
}
