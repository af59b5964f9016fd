//! Every file a run reads as its input (plans, data, bodies, .proto files and descriptor sets,
//! certificates), read in one place and by one rule: a regular file only (never a device, a
//! FIFO or a folder: `/dev/zero` is refused before a byte is read), no larger than the limit
//! (1 GiB unless raised with `--max-data-size`), checked before reading. A worker also
//! [`confine`]s its reads to its working folder: from then on a path must be relative and is
//! opened below that folder without leaving it (`openat2` with `RESOLVE_BENEATH`, so neither
//! `..` nor a link points outside), since whoever holds the worker's token chooses what it
//! reads.

use rustix::fs::{Mode, OFlags, ResolveFlags};
use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The largest input file read unless the user raises it.
pub const DEFAULT_LIMIT: u64 = 1 << 30;

static LIMIT: AtomicU64 = AtomicU64::new(DEFAULT_LIMIT);
/// The folder every read is confined to, once a worker says so.
static ROOT: OnceLock<OwnedFd> = OnceLock::new();

/// Sets the largest input file (`--max-data-size`).
pub fn set_limit(bytes: u64) {
    LIMIT.store(bytes, Ordering::Relaxed);
}

/// The largest input file now.
pub fn limit() -> u64 {
    LIMIT.load(Ordering::Relaxed)
}

/// From now on, reads only below `dir`, by relative paths. Refuses `/` (everything is below
/// it) and a folder that cannot be opened.
pub fn confine(dir: &Path) -> Result<(), String> {
    let real = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    if real == Path::new("/") {
        return Err(
            "a worker's working folder must not be / (it could read every file on this machine): start it in a folder of its inputs"
                .into(),
        );
    }
    let fd = rustix::fs::open(
        &real,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("{}: {e}", real.display()))?;
    ROOT.set(fd)
        .map_err(|_| "the working folder is already set".to_string())
}

/// Opens `path` for reading by the rules above (not yet size-checked).
fn open(path: &Path) -> std::io::Result<File> {
    // Non-blocking so that opening a FIFO does not wait for a writer; reads of a regular
    // file never block anyway.
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
    let fd = match ROOT.get() {
        Some(root) => {
            if path.is_absolute() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "a worker reads only files below its working folder, by relative paths",
                ));
            }
            let how = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
            rustix::fs::openat2(root, path, flags, Mode::empty(), how).map_err(|e| {
                if e == rustix::io::Errno::XDEV {
                    std::io::Error::new(
                        std::io::ErrorKind::PermissionDenied,
                        "leads outside the worker's working folder",
                    )
                } else {
                    e.into()
                }
            })?
        }
        None => rustix::fs::open(path, flags, Mode::empty())?,
    };
    Ok(File::from(fd))
}

/// The bytes of the input file `path`; errors name the file.
pub fn read(path: &Path) -> Result<Vec<u8>, String> {
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let mut file = open(path).map_err(|e| at(&e))?;
    let meta = file.metadata().map_err(|e| at(&e))?;
    if !meta.is_file() {
        return Err(at(&"not a regular file"));
    }
    let limit = limit();
    if meta.len() > limit {
        return Err(at(&format!(
            "{} bytes, over the {} bytes an input may have (raise it with --max-data-size)",
            meta.len(),
            limit
        )));
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    // A file growing while read stops at the limit too.
    file.by_ref()
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| at(&e))?;
    if out.len() as u64 > limit {
        return Err(at(&"grew past the input limit while read"));
    }
    Ok(out)
}

/// [`read`] as UTF-8 text.
pub fn read_string(path: &Path) -> Result<String, String> {
    String::from_utf8(read(path)?).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit() {
        let e = read(Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let e = read(Path::new("/tmp")).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let d = crate::private::fresh_dir("brink-input-test").unwrap();
        let f = d.join("f");
        std::fs::write(&f, "hello").unwrap();
        assert_eq!(read(&f).unwrap(), b"hello");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
