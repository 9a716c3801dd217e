//! File-system helpers: atomic writes.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename over
/// the target, then fsync of the folder. A crash leaves either the old file or the new one.
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
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// `write_all`, or the simulated faults of [`crate::fault`] (a full disk, a slow disk).
fn write_bytes(file: &mut std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
    use crate::fault::{Fault, is_active};
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
