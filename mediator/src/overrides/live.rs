//! The override set a front door that runs for long (the proxy, the gateway) serves: the
//! built-in files and the remote collection as they were at start, refined by the user's
//! directories, which are read again when they change. A directory whose files cannot all be
//! used changes nothing, and the error says which file and where.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::{OverrideError, OverrideSet, override_files};
use crate::read::Stamp;
use tool_mediator_core::error::with_causes;
use tool_mediator_core::sync::lock;

/// An override set that follows the user's directories. Chains built over it
/// ([`MediatorBuilder::live_overrides`](crate::MediatorBuilder::live_overrides)) use the set
/// read last; [`LiveOverrides::subscribe`] hears each new one.
#[derive(Debug)]
pub struct LiveOverrides {
    /// What the directories refine: the built-in files and the remote collection.
    base: OverrideSet,
    dirs: Vec<PathBuf>,
    current: watch::Sender<Arc<OverrideSet>>,
    /// The directories' files as they were when read last; held while they are read again, so
    /// one reading at a time publishes.
    seen: Mutex<Vec<(PathBuf, Option<Stamp>)>>,
    /// Whether something already looks at the directories.
    followed: AtomicBool,
}

/// How often a front door that runs for long looks at the override directories.
pub const LOOK_EVERY: Duration = Duration::from_secs(2);

impl LiveOverrides {
    /// The files of `dirs` in order, read now.
    pub fn load(dirs: Vec<PathBuf>) -> Result<LiveOverrides, OverrideError> {
        let seen = stamp(&dirs);
        let set = read(&OverrideSet::new(), &dirs)?;
        let (current, _) = watch::channel(Arc::new(set));
        Ok(LiveOverrides { base: OverrideSet::new(), dirs, current, seen: Mutex::new(seen), followed: false.into() })
    }

    /// These directories refining `base` (the built-in files, the remote collection), which
    /// they are not read again for.
    pub fn over(self, base: OverrideSet) -> LiveOverrides {
        let mut set = base.clone();
        set.extend(self.current().as_ref().clone());
        self.current.send_replace(Arc::new(set));
        LiveOverrides { base, ..self }
    }

    /// Whether there are no overrides, and no directory that could add some.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty() && self.current.borrow().is_empty()
    }

    /// The set read last.
    pub fn current(&self) -> Arc<OverrideSet> {
        self.current.borrow().clone()
    }

    /// Hears each set read from now on.
    pub fn subscribe(&self) -> watch::Receiver<Arc<OverrideSet>> {
        self.current.subscribe()
    }

    /// Reads the directories again if a file in them was added, removed or changed since they
    /// were read last; whether a different set is served now. A file that cannot be used is an
    /// error, and the set read last is served still (until the directories change again).
    pub fn reload_if_changed(&self) -> Result<bool, OverrideError> {
        let mut seen = lock(&self.seen);
        let now = stamp(&self.dirs);
        if *seen == now {
            return Ok(false);
        }
        // Taken before the files are read: a change made while they are is seen next time.
        *seen = now;
        let set = read(&self.base, &self.dirs)?;
        // A file saved again as it was changes nothing the sessions see.
        Ok(self.current.send_if_modified(|current| {
            let changed = **current != set;
            if changed {
                *current = Arc::new(set);
            }
            changed
        }))
    }

    /// Looks at the directories every `every` and reads them again when they change, for as
    /// long as the set is in use (one look at a time, however often this is called); says in
    /// the log what it read, or why it could not.
    pub async fn follow(self: Arc<Self>, every: Duration) {
        if self.dirs.is_empty() || self.followed.swap(true, Ordering::SeqCst) {
            return;
        }
        let overrides = Arc::downgrade(&self);
        drop(self);
        loop {
            tokio::time::sleep(every).await;
            let Some(overrides) = overrides.upgrade() else { return };
            let looked = tokio::task::spawn_blocking({
                let overrides = overrides.clone();
                move || overrides.reload_if_changed()
            })
            .await;
            match looked {
                Ok(Ok(true)) => {
                    let dirs: Vec<String> = overrides.dirs.iter().map(|dir| dir.display().to_string()).collect();
                    tracing::info!("override directories read again: {}", dirs.join(", "));
                }
                Ok(Ok(false)) => {}
                Ok(Err(error)) => tracing::warn!("{}; the overrides as they were go on", with_causes(&error)),
                Err(error) => tracing::warn!("reading the override directories failed: {error}"),
            }
        }
    }
}

/// `base` refined by the files of `dirs`, in order.
fn read(base: &OverrideSet, dirs: &[PathBuf]) -> Result<OverrideSet, OverrideError> {
    let mut local = OverrideSet::new();
    for dir in dirs {
        local.load_dir(dir)?;
    }
    let mut set = base.clone();
    set.extend(local);
    Ok(set)
}

/// Each directory's override files with their stamps, or the directory alone when it cannot be
/// listed.
fn stamp(dirs: &[PathBuf]) -> Vec<(PathBuf, Option<Stamp>)> {
    let mut stamps = Vec::new();
    for dir in dirs {
        match override_files(dir) {
            Ok(files) => stamps.extend(files.into_iter().map(|path| {
                let stamp = std::fs::metadata(&path).ok().map(|metadata| Stamp::of(&metadata));
                (path, stamp)
            })),
            Err(_) => stamps.push((dir.clone(), None)),
        }
    }
    stamps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overrides::OverrideTransformer;
    use tool_mediator_core::{SourceType, Tool, ToolContext, ToolTransformer};

    fn write(path: &std::path::Path, name: &str) {
        let text = format!(r#"{{"source": "example.com", "tools": {{"gt": {{"name": "{name}"}}}}}}"#);
        std::fs::write(path, text).unwrap();
    }

    async fn name_given(transformer: &OverrideTransformer) -> Option<String> {
        let context = ToolContext::new("example.com", SourceType::Api);
        let answers = transformer.transform(&[Tool::new("gt")], &context).await.unwrap();
        answers.into_iter().next().and_then(|answer| answer.patch.name)
    }

    #[tokio::test]
    async fn a_changed_file_is_served_and_heard_of_and_a_broken_one_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("example.com.json");
        write(&file, "get_thing");
        let live = LiveOverrides::load(vec![dir.path().to_owned()]).unwrap();
        let transformer = OverrideTransformer::following(&live);
        let mut heard = live.subscribe();
        assert_eq!(name_given(&transformer).await.as_deref(), Some("get_thing"));
        assert!(!live.reload_if_changed().unwrap(), "nothing changed");

        write(&file, "get_ticket_now");
        assert!(live.reload_if_changed().unwrap());
        assert!(heard.has_changed().unwrap());
        heard.mark_unchanged();
        assert_eq!(name_given(&transformer).await.as_deref(), Some("get_ticket_now"));

        std::fs::write(&file, "{\n  \"source\": \"example.com\",\n  \"tools\": {,}\n}").unwrap();
        let error = live.reload_if_changed().unwrap_err();
        assert!(error.to_string().contains("example.com.json:3:13"), "{error}");
        assert!(!heard.has_changed().unwrap());
        assert_eq!(name_given(&transformer).await.as_deref(), Some("get_ticket_now"), "the last good set stays");

        write(&file, "get_ticket");
        assert!(live.reload_if_changed().unwrap());
        heard.mark_unchanged();
        // Saved again as it was: read, and nothing to hear.
        write(&file, "get_ticket");
        assert!(!live.reload_if_changed().unwrap());
        assert!(!heard.has_changed().unwrap());

        std::fs::remove_file(&file).unwrap();
        assert!(live.reload_if_changed().unwrap());
        assert_eq!(name_given(&transformer).await, None, "a removed file is forgotten");
    }

    #[tokio::test]
    async fn a_directory_that_goes_away_changes_nothing_until_it_is_back_and_odd_files_are_not_read() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("overrides");
        std::fs::create_dir(&dir).unwrap();
        write(&dir.join("example.com.json"), "get_thing");
        let live = LiveOverrides::load(vec![dir.clone()]).unwrap();
        let transformer = OverrideTransformer::following(&live);

        std::fs::rename(&dir, parent.path().join("away")).unwrap();
        let error = live.reload_if_changed().unwrap_err();
        assert!(with_causes(&error).contains("overrides"), "{}", with_causes(&error));
        assert_eq!(name_given(&transformer).await.as_deref(), Some("get_thing"), "the last good set stays");

        std::fs::rename(parent.path().join("away"), &dir).unwrap();
        write(&dir.join("example.com.json"), "get_thing_back");
        assert!(live.reload_if_changed().unwrap());
        assert_eq!(name_given(&transformer).await.as_deref(), Some("get_thing_back"));

        // A fifo named like an override file is never opened: reading it would never end.
        #[cfg(unix)]
        {
            let fifo = dir.join("zz.json");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
            assert!(made.success());
            assert!(!live.reload_if_changed().unwrap(), "nothing to read changed");
            assert_eq!(name_given(&transformer).await.as_deref(), Some("get_thing_back"));
        }
    }

    #[tokio::test]
    async fn the_directories_refine_what_they_were_given() {
        let dir = tempfile::tempdir().unwrap();
        let mut base = OverrideSet::new();
        let built_in =
            r#"{"source": "example.com", "tools": {"gt": {"name": "get_thing"}, "ls": {"name": "list_things"}}}"#;
        base.add(super::super::OverrideFile::parse(built_in, std::path::Path::new("b")).unwrap(), "b".into());
        let live = LiveOverrides::load(vec![dir.path().to_owned()]).unwrap().over(base);
        write(&dir.path().join("example.com.json"), "get_theme");
        assert!(live.reload_if_changed().unwrap());
        let set = live.current();
        let tools = set.for_source("example.com").unwrap();
        assert_eq!(tools["gt"].name.as_deref(), Some("get_theme"));
        assert_eq!(tools["ls"].name.as_deref(), Some("list_things"), "the base stays under the directory");
    }
}
