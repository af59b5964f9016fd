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
}

impl Journal {
    /// A new file in `dir`, named for this process and `started_ns`; a journal that cannot be
    /// created writes nothing (the load runs anyway) and says so once.
    pub fn create(dir: &Path, started_ns: u64) -> Journal {
        let path = dir.join(format!(
            "brink-worker-{}-{started_ns}.jsonl",
            std::process::id()
        ));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path);
        if let Err(e) = &file {
            eprintln!(
                "brink worker: cannot keep a copy of the load's seconds in {}: {e}",
                path.display()
            );
        }
        Journal {
            path,
            file: file.ok(),
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
    }
}
