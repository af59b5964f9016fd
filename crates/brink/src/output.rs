//! Result files are never lost or half-written. Each output is prepared before the run (a
//! temporary file beside the target, so an unwritable place fails before any load), written in
//! full, flushed and synced, then renamed over the target in one step: a reader sees the old
//! file or the new one, never a mix, and a run that fails leaves the previous file as it was.
//! A target that is not a regular file (`/dev/stdout`, a pipe, `/dev/full`) is written in place,
//! and every write or flush error is reported.

use crate::exit::Fail;
use report::RunResult;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One output file, prepared and not yet written.
pub struct Output {
    /// How the user named it (`--json`), for messages.
    flag: &'static str,
    path: PathBuf,
    /// The temporary file to rename over `path`, or `None` when `path` is written in place.
    tmp: Option<PathBuf>,
    file: Option<File>,
}

impl Output {
    /// Prepares `path` for `flag`: fails now, before any load, if it cannot be written.
    pub fn prepare(flag: &'static str, path: &Path) -> Result<Output, Fail> {
        let fail = |e: std::io::Error| Fail::input(format!("{flag} {}: {e}", path.display()));
        let special = std::fs::metadata(path).is_ok_and(|m| !m.is_file());
        if special {
            let file = OpenOptions::new().write(true).open(path).map_err(fail)?;
            return Ok(Output {
                flag,
                path: path.to_path_buf(),
                tmp: None,
                file: Some(file),
            });
        }
        let name = path
            .file_name()
            .ok_or_else(|| Fail::input(format!("{flag} {}: not a file name", path.display())))?;
        let tmp = path.with_file_name(format!(
            ".{}.brink-{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(fail)?;
        Ok(Output {
            flag,
            path: path.to_path_buf(),
            tmp: Some(tmp),
            file: Some(file),
        })
    }

    /// Writes `bytes` in full and puts them in place; any error is one line, exit 2.
    pub fn commit(mut self, bytes: &[u8]) -> Result<(), Fail> {
        let fail =
            |e: std::io::Error| Fail::input(format!("{} {}: {e}", self.flag, self.path.display()));
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
            self.tmp = None;
        }
        Ok(())
    }
}

impl Drop for Output {
    /// An output never committed leaves no trace: the previous file stays as it was.
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Prepares `--json FILE` before the run, so an unwritable path fails before any load is sent.
pub fn open_json(path: Option<&PathBuf>) -> Result<Option<Output>, Fail> {
    path.map(|p| Output::prepare("--json", p)).transpose()
}

/// Writes the result to the prepared `--json` output, whole or not at all.
pub fn write_json(out: Option<Output>, result: &RunResult) -> Result<(), Fail> {
    if let Some(out) = out {
        let bytes = serde_json::to_vec_pretty(result)
            .map_err(|e| Fail::input(format!("--json: cannot encode the result: {e}")))?;
        out.commit(&bytes)?;
    }
    Ok(())
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
