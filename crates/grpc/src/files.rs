//! How .proto files are found: in the include folders, in order, then Google's well-known
//! types; each file read as every input is (`model::input`: a regular file within the size
//! limit, and below a worker's folder when it is confined), never by the compiler itself.

use protox::file::{File, FileResolver, GoogleFileResolver};
use protox::Error;
use std::path::PathBuf;

/// The include folders, then the well-known types.
pub struct Includes {
    pub dirs: Vec<PathBuf>,
    google: GoogleFileResolver,
}

impl Includes {
    pub fn new(dirs: Vec<PathBuf>) -> Includes {
        Includes {
            dirs,
            google: GoogleFileResolver::new(),
        }
    }
}

impl FileResolver for Includes {
    fn open_file(&self, name: &str) -> Result<File, Error> {
        for dir in &self.dirs {
            let path = dir.join(name);
            if std::fs::symlink_metadata(&path).is_err() {
                continue;
            }
            let source = model::input::read_string(&path).map_err(Error::new)?;
            return File::from_source(name, &source);
        }
        self.google.open_file(name)
    }
}
