//! Plan errors point at the place in the file: `plan.yaml:12:9: message`, then the offending
//! line with a caret under the column, the way compilers do.

use std::fmt;

/// A position in a plan file (1-based line and column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    pub line: u64,
    pub column: u64,
}

impl From<serde_saphyr::Location> for Pos {
    fn from(l: serde_saphyr::Location) -> Pos {
        Pos {
            line: l.line(),
            column: l.column(),
        }
    }
}

/// What is wrong with a plan, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanError {
    pub file: String,
    pub pos: Option<Pos>,
    pub message: String,
    /// The source line at `pos`.
    pub line_text: Option<String>,
}

impl PlanError {
    /// An error at `pos` in `source` (the file's text).
    pub fn at(file: &str, source: &str, pos: Option<Pos>, message: impl Into<String>) -> PlanError {
        let line_text = pos.and_then(|p| {
            source
                .lines()
                .nth((p.line as usize).saturating_sub(1))
                .map(str::to_string)
        });
        PlanError {
            file: file.to_string(),
            pos,
            message: message.into(),
            line_text,
        }
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pos {
            Some(p) => write!(f, "{}:{}:{}: {}", self.file, p.line, p.column, self.message)?,
            None => write!(f, "{}: {}", self.file, self.message)?,
        }
        if let (Some(p), Some(text)) = (self.pos, &self.line_text) {
            let gutter = p.line.to_string();
            let pad = " ".repeat(gutter.len());
            let caret = " ".repeat((p.column as usize).saturating_sub(1));
            write!(f, "\n {gutter} | {text}\n {pad} | {caret}^")?;
        }
        Ok(())
    }
}

impl std::error::Error for PlanError {}
