//! Watching the service while brink loads it, on the same one-second timeline as the load:
//! a Prometheus scrape (`--observe prometheus=URL`, plus `--metric NAME=SERIES`), a local
//! process and its descendants read from /proc (`--observe pid=N`), a cgroup v2 (`--observe
//! cgroup=PATH`), and the health probe of a capacity search.
//! Observation never fails a run: a scrape that fails is a gap in the samples. Also the
//! async completion probe ([`completion`]): when the work the load started is really done.

pub mod cgroup;
pub mod completion;
pub mod health;
mod http;
pub mod listener;
pub mod netstat;
pub mod procfs;
pub mod prom;
mod sampler;
pub mod tracker;
pub mod tree;

pub use sampler::{summarise, Sample, Sampler};

/// Figure names shared by both sources, so tables and the diagnosis read one name.
pub use model::metrics::{CPU, FDS, RSS, SOCKETS, THREADS};

/// Where figures come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// Scrape this URL's Prometheus text format; `extra` are (name, series) pairs.
    Prometheus {
        target: model::Target,
        extra: Vec<(String, String)>,
    },
    /// Sample /proc/PID and every descendant of it.
    Pid(u32),
    /// Sample a cgroup v2 directory.
    Cgroup(std::path::PathBuf),
}

/// Parses `prometheus=URL` or `pid=N`; `metrics` are `NAME=SERIES` (Prometheus only).
pub fn parse(spec: &str, metrics: &[String]) -> Result<Source, String> {
    let (kind, value) = spec.split_once('=').ok_or_else(|| {
        format!("--observe '{spec}': expected prometheus=URL, pid=N or cgroup=PATH")
    })?;
    match kind {
        "prometheus" => {
            let target = model::Target::parse(value).map_err(|e| format!("--observe: {e}"))?;
            if target.tls {
                return Err(format!(
                    "--observe '{spec}': only http:// scrapes are supported"
                ));
            }
            let extra = metrics
                .iter()
                .map(|m| {
                    m.split_once('=')
                        .filter(|(n, s)| !n.is_empty() && !s.is_empty())
                        .map(|(n, s)| (n.to_string(), s.to_string()))
                        .ok_or_else(|| format!("--metric '{m}': expected NAME=SERIES"))
                })
                .collect::<Result<_, _>>()?;
            Ok(Source::Prometheus { target, extra })
        }
        "pid" => {
            let pid: u32 = value
                .parse()
                .map_err(|_| format!("--observe '{spec}': '{value}' is not a process id"))?;
            if !std::path::Path::new(&format!("/proc/{pid}/stat")).exists() {
                return Err(format!("--observe '{spec}': no process {pid}"));
            }
            Ok(Source::Pid(pid))
        }
        "cgroup" => crate::cgroup::resolve(value)
            .map(Source::Cgroup)
            .map_err(|e| format!("--observe '{spec}': {e}")),
        other => Err(format!(
            "--observe '{spec}': unknown source '{other}' (expected prometheus=URL, pid=N or cgroup=PATH)"
        )),
    }
}
