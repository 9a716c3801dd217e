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
/// temporary file, which the next successful write of the same target removes once its process
/// is gone: [`remove_stale_temporaries`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // Unique per process and call: two threads writing one target never share a temporary file.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("output");
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = dir.join(format!(".{file_name}.tmp-{}-{call}", std::process::id()));
    let result = (|| {
        // `create_new` never follows a link planted at the temporary name.
        let _ = std::fs::remove_file(&temp);
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
        write_bytes(&mut file, bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, path)?;
        // Persist the rename itself; not every platform can open a folder, so this is best effort.
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        remove_stale_temporaries(&dir, file_name);
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// Removes `.NAME.tmp-PID-N` files of target `file_name` in `dir` left by processes that no longer
/// run (killed mid-write). Only where a process's liveness can be told (`/proc`); a temporary
/// file of a live process, or of an unknown one, is left alone.
pub(crate) fn remove_stale_temporaries(dir: &Path, file_name: &str) {
    let proc_fs = Path::new("/proc/self");
    if !proc_fs.exists() {
        return;
    }
    let prefix = format!(".{file_name}.tmp-");
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else { continue };
        let Some(pid) = rest.split_once('-').and_then(|(pid, call)| call.parse::<u64>().ok().and(pid.parse::<u32>().ok())) else {
            continue;
        };
        // This process's own (and any live one's) entry exists, so only the dead lose theirs.
        if !Path::new("/proc").join(pid.to_string()).exists() {
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
}
