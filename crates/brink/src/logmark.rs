//! What a coordinator in a pod tells `brink k8s run` through its log, the one channel a
//! cluster gives back with only `pods/log` permission: the progress of every second, the
//! result, and the exit code, each on lines that start with a mark only that run knows
//! (`brink:NONCE:`), so nothing else in the log (a worker's words, a server's) can pass for
//! them. Each marked line carries its number (`brink:NONCE:7 progress ...`): a reader that
//! reconnects after its stream was cut (a node rotating its logs) takes every line once,
//! and a line the log lost is a gap it names, never a result quietly cut. Both sides live
//! here: [`Reporter`] writes the lines in the pod, [`Line::parse`] reads them on the user's
//! machine.

use runner::{Event, Sink};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// The number of the last marked line written.
static SEQ: AtomicU64 = AtomicU64::new(0);

/// Writes one marked line, numbered, on stderr (the log keeps stdout and stderr in one
/// stream). The lock keeps the numbers in the order the lines are written.
pub fn write(mark: &str, kind: &str, text: &str) {
    let mut err = std::io::stderr().lock();
    let seq = SEQ.fetch_add(1, Ordering::SeqCst) + 1;
    let _ = writeln!(err, "{mark}{seq} {kind} {text}");
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
    /// A line of the log: its number and what it says when it carries the run's mark
    /// (`None`: an unmarked line, shown as it is).
    pub fn parse(nonce: &str, line: &'a str) -> (Option<u64>, Line<'a>) {
        let marked = line
            .strip_prefix(prefix(nonce).as_str())
            .and_then(|rest| rest.split_once(' '))
            .and_then(|(seq, rest)| Some((seq.parse::<u64>().ok()?, rest)));
        let Some((seq, rest)) = marked else {
            return (None, Line::Other(line));
        };
        let (kind, text) = rest.split_once(' ').unwrap_or((rest, ""));
        let said = match kind {
            "progress" => Line::Progress(text),
            "result" => Line::Result(text),
            "result-end" => text.parse().map_or(Line::Other(line), Line::ResultEnd),
            "exit" => text.parse().map_or(Line::Other(line), Line::Exit),
            _ => Line::Other(line),
        };
        (Some(seq), said)
    }
}

#[cfg(test)]
mod tests {
    use super::Line;

    #[test]
    fn only_the_runs_own_mark_counts() {
        assert_eq!(
            Line::parse("n1", "brink:n1:9 exit 130"),
            (Some(9), Line::Exit(130))
        );
        assert_eq!(
            Line::parse("n1", "brink:n1:1 progress [1s/5s] 10 req/s"),
            (Some(1), Line::Progress("[1s/5s] 10 req/s"))
        );
        assert_eq!(
            Line::parse("n1", "brink:n1:2 result {\"a\""),
            (Some(2), Line::Result("{\"a\""))
        );
        assert_eq!(
            Line::parse("n1", "brink:n1:3 result-end 12"),
            (Some(3), Line::ResultEnd(12))
        );
        for other in [
            "brink:n2:1 exit 0",
            "worker said brink:n1:1 exit 0",
            "brink:n1:exit 0",
            "brink:n1:x exit 0",
        ] {
            assert_eq!(Line::parse("n1", other), (None, Line::Other(other)));
        }
        // Marked, numbered, but not a kind this reader knows: shown, and still counted.
        assert_eq!(
            Line::parse("n1", "brink:n1:4 exit x"),
            (Some(4), Line::Other("brink:n1:4 exit x"))
        );
    }
}
