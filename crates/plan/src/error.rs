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
    /// The plan's other errors, in the order of the file: all are reported at once.
    pub others: Vec<PlanError>,
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
            others: Vec::new(),
        }
    }

    /// Every error found, in the order of the file, as one (`None` when there were none).
    pub fn all(mut errs: Vec<PlanError>) -> Option<PlanError> {
        errs.sort_by_key(|e| e.pos.map(|p| (p.line, p.column)));
        let mut errs = errs.into_iter();
        let mut first = errs.next()?;
        first.others = errs.collect();
        Some(first)
    }

    /// How many errors this one stands for.
    pub fn count(&self) -> usize {
        1 + self.others.len()
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = shortened(&self.message);
        match self.pos {
            Some(p) => write!(f, "{}:{}:{}: {message}", self.file, p.line, p.column)?,
            None => write!(f, "{}: {message}", self.file)?,
        }
        if let (Some(p), Some(text)) = (self.pos, &self.line_text) {
            let gutter = p.line.to_string();
            let pad = " ".repeat(gutter.len());
            let (shown, at) = around(text, (p.column as usize).saturating_sub(1));
            let caret = " ".repeat(at);
            write!(f, "\n {gutter} | {shown}\n {pad} | {caret}^")?;
        }
        for other in &self.others {
            write!(f, "\nerror: {other}")?;
        }
        if !self.others.is_empty() {
            write!(f, "\n{} errors in {}", self.count(), self.file)?;
        }
        Ok(())
    }
}

/// Longest message shown whole; a longer one (it quotes a huge value from the file) keeps
/// its start and its end.
const MESSAGE: usize = 400;

fn shortened(message: &str) -> std::borrow::Cow<'_, str> {
    let n = message.chars().count();
    if n <= MESSAGE {
        return message.into();
    }
    let head: String = message.chars().take(MESSAGE - 120).collect();
    let tail: String = message.chars().skip(n - 100).collect();
    format!("{head}…{tail}").into()
}

/// Characters of the line shown on each side of the column.
const AROUND: usize = 60;

/// The part of `line` around character `column` (cut by characters, marked with `…` where
/// cut), and the column's position in it: a line of 200 KB gives a message of one screen.
fn around(line: &str, column: usize) -> (String, usize) {
    let chars: Vec<char> = line.chars().collect();
    let column = column.min(chars.len());
    let from = column.saturating_sub(AROUND);
    let to = (column + AROUND).min(chars.len());
    let mut shown = String::new();
    if from > 0 {
        shown.push('…');
    }
    shown.extend(&chars[from..to]);
    if to < chars.len() {
        shown.push('…');
    }
    (shown, column - from + usize::from(from > 0))
}

impl std::error::Error for PlanError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_cut_around_the_column() {
        let line = format!("{}bad{}", "é".repeat(200_000), "x".repeat(200_000));
        let e = PlanError {
            file: "plan.yaml".into(),
            pos: Some(Pos {
                line: 3,
                column: 200_001,
            }),
            message: format!(
                "unknown key '{}' (expected: name, load)",
                "k".repeat(100_000)
            ),
            line_text: Some(line),
            others: Vec::new(),
        };
        let text = e.to_string();
        assert!(text.len() < 1000, "{} bytes", text.len());
        assert!(text.contains("(expected: name, load)"), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        let shown = lines[1].split_once(" | ").unwrap().1;
        let caret = lines[2].split_once(" | ").unwrap().1;
        let at = caret.chars().count() - 1;
        assert_eq!(
            shown.chars().skip(at).take(3).collect::<String>(),
            "bad",
            "{text}"
        );
        let short = PlanError {
            line_text: Some("  rate: 10x".into()),
            pos: Some(Pos { line: 1, column: 9 }),
            message: "bad rate".into(),
            ..e
        };
        assert!(
            short
                .to_string()
                .ends_with("\n 1 |   rate: 10x\n   |         ^"),
            "{short}"
        );
    }
}
