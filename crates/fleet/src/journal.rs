//! What a worker measured, on its own disk while the load runs: every line it sends its
//! coordinator (each second, then Done) is appended to a file. When the coordinator got them
//! all, the file goes; when the coordinator was lost (it fell silent, closed the stream, or
//! stopped reading), the file stays and the worker says where, so nothing measured is lost.

use bytes::Bytes;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The file a load's lines go to.
pub struct Journal {
    path: PathBuf,
    file: Option<std::fs::File>,
    /// The fresh folder made for it (no `--keep-dir`), removed with the file.
    made: Option<PathBuf>,
}

impl Journal {
    /// A new file (0600, its user's alone, see `model::private`) in `dir`, or without one in
    /// a fresh private folder, named for this process and `started_ns`; a journal that cannot
    /// be created writes nothing (the load runs anyway) and says so once.
    pub fn create(dir: Option<&Path>, started_ns: u64) -> Journal {
        let name = format!("brink-worker-{}-{started_ns}.jsonl", std::process::id());
        let (folder, made) = match dir {
            Some(d) => (model::private::dir(d).map(|()| d.to_path_buf()), None),
            None => match model::private::fresh_dir("brink-worker") {
                Ok(d) => (Ok(d.clone()), Some(d)),
                Err(e) => (Err(e), None),
            },
        };
        let path = match &folder {
            Ok(d) => d.join(&name),
            Err(_) => dir.map_or_else(|| PathBuf::from(&name), |d| d.join(&name)),
        };
        let file = folder.and_then(|_| model::private::create_new(&path));
        if let Err(e) = &file {
            eprintln!(
                "brink worker: cannot keep a copy of the load's seconds in {}: {e}",
                path.display()
            );
        }
        Journal {
            path,
            file: file.ok(),
            made,
        }
    }

    /// Appends one line.
    pub fn write(&mut self, line: &Bytes) {
        if let Some(f) = &mut self.file {
            if f.write_all(line).is_err() {
                self.file = None;
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The coordinator got everything: the copy goes.
    pub fn discard(self) {
        drop(self.file);
        let _ = std::fs::remove_file(&self.path);
        if let Some(d) = &self.made {
            let _ = std::fs::remove_dir(d);
        }
    }
}
