//! Warnings a peer can repeat without end (malformed lines, answers to nobody) are logged
//! once, then at most once a second with how many were held back, so a flood cannot fill the log.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const EVERY: Duration = Duration::from_secs(1);

/// One kind of warning, by a fixed name.
#[derive(Default)]
pub(super) struct Warnings {
    kinds: Mutex<HashMap<&'static str, Kind>>,
}

struct Kind {
    logged: Instant,
    held_back: u64,
}

impl Warnings {
    /// Logs `message` unless a warning of this `kind` was logged less than a second ago; the
    /// next one logged says how many were held back meanwhile. Returns whether it was logged.
    pub(super) fn warn(&self, kind: &'static str, message: impl FnOnce() -> String) -> bool {
        let held_back = {
            let mut kinds = tool_mediator_core::sync::lock(&self.kinds);
            let now = Instant::now();
            match kinds.get_mut(kind) {
                Some(seen) if now.duration_since(seen.logged) < EVERY => {
                    seen.held_back += 1;
                    return false;
                }
                Some(seen) => {
                    seen.logged = now;
                    std::mem::take(&mut seen.held_back)
                }
                None => {
                    kinds.insert(kind, Kind { logged: now, held_back: 0 });
                    0
                }
            }
        };
        if held_back == 0 {
            tracing::warn!("{}", message());
        } else {
            tracing::warn!("{} ({held_back} more like it held back)", message());
        }
        true
    }
}

impl Warnings {
    /// Logs how many of each kind were held back since the last one logged; for the end.
    pub(super) fn flush(&self) {
        let mut kinds = tool_mediator_core::sync::lock(&self.kinds);
        for (kind, seen) in kinds.iter_mut() {
            let held_back = std::mem::take(&mut seen.held_back);
            if held_back > 0 {
                tracing::warn!("{held_back} more warnings like the last `{kind}` one were held back");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_logs_once_a_second() {
        let warnings = Warnings::default();
        assert!(warnings.warn("malformed", || "x".into()));
        let logged = (0..10_000).filter(|_| warnings.warn("malformed", || "x".into())).count();
        assert_eq!(logged, 0);
        assert!(warnings.warn("other", || "y".into()));
        let mut kinds = warnings.kinds.lock().unwrap();
        assert_eq!(kinds["malformed"].held_back, 10_000);
        kinds.get_mut("malformed").unwrap().logged -= EVERY;
        drop(kinds);
        assert!(warnings.warn("malformed", || "x".into()));
        assert_eq!(warnings.kinds.lock().unwrap()["malformed"].held_back, 0);
    }
}
