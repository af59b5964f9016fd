//! Interrupts: the first SIGINT/SIGTERM asks the run to stop and keep what it measured; brink
//! then exits with 130 after writing its result, and gives up waiting after a few seconds.

use crate::exit::{Fail, INTERRUPTED};
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Sets the returned flag on SIGINT/SIGTERM: the run stops, keeps what it measured and writes
/// its result. A second signal (`timeout -s INT` forwards two) changes nothing; a third, or
/// 3 s after the first without brink having finished, exits at once with 130.
pub fn install_signals() -> Result<Arc<AtomicBool>, Fail> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SIGNALS: AtomicUsize = AtomicUsize::new(0);
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        let flag = stop.clone();
        let action = move || {
            // Async-signal-safe: atomics only; the watch below does the exiting.
            flag.store(true, Ordering::SeqCst);
            SIGNALS.fetch_add(1, Ordering::SeqCst);
        };
        // SAFETY: the action only touches atomics, which is async-signal-safe.
        unsafe { signal_hook::low_level::register(sig, action) }
            .map_err(|e| Fail::input(format!("cannot install signal handler: {e}")))?;
    }
    let watched = stop.clone();
    std::thread::Builder::new()
        .name("brink-interrupt".into())
        .spawn(move || {
            while !watched.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let given_up = std::time::Instant::now() + STOP_WITHIN;
            while SIGNALS.load(Ordering::SeqCst) < 3 && std::time::Instant::now() < given_up {
                std::thread::sleep(Duration::from_millis(20));
            }
            if SIGNALS.load(Ordering::SeqCst) < 3 {
                let _ = writeln!(
                    std::io::stderr(),
                    "brink: still stopping {}s after the interrupt; exiting now",
                    STOP_WITHIN.as_secs()
                );
            }
            // Destructors do not run past this point: no temporary file is left behind.
            crate::output::remove_pending();
            std::process::exit(INTERRUPTED);
        })
        .map_err(|e| Fail::input(format!("cannot start the interrupt watch: {e}")))?;
    Ok(stop)
}

/// Counts SIGINT/SIGTERM and does nothing else: for a command that waits on something else
/// to stop (`k8s run` waits for its coordinator pod to keep what it measured).
pub fn count() -> Result<Arc<std::sync::atomic::AtomicUsize>, Fail> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let n = Arc::new(AtomicUsize::new(0));
    for sig in [SIGINT, SIGTERM] {
        let n = n.clone();
        // SAFETY: the action only touches an atomic, which is async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                n.fetch_add(1, Ordering::SeqCst);
            })
        }
        .map_err(|e| Fail::input(format!("cannot install signal handler: {e}")))?;
    }
    Ok(n)
}

/// After an interrupt brink stops within a second and writes its result; if it has not
/// finished after this long, it exits at once.
const STOP_WITHIN: Duration = Duration::from_secs(3);
