//! Writing to the terminal: stdout through [`emit`], which ignores a closed pipe
//! (`brink demo | head`) so a run still writes its result file and returns its verdict.

/// Writes to stdout, ignoring a closed pipe (`brink demo | head`): the run still writes its
/// result file and returns its verdict.
pub fn emit(text: &str) {
    use std::io::Write;
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
