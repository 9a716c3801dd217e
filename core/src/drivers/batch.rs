//! Batch runs for a build farm: every material folder of a library directory becomes its own
//! bundle. Outputs are deterministic for a seed whatever the shard and job counts; a material is
//! assigned to shard `sha256(name) mod count` (its first 8 bytes), so adding materials does not move the others; a
//! finished material whose inputs (every file's bytes and the options) are unchanged is skipped,
//! by SHA-256 content hash; one material failing does not stop the others.
//!
//! Files in the output folder: `<material>.texset`, `<material>.texset.json` (the record the
//! up-to-date check reads, written after the bundle) and `summary.json` (or
//! `summary-shard-<i>-of-<n>.json`). All are written atomically.

use crate::options::CompressOptions;
use crate::progress::{Cancel, NoProgress};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// A batch failure that stops the whole batch (one material failing does not).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    /// A folder or file could not be read or written.
    #[error("{path:?}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// `--shard` is not `i/n` with `i < n`.
    #[error("shard {0:?} is not i/n with 0 <= i < n")]
    Shard(String),
    /// The library folder holds no material folder.
    #[error("{0:?} holds no material folders")]
    Empty(PathBuf),
}

/// Which part of the library this run does: `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Shard {
    /// This shard, from 0.
    pub index: u32,
    /// Number of shards.
    pub count: u32,
}

impl Shard {
    /// The whole library.
    pub const ALL: Self = Self { index: 0, count: 1 };

    /// Parses `i/n`.
    pub fn parse(text: &str) -> Result<Self, BatchError> {
        let err = || BatchError::Shard(text.to_owned());
        let (i, n) = text.split_once('/').ok_or_else(err)?;
        let (index, count) = (i.trim().parse::<u32>().map_err(|_| err())?, n.trim().parse::<u32>().map_err(|_| err())?);
        if count == 0 || index >= count {
            return Err(err());
        }
        Ok(Self { index, count })
    }

    /// Whether the material named `name` belongs to this shard.
    #[must_use]
    pub fn owns(&self, name: &str) -> bool {
        let digest = Sha256::digest(name.as_bytes());
        let first = u64::from_le_bytes([digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6], digest[7]]);
        first % u64::from(self.count) == u64::from(self.index)
    }
}

/// How one material of the batch ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitStatus {
    /// Compressed in this run.
    Compressed,
    /// Its bundle was already there for the same inputs: skipped.
    UpToDate,
    /// It failed; the error says why.
    Failed,
}

/// One material's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UnitRecord {
    /// Material folder name (the bundle is `<material>.texset`).
    pub material: String,
    /// What happened.
    pub status: UnitStatus,
    /// SHA-256 of the folder's files and the options, hex.
    pub input_sha256: String,
    /// Bundle size.
    pub bundle_bytes: u64,
    /// Bundle bits per texel.
    pub bits_per_texel: f64,
    /// Pooled PSNR of the decoded maps against the sources.
    pub pooled_psnr_db: f64,
    /// Training time of the run that made the bundle.
    pub train_secs: f64,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// What a batch run did.
#[derive(Clone, Debug, Serialize)]
pub struct BatchSummary {
    /// The library folder.
    pub library: PathBuf,
    /// The shard run.
    pub shard: Shard,
    /// Material folders in the whole library.
    pub library_materials: usize,
    /// Parallel jobs.
    pub jobs: usize,
    /// Wall time of this run.
    pub wall_secs: f64,
    /// This shard's materials, by name.
    pub units: Vec<UnitRecord>,
}

impl BatchSummary {
    /// Materials that failed.
    #[must_use]
    pub fn failed(&self) -> usize {
        self.units.iter().filter(|u| u.status == UnitStatus::Failed).count()
    }

    /// Where the summary of `shard` goes in `out_dir`.
    #[must_use]
    pub fn path(out_dir: &Path, shard: Shard) -> PathBuf {
        if shard.count == 1 {
            out_dir.join("summary.json")
        } else {
            out_dir.join(format!("summary-shard-{}-of-{}.json", shard.index, shard.count))
        }
    }
}

/// The material folders of a library, sorted by name.
pub fn material_folders(library: &Path) -> Result<Vec<PathBuf>, BatchError> {
    let io = |source| BatchError::Io { path: library.to_path_buf(), source };
    let mut folders: Vec<PathBuf> = std::fs::read_dir(library)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()).map_err(io))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    if folders.is_empty() {
        return Err(BatchError::Empty(library.to_path_buf()));
    }
    Ok(folders)
}

fn folder_name(folder: &Path) -> String {
    folder.file_name().map_or_else(|| "material".to_owned(), |n| n.to_string_lossy().into_owned())
}

/// SHA-256 over the options' fingerprint ([`CompressOptions::fingerprint`]) and every regular file of `folder` in name order (name,
/// length, bytes): what decides whether a finished bundle is still up to date.
pub fn input_hash(folder: &Path, options: &CompressOptions) -> Result<String, BatchError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BatchError::Io { path, source }
    };
    let mut hasher = Sha256::new();
    hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
    hasher.update(options.fingerprint().as_bytes());
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(folder).map_err(io(folder))?.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_file()).collect();
    files.sort();
    for file in files {
        let bytes = std::fs::read(&file).map_err(io(&file))?;
        hasher.update(file.file_name().map(|n| n.as_encoded_bytes().to_vec()).unwrap_or_default());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hasher.finalize().iter().fold(String::with_capacity(64), |mut hex, b| {
        use std::fmt::Write;
        let _ = write!(hex, "{b:02x}");
        hex
    }))
}

/// Runs this shard of the library: `options_for` gives each material's options (from its set,
/// for `--bpp`), `jobs` materials run at once, `report` hears of each as it ends.
pub fn run(
    library: &Path,
    out_dir: &Path,
    options_for: &(dyn Fn(&crate::set::TextureSet) -> Result<CompressOptions, crate::options::OptionsError> + Sync),
    shard: Shard,
    jobs: usize,
    report: &(dyn Fn(&UnitRecord) + Sync),
) -> Result<BatchSummary, BatchError> {
    let start = Instant::now();
    let all = material_folders(library)?;
    std::fs::create_dir_all(out_dir).map_err(|source| BatchError::Io { path: out_dir.to_path_buf(), source })?;
    let mine: Vec<&PathBuf> = all.iter().filter(|f| shard.owns(&folder_name(f))).collect();
    let results: Mutex<Vec<Option<UnitRecord>>> = Mutex::new(vec![None; mine.len()]);
    let next = AtomicUsize::new(0);
    let jobs = jobs.clamp(1, mine.len().max(1));
    std::thread::scope(|scope| {
        for worker in 0..jobs {
            let (mine, results, next) = (&mine, &results, &next);
            let spawned = std::thread::Builder::new().name(format!("texset-batch-{worker}")).spawn_scoped(scope, move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(folder) = mine.get(i) else { break };
                    let record = run_one(folder, out_dir, options_for);
                    report(&record);
                    if let Ok(mut r) = results.lock() {
                        r[i] = Some(record);
                    }
                }
            });
            if let Err(e) = spawned {
                // No thread: this worker's share is picked up by the others (or below).
                eprintln!("warning: cannot start batch worker {worker}: {e}");
            }
        }
    });
    // Anything no worker took (every spawn failed) runs here.
    let mut slots = results.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    for (slot, folder) in slots.iter_mut().zip(&mine) {
        if slot.is_none() {
            let record = run_one(folder, out_dir, options_for);
            report(&record);
            *slot = Some(record);
        }
    }
    let units: Vec<UnitRecord> = slots.into_iter().flatten().collect();
    let summary = BatchSummary {
        library: library.to_path_buf(),
        shard,
        library_materials: all.len(),
        jobs,
        wall_secs: start.elapsed().as_secs_f64(),
        units,
    };
    let path = BatchSummary::path(out_dir, shard);
    let json = serde_json::to_vec_pretty(&summary).unwrap_or_default();
    crate::io::fsutil::write_atomic(&path, &json).map_err(|source| BatchError::Io { path, source })?;
    Ok(summary)
}

/// One material: up to date, compressed, or failed (with the error as text).
fn run_one(
    folder: &Path,
    out_dir: &Path,
    options_for: &(dyn Fn(&crate::set::TextureSet) -> Result<CompressOptions, crate::options::OptionsError> + Sync),
) -> UnitRecord {
    let material = folder_name(folder);
    let failed = |input_sha256: String, error: String| UnitRecord {
        material: material.clone(),
        status: UnitStatus::Failed,
        input_sha256,
        bundle_bytes: 0,
        bits_per_texel: 0.0,
        pooled_psnr_db: 0.0,
        train_secs: 0.0,
        error: Some(error),
    };
    let (set, _) = match crate::set::ingest::load_library(&[folder.to_path_buf()]) {
        Ok(loaded) => loaded,
        Err(e) => return failed(String::new(), e.to_string()),
    };
    let options = match options_for(&set) {
        Ok(o) => o,
        Err(e) => return failed(String::new(), e.to_string()),
    };
    let hash = match input_hash(folder, &options) {
        Ok(h) => h,
        Err(e) => return failed(String::new(), e.to_string()),
    };
    let bundle_path = out_dir.join(format!("{material}.texset"));
    let record_path = out_dir.join(format!("{material}.texset.json"));
    // Up to date: the record of an earlier run names the same inputs and its bundle still reads.
    let earlier: Option<UnitRecord> = std::fs::read(&record_path).ok().and_then(|b| serde_json::from_slice(&b).ok());
    if let Some(earlier) = earlier
        && earlier.input_sha256 == hash
        && earlier.status == UnitStatus::Compressed
        && crate::Bundle::read(&bundle_path).is_ok()
    {
        return UnitRecord { status: UnitStatus::UpToDate, ..earlier };
    }
    let compressed = match crate::compress(&set, &options, &NoProgress, &Cancel::new()) {
        Ok(c) => c,
        Err(e) => return failed(hash, e.to_string()),
    };
    let pooled_psnr_db = match crate::eval::evaluate(&set, &crate::Decoder::new(&compressed.bundle), false) {
        Ok(e) => e.pooled_psnr_db,
        Err(e) => return failed(hash, e.to_string()),
    };
    let record = UnitRecord {
        material: material.clone(),
        status: UnitStatus::Compressed,
        input_sha256: hash.clone(),
        bundle_bytes: compressed.bundle_bytes.len() as u64,
        bits_per_texel: compressed.report.pack.bits_per_texel,
        pooled_psnr_db,
        train_secs: compressed.report.train.train_secs,
        error: None,
    };
    if let Err(e) = crate::io::fsutil::write_atomic(&bundle_path, &compressed.bundle_bytes) {
        return failed(hash, format!("cannot write {}: {e}", bundle_path.display()));
    }
    let json = serde_json::to_vec_pretty(&record).unwrap_or_default();
    if let Err(e) = crate::io::fsutil::write_atomic(&record_path, &json) {
        return failed(hash, format!("cannot write {}: {e}", record_path.display()));
    }
    record
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly on any error")]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_split_the_names_between_them() {
        assert_eq!(Shard::parse("1/4").unwrap(), Shard { index: 1, count: 4 });
        for bad in ["4/4", "1", "a/2", "0/0", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        let names: Vec<String> = (0..50).map(|i| format!("material_{i}")).collect();
        let shards = [Shard { index: 0, count: 3 }, Shard { index: 1, count: 3 }, Shard { index: 2, count: 3 }];
        for name in &names {
            assert_eq!(shards.iter().filter(|s| s.owns(name)).count(), 1, "{name}");
            assert!(Shard::ALL.owns(name));
        }
    }
}
