//! The database layout and its migrations. `PRAGMA user_version` is the number of migrations
//! applied; each release appends to [`MIGRATIONS`] and never edits an applied one, so any older
//! history file opens and is brought up to date in one transaction.

use crate::Run;
use rusqlite::{Connection, Row};

/// Each entry takes the schema from version `i` to `i + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: runs with their indexed columns and full result, tags, per-second rows.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        status TEXT NOT NULL,
        command TEXT NOT NULL,
        name TEXT NOT NULL,
        target TEXT NOT NULL,
        method TEXT NOT NULL,
        load_model TEXT NOT NULL,
        load_level TEXT NOT NULL,
        duration_s REAL,
        requests INTEGER,
        ok_rps REAL,
        p50_ms REAL,
        p99_ms REAL,
        error_rate REAL,
        slo_passed INTEGER,
        max_sustainable REAL,
        interrupted INTEGER NOT NULL DEFAULT 0,
        exit_code INTEGER,
        brink_version TEXT NOT NULL,
        git_commit TEXT,
        git_branch TEXT,
        host TEXT NOT NULL,
        note TEXT,
        baseline INTEGER NOT NULL DEFAULT 0,
        result TEXT
    );
    CREATE INDEX runs_target_name ON runs (target, name);
    CREATE TABLE tags (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL
    );
    CREATE INDEX tags_run ON tags (run_id);
    CREATE INDEX tags_key_value ON tags (key, value);
    CREATE TABLE seconds (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        part INTEGER NOT NULL,
        name TEXT NOT NULL,
        t INTEGER NOT NULL,
        row TEXT NOT NULL
    );
    CREATE INDEX seconds_run ON seconds (run_id, seq);",
    // 2: the process recording a run (boot id/pid/start time), so a run whose process is gone
    // can be told from one still going.
    "ALTER TABLE runs ADD COLUMN process TEXT;",
    // 3: a search's capacity (the throughput at its maximum sustainable level), filled in for
    // searches already recorded from their stored result.
    "ALTER TABLE runs ADD COLUMN capacity_rps REAL;
    UPDATE runs SET capacity_rps = json_extract(result, '$.find.max_sustainable.rps')
        WHERE command = 'find' AND result IS NOT NULL AND json_valid(result);",
    // 4: a search that kept a step brink's own host disturbed twice (its capacity may be the
    // host's), and one whose capacity is a floor (every level up to --to passed, or it ended
    // before it closed in), filled in for searches already recorded from their stored result.
    "ALTER TABLE runs ADD COLUMN disturbed INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN floor INTEGER NOT NULL DEFAULT 0;
    UPDATE runs SET disturbed = 1
        WHERE command = 'find' AND result IS NOT NULL AND json_valid(result)
        AND EXISTS (SELECT 1 FROM json_each(result, '$.find.steps')
            WHERE json_extract(value, '$.disturbed') = 1);
    UPDATE runs SET floor = 1
        WHERE command = 'find' AND result IS NOT NULL AND json_valid(result)
        AND json_extract(result, '$.find.max_sustainable') IS NOT NULL
        AND json_extract(result, '$.find.stop.reason') IN ('all_passed', 'interrupted', 'step_failed');",
];

/// The schema version this brink writes.
pub const VERSION: i64 = MIGRATIONS.len() as i64;

/// Applies the migrations the file lacks; refuses a file from a newer brink.
pub fn migrate(conn: &Connection) -> Result<(), String> {
    let at: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    if at > VERSION {
        return Err(format!(
            "history schema version {at} is newer than this brink's ({VERSION}): upgrade brink"
        ));
    }
    if at == VERSION {
        return Ok(());
    }
    // IMMEDIATE takes the write lock first, so two processes migrating at once take turns
    // (the busy timeout waits) instead of failing on a lock upgrade.
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)
        .map_err(|e| e.to_string())?;
    // Re-read inside the transaction: another process may have migrated meanwhile.
    let at: i64 = tx
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    for sql in &MIGRATIONS[at.clamp(0, VERSION) as usize..] {
        tx.execute_batch(sql).map_err(|e| e.to_string())?;
    }
    tx.pragma_update(None, "user_version", VERSION)
        .map_err(|e| e.to_string())?;
    tx.commit().map_err(|e| e.to_string())
}

/// A `runs` row in `COLUMNS` order.
pub fn run_of(r: &Row) -> rusqlite::Result<Run> {
    Ok(Run {
        id: r.get(0)?,
        started_at: r.get(1)?,
        status: {
            let word: String = r.get(2)?;
            // A word no brink writes reads as failed: the run did not finish with a result.
            model::RunStatus::parse(&word).unwrap_or(model::RunStatus::Failed)
        },
        command: {
            let word: String = r.get(3)?;
            // Only `brink run` and `brink find` record runs.
            model::RunCommand::parse(&word).unwrap_or_default()
        },
        name: r.get(4)?,
        target: r.get(5)?,
        method: r.get(6)?,
        load_model: {
            let word: String = r.get(7)?;
            model::LoadModel::parse(&word)
        },
        load_level: r.get(8)?,
        duration_s: r.get(9)?,
        requests: r.get(10)?,
        ok_rps: r.get(11)?,
        p50_ms: r.get(12)?,
        p99_ms: r.get(13)?,
        error_rate: r.get(14)?,
        slo_passed: r.get(15)?,
        max_sustainable: r.get(16)?,
        interrupted: r.get(17)?,
        exit_code: r.get(18)?,
        brink_version: r.get(19)?,
        git_commit: r.get(20)?,
        git_branch: r.get(21)?,
        host: r.get(22)?,
        note: r.get(23)?,
        baseline: r.get(24)?,
        capacity_rps: r.get(25)?,
        disturbed: r.get(26)?,
        floor: r.get(27)?,
        tags: Vec::new(),
    })
}
