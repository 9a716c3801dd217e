//! What texset wrote in an output folder, so that it replaces only its own files. `decode`,
//! `transcode` and the studio's export name their outputs `<material>/<material>_<map>.<ext>`,
//! which is how sources are named too: pointed at a folder of sources, they would replace them.
//! Each keeps a record, `.texset-written.json` in the output folder, written last, of every file
//! it wrote (path, length, modification time). A file that exists and is not in the record as it
//! was written (a source, or one of texset's that someone has since edited) is refused by name
//! unless the caller forces it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The record's file name in an output folder.
pub const RECORD_FILE: &str = ".texset-written.json";

/// Largest record read, in bytes (a million entries is far past any library).
const MAX_RECORD_BYTES: u64 = 64 << 20;

/// Why an output would not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WrittenError {
    /// A file is in the way that texset did not write (or that changed since it did).
    #[error(
        "{path:?} exists and texset did not write it (a source, or a file edited since): not replaced; choose another output folder, \
         or pass --force to replace it"
    )]
    NotOurs {
        /// The file.
        path: PathBuf,
    },
    /// The record could not be read or written.
    #[error("{path:?}: {source}")]
    Io {
        /// The record.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// One file as texset left it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    bytes: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    modified_ns: u128,
}

impl Stamp {
    fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        let modified = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
        meta.is_file().then_some(Self { bytes: meta.len(), modified_ns: modified.as_nanos() })
    }
}

#[derive(Default, Serialize, Deserialize)]
struct RecordFile {
    /// Paths relative to the output folder, `/`-separated.
    files: BTreeMap<String, Stamp>,
}

/// Whether outputs may replace files texset did not write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overwrite {
    /// Only texset's own files, unchanged since it wrote them (the default).
    OnlyOurs,
    /// Any file (`--force`).
    Any,
}

/// The files texset wrote under one output folder.
pub struct Written {
    dir: PathBuf,
    record: RecordFile,
}

impl Written {
    /// The record of `dir` (empty where there is none; one that does not read counts as none, so
    /// every existing file is then someone else's).
    pub fn open(dir: &Path) -> Result<Self, WrittenError> {
        let path = dir.join(RECORD_FILE);
        let record = match crate::io::read_regular(&path, MAX_RECORD_BYTES) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => RecordFile::default(),
            Err(source) => return Err(WrittenError::Io { path, source }),
        };
        Ok(Self { dir: dir.to_path_buf(), record })
    }

    fn key(&self, path: &Path) -> Option<String> {
        let relative = path.strip_prefix(&self.dir).ok()?;
        let parts: Option<Vec<&str>> = relative.components().map(|c| c.as_os_str().to_str()).collect();
        Some(parts?.join("/"))
    }

    /// Checks, before anything is written, that each of `paths` (under the folder) is free: it
    /// does not exist, or texset wrote it and it is as texset left it, or `overwrite` is
    /// [`Overwrite::Any`]. The error names the first that is not.
    pub fn check<'a>(&self, paths: impl IntoIterator<Item = &'a Path>, overwrite: Overwrite) -> Result<(), WrittenError> {
        if overwrite == Overwrite::Any {
            return Ok(());
        }
        for path in paths {
            if std::fs::symlink_metadata(path).is_err() {
                continue;
            }
            let ours = self.key(path).and_then(|k| self.record.files.get(&k)).is_some_and(|stamp| Stamp::of(path).as_ref() == Some(stamp));
            if !ours {
                return Err(WrittenError::NotOurs { path: path.to_path_buf() });
            }
        }
        Ok(())
    }

    /// Notes that texset has just written `path` (after its atomic write).
    pub fn add(&mut self, path: &Path) {
        if let (Some(key), Some(stamp)) = (self.key(path), Stamp::of(path)) {
            self.record.files.insert(key, stamp);
        }
    }

    /// Writes the record (atomically). Writers save it after each material: a run killed
    /// mid-material leaves that material's new files unrecorded, so a later run refuses them
    /// (naming them) until `--force`.
    pub fn save(&self) -> Result<(), WrittenError> {
        let path = self.dir.join(RECORD_FILE);
        let json = serde_json::to_vec_pretty(&self.record).unwrap_or_default();
        crate::io::write_atomic(&path, &json).map_err(|source| WrittenError::Io { path, source })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_files_texset_wrote_and_left_alone_may_be_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("wood").join("wood_base_color.png");
        std::fs::create_dir_all(source.parent().unwrap()).unwrap();
        std::fs::write(&source, b"an artist's map").unwrap();
        let ours = dir.path().join("wood").join("wood_normal.png");
        let fresh = dir.path().join("wood").join("wood_roughness.png");
        let mut written = Written::open(dir.path()).unwrap();
        written.check([ours.as_path(), fresh.as_path()], Overwrite::OnlyOurs).unwrap();
        let refused = written.check([source.as_path()], Overwrite::OnlyOurs).unwrap_err();
        assert!(refused.to_string().contains("wood_base_color.png") && refused.to_string().contains("--force"), "{refused}");
        written.check([source.as_path()], Overwrite::Any).unwrap();
        crate::io::write_atomic(&ours, b"decoded").unwrap();
        written.add(&ours);
        written.save().unwrap();
        // A later run: its own file may be replaced, the source still may not.
        let again = Written::open(dir.path()).unwrap();
        again.check([ours.as_path()], Overwrite::OnlyOurs).unwrap();
        assert!(again.check([source.as_path()], Overwrite::OnlyOurs).is_err());
        // Edited since texset wrote it: someone's work now, refused.
        std::fs::write(&ours, b"touched up by hand").unwrap();
        assert!(again.check([ours.as_path()], Overwrite::OnlyOurs).is_err());
        // A record that does not read trusts nothing.
        std::fs::write(dir.path().join(RECORD_FILE), b"{not json").unwrap();
        crate::io::write_atomic(&ours, b"decoded").unwrap();
        assert!(Written::open(dir.path()).unwrap().check([ours.as_path()], Overwrite::OnlyOurs).is_err());
    }
}
