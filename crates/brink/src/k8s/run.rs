//! `brink k8s run`: the run's objects created in the cluster, its pods waited for, the
//! coordinator's log followed (its progress drawn here, its summary shown as it printed it),
//! its result kept here (history, `--json/--html/--csv`), and every object deleted at the end,
//! on an error, or on Ctrl-C. The first Ctrl-C stops the coordinator pod, which stops its
//! workers and reports what they measured; a second leaves at once.

use super::cluster::{self, Cluster, Created};
use super::render;
use super::What;
use crate::cli::K8sObjectArgs;
use crate::exit::{Fail, INTERRUPTED};
use crate::logmark::Line;
use crate::progress::Progress;
use futures_util::{AsyncBufRead, AsyncBufReadExt};
use k8s_openapi::jiff::Timestamp;
use results::RunResult;
use runner::{Event, Sinks};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often pods and interrupts are looked at.
const TICK: Duration = Duration::from_millis(250);
/// A log line longer than this is cut (results come in 4 KiB lines).
const LINE_MAX: usize = 1 << 20;
/// The most result JSON kept.
const RESULT_MAX: usize = 256 << 20;
/// The coordinator's time to stop its workers and report after Ctrl-C.
const STOP_GRACE: u32 = 30;

pub fn run_cmd(what: &What, o: &K8sObjectArgs, pod_wait: &str) -> Result<i32, Fail> {
    let name = match &o.job_name {
        Some(n) => n.clone(),
        None => format!("brink-{}", &fresh()?[..5]),
    };
    let nonce = fresh()?[..16].to_string();
    let (inputs, cfg) = super::inputs(what, o, &name, Some(nonce.clone()))?;
    let mut objects = render::objects(o, &inputs)?;
    let pod_wait =
        plan::parse_duration(pod_wait).map_err(|e| Fail::input(format!("--pod-wait: {e}")))?;
    // Result files are opened before anything is created: a path that cannot be written
    // fails first.
    let mut sinks = crate::sinks::files_only(&cfg.session.files)?;
    let meta = match what.search {
        None => crate::record::meta(
            model::RunCommand::K8sRun,
            &cfg.jobs,
            None,
            &cfg.session.recording,
        ),
        Some((search, _)) => {
            // The search's one job (super::inputs).
            let s = crate::commands::find::steps(search, &what.run.load, &cfg.jobs[0])?;
            crate::record::meta(
                model::RunCommand::Find,
                &cfg.jobs,
                Some((s.how(), s.by.model())),
                &cfg.session.recording,
            )
        }
    };
    sinks.push(Box::new(crate::record::Recorder::new(
        &cfg.session.recording,
        meta,
    )));
    let signals = crate::signals::count()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Fail::input(format!("cannot start: {e}")))?;
    rt.block_on(async {
        let cluster = Cluster::connect(o.namespace.as_deref()).await?;
        let mut created = Created::default();
        let run = Run {
            cluster: &cluster,
            name: &name,
            nonce: &nonce,
            signals,
            pods: inputs.workers + 1,
        };
        let outcome = match cluster.create(&mut objects, &mut created).await {
            Ok(()) => run.follow(pod_wait).await,
            Err(e) => Err(e),
        };
        if let Some(left) = cluster.delete(&created).await {
            crate::console::warn(&left);
        }
        keep(outcome?, &mut sinks)
    })
}

/// Random lowercase hex (names and marks).
fn fresh() -> Result<String, Fail> {
    fleet::trust::new_token().map_err(Fail::input)
}

/// What the coordinator's log said.
#[derive(Default)]
struct Said {
    result: Option<RunResult>,
    exit: Option<i32>,
    interrupted: bool,
}

/// The result and exit code given to the local sinks; the command's exit code.
fn keep(said: Said, sinks: &mut Sinks) -> Result<i32, Fail> {
    if let Some(r) = &said.result {
        sinks.emit(&Event::Finished(r))?;
    }
    let code = match (said.exit, said.interrupted) {
        (Some(c), _) => c,
        (None, true) => INTERRUPTED,
        (None, false) => {
            return Err(Fail::input(
                "the coordinator pod ended without a result (its log is above)",
            ))
        }
    };
    if said.result.is_some() {
        sinks.show(&Event::Exit(code));
    } else if said.interrupted {
        crate::console::warn("left before the coordinator reported: nothing was kept");
    }
    Ok(code)
}

struct Run<'a> {
    cluster: &'a Cluster,
    name: &'a str,
    nonce: &'a str,
    signals: Arc<AtomicUsize>,
    pods: usize,
}

impl Run<'_> {
    fn interrupts(&self) -> usize {
        self.signals.load(Ordering::SeqCst)
    }

    /// Waits for every pod to start, then follows the coordinator's log to its end.
    async fn follow(&self, pod_wait: Duration) -> Result<Said, Fail> {
        let Some(coordinator) = self.wait_for_pods(pod_wait).await? else {
            return Ok(Said {
                interrupted: true,
                ..Said::default()
            });
        };
        let mut reader = LogReader::new(self.nonce);
        let mut stopping = false;
        // Whether the coordinator had ended before this read began: its log is then whole,
        // and this read is the last.
        let mut last = false;
        loop {
            // From the start, then (the stream cut) from the second of the last line read:
            // the lines read again are skipped by their time and number.
            let mut log = self.cluster.log(&coordinator, reader.resume()).await?;
            let ended = self
                .read(&mut log, &mut reader, &coordinator, &mut stopping)
                .await?;
            if ended || last || reader.said.exit.is_some() || self.interrupts() > 1 {
                break;
            }
            // The stream ended before its last line: read on where it stopped, at once when
            // the coordinator has ended meanwhile (a finished pod's log stays readable until
            // the pod is deleted, and its result may be in the part not read yet).
            let pods = self.cluster.pods(self.name).await?;
            let pod = pods
                .iter()
                .find(|p| p.metadata.name.as_deref() == Some(&coordinator));
            match pod {
                None => break,
                Some(p) if cluster::exit_code(p).is_some() => last = true,
                Some(_) => tokio::time::sleep(TICK).await,
            }
        }
        reader.progress.finish();
        reader.said.interrupted |= stopping;
        Ok(reader.said)
    }

    /// Reads the log until it ends (`true`) or a second interrupt (`false`).
    async fn read(
        &self,
        log: &mut (impl AsyncBufRead + Unpin),
        reader: &mut LogReader,
        coordinator: &str,
        stopping: &mut bool,
    ) -> Result<bool, Fail> {
        let mut line = Vec::new();
        let mut tick = tokio::time::interval(TICK);
        loop {
            tokio::select! {
                more = next_line(log, &mut line) => {
                    match more {
                        Ok(true) => reader.take(&line)?,
                        Ok(false) | Err(_) => return Ok(reader.said.exit.is_some()),
                    }
                    line.clear();
                }
                _ = tick.tick() => match self.interrupts() {
                    0 => {}
                    1 if !*stopping => {
                        *stopping = true;
                        reader.progress.finish();
                        crate::console::warn(
                            "interrupted: the coordinator stops its workers and reports what they measured (Ctrl-C again to leave at once)",
                        );
                        if let Err(e) = self.cluster.stop_pod(coordinator, STOP_GRACE).await {
                            crate::console::warn(&format!("cannot stop pod {coordinator}: {e}"));
                        }
                    }
                    1 => {}
                    _ => return Ok(false),
                },
            }
        }
    }

    /// Waits until every pod has started; the coordinator's name, or `None` on Ctrl-C.
    async fn wait_for_pods(&self, limit: Duration) -> Result<Option<String>, Fail> {
        let start = Instant::now();
        loop {
            if self.interrupts() > 0 {
                return Ok(None);
            }
            let pods = self.cluster.pods(self.name).await?;
            if let Some(why) = pods.iter().find_map(cluster::stuck) {
                return Err(Fail::input(why));
            }
            if let Some(why) = self.cluster.job_failed(self.name).await {
                return Err(Fail::input(format!("job {} failed: {why}", self.name)));
            }
            let all = pods.len() >= self.pods && pods.iter().all(cluster::started);
            if all {
                let coordinator = pods.iter().find(|p| cluster::index(p) == 0);
                if let Some(n) = coordinator.and_then(|p| p.metadata.name.clone()) {
                    return Ok(Some(n));
                }
            }
            if start.elapsed() >= limit {
                let late: Vec<String> = pods
                    .iter()
                    .filter(|p| !cluster::started(p))
                    .map(cluster::waiting)
                    .collect();
                return Err(Fail::input(format!(
                    "the pods did not start within {}s (--pod-wait): {} of {} started; {}",
                    limit.as_secs(),
                    pods.len() - late.len(),
                    self.pods,
                    if late.is_empty() {
                        "some were never created".to_string()
                    } else {
                        late.join("; ")
                    }
                )));
            }
            tokio::time::sleep(TICK).await;
        }
    }
}

/// Reads one line (without its end) into `line`, cut at [`LINE_MAX`]; `false` at the end of
/// the stream. Cancel-safe: a partial line stays in `line` for the next call.
async fn next_line(
    log: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
) -> std::io::Result<bool> {
    loop {
        let buf = futures_util::AsyncBufReadExt::fill_buf(log).await?;
        if buf.is_empty() {
            return Ok(!line.is_empty());
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i, Some(i + 1)),
            None => (buf.len(), None),
        };
        let room = LINE_MAX.saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        match done {
            Some(n) => {
                log.consume_unpin(n);
                return Ok(true);
            }
            None => log.consume_unpin(take),
        }
    }
}

/// What the lines of a coordinator's log add up to.
struct LogReader {
    nonce: String,
    progress: Progress,
    json: String,
    said: Said,
    /// The node's time of the newest line taken, and how many lines carried it.
    last: Option<(Timestamp, usize)>,
    /// While reading a log again: lines up to this time, and this many at it, were taken.
    skip: Option<(Timestamp, usize)>,
    /// The number of the last marked line taken.
    seq: u64,
}

impl LogReader {
    fn new(nonce: &str) -> LogReader {
        LogReader {
            nonce: nonce.to_string(),
            progress: Progress::new(None),
            json: String::new(),
            said: Said::default(),
            last: None,
            skip: None,
            seq: 0,
        }
    }

    /// Where to read the log from again: the second of the last line taken (the API takes
    /// whole seconds), skipping what was taken.
    fn resume(&mut self) -> Option<Timestamp> {
        self.skip = self.last;
        let (at, _) = self.last?;
        Timestamp::from_second(at.as_second()).ok()
    }

    /// Whether the line the node wrote at `at` was taken before the stream was cut.
    fn taken_before(&mut self, at: Timestamp) -> bool {
        let taken = match &mut self.skip {
            Some((t, _)) if at < *t => true,
            Some((t, n)) if at == *t && *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        };
        if !taken {
            self.skip = None;
            self.last = match self.last {
                Some((t, n)) if t == at => Some((t, n + 1)),
                _ => Some((at, 1)),
            };
        }
        taken
    }

    fn take(&mut self, raw: &[u8]) -> Result<(), Fail> {
        let text = String::from_utf8_lossy(raw);
        let text = text.trim_end_matches('\r');
        // Asked with timestamps: `2026-11-26T17:00:00.123456789Z line`.
        let (at, text) = match text.split_once(' ') {
            Some((t, rest)) => match t.parse::<Timestamp>() {
                Ok(at) => (Some(at), rest),
                Err(_) => (None, text),
            },
            None => (None, text),
        };
        if at.is_some_and(|at| self.taken_before(at)) {
            return Ok(());
        }
        let (seq, line) = Line::parse(&self.nonce, text);
        if let Some(seq) = seq {
            if seq <= self.seq {
                return Ok(());
            }
            if seq > self.seq + 1 {
                self.progress.finish();
                crate::console::warn(&format!(
                    "the coordinator's log lost lines {} to {} (the node dropped them)",
                    self.seq + 1,
                    seq - 1
                ));
            }
            self.seq = seq;
        }
        match line {
            Line::Progress(p) => self.progress.relay(p),
            Line::Result(chunk) => {
                if self.json.len() + chunk.len() > RESULT_MAX {
                    return Err(Fail::input("the coordinator's result is over 256 MiB"));
                }
                self.json.push_str(chunk);
            }
            Line::ResultEnd(len) => {
                let json = std::mem::take(&mut self.json);
                if json.len() != len {
                    return Err(Fail::input(format!(
                        "the coordinator's result came cut ({} of {len} bytes)",
                        json.len()
                    )));
                }
                let r = serde_json::from_str(&json).map_err(|e| {
                    Fail::input(format!("the coordinator's result cannot be read: {e}"))
                })?;
                self.said.result = Some(r);
            }
            Line::Exit(c) => self.said.exit = Some(c),
            Line::Other(l) => {
                self.progress.finish();
                crate::console::emit(&format!("{l}\n"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(r: &mut LogReader, lines: &[&str]) {
        for l in lines {
            r.take(l.as_bytes()).unwrap();
        }
    }

    /// A stream cut and read again from the second of its last line: every line once.
    #[test]
    fn a_log_read_again_after_a_cut_gives_every_line_once() {
        let line =
            |t: &str, seq: u64, rest: &str| format!("2026-11-26T17:00:{t}Z brink:n:{seq} {rest}");
        let all = [
            line("01.100000000", 1, "progress p1"),
            line("01.500000000", 2, "result {\"a\""),
            line("01.500000000", 3, "result :1}"),
            line("02.000000000", 4, "exit 0"),
        ];
        let mut r = LogReader::new("n");
        // The first stream ends after the first result chunk.
        feed(&mut r, &[&all[0], &all[1]]);
        let since = r.resume().unwrap();
        assert_eq!(since.to_string(), "2026-11-26T17:00:01Z");
        // The node sends again everything from that second on.
        let again: Vec<&str> = all.iter().map(String::as_str).collect();
        feed(&mut r, &again);
        assert_eq!((r.seq, r.said.exit), (4, Some(0)));
        assert_eq!(r.json, r#"{"a":1}"#, "each chunk once");
    }
}
