//! File-system helpers: atomic writes, and reads bounded to regular files of a stated size.

use std::io::Write;
use std::path::Path;

/// Reads `path` whole if it is a regular file of at most `max_bytes`. A folder, FIFO, device or
/// socket is refused before it is opened (opening a FIFO blocks until something writes to it; a
/// device such as `/dev/zero` never ends), and so is a larger file, before any byte is read. The
/// read stops at the cap, so a file that grows meanwhile cannot pass it. Errors say what is wrong
/// but not which file: the caller names it.
pub fn read_regular(path: &Path, max_bytes: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    let too_large = |bytes: u64| Error::new(ErrorKind::InvalidData, format!("{bytes} bytes, more than the {max_bytes} read"));
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file (a folder, FIFO, device or socket is not read)"));
    }
    if meta.len() > max_bytes {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    std::fs::File::open(path)?.take(max_bytes.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_text(path: &Path, max_bytes: u64) -> std::io::Result<String> {
    String::from_utf8(read_regular(path, max_bytes)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not valid UTF-8 text"))
}

/// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename over
/// the target, then fsync of the folder. A crash leaves either the old file or the new one (and a
/// temporary file, which a later successful write of the same target removes once it is stale:
/// [`remove_stale_temporaries`]).
///
/// The temporary file's name is `.NAME.tmp-HOST-PIDNS-PID-RANDOM` ([`TempName`]), made by an
/// exclusive create: unique across the machines, containers and PID namespaces that share a
/// folder (every pod of a Kubernetes Job is PID 1), and never one that another writer made.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)?;
    file.commit()
}

/// A file written as [`write_atomic`] writes one, but piece by piece ([`Write`]): what a writer
/// that streams uses (`texset decode` writes PNG rows as it decodes them). Nothing is at `path`
/// until [`AtomicFile::commit`]; dropped uncommitted (an error on the way), the temporary file is
/// removed and the target left as it was.
pub struct AtomicFile {
    /// The open temporary file (`None` once committed).
    file: Option<std::fs::File>,
    temp: std::path::PathBuf,
    path: std::path::PathBuf,
    dir: std::path::PathBuf,
    file_name: String,
}

impl AtomicFile {
    /// Creates the temporary file for `path` in `path`'s folder (exclusive create).
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("output").to_owned();
        // `create_new` never follows a link planted at the temporary name, and never opens another
        // writer's file: a name taken (by chance, 2^-64) is tried again with another.
        let mut tries = 0;
        loop {
            let temp = dir.join(TempName::mine().file_name(&file_name));
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&temp) {
                Ok(file) => return Ok(Self { file: Some(file), temp, path: path.to_path_buf(), dir, file_name }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// Syncs the temporary file and renames it over the target, then syncs the folder and removes
    /// the target's stale temporary files.
    pub fn commit(mut self) -> std::io::Result<()> {
        let file = self.file.take().ok_or_else(|| std::io::Error::other("already committed"))?;
        let result = rename_over(file, &self.temp, &self.path, &self.dir, &self.file_name);
        if result.is_err() {
            let _ = std::fs::remove_file(&self.temp);
        }
        result
    }
}

impl Write for AtomicFile {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let file = self.file.as_mut().ok_or_else(|| std::io::Error::other("already committed"))?;
        write_bytes(file, bytes)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().map_or(Ok(()), Write::flush)
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Syncs `file` (the temporary file `temp`) and renames it over `path`.
fn rename_over(file: std::fs::File, temp: &Path, path: &Path, dir: &Path, file_name: &str) -> std::io::Result<()> {
    file.sync_all()?;
    // Closed before the rename (Windows renames no open file).
    drop(file);
    std::fs::rename(temp, path)?;
    // Persist the rename itself; not every platform can open a folder, so this is best effort.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    remove_stale_temporaries(dir, file_name);
    Ok(())
}

/// A temporary file older than this (by its modification time) is stale, whoever wrote it: a
/// writer appends to it as it goes, so only one stopped for an hour, or killed, leaves it so old.
pub(crate) const STALE_TEMPORARY_AFTER: std::time::Duration = std::time::Duration::from_hours(1);

/// Who writes a temporary file: the host name, the PID namespace (its inode, 0 where unknown),
/// the process id and a random number. A writer on another host, in another container or PID
/// namespace, never has this one's name, and a process of this namespace that is gone can be
/// told from one that runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TempName {
    /// The host name, with every character but `[A-Za-z0-9_.]` made `_` (so `-` separates).
    pub(crate) host: String,
    /// The PID namespace's inode (`/proc/self/ns/pid`), 0 where it cannot be read.
    pub(crate) pid_namespace: u64,
    /// The writing process.
    pub(crate) pid: u32,
    /// Random, per name.
    pub(crate) random: u64,
}

impl TempName {
    /// A new name of this process's.
    #[must_use]
    pub(crate) fn mine() -> Self {
        use std::hash::{BuildHasher, Hasher};
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        // The host and the PID namespace are this process's for its life: read once, not per write.
        static WHERE: std::sync::OnceLock<(String, u64)> = std::sync::OnceLock::new();
        // std's `RandomState` keys come from the OS's random source; the call count and the clock
        // make each name of one process differ too.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        hasher.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
        let (host, pid_namespace) = WHERE.get_or_init(|| (this_host(), this_pid_namespace()));
        Self { host: host.clone(), pid_namespace: *pid_namespace, pid: std::process::id(), random: hasher.finish() }
    }

    /// The temporary file's name for target `file_name`: at most 255 bytes, as file systems
    /// allow (a long target's name is cut in [`temp_prefix`]).
    #[must_use]
    pub(crate) fn file_name(&self, file_name: &str) -> String {
        format!("{}{}-{}-{}-{:016x}", temp_prefix(file_name), self.host, self.pid_namespace, self.pid, self.random)
    }

    /// The writer of `name`, a temporary file of target `file_name` (`None`: not one, or of an
    /// older texset's form).
    #[must_use]
    pub(crate) fn parse(name: &str, file_name: &str) -> Option<Self> {
        let rest = name.strip_prefix(&temp_prefix(file_name))?;
        let mut fields = rest.split('-');
        let (host, pid_namespace, pid, random) = (fields.next()?, fields.next()?, fields.next()?, fields.next()?);
        if fields.next().is_some() || random.len() != 16 {
            return None;
        }
        Some(Self {
            host: host.to_owned(),
            pid_namespace: pid_namespace.parse().ok()?,
            pid: pid.parse().ok()?,
            random: u64::from_str_radix(random, 16).ok()?,
        })
    }
}

/// The most of a host name a temporary file's name keeps.
const MAX_HOST_CHARS: usize = 40;

/// `.TARGET.tmp-`, the start of every temporary file's name of target `file_name`, the target's
/// name cut to 160 bytes (at a character's edge) so that the whole name, with the host (at most
/// 40), the PID namespace (up to 20 digits), the pid (10) and the random part (16), stays within
/// 255 bytes.
fn temp_prefix(file_name: &str) -> String {
    let mut end = file_name.len().min(160);
    while !file_name.is_char_boundary(end) {
        end -= 1;
    }
    format!(".{}.tmp-", &file_name[..end])
}

/// This machine's (or container's) host name, `_` for every character but `[A-Za-z0-9_.]`.
fn this_host() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_default();
    let name: String =
        name.trim().chars().take(MAX_HOST_CHARS).map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '.' { c } else { '_' }).collect();
    if name.is_empty() { "host".to_owned() } else { name }
}

/// The inode of this process's PID namespace (`pid:[INODE]`), 0 where it cannot be read.
fn this_pid_namespace() -> u64 {
    std::fs::read_link("/proc/self/ns/pid")
        .ok()
        .and_then(|l| l.to_str().and_then(|l| l.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()))
        .unwrap_or(0)
}

/// Removes the temporary files of target `file_name` in `dir` that are stale: those of a process
/// of this host and PID namespace that no longer runs (killed mid-write; where `/proc` tells),
/// and any older than [`STALE_TEMPORARY_AFTER`]. Another writer's file, on another node, in
/// another container or namespace, is left alone while it is being written.
pub(crate) fn remove_stale_temporaries(dir: &Path, file_name: &str) {
    let me = TempName::mine();
    let proc_fs = Path::new("/proc/self").exists() && me.pid_namespace != 0;
    let prefix = temp_prefix(file_name);
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(name) = name.to_str().filter(|n| n.starts_with(&prefix)) else { continue };
        let dead_here = TempName::parse(name, file_name).is_some_and(|writer| {
            proc_fs
                && writer.host == me.host
                && writer.pid_namespace == me.pid_namespace
                && !Path::new("/proc").join(writer.pid.to_string()).exists()
        });
        let old = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_TEMPORARY_AFTER);
        if dead_here || old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// `write_all`, or the simulated faults of [`crate::io::fault`] (a full disk, a slow disk).
fn write_bytes(file: &mut std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
    use crate::io::fault::{Fault, is_active};
    if is_active(Fault::DiskFull) {
        file.write_all(&bytes[..bytes.len() / 2])?;
        return Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left on device (simulated: TEXSET_FAULT=disk-full)"));
    }
    if is_active(Fault::SlowWrite) {
        for piece in bytes.chunks(1024) {
            file.write_all(piece)?;
            file.flush()?;
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        return Ok(());
    }
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_regular_files_within_the_cap_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.bin");
        std::fs::write(&file, [7u8; 100]).unwrap();
        assert_eq!(read_regular(&file, 100).unwrap(), vec![7u8; 100]);
        let too_large = read_regular(&file, 99).unwrap_err();
        assert!(too_large.to_string().contains("100 bytes, more than the 99"), "{too_large}");
        // A folder, a device and a FIFO are refused without being opened (a FIFO would block).
        for path in [dir.path().to_path_buf(), std::path::PathBuf::from("/dev/zero")] {
            assert!(read_regular(&path, 1 << 20).unwrap_err().to_string().contains("not a regular file"), "{}", path.display());
        }
        let fifo = dir.path().join("pipe");
        if std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
            assert!(read_regular(&fifo, 1 << 20).unwrap_err().to_string().contains("not a regular file"));
        }
        std::fs::write(&file, [0xffu8, 0xfe]).unwrap();
        assert!(read_regular_text(&file, 10).unwrap_err().to_string().contains("UTF-8"));
        assert!(read_regular(&dir.path().join("missing"), 10).is_err());
    }

    #[test]
    fn temporary_names_are_unique_and_parse_back() {
        let a = TempName::mine();
        let b = TempName::mine();
        assert_ne!(a.random, b.random);
        assert_eq!((a.host.as_str(), a.pid_namespace, a.pid), (b.host.as_str(), b.pid_namespace, b.pid));
        assert!(!a.host.contains('-') && !a.host.is_empty());
        let name = a.file_name("x.texset");
        assert_eq!(TempName::parse(&name, "x.texset"), Some(a.clone()));
        assert_eq!(TempName::parse(&name, "y.texset"), None);
        // A target's name as long as a file system allows still gives a temporary name it allows.
        let long = "é".repeat(127);
        let name = a.file_name(&long);
        assert!(name.len() <= 255, "{} bytes", name.len());
        assert_eq!(TempName::parse(&name, &long).map(|t| t.random), Some(a.random));
        // The older form (`.NAME.tmp-PID-N`) is no writer this can tell: only its age removes it.
        assert_eq!(TempName::parse(".x.texset.tmp-12-3", "x.texset"), None);
    }

    #[test]
    fn stale_temporaries_go_and_another_writers_stay() {
        let dir = tempfile::tempdir().unwrap();
        let me = TempName::mine();
        let temp = |writer: &TempName| {
            let path = dir.path().join(writer.file_name("t.bin"));
            std::fs::write(&path, b"partial").unwrap();
            path
        };
        // Another host, and another PID namespace of this host, both with a pid that does not
        // run here (every pod is PID 1, and a namespace's pids mean nothing outside it).
        let other_host = temp(&TempName { host: "other_node".into(), pid: u32::MAX - 1, ..me.clone() });
        let other_namespace = temp(&TempName { pid_namespace: me.pid_namespace.wrapping_add(1), pid: u32::MAX - 1, ..me.clone() });
        // This namespace: a process that runs (this one) and one that does not.
        let alive = temp(&TempName { random: 1, ..me.clone() });
        let dead = temp(&TempName { pid: u32::MAX - 1, ..me.clone() });
        // Another host's, an hour and a minute old.
        let old = temp(&TempName { host: "other_node".into(), random: 2, ..me.clone() });
        let hour_ago = std::time::SystemTime::now() - STALE_TEMPORARY_AFTER - std::time::Duration::from_mins(1);
        std::fs::File::options().write(true).open(&old).unwrap().set_modified(hour_ago).unwrap();
        write_atomic(&dir.path().join("t.bin"), b"whole").unwrap();
        assert_eq!(std::fs::read(dir.path().join("t.bin")).unwrap(), b"whole");
        for kept in [&other_host, &other_namespace, &alive] {
            assert!(kept.exists(), "{} was removed", kept.display());
        }
        assert!(!old.exists(), "a temporary file over an hour old stayed");
        if Path::new("/proc/self/ns/pid").exists() {
            assert!(!dead.exists(), "a dead process's temporary file of this namespace stayed");
        }
    }
}
