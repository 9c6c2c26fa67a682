//! Settings that a config reload (SIGHUP) changes while the gateway runs: the access lists
//! (inside [`crate::core::access::AccessList`]), display, streaming and permissions. Each is
//! one value shared by every agent and room that holds a clone of its cell; whoever needs
//! it reads the current value when it starts something (a turn reads its streaming and
//! display settings when it begins, a poll its timeout when it opens), so a reload never
//! changes a reply or a poll halfway.

use std::sync::{Arc, RwLock};

/// One reloadable value, shared by every clone.
#[derive(Debug, Clone, Default)]
pub struct Reloadable<T> {
    /// The current value.
    value: Arc<RwLock<T>>,
}

impl<T: Clone + PartialEq> Reloadable<T> {
    /// A cell holding `value`.
    pub fn new(value: T) -> Self {
        Self {
            value: Arc::new(RwLock::new(value)),
        }
    }

    /// The current value.
    pub fn get(&self) -> T {
        self.value.read().expect("live setting poisoned").clone()
    }

    /// What `f` makes of the current value, read in place (no copy).
    pub fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.value.read().expect("live setting poisoned"))
    }

    /// Puts `value` in place for every clone; returns whether it changed.
    pub fn set(&self, value: T) -> bool {
        let mut current = self.value.write().expect("live setting poisoned");
        let changed = *current != value;
        *current = value;
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_reaches_every_clone_and_is_reported_once() {
        let a = Reloadable::new(3);
        let b = a.clone();
        assert!(a.set(4));
        assert_eq!(b.get(), 4);
        assert!(!b.set(4), "the same value again is no change");
    }
}
