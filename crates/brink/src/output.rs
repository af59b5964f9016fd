//! Result files are never lost or half-written. Each output is prepared before the run (a
//! temporary file beside the target, so an unwritable place fails before any load), written in
//! full, flushed and synced, then renamed over the target in one step: a reader sees the old
//! file or the new one, never a mix, and a run that fails leaves the previous file as it was.
//! A target that is not a regular file (`/dev/stdout`, a pipe, `/dev/full`) is written in place,
//! and every write or flush error is reported. A new file is created 0600 (results keep query
//! strings and headers); a file replaced keeps the mode its owner gave it.

use crate::exit::Fail;
use results::RunResult;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One output file, prepared and not yet written.
pub struct Output {
    /// How the user named it (`--json`), for messages.
    flag: &'static str,
    path: PathBuf,
    /// The temporary file to rename over `path`, or `None` when `path` is written in place.
    tmp: Option<PathBuf>,
    file: Option<File>,
    /// `-`: written to standard output.
    stdout: bool,
}

impl Output {
    /// Prepares `path` for `flag`: fails now, before any load, if it cannot be written.
    pub fn prepare(flag: &'static str, path: &Path) -> Result<Output, Fail> {
        let fail = |e: std::io::Error| Fail::input(format!("{flag} {}: {e}", path.display()));
        if path == Path::new("-") {
            crate::console::give_stdout_to_result();
            return Ok(Output {
                flag,
                path: path.to_path_buf(),
                tmp: None,
                file: None,
                stdout: true,
            });
        }
        let existing = existing(path).map_err(&fail)?;
        let special = existing.as_ref().is_some_and(|m| !m.is_file());
        if special {
            let file = OpenOptions::new().write(true).open(path).map_err(fail)?;
            return Ok(Output {
                flag,
                path: path.to_path_buf(),
                tmp: None,
                file: Some(file),
                stdout: false,
            });
        }
        let name = path
            .file_name()
            .ok_or_else(|| Fail::input(format!("{flag} {}: not a file name", path.display())))?;
        let (tmp, file) = create_tmp(path, &name.to_string_lossy()).map_err(fail)?;
        // A new result is its user's alone (0600); one that replaces a file of this user keeps
        // that file's mode, which its owner chose (another user's file says nothing).
        if let Some(old) = existing.filter(|m| m.uid() == model::private::euid()) {
            file.set_permissions(old.permissions()).map_err(fail)?;
        }
        Ok(Output {
            flag,
            path: path.to_path_buf(),
            tmp: Some(tmp),
            file: Some(file),
            stdout: false,
        })
    }

    /// Writes `bytes` in full and puts them in place; any error is one line, exit 2.
    pub fn commit(mut self, bytes: &[u8]) -> Result<(), Fail> {
        let fail =
            |e: std::io::Error| Fail::input(format!("{} {}: {e}", self.flag, self.path.display()));
        if self.stdout {
            let mut out = std::io::stdout().lock();
            return out.write_all(bytes).and_then(|_| out.flush()).map_err(fail);
        }
        let Some(mut file) = self.file.take() else {
            return Ok(());
        };
        file.write_all(bytes)
            .and_then(|_| file.flush())
            .map_err(fail)?;
        if let Some(tmp) = &self.tmp {
            file.sync_all().map_err(fail)?;
            drop(file);
            std::fs::rename(tmp, &self.path).map_err(fail)?;
            forget_pending(tmp);
            self.tmp = None;
        }
        Ok(())
    }
}

impl Drop for Output {
    /// An output never committed leaves no trace: the previous file stays as it was.
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_file(&tmp);
            forget_pending(&tmp);
        }
    }
}

/// What is at `path` now (following links), refusing what another user could use to take
/// the result: a link of theirs, or a FIFO or socket of theirs to be written into. A device
/// (`/dev/stdout`, `/dev/null`) or this user's own pipe is written in place.
fn existing(path: &Path) -> std::io::Result<Option<std::fs::Metadata>> {
    let refuse =
        |why: &str| std::io::Error::new(std::io::ErrorKind::PermissionDenied, why.to_string());
    let Ok(link) = std::fs::symlink_metadata(path) else {
        return Ok(None);
    };
    if link.file_type().is_symlink() && !model::private::trusted(link.uid()) {
        return Err(refuse("a link that belongs to another user"));
    }
    let Ok(m) = std::fs::metadata(path) else {
        return Ok(None);
    };
    let ft = m.file_type();
    if (ft.is_fifo() || ft.is_socket()) && m.uid() != model::private::euid() {
        return Err(refuse("a pipe or socket that belongs to another user"));
    }
    Ok(Some(m))
}

/// Temporary files not yet renamed or removed, so an exit that skips destructors (the
/// interrupt watch giving up) can still remove them.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Creates the temporary file beside `path`: a name no other process can predict (pid and a
/// random tag), created exclusively (`O_CREAT|O_EXCL`, which never follows a symlink planted
/// there), tried again under a new name if one exists.
fn create_tmp(path: &Path, name: &str) -> std::io::Result<(PathBuf, File)> {
    use std::hash::{BuildHasher, Hasher};
    let mut last = None;
    for _ in 0..8 {
        let tag = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let tmp = path.with_file_name(format!(
            ".{name}.brink-{}-{tag:016x}.tmp",
            std::process::id()
        ));
        let opened = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(model::private::FILE_MODE)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp);
        match opened {
            Ok(file) => {
                lock_pending().push(tmp.clone());
                return Ok((tmp, file));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

fn lock_pending() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    PENDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn forget_pending(tmp: &Path) {
    lock_pending().retain(|p| p != tmp);
}

/// Removes every temporary file still pending: called before an exit that skips destructors.
pub fn remove_pending() {
    for tmp in lock_pending().drain(..) {
        let _ = std::fs::remove_file(tmp);
    }
}

/// The result files a command writes (`--json`, `--html`, `--csv`), each prepared before any
/// load and written whole at the end.
#[derive(Clone, Debug, Default)]
pub struct Files {
    pub json: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub csv: Option<PathBuf>,
}

/// What a result file holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// The result itself (brink.result/v1).
    Json,
    /// The self-contained HTML report.
    Html,
    /// One row per second; for a search also `NAME.steps.csv`, one row per step.
    Csv,
}

impl Kind {
    pub fn flag(self) -> &'static str {
        match self {
            Kind::Json => "--json",
            Kind::Html => "--html",
            Kind::Csv => "--csv",
        }
    }
}

impl Files {
    /// Each named file with what it holds.
    pub fn each(&self) -> impl Iterator<Item = (Kind, &PathBuf)> {
        [
            (Kind::Json, self.json.as_ref()),
            (Kind::Html, self.html.as_ref()),
            (Kind::Csv, self.csv.as_ref()),
        ]
        .into_iter()
        .filter_map(|(k, p)| Some((k, p?)))
    }

    /// Prepares every named file now, so an unwritable path fails before any load is sent.
    /// At most one of them may be `-` (standard output).
    pub fn prepare(&self) -> Result<Vec<(Kind, Output)>, Fail> {
        let to_stdout: Vec<&str> = self
            .each()
            .filter(|(_, p)| p.as_path() == Path::new("-"))
            .map(|(k, _)| k.flag())
            .collect();
        if to_stdout.len() > 1 {
            return Err(Fail::input(format!(
                "{}: only one result can go to standard output (-)",
                to_stdout.join(" and ")
            )));
        }
        self.each()
            .map(|(k, p)| Ok((k, Output::prepare(k.flag(), p)?)))
            .collect()
    }
}

/// Where a search's step table goes beside `--csv NAME.csv`: `NAME.steps.csv`.
pub fn steps_path(csv: &Path) -> PathBuf {
    let stem = csv.file_stem().map_or_else(
        || "result".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    csv.with_file_name(format!("{stem}.steps.csv"))
}

/// Writes `result` as `kind` into `out` (and, for a search's CSV, its step table beside it).
pub fn write_result(kind: Kind, out: Output, result: &RunResult) -> Result<(), Fail> {
    match kind {
        Kind::Json => {
            let bytes = serde_json::to_vec_pretty(result)
                .map_err(|e| Fail::input(format!("--json: cannot encode the result: {e}")))?;
            out.commit(&bytes)
        }
        Kind::Html => out.commit(report::html::page(result).as_bytes()),
        Kind::Csv => {
            // Only a regular file has a place beside it for the step table.
            if let (Some(f), false) = (&result.find, out.tmp.is_none()) {
                let steps = Output::prepare("--csv", &steps_path(&out.path))?;
                steps.commit(report::csv::steps(f).as_bytes())?;
            }
            out.commit(report::csv::seconds(result).as_bytes())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        std::fs::write(&p, "old").unwrap();
        let out = Output::prepare("--json", &p).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "old",
            "untouched until commit"
        );
        out.commit(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        drop(Output::prepare("--json", &p).unwrap());
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "new",
            "a dropped output changes nothing"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn the_temporary_file_never_follows_a_planted_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let p = dir.path().join("r.json");
        // Every name the old scheme used, and a guess at the new one, point at the victim.
        let pid = std::process::id();
        for name in [
            format!(".r.json.brink-{pid}.tmp"),
            format!(".r.json.brink-{pid}-0000000000000000.tmp"),
        ] {
            std::os::unix::fs::symlink(&victim, dir.path().join(name)).unwrap();
        }
        let out = Output::prepare("--json", &p).unwrap();
        let tmp = out.tmp.clone().unwrap();
        assert!(!tmp.is_symlink(), "{}", tmp.display());
        out.commit(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        // Registered, so an exit that skips destructors removes it (remove_pending is not
        // called here: it would remove the files of the tests running beside this one).
        let out = Output::prepare("--json", &p).unwrap();
        let tmp = out.tmp.clone().unwrap();
        assert!(lock_pending().contains(&tmp));
        drop(out);
        assert!(!tmp.exists() && !lock_pending().contains(&tmp));
    }

    #[test]
    fn write_errors_are_errors() {
        let e = Output::prepare("--json", Path::new("/dev/full"))
            .and_then(|o| o.commit(&[b'x'; 100_000]))
            .expect_err("/dev/full cannot take a result");
        assert!(e.message.starts_with("--json /dev/full: "), "{}", e.message);
        let Err(e) = Output::prepare("--json", Path::new("/no/such/dir/r.json")) else {
            panic!("a missing directory fails before the run");
        };
        assert!(e.message.contains("/no/such/dir/r.json"), "{}", e.message);
    }
}
