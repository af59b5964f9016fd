//! Where a run's `{{env NAME}}` values come from, in one place. On the machine the user runs
//! brink on, from its environment, and every value read is remembered; a coordinator sends
//! those to its workers with the run, and a worker compiles the run with them only
//! ([`given`]), never from its own environment: whoever holds a worker's token chooses the
//! command, and the worker host's secrets are not theirs to send anywhere.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Mutex;

thread_local! {
    /// The values a worker was given, while it compiles a run on this thread.
    static GIVEN: RefCell<Option<BTreeMap<String, String>>> = const { RefCell::new(None) };
}

/// Every variable read from this process's environment, for workers.
static READ: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());

fn read_lock() -> std::sync::MutexGuard<'static, BTreeMap<String, String>> {
    READ.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The value of `name`: from what this thread was [`given`], else from the environment
/// (remembered for [`read`]).
pub fn var(name: &str) -> Option<String> {
    if let Some(given) = GIVEN.with(|g| g.borrow().as_ref().map(|m| m.get(name).cloned())) {
        return given;
    }
    let v = std::env::var(name).ok()?;
    read_lock().insert(name.to_string(), v.clone());
    Some(v)
}

/// Every variable read from the environment so far, sorted by name.
pub fn read() -> Vec<(String, String)> {
    read_lock()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Runs `f` with `vars` as the only environment [`var`] sees on this thread.
pub fn given<T>(vars: &[(String, String)], f: impl FnOnce() -> T) -> T {
    let map = vars.iter().cloned().collect();
    let before = GIVEN.with(|g| g.replace(Some(map)));
    struct Restore(Option<Option<BTreeMap<String, String>>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take().flatten();
            GIVEN.with(|g| *g.borrow_mut() = before);
        }
    }
    let _restore = Restore(Some(before));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_values_replace_the_environment_and_read_ones_are_remembered() {
        std::env::set_var("BRINK_ENV_TEST_HOST_SECRET", "host");
        let vars = [("BRINK_ENV_TEST_GIVEN".to_string(), "sent".to_string())];
        given(&vars, || {
            assert_eq!(var("BRINK_ENV_TEST_GIVEN").as_deref(), Some("sent"));
            assert_eq!(var("BRINK_ENV_TEST_HOST_SECRET"), None, "never the host's");
        });
        assert_eq!(var("BRINK_ENV_TEST_HOST_SECRET").as_deref(), Some("host"));
        assert!(read().contains(&("BRINK_ENV_TEST_HOST_SECRET".to_string(), "host".to_string())));
        assert!(!read().iter().any(|(k, _)| k == "BRINK_ENV_TEST_GIVEN"));
    }
}
