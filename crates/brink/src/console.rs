//! Writing to the terminal: stdout through [`emit`], which ignores a closed pipe
//! (`brink demo | head`) so a run still writes its result file and returns its verdict. When a
//! result goes to standard output (`--json -`), what is written for people goes to stderr, so
//! the result stays whole for the next program in the pipe.

use std::sync::atomic::{AtomicBool, Ordering};

/// Standard output carries a result file: text for people goes to stderr.
static STDOUT_TAKEN: AtomicBool = AtomicBool::new(false);

/// From now on, [`emit`] writes to stderr: standard output carries a result.
pub fn give_stdout_to_result() {
    STDOUT_TAKEN.store(true, Ordering::Relaxed);
}

/// Writes to stdout (stderr once a result owns stdout), ignoring a closed pipe (`brink demo |
/// head`): the run still writes its result file and returns its verdict.
pub fn emit(text: &str) {
    use std::io::Write;
    if STDOUT_TAKEN.load(Ordering::Relaxed) {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes()).and_then(|_| err.flush());
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

/// `println!` through [`emit`].
#[macro_export]
macro_rules! emitln {
    ($($arg:tt)*) => { $crate::console::emit(&format!("{}\n", format_args!($($arg)*))) };
}

/// A one-line warning on stderr (`warning: ...`); a closed stderr is ignored too.
pub fn warn(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "warning: {text}");
}
