//! Where brink writes for itself, in one place: every file brink names on its own (hook
//! outputs, a worker's journal, the history) is its user's alone. Folders brink makes are
//! created 0700, files 0600; a file is opened without following a link at its last step and
//! must turn out to be a regular file of this user with one name, or it is refused (so a link
//! or a hard link planted by another user never redirects a write). A scratch folder is
//! fresh: a random name created exclusively (as `mkdtemp`), under `$XDG_RUNTIME_DIR` when that
//! is this user's, else the system's temporary folder; never a predictable shared path.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode of every folder brink makes for itself.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file brink makes for itself.
pub const FILE_MODE: u32 = 0o600;

/// This process's effective user.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn egid() -> u32 {
    // SAFETY: getegid has no preconditions and cannot fail.
    unsafe { libc::getegid() }
}

/// Whether a file of `uid` is trusted: this user's, or root's.
pub fn trusted(uid: u32) -> bool {
    uid == euid() || uid == 0
}

/// Whether a folder with this metadata lets someone other than its owner (and this user's own
/// group) add, remove or rename entries: world- or foreign-group-writable; with `sticky_ok`,
/// the sticky bit (as on /tmp) makes that safe, since then only an entry's owner renames it.
fn open_to_others(m: &std::fs::Metadata, sticky_ok: bool) -> bool {
    let sticky = m.mode() & 0o1000 != 0;
    let others = m.mode() & 0o002 != 0 || (m.mode() & 0o020 != 0 && m.gid() != egid());
    others && !(sticky_ok && sticky)
}

/// Checks that no other user can redirect what brink writes in folder `dir`: `dir` and every
/// folder above it belong to this user or root, no link on the way belongs to anyone else,
/// no folder above lets others rename its entries (a sticky one, like /tmp, is fine), and
/// `dir` itself lets no one else add entries (a name brink is about to use could be taken).
pub fn secure(dir: &Path) -> io::Result<()> {
    let abs = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()?.join(dir)
    };
    let mut prefix = PathBuf::new();
    for c in abs.components() {
        prefix.push(c);
        let m = std::fs::symlink_metadata(&prefix)?;
        if m.file_type().is_symlink() && !trusted(m.uid()) {
            return Err(refused(&prefix, "is a link that belongs to another user"));
        }
    }
    let real = abs.canonicalize()?;
    let m = std::fs::metadata(&real)?;
    if open_to_others(&m, false) {
        return Err(refused(
            &real,
            "other users may create files in this folder: use a folder of your own",
        ));
    }
    for a in real.ancestors() {
        let m = std::fs::metadata(a)?;
        if !trusted(m.uid()) {
            return Err(refused(a, "belongs to another user"));
        }
        if open_to_others(&m, true) {
            return Err(refused(a, "other users may rename what is in this folder"));
        }
    }
    Ok(())
}

fn refused(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{}: {why}", path.display()),
    )
}

/// Makes `path` (and missing parents, each 0700) and checks that it is a real folder of
/// this user: not a link to one, not another user's.
pub fn dir(path: &Path) -> io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)?;
    let m = std::fs::symlink_metadata(path)?;
    if !m.is_dir() {
        return Err(refused(path, "not a folder (a link is not followed)"));
    }
    if m.uid() != euid() {
        return Err(refused(path, "belongs to another user"));
    }
    secure(path)
}

/// Makes the folders missing on the way to `path`, each 0700; folders already there are left
/// as they are (a history named by the user may live in a shared folder).
pub fn parents(path: &Path) -> io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
}

/// Makes `path` this user's alone: a real folder of this user (see [`dir`]), narrowed to 0700
/// if it was wider (a folder brink made before it made them private).
pub fn narrow_dir(path: &Path) -> io::Result<()> {
    dir(path)?;
    let m = std::fs::symlink_metadata(path)?;
    if m.mode() & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(DIR_MODE))?;
    }
    Ok(())
}

/// A fresh folder only this user can enter, named `PREFIX-RANDOM`, under `$XDG_RUNTIME_DIR`
/// when it is this user's private folder, else under the system's temporary folder.
pub fn fresh_dir(prefix: &str) -> io::Result<PathBuf> {
    let base = runtime_dir().unwrap_or_else(std::env::temp_dir);
    let mut last = None;
    for _ in 0..8 {
        let tag = crate::secret::fresh(8).map_err(io::Error::other)?;
        let path = base.join(format!("{prefix}-{tag}"));
        // mkdir never follows a link at its last step and fails if the name exists.
        match DirBuilder::new().mode(DIR_MODE).create(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free folder name")))
}

/// `$XDG_RUNTIME_DIR` when it is an absolute path to a folder of this user that no one else
/// may enter.
fn runtime_dir() -> Option<PathBuf> {
    let p = PathBuf::from(std::env::var_os("XDG_RUNTIME_DIR")?);
    let m = std::fs::symlink_metadata(&p).ok()?;
    (p.is_absolute() && m.is_dir() && m.uid() == euid() && m.mode() & 0o077 == 0).then_some(p)
}

/// Opens `path` to write from empty, creating it 0600; refused when its last step is a link,
/// or it is not a regular file of this user with one name. An existing file is made 0600.
pub fn create(path: &Path) -> io::Result<File> {
    let file = open(path, OpenOptions::new().write(true).create(true))?;
    file.set_len(0)?;
    Ok(file)
}

/// Like [`create`], but the name must not exist yet.
pub fn create_new(path: &Path) -> io::Result<File> {
    open(path, OpenOptions::new().write(true).create_new(true))
}

/// Opens `path` with `opts` (plus no link following, close-on-exec, mode 0600 when created)
/// and checks what was opened before anything is written to it.
pub fn open(path: &Path, opts: &mut OpenOptions) -> io::Result<File> {
    let file = opts
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                refused(path, "is a link, which brink does not follow")
            } else {
                e
            }
        })?;
    own(&file, path)?;
    Ok(file)
}

/// Checks that `file` (named `path`) is a regular file of this user with one name, and makes
/// it 0600 if it was wider.
pub fn own(file: &File, path: &Path) -> io::Result<()> {
    let m = file.metadata()?;
    if !m.is_file() {
        return Err(refused(path, "not a regular file"));
    }
    if m.uid() != euid() {
        return Err(refused(path, "belongs to another user"));
    }
    if m.nlink() > 1 {
        return Err(refused(path, "has other names (a hard link)"));
    }
    if m.mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> PathBuf {
        fresh_dir("brink-private-test").unwrap()
    }

    #[test]
    fn folders_and_files_are_this_users_alone() {
        let d = scratch();
        let m = std::fs::metadata(&d).unwrap();
        assert_eq!(m.mode() & 0o777, DIR_MODE);
        let nested = d.join("a/b");
        dir(&nested).unwrap();
        assert_eq!(
            std::fs::metadata(d.join("a")).unwrap().mode() & 0o777,
            DIR_MODE
        );
        let f = d.join("f");
        create(&f).unwrap();
        assert_eq!(std::fs::metadata(&f).unwrap().mode() & 0o777, FILE_MODE);
        assert!(
            create_new(&f).is_err(),
            "create_new refuses an existing name"
        );
        // A file left wider by an older version is narrowed when opened again.
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        create(&f).unwrap();
        assert_eq!(std::fs::metadata(&f).unwrap().mode() & 0o777, FILE_MODE);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn links_are_refused_and_their_targets_untouched() {
        let d = scratch();
        let precious = d.join("precious");
        std::fs::write(&precious, "keep").unwrap();
        let link = d.join("out");
        std::os::unix::fs::symlink(&precious, &link).unwrap();
        let e = create(&link).unwrap_err();
        assert!(e.to_string().contains("link"), "{e}");
        let hard = d.join("hard");
        std::fs::hard_link(&precious, &hard).unwrap();
        let e = create(&hard).unwrap_err();
        assert!(e.to_string().contains("hard link"), "{e}");
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep");
        let ldir = d.join("ldir");
        std::os::unix::fs::symlink(&d, &ldir).unwrap();
        assert!(dir(&ldir).unwrap_err().to_string().contains("link"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn fresh_folders_differ() {
        let (a, b) = (scratch(), scratch());
        assert_ne!(a, b);
        std::fs::remove_dir(&a).unwrap();
        std::fs::remove_dir(&b).unwrap();
    }
}
