//! Trust between a coordinator and its workers. A worker listening beyond loopback runs the
//! load of whoever holds its token: the token is drawn per run (32 random bytes, hex), sent
//! only in a header, compared in constant time, and never written into a result or the
//! history. The digest names the inputs: brink's version, the flags, and the bytes of every
//! file they name, so a worker that compiled another plan (or another copy of a data file) is
//! refused before any load.

use ring::digest::{Context, SHA256};

/// The environment variable a worker reads its token from when it is given no file (how a
/// coordinator hands the token to the worker processes it starts).
pub const TOKEN_ENV: &str = "BRINK_WORKER_TOKEN";

/// A fresh token: 32 random bytes in hex.
pub fn new_token() -> Result<String, String> {
    model::secret::fresh(32)
}

/// Reads a token file: its first line, trimmed; an empty one is an error.
pub fn read_token(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read token file {}: {e}", path.display()))?;
    let token = text.lines().next().unwrap_or_default().trim().to_string();
    if token.is_empty() {
        return Err(format!("token file {} is empty", path.display()));
    }
    Ok(token)
}

/// The digest of a run's inputs: brink's version, the flags in order, and each named file's
/// name and bytes (in the order given). Length-prefixed, so no two inputs run together.
pub fn digest(version: &str, args: &[String], files: &[(String, Vec<u8>)]) -> String {
    let mut c = Context::new(&SHA256);
    let mut put = |b: &[u8]| {
        c.update(&(b.len() as u64).to_le_bytes());
        c.update(b);
    };
    put(version.as_bytes());
    put(&(args.len() as u64).to_le_bytes());
    for a in args {
        put(a.as_bytes());
    }
    for (name, bytes) in files {
        put(name.as_bytes());
        put(bytes);
    }
    hex(c.finish().as_ref())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_names_every_input() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let file = |b: &[u8]| vec![("plan.yaml".to_string(), b.to_vec())];
        let d = digest("0.1.0", &args(&["run", "plan.yaml"]), &file(b"a"));
        assert_eq!(
            d,
            digest("0.1.0", &args(&["run", "plan.yaml"]), &file(b"a"))
        );
        assert_ne!(
            d,
            digest("0.1.1", &args(&["run", "plan.yaml"]), &file(b"a"))
        );
        assert_ne!(
            d,
            digest("0.1.0", &args(&["run", "plan.yaml"]), &file(b"b"))
        );
        assert_ne!(
            d,
            digest("0.1.0", &args(&["run", "plan.yam", "l"]), &file(b"a"))
        );
        let dir = std::env::temp_dir().join(format!("brink-token-{}", std::process::id()));
        std::fs::write(&dir, "  s3cret \nrest\n").unwrap();
        assert_eq!(read_token(&dir).unwrap(), "s3cret");
        std::fs::write(&dir, "\n").unwrap();
        assert!(read_token(&dir).unwrap_err().contains("empty"));
        let _ = std::fs::remove_file(&dir);
    }
}
