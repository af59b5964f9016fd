//! What a coordinator in a pod tells `brink k8s run` through its log, the one channel a
//! cluster gives back with only `pods/log` permission: the progress of every second, the
//! result, and the exit code, each on lines that start with a mark only that run knows
//! (`brink:NONCE:`), so nothing else in the log (a worker's words, a server's) can pass for
//! them. Both sides live here: [`Reporter`] writes the lines in the pod, [`Line::parse`] reads
//! them on the user's machine.

use runner::{Event, Sink};
use std::io::Write;
use std::sync::OnceLock;

/// The mark, when this process reports through its log.
static MARK: OnceLock<String> = OnceLock::new();

/// Characters of result JSON on one log line: far below any runtime's line limit.
const CHUNK: usize = 4096;

/// From now on this process reports through its log with `nonce` (the pod of `k8s run`).
pub fn set(nonce: &str) {
    let _ = MARK.set(prefix(nonce));
}

/// The mark's prefix, when this process reports through its log.
pub fn get() -> Option<&'static str> {
    MARK.get().map(String::as_str)
}

fn prefix(nonce: &str) -> String {
    format!("brink:{nonce}:")
}

/// Writes one marked line on stderr (the log keeps stdout and stderr in one stream).
pub fn write(mark: &str, kind: &str, text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{mark}{kind} {text}");
}

/// The sink that writes the result and the exit code as marked lines.
pub struct Reporter(pub &'static str);

impl Sink for Reporter {
    fn event(&mut self, e: &Event) -> Result<(), runner::Error> {
        match e {
            Event::Finished(r) => {
                let json = serde_json::to_string(r)
                    .map_err(|e| runner::Error(format!("cannot write the result: {e}")))?;
                let mut rest = json.as_str();
                while !rest.is_empty() {
                    let mut cut = rest.len().min(CHUNK);
                    while !rest.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    write(self.0, "result", &rest[..cut]);
                    rest = &rest[cut..];
                }
                write(self.0, "result-end", &json.len().to_string());
            }
            Event::Exit(code) => write(self.0, "exit", &code.to_string()),
            _ => {}
        }
        Ok(())
    }
}

/// One line of a coordinator's log, as `k8s run` reads it.
#[derive(Debug, PartialEq)]
pub enum Line<'a> {
    /// The progress line of a second.
    Progress(&'a str),
    /// A piece of the result's JSON.
    Result(&'a str),
    /// The result is whole: its length in bytes.
    ResultEnd(usize),
    Exit(i32),
    /// Anything else: shown as it is.
    Other(&'a str),
}

impl<'a> Line<'a> {
    pub fn parse(nonce: &str, line: &'a str) -> Line<'a> {
        let Some(rest) = line.strip_prefix(prefix(nonce).as_str()) else {
            return Line::Other(line);
        };
        let (kind, text) = rest.split_once(' ').unwrap_or((rest, ""));
        match kind {
            "progress" => Line::Progress(text),
            "result" => Line::Result(text),
            "result-end" => text.parse().map_or(Line::Other(line), Line::ResultEnd),
            "exit" => text.parse().map_or(Line::Other(line), Line::Exit),
            _ => Line::Other(line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Line;

    #[test]
    fn only_the_runs_own_mark_counts() {
        assert_eq!(Line::parse("n1", "brink:n1:exit 130"), Line::Exit(130));
        assert_eq!(
            Line::parse("n1", "brink:n1:progress [1s/5s] 10 req/s"),
            Line::Progress("[1s/5s] 10 req/s")
        );
        assert_eq!(
            Line::parse("n1", "brink:n1:result {\"a\""),
            Line::Result("{\"a\"")
        );
        assert_eq!(
            Line::parse("n1", "brink:n1:result-end 12"),
            Line::ResultEnd(12)
        );
        for other in [
            "brink:n2:exit 0",
            "worker said brink:n1:exit 0",
            "brink:n1:exit x",
        ] {
            assert_eq!(Line::parse("n1", other), Line::Other(other));
        }
    }
}
