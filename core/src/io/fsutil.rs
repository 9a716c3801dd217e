//! File-system helpers: atomic writes.

use std::io::Write;
use std::path::Path;

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
