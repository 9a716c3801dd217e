//! What the studio keeps in its data folder, apart from eframe's `app.ron` (window and view
//! settings, written by eframe): the experiment log (`runs/log.json`, written atomically), the
//! kept bundles of its runs (`runs/run-N.texset`, each id taken by an exclusive create, so an id
//! is never reused even if the log is lost), and `studio.lock`, which one studio holds while it
//! runs so that a second one on the same folder keeps nothing rather than overwriting the
//! first's runs. A file that does not parse is set aside under a new name and reported, never
//! silently replaced by defaults.

use super::runs::RunRecord;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use texset_core::io::write_atomic;

/// The experiment log's file in the data folder.
pub const LOG_FILE: &str = "runs/log.json";
/// The lock one studio holds on its data folder.
pub const LOCK_FILE: &str = "studio.lock";
/// The log's format version (a newer one is refused, not misread).
const LOG_VERSION: u32 = 1;
/// The largest log read (about 2 KB a run: far more runs than anyone keeps).
const MAX_LOG_BYTES: u64 = 64 << 20;
/// How many ids past the highest known one an allocation tries before it gives up.
const MAX_ID_TRIES: u64 = 10_000;

/// What went wrong with the data folder.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another studio holds the folder's lock.
    #[error("{}: another texset studio is using this data folder; this one keeps no runs", .0.display())]
    Locked(PathBuf),
    /// A file could not be read, written or locked.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS's reason.
        source: std::io::Error,
    },
    /// A file did not parse; it was moved to `set_aside`.
    #[error("{}: unreadable ({message}); set aside as {}", path.display(), set_aside.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why it did not parse.
        message: String,
        /// Where it is now.
        set_aside: PathBuf,
    },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io { path: path.to_path_buf(), source }
}

/// Takes the data folder's lock (creating the folder). The lock lasts as long as the file stays
/// open; the OS releases it when the process ends, however it ends.
pub fn lock(dir: &Path) -> Result<File, StoreError> {
    let path = dir.join(LOCK_FILE);
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io_error(&path))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(StoreError::Locked(dir.to_path_buf())),
        Err(TryLockError::Error(source)) => Err(StoreError::Io { path, source }),
    }
}

/// Moves an unreadable file out of the way (`NAME.unreadable-SECONDS`), so that the studio
/// starts afresh without destroying it.
#[must_use]
pub fn set_aside(path: &Path, message: String) -> StoreError {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let name = path.file_name().map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let target = path.with_file_name(format!("{name}.unreadable-{secs}"));
    match std::fs::rename(path, &target) {
        Ok(()) => StoreError::Unreadable { path: path.to_path_buf(), message, set_aside: target },
        Err(source) => StoreError::Io { path: path.to_path_buf(), source },
    }
}

/// The log's file format.
#[derive(Serialize, Deserialize)]
struct LogFile {
    version: u32,
    /// The lowest id not yet given (deleted runs keep theirs taken).
    #[serde(default)]
    next_id: u64,
    runs: Vec<RunRecord>,
}

/// The experiment log: every run that finished, oldest first, and where it is kept.
#[derive(Default)]
pub struct ExperimentLog {
    /// The runs.
    pub runs: Vec<RunRecord>,
    /// The data folder; `None`: nothing is kept (no data folder, or another studio holds it).
    dir: Option<PathBuf>,
    /// The lowest id not yet given: deleted runs keep their ids taken.
    next_id: u64,
}

impl ExperimentLog {
    /// The log of the data folder `dir` (`None`: a log kept in memory only). `from_settings` are
    /// runs an older studio kept inside `app.ron`: they move into the log when it has no file yet.
    /// Returns the problems met (an unreadable log set aside), for the window to show.
    #[must_use]
    pub fn open(dir: Option<&Path>, from_settings: Vec<RunRecord>) -> (Self, Vec<StoreError>) {
        let Some(dir) = dir else { return (Self { runs: from_settings, dir: None, next_id: 0 }, Vec::new()) };
        let mut log = Self { runs: Vec::new(), dir: Some(dir.to_path_buf()), next_id: 0 };
        let mut problems = Vec::new();
        let path = dir.join(LOG_FILE);
        match read_log(&path) {
            Ok(Some(file)) => (log.runs, log.next_id) = (file.runs, file.next_id),
            Ok(None) if !from_settings.is_empty() => {
                log.runs = from_settings;
                if let Err(e) = log.save() {
                    problems.push(e);
                }
            }
            Ok(None) => {}
            Err(e) => problems.push(e),
        }
        (log, problems)
    }

    /// A log that reads `dir`'s runs but never writes (another studio holds the folder).
    #[must_use]
    pub fn read_only(dir: &Path) -> (Self, Vec<StoreError>) {
        match read_log(&dir.join(LOG_FILE)) {
            Ok(file) => (Self { runs: file.map(|f| f.runs).unwrap_or_default(), dir: None, next_id: 0 }, Vec::new()),
            // Not set aside: the studio that holds the folder owns its files.
            Err(e) => (Self::default(), vec![e]),
        }
    }

    /// Whether runs are kept on disk.
    #[must_use]
    pub fn keeps_runs(&self) -> bool {
        self.dir.is_some()
    }

    /// The run with this id.
    #[must_use]
    pub fn get(&self, id: u64) -> Option<&RunRecord> {
        self.runs.iter().find(|r| r.id == id)
    }

    /// Writes the log (atomically: a crash leaves the old log or the new one).
    pub fn save(&self) -> Result<(), StoreError> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let path = dir.join(LOG_FILE);
        let folder = path.parent().unwrap_or(dir);
        std::fs::create_dir_all(folder).map_err(io_error(folder))?;
        let file = LogFile { version: LOG_VERSION, next_id: self.next_id, runs: self.runs.clone() };
        let bytes = serde_json::to_vec_pretty(&file).map_err(|e| StoreError::Io { path: path.clone(), source: e.into() })?;
        write_atomic(&path, &bytes).map_err(io_error(&path))
    }

    /// Takes the next run id and its bundle's file, created empty and exclusively: an id whose
    /// file exists (from a log that was lost, or another process) is skipped, never reused.
    pub fn allocate(&mut self) -> Result<(u64, PathBuf), StoreError> {
        let Some(dir) = &self.dir else {
            return Err(StoreError::Io { path: PathBuf::new(), source: std::io::Error::other("no data folder: runs are not kept") });
        };
        let runs = super::runs::runs_dir(dir);
        std::fs::create_dir_all(&runs).map_err(io_error(&runs))?;
        let first = (self.runs.iter().map(|r| r.id).max().unwrap_or(0) + 1).max(self.next_id);
        for id in first..first + MAX_ID_TRIES {
            let path = runs.join(format!("run-{id}.texset"));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(_) => {
                    self.next_id = id + 1;
                    return Ok((id, path));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(source) => return Err(StoreError::Io { path, source }),
            }
        }
        Err(StoreError::Io { path: runs, source: std::io::Error::other(format!("{MAX_ID_TRIES} run ids in a row are taken")) })
    }
}

/// Reads a log file: `None` where there is none; an unreadable one is set aside.
fn read_log(path: &Path) -> Result<Option<LogFile>, StoreError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StoreError::Io { path: path.to_path_buf(), source }),
    };
    if !meta.is_file() {
        return Err(StoreError::Io { path: path.to_path_buf(), source: std::io::Error::other("not a regular file") });
    }
    if meta.len() > MAX_LOG_BYTES {
        return Err(set_aside(path, format!("{} bytes, over the {MAX_LOG_BYTES}-byte limit", meta.len())));
    }
    let bytes = std::fs::read(path).map_err(io_error(path))?;
    match serde_json::from_slice::<LogFile>(&bytes) {
        Ok(file) if file.version == LOG_VERSION => Ok(Some(file)),
        Ok(file) => Err(set_aside(path, format!("format version {} (this studio reads {LOG_VERSION})", file.version))),
        Err(e) => Err(set_aside(path, e.to_string())),
    }
}

/// Checks eframe's `app.ron` in `dir` before eframe reads it: eframe starts from defaults when it
/// does not parse and later overwrites it. An unreadable one is set aside and reported instead.
#[must_use]
pub fn check_app_state(dir: &Path, key: &str) -> Option<StoreError> {
    let path = dir.join("app.ron");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => return Some(set_aside(&path, "not UTF-8".into())),
        Err(source) => return Some(StoreError::Io { path, source }),
    };
    let kv: std::collections::HashMap<String, String> = match ron::from_str(&text) {
        Ok(kv) => kv,
        Err(e) => return Some(set_aside(&path, e.to_string())),
    };
    let value = kv.get(key)?;
    match ron::from_str::<super::state::Settings>(value) {
        Ok(_) => None,
        Err(e) => Some(set_aside(&path, format!("the studio's settings: {e}"))),
    }
}

#[cfg(test)]
mod tests;
