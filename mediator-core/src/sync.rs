//! Shared state behind a mutex.

/// Locks a mutex whose holder may have panicked: what it guards here stays usable (a list, a
/// set, counters), and one failed task must not take the rest down with it.
pub fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
