//! Every run kept: an embedded SQLite database (one file, WAL mode, a busy timeout) where each
//! `run`, `find` and suite is recorded as it goes (its per-second rows while it runs, so a crash
//! keeps what was measured and a live view can follow it) and then in full (the result JSON is
//! the source of truth; indexed columns list and filter runs without parsing it). Several brink
//! processes may write and read the same file at once. The schema has a version
//! (`PRAGMA user_version`) and migrations from the first release on.
//!
//! Nothing here knows the command line or the engine: the binary records through a sink, and a
//! web view reads through the same functions.

mod meta;
mod schema;

pub use meta::{git_info, hostname, Meta};

use results::{RunResult, SecondRow};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why the history could not be used.
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        Error(e.to_string())
    }
}

/// Where the history lives unless told otherwise: `$BRINK_HISTORY`, else
/// `$XDG_DATA_HOME/brink/history.db`, else `~/.local/share/brink/history.db`.
pub fn default_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("BRINK_HISTORY").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    own_path()
}

/// brink's own place for the history, in a folder that is brink's alone (the only one brink
/// narrows): `$XDG_DATA_HOME/brink/history.db`, else `~/.local/share/brink/history.db`.
fn own_path() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")))?;
    Some(data.join("brink").join("history.db"))
}

/// Makes the history this user's alone before SQLite opens it: missing folders 0700 (brink's
/// own default folder narrowed to 0700 too; a folder the user named, by `--history` or
/// `BRINK_HISTORY`, is the user's and left as it is), the file created 0600 (SQLite gives its `-wal`
/// and `-shm` files the same mode) or narrowed to it, never through a link. The history keeps
/// whole results, query strings and all.
fn private(path: &Path) -> Result<(), Error> {
    let fail = |p: &Path, e: std::io::Error| Error(format!("{}: {e}", p.display()));
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    model::private::parents(dir).map_err(|e| fail(dir, e))?;
    if own_path().as_deref() == Some(path) {
        model::private::narrow_dir(dir).map_err(|e| fail(dir, e))?;
    }
    // SQLite makes the -wal and -shm files later: in a folder others can write to, one of them
    // could make those first and read or change everything written.
    model::private::secure(dir).map_err(|e| Error(e.to_string()))?;
    let mut opts = std::fs::OpenOptions::new();
    model::private::open(path, opts.read(true).write(true).create(true))
        .map_err(|e| fail(path, e))?;
    for side in ["-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(side);
        let p = PathBuf::from(p);
        if std::fs::symlink_metadata(&p).is_ok() {
            model::private::open(&p, std::fs::OpenOptions::new().read(true))
                .map_err(|e| fail(&p, e))?;
        }
    }
    Ok(())
}

/// One run as listed: the indexed columns.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Run {
    pub id: i64,
    pub started_at: String,
    pub status: model::RunStatus,
    pub command: model::RunCommand,
    pub name: String,
    pub target: String,
    pub method: String,
    /// `None` for runs recorded before it was typed (their searches said `search`).
    pub load_model: Option<model::LoadModel>,
    pub load_level: String,
    pub duration_s: Option<f64>,
    pub requests: Option<i64>,
    pub ok_rps: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub error_rate: Option<f64>,
    pub slo_passed: Option<bool>,
    pub max_sustainable: Option<f64>,
    /// A search: the throughput at its maximum sustainable level (its capacity).
    pub capacity_rps: Option<f64>,
    /// A search that kept a step brink's own host disturbed twice (brink's workers waited for
    /// a CPU others held): its capacity may be the host's, not the service's.
    pub disturbed: bool,
    /// A search whose capacity is a floor (every level up to `--to` passed, or it ended
    /// before it closed in): "at least".
    pub floor: bool,
    pub interrupted: bool,
    pub exit_code: Option<i64>,
    pub brink_version: String,
    pub git_commit: Option<String>,
    pub git_branch: Option<String>,
    pub host: String,
    pub note: Option<String>,
    pub baseline: bool,
    pub tags: Vec<(String, String)>,
}

impl Run {
    /// A search's capacity in words: `capacity 1,905 req/s at 27 connections` (`capacity 826
    /// req/s at 826/s` by rate; `max 27 connections` for a search recorded without its
    /// throughput); `None` for a run, or a search where no level held.
    pub fn capacity(&self) -> Option<String> {
        let at = self.sustainable_level()?;
        let least = if self.floor { "at least " } else { "" };
        let found = match self.capacity_rps {
            Some(rps) => format!(
                "capacity {least}{} req/s at {at}",
                results::fmt::fmt_rate(rps)
            ),
            None => format!("max {least}{at}"),
        };
        Some(match self.disturbed {
            true => format!("{found} DISTURBED (brink's host was busy)"),
            false => found,
        })
    }
}

/// What a recorded run concluded: one answer for every view of the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Running,
    /// The command ended without a result.
    Failed,
    /// Its process is gone.
    Died,
    Interrupted,
    /// A search that found a level holding its objectives (its steps fail by design: that
    /// is how it finds the limit).
    Found,
    /// A search where no level held.
    NoneHeld,
    Pass,
    Fail,
    /// A run without objectives.
    NoSlos,
}

impl Run {
    /// What the run concluded.
    pub fn verdict(&self) -> Verdict {
        use model::RunStatus as S;
        match (self.status, self.slo_passed, self.interrupted) {
            (S::Running, _, _) => Verdict::Running,
            (S::Failed, _, _) => Verdict::Failed,
            (S::Died, _, _) => Verdict::Died,
            (_, _, true) => Verdict::Interrupted,
            _ if self.command == model::RunCommand::Find => match self.max_sustainable {
                Some(_) => Verdict::Found,
                None => Verdict::NoneHeld,
            },
            (_, Some(true), _) => Verdict::Pass,
            (_, Some(false), _) => Verdict::Fail,
            (_, None, _) => Verdict::NoSlos,
        }
    }

    /// Its tags as `k=v k=v`, or `(no tags)`.
    pub fn tags_text(&self) -> String {
        if self.tags.is_empty() {
            return "(no tags)".into();
        }
        let t: Vec<String> = self.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        t.join(" ")
    }

    /// A search's capacity as a table cell: `1,905 req/s`, `-` when recorded without its
    /// throughput, `none held` when no level held its objectives.
    pub fn capacity_cell(&self) -> String {
        let least = if self.floor { ">= " } else { "" };
        match (self.capacity_rps, self.max_sustainable) {
            (Some(rps), _) => format!("{least}{} req/s", results::fmt::fmt_rate(rps)),
            (None, Some(_)) => "-".into(),
            (None, None) => "none held".into(),
        }
    }

    /// A search's maximum sustainable level in words: `27 connections`, `826/s`.
    pub fn sustainable_level(&self) -> Option<String> {
        let level = self.max_sustainable?;
        Some(if self.load_model == Some(model::LoadModel::Open) {
            format!("{}/s", results::fmt::fmt_rate(level))
        } else {
            results::find::connections(level)
        })
    }
}

/// The finished searches among `runs`, by their tags (tags in order, then as listed): a team
/// that searches one service under several settings (`--tag cpu=400m --tag replicas=3`) reads
/// its capacity under each, one row per search.
pub fn capacity_by_tag(runs: Vec<Run>) -> Vec<Run> {
    let mut found: Vec<Run> = runs
        .into_iter()
        .filter(|r| r.command == model::RunCommand::Find && r.status == model::RunStatus::Done)
        .collect();
    found.sort_by_cached_key(Run::tags_text);
    found
}

/// Which runs to list.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub target: Option<String>,
    pub name: Option<String>,
    pub tags: Vec<(String, String)>,
    pub limit: usize,
}

/// An open history file.
pub struct History {
    conn: Connection,
    path: PathBuf,
}

impl History {
    /// Opens (creating it and its directory if needed) and migrates the history at `path`.
    /// Processes opening a new file at once take turns: switching it to WAL can find it locked
    /// (SQLite does not wait on that), so those steps are tried again for up to ten seconds.
    pub fn open(path: &Path) -> Result<History, Error> {
        private(path)?;
        let at = |e: Error| Error(format!("{}: {e}", path.display()));
        let conn = Connection::open(path).map_err(|e| at(e.into()))?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(|e| at(e.into()))?;
        retry(|| {
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            conn.pragma_update(None, "foreign_keys", "ON")
        })
        .map_err(at)?;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            match schema::migrate(&conn) {
                Err(e) if e.contains("locked") && std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(at(Error(e))),
                Ok(()) => break,
            }
        }
        Ok(History {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records the start of a run; returns its id.
    pub fn begin(&self, m: &Meta) -> Result<i64, Error> {
        retry(|| self.try_begin(m))
    }

    fn try_begin(&self, m: &Meta) -> rusqlite::Result<i64> {
        let tx = self.conn.unchecked_transaction()?;
        tx.execute(
            "INSERT INTO runs (started_at, status, command, name, target, method, load_model,
                load_level, brink_version, git_commit, git_branch, host, note, interrupted, baseline,
                process)
             VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 0, 0, ?13)",
            params![
                m.started_at,
                m.command.as_str(),
                m.name,
                m.target,
                m.method,
                m.load_model.map_or("", model::LoadModel::as_str),
                m.load_level,
                env!("CARGO_PKG_VERSION"),
                m.git_commit,
                m.git_branch,
                m.host,
                m.note,
                meta::this_process(),
            ],
        )?;
        let id = tx.last_insert_rowid();
        for (k, v) in &m.tags {
            tx.execute(
                "INSERT INTO tags (run_id, key, value) VALUES (?1, ?2, ?3)",
                params![id, k, v],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// Records one finished second of part `part` (a scenario or a search step, from 0).
    pub fn second(&self, id: i64, part: usize, name: &str, row: &SecondRow) -> Result<(), Error> {
        let json = serde_json::to_string(row).map_err(|e| Error(e.to_string()))?;
        retry(|| {
            self.conn.execute(
                "INSERT INTO seconds (run_id, part, name, t, row) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, part as i64, name, row.t as i64, json],
            )
        })?;
        Ok(())
    }

    /// Records the whole result; the run is then `done`.
    pub fn finish(&self, id: i64, r: &RunResult) -> Result<(), Error> {
        let json = serde_json::to_string(r).map_err(|e| Error(e.to_string()))?;
        let s = &r.summary;
        let error_rate = if s.requests > 0 {
            Some(1.0 - s.success_rate)
        } else {
            None
        };
        let sustained = r.find.as_ref().and_then(|f| f.max_sustainable.as_ref());
        let (max, capacity) = (sustained.map(|m| m.level), sustained.map(|m| m.rps));
        let find = r.find.as_ref();
        let disturbed = find.is_some_and(|f| f.steps.iter().any(|s| s.disturbed));
        let floor = find.is_some_and(|f| f.capacity_is_floor());
        // A search's row reads its capacity step's figures (its first step's when none held):
        // the whole run's pool every level together and describe none of them.
        let step = find.and_then(|f| f.capacity_step().or(f.steps.first()));
        let (ok_rps, p50, p99, error_rate) = match step {
            Some(step) => (
                step.ok_rps,
                step.p50,
                step.p99,
                (step.requests > 0).then(|| step.errors as f64 / step.requests as f64),
            ),
            None => (s.ok_rps, s.latency_ms.p50, s.latency_ms.p99, error_rate),
        };
        retry(|| {
            self.conn.execute(
                "UPDATE runs SET status = 'done', finished_at = ?2, duration_s = ?3, requests = ?4,
                ok_rps = ?5, p50_ms = ?6, p99_ms = ?7, error_rate = ?8, slo_passed = ?9,
                max_sustainable = ?10, interrupted = ?11, result = ?12, capacity_rps = ?13,
                disturbed = ?14, floor = ?15
             WHERE id = ?1",
                params![
                    id,
                    results::rfc3339_utc(std::time::SystemTime::now()),
                    s.duration_s,
                    s.requests as i64,
                    ok_rps,
                    p50,
                    p99,
                    error_rate,
                    r.slo_passed,
                    max,
                    r.interrupted,
                    json,
                    capacity,
                    disturbed,
                    floor,
                ],
            )
        })?;
        Ok(())
    }

    /// Records the command's exit code.
    pub fn exit(&self, id: i64, exit_code: i32) -> Result<(), Error> {
        retry(|| {
            self.conn.execute(
                "UPDATE runs SET exit_code = ?2 WHERE id = ?1",
                params![id, exit_code],
            )
        })?;
        Ok(())
    }

    /// Marks a run that ended without a result (it failed before finishing).
    pub fn fail(&self, id: i64, exit_code: i32) -> Result<(), Error> {
        self.conn.execute(
            "UPDATE runs SET status = 'failed', exit_code = ?2,
                finished_at = ?3 WHERE id = ?1 AND status = 'running'",
            params![
                id,
                exit_code,
                results::rfc3339_utc(std::time::SystemTime::now())
            ],
        )?;
        Ok(())
    }

    /// Marks `died` every run still `running` whose recording process on this host is gone
    /// (killed, crashed, the machine rebooted): it will never finish, and its viewers stop
    /// waiting. What it recorded stays. Runs recorded on other hosts cannot be checked here.
    fn reap(&self) -> Result<(), Error> {
        let host = meta::hostname();
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, process FROM runs WHERE status = 'running' AND host = ?1 AND process IS NOT NULL",
        )?;
        let gone: Vec<i64> = stmt
            .query_map([&host], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })?
            .filter_map(Result::ok)
            .filter(|(_, p)| meta::process_gone(p))
            .map(|(id, _)| id)
            .collect();
        for id in gone {
            retry(|| {
                self.conn.execute(
                    "UPDATE runs SET status = 'died', finished_at = ?2 WHERE id = ?1 AND status = 'running'",
                    params![id, results::rfc3339_utc(std::time::SystemTime::now())],
                )
            })?;
        }
        Ok(())
    }

    /// Runs matching `f`, newest first.
    pub fn list(&self, f: &Filter) -> Result<Vec<Run>, Error> {
        self.reap()?;
        let mut sql = format!("SELECT {COLUMNS} FROM runs WHERE 1 = 1");
        let mut args: Vec<String> = Vec::new();
        if let Some(t) = &f.target {
            args.push(t.clone());
            sql.push_str(&format!(" AND target = ?{}", args.len()));
        }
        if let Some(n) = &f.name {
            args.push(n.clone());
            sql.push_str(&format!(" AND name = ?{}", args.len()));
        }
        for (k, v) in &f.tags {
            args.push(k.clone());
            args.push(v.clone());
            sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM tags WHERE run_id = runs.id AND key = ?{} AND value = ?{})",
                args.len() - 1,
                args.len()
            ));
        }
        let limit = if f.limit == 0 { 50 } else { f.limit };
        sql.push_str(&format!(" ORDER BY id DESC LIMIT {limit}"));
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args.iter()), schema::run_of)?
            .collect::<Result<Vec<_>, _>>()?;
        rows.into_iter().map(|r| self.with_tags(r)).collect()
    }

    fn with_tags(&self, mut r: Run) -> Result<Run, Error> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT key, value FROM tags WHERE run_id = ?1 ORDER BY rowid")?;
        r.tags = stmt
            .query_map([r.id], |x| Ok((x.get(0)?, x.get(1)?)))?
            .collect::<Result<_, _>>()?;
        Ok(r)
    }

    /// One run's columns.
    pub fn run(&self, id: i64) -> Result<Option<Run>, Error> {
        self.reap()?;
        let r = self
            .conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM runs WHERE id = ?1"),
                [id],
                schema::run_of,
            )
            .optional()?;
        r.map(|r| self.with_tags(r)).transpose()
    }

    /// One run's stored result (`None` while it runs, or when it failed).
    pub fn result(&self, id: i64) -> Result<Option<RunResult>, Error> {
        let text: Option<Option<String>> = self
            .conn
            .query_row("SELECT result FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()?;
        match text.flatten() {
            Some(t) => serde_json::from_str(&t)
                .map(Some)
                .map_err(|e| Error(format!("run {id}: stored result unreadable: {e}"))),
            None => Ok(None),
        }
    }

    /// The per-second rows recorded so far, after `after_seq` (0: from the start): (seq, part,
    /// name, row).
    pub fn seconds(
        &self,
        id: i64,
        after_seq: i64,
    ) -> Result<Vec<(i64, i64, String, SecondRow)>, Error> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT seq, part, name, row FROM seconds WHERE run_id = ?1 AND seq > ?2 ORDER BY seq",
        )?;
        let rows = stmt
            .query_map(params![id, after_seq], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        rows.into_iter()
            .map(|(seq, part, name, row)| {
                serde_json::from_str(&row)
                    .map(|row| (seq, part, name, row))
                    .map_err(|e| Error(e.to_string()))
            })
            .collect()
    }

    /// The run an id, `latest` or `latest~N` names; `baseline` needs the target and name of
    /// another run, so it is resolved with [`History::baseline_of`].
    pub fn resolve(&self, spec: &str) -> Result<i64, Error> {
        let spec = spec.trim();
        if let Ok(id) = spec.parse::<i64>() {
            return self
                .run(id)?
                .map(|r| r.id)
                .ok_or_else(|| Error(format!("no run {id} in {}", self.path.display())));
        }
        let back = match spec.strip_prefix("latest") {
            Some("") => 0,
            Some(rest) => rest
                .strip_prefix('~')
                .and_then(|n| n.parse::<i64>().ok())
                .filter(|n| *n >= 0)
                .ok_or_else(|| Error(format!("'{spec}': expected latest or latest~N")))?,
            None => {
                return Err(Error(format!(
                    "'{spec}' is not a run: give an id, latest or latest~N"
                )))
            }
        };
        self.conn
            .query_row(
                "SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?1",
                [back],
                |r| r.get(0),
            )
            .optional()?
            .ok_or_else(|| Error(format!("'{spec}': {} has fewer runs", self.path.display())))
    }

    /// Deletes a run and its rows; false when there was no such run.
    pub fn remove(&self, id: i64) -> Result<bool, Error> {
        Ok(retry(|| self.conn.execute("DELETE FROM runs WHERE id = ?1", [id]))? > 0)
    }

    /// Makes `id` the baseline of its target and name (the previous one no longer is).
    pub fn set_baseline(&self, id: i64) -> Result<(), Error> {
        let r = self
            .run(id)?
            .ok_or_else(|| Error(format!("no run {id} in {}", self.path.display())))?;
        retry(|| {
            let tx = self.conn.unchecked_transaction()?;
            tx.execute(
                "UPDATE runs SET baseline = 0 WHERE target = ?1 AND name = ?2",
                params![r.target, r.name],
            )?;
            tx.execute("UPDATE runs SET baseline = 1 WHERE id = ?1", [id])?;
            tx.commit()
        })
    }

    /// The baseline of `id`'s target and name, if one is marked.
    pub fn baseline_of(&self, id: i64) -> Result<Option<i64>, Error> {
        let Some(r) = self.run(id)? else {
            return Ok(None);
        };
        Ok(self
            .conn
            .query_row(
                "SELECT id FROM runs WHERE target = ?1 AND name = ?2 AND baseline = 1",
                params![r.target, r.name],
                |x| x.get(0),
            )
            .optional()?)
    }
}

/// Runs a write again while SQLite says the file is busy: besides the busy timeout (which
/// covers another writer's transaction), a write can find the file locked without waiting,
/// as when another process's last connection checkpoints the log as it closes.
fn retry<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> Result<T, Error> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return other.map_err(Error::from),
        }
    }
}

const COLUMNS: &str =
    "id, started_at, status, command, name, target, method, load_model, load_level,
    duration_s, requests, ok_rps, p50_ms, p99_ms, error_rate, slo_passed, max_sustainable,
    interrupted, exit_code, brink_version, git_commit, git_branch, host, note, baseline,
    capacity_rps, disturbed, floor";

#[cfg(test)]
mod tests;
