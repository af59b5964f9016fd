//! Typed exit codes: 0 success, 1 an SLO failed (or a comparison regressed), 2 invalid input or tool error, 3 no request
//! ever succeeded, 130 interrupted (the result is still written).

use std::fmt;

/// Why brink ends with a non-zero code.
#[derive(Debug)]
pub struct Fail {
    pub code: i32,
    pub message: String,
}

/// An SLO failed.
pub const SLO_FAILED: i32 = 1;
/// `brink compare`: a deciding metric regressed.
pub const REGRESSED: i32 = 1;
pub const INPUT: i32 = 2;
pub const UNREACHABLE: i32 = 3;
pub const INTERRUPTED: i32 = 130;

impl Fail {
    /// Invalid input or a tool error (exit 2).
    pub fn input(message: impl Into<String>) -> Fail {
        Fail {
            code: INPUT,
            message: message.into(),
        }
    }
}

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// What the runner could not do is a tool error (exit 2).
impl From<runner::Error> for Fail {
    fn from(e: runner::Error) -> Fail {
        Fail::input(e.0)
    }
}
