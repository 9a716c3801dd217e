//! Merging a library's shards: every material of the library must have its bundle, up to date
//! for its current sources and the options; the shard summaries found are gathered into one
//! summary, and a library manifest (bundle, SHA-256, bytes, bits per texel, PSNR) is written when
//! nothing is missing. It reads what the shards wrote and writes only its two files, so it can be
//! run again at any time.

use super::{BatchError, BatchJob, BatchSummary, Outputs, Shard, ShardOrigin, UnitRecord, survey};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The merged summary's file name in the output folder.
pub const MERGED_SUMMARY: &str = "merged-summary.json";
/// The library manifest's file name in the output folder.
pub const MANIFEST: &str = "manifest.json";

/// One run's summary found in the output folder.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunSeen {
    /// The summary's file name.
    pub file: String,
    /// Its shard.
    pub shard: Shard,
    /// Its one material, for a per-material task.
    pub only: Option<String>,
    /// Who ran it, where, at which attempt.
    pub origin: ShardOrigin,
    /// Its wall time.
    pub wall_secs: f64,
    /// Materials it covered.
    pub materials: usize,
    /// Of them, failed.
    pub failed: usize,
}

/// A material without an up-to-date bundle, and why.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Gap {
    /// Material folder name.
    pub material: String,
    /// Why: no record, a failure, stale inputs or a bundle that does not match its record.
    pub reason: String,
}

/// One bundle of the library manifest.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// Material folder name.
    pub material: String,
    /// The bundle's file name, beside the manifest.
    pub bundle: String,
    /// SHA-256 of the bundle, hex.
    pub sha256: String,
    /// Bundle size.
    pub bytes: u64,
    /// Bits per texel.
    pub bits_per_texel: f64,
    /// Pooled PSNR against the sources.
    pub pooled_psnr_db: f64,
}

/// The library manifest: what an engine's packaging step reads.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// The library folder.
    pub library: PathBuf,
    /// Every material's bundle, by name.
    pub materials: Vec<ManifestEntry>,
}

/// What a merge found.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Merged {
    /// The library folder.
    pub library: PathBuf,
    /// Whether every material has its up-to-date bundle (then the manifest is written).
    pub complete: bool,
    /// Material folders in the library.
    pub library_materials: usize,
    /// Shards of an `i/n` split with no summary in the folder, as `i/n` (a shard killed before
    /// it finished, or never run).
    pub missing_shards: Vec<String>,
    /// Materials without an up-to-date bundle.
    pub gaps: Vec<Gap>,
    /// The runs whose summaries are in the folder.
    pub runs: Vec<RunSeen>,
    /// Every material's record, by name (those with an up-to-date bundle).
    pub units: Vec<UnitRecord>,
}

/// Checks `job`'s output folder against its library (the job's shard and `only` are ignored:
/// a merge covers the whole library), writes [`MERGED_SUMMARY`] and, when complete,
/// [`MANIFEST`] (else removes a manifest an earlier merge left, which no longer holds).
pub fn merge(job: &BatchJob<'_>) -> Result<Merged, BatchError> {
    let whole = BatchJob { shard: Shard::ALL, only: None, ..*job };
    let entries = survey(&whole)?;
    let mut units = Vec::new();
    let mut gaps = Vec::new();
    let library_materials = entries.len();
    let names: Vec<String> = entries.iter().map(|(entry, _)| entry.material.clone()).collect();
    for (entry, record) in entries {
        if let Some(record) = record {
            // The manifest names a bundle by its material's folder (where the run wrote it), never
            // by what a record file says.
            units.push(UnitRecord { material: entry.material, ..record });
        } else {
            let record_path = Outputs::new(job.out_dir, &entry.material).record;
            gaps.push(Gap { reason: why_not(&record_path, &entry.bundle, &entry.input_sha256), material: entry.material });
        }
    }
    let runs = runs_seen(job.out_dir)?;
    let missing_shards = missing_shards(&runs, &names);
    let merged =
        Merged { library: job.library.to_path_buf(), complete: gaps.is_empty(), library_materials, missing_shards, gaps, runs, units };
    let write = |name: &str, bytes: Vec<u8>| {
        let path = job.out_dir.join(name);
        crate::io::fsutil::write_atomic(&path, &bytes).map_err(|source| BatchError::Io { path, source })
    };
    write(MERGED_SUMMARY, serde_json::to_vec_pretty(&merged).unwrap_or_default())?;
    let manifest_path = job.out_dir.join(MANIFEST);
    if merged.complete {
        write(MANIFEST, serde_json::to_vec_pretty(&manifest(&merged)).unwrap_or_default())?;
    } else if let Err(source) = std::fs::remove_file(&manifest_path)
        && source.kind() != std::io::ErrorKind::NotFound
    {
        return Err(BatchError::Io { path: manifest_path, source });
    }
    Ok(merged)
}

/// The manifest of a complete merge.
fn manifest(merged: &Merged) -> Manifest {
    let materials = merged
        .units
        .iter()
        .map(|u| ManifestEntry {
            material: u.material.clone(),
            bundle: format!("{}.texset", u.material),
            sha256: u.bundle_sha256.clone(),
            bytes: u.bundle_bytes,
            bits_per_texel: u.bits_per_texel,
            pooled_psnr_db: u.pooled_psnr_db,
        })
        .collect();
    Manifest { library: merged.library.clone(), materials }
}

/// Why a material has no up-to-date bundle.
fn why_not(record_path: &Path, bundle: &Path, input_sha256: &str) -> String {
    let Ok(bytes) = crate::io::read_regular(record_path, super::MAX_RECORD_BYTES) else { return "not compressed: no record".to_owned() };
    let Ok(record) = serde_json::from_slice::<UnitRecord>(&bytes) else { return "its record does not read".to_owned() };
    if let Some(error) = record.error {
        return format!("failed: {error}");
    }
    if record.input_sha256 != input_sha256 {
        return "stale: its files or the options changed since it was compressed".to_owned();
    }
    match crate::io::read_regular(bundle, crate::bundle::limits::MAX_BUNDLE_BYTES) {
        Err(e) => format!("no bundle {}: {e}", bundle.display()),
        Ok(_) => "its bundle is not the one its record names".to_owned(),
    }
}

/// The summaries of runs in `out_dir`, by file name.
fn runs_seen(out_dir: &Path) -> Result<Vec<RunSeen>, BatchError> {
    let io = |source| BatchError::Io { path: out_dir.to_path_buf(), source };
    let mut runs = Vec::new();
    for entry in std::fs::read_dir(out_dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if !(file.starts_with("summary") && path.extension().is_some_and(|e| e == "json")) {
            continue;
        }
        let Ok(summary) = crate::io::read_regular(&path, super::MAX_RECORD_BYTES)
            .map_err(|_| ())
            .and_then(|b| serde_json::from_slice::<BatchSummary>(&b).map_err(|_| ()))
        else {
            continue;
        };
        // A shard no run of texset names (a count past the bound, an index past the count) is
        // no run's summary.
        let shard = summary.shard;
        if shard.count == 0 || shard.count > Shard::MAX_COUNT || shard.index >= shard.count {
            continue;
        }
        runs.push(RunSeen {
            file,
            shard: summary.shard,
            only: summary.only.clone(),
            origin: summary.origin.clone(),
            wall_secs: summary.wall_secs,
            materials: summary.units.len(),
            failed: summary.failed(),
        });
    }
    runs.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(runs)
}

/// For every shard count a summary names, the shards of it that own a material of the library
/// (`names`) and have no summary: at most one per material, whatever the counts.
fn missing_shards(runs: &[RunSeen], names: &[String]) -> Vec<String> {
    let mut counts: Vec<u32> = runs.iter().filter(|r| r.only.is_none() && r.shard.count > 1).map(|r| r.shard.count).collect();
    counts.sort_unstable();
    counts.dedup();
    counts
        .into_iter()
        .flat_map(|count| {
            let owners: std::collections::BTreeSet<u32> = names.iter().map(|name| Shard::of(name, count)).collect();
            owners
                .into_iter()
                .filter(move |&index| !runs.iter().any(|r| r.only.is_none() && r.shard == Shard { index, count }))
                .map(move |index| format!("{index}/{count}"))
        })
        .collect()
}
