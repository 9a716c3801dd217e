//! Batch runs for a build farm: every material folder of a library directory becomes its own
//! bundle (docs/scale.md).
//!
//! - Outputs are deterministic for a seed whatever the shard and job counts.
//! - A material belongs to shard `sha256(name) mod count` ([`Shard`]), so adding materials does
//!   not move the others; the shard comes from `i/n` or from a scheduler's array variables
//!   ([`Shard::from_scheduler`]).
//! - A material whose inputs (every file's bytes, the options and the target rate) are unchanged
//!   is skipped: its SHA-256 content hash is the key, in the output folder and, as a build cache
//!   does, in a shared cache folder ([`BatchJob::cache_dir`]).
//! - One material failing does not stop the others; each failure says whether it is for good
//!   (bad input) or worth retrying ([`FailureKind`]).
//! - [`plan`] lists the work without doing it; [`merge::merge`] checks that a library's shards
//!   are all there and up to date and writes its manifest.
//!
//! Files in the output folder: `<material>.texset`, `<material>.texset.json` (its [`UnitRecord`],
//! written after the bundle) and one summary per run ([`BatchSummary::path`]). All are written
//! atomically.

mod merge;
mod shard;

pub use merge::{Gap, MANIFEST, MERGED_SUMMARY, Manifest, ManifestEntry, Merged, RunSeen, merge};
pub use shard::{Scheduler, Shard, ShardError, ShardOrigin};

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
    /// The shard could not be read or found.
    #[error(transparent)]
    Shard(#[from] ShardError),
    /// The library folder holds no material folder.
    #[error("{0:?} holds no material folders")]
    Empty(PathBuf),
    /// The one material asked for is not a folder of the library.
    #[error("{library:?} has no material folder {material:?}")]
    NoSuchMaterial {
        /// The library.
        library: PathBuf,
        /// The name asked for.
        material: String,
    },
}

/// What one batch run does.
#[derive(Clone, Copy, Debug)]
pub struct BatchJob<'a> {
    /// The library: one folder of maps per material.
    pub library: &'a Path,
    /// Where bundles, records and summaries go.
    pub out_dir: &'a Path,
    /// The options every material starts from.
    pub options: &'a CompressOptions,
    /// A target rate: each material's latent channels are sized to it
    /// ([`CompressOptions::fit_bits_per_texel_for`]).
    pub bits_per_texel: Option<f64>,
    /// This run's part of the library.
    pub shard: Shard,
    /// One material by folder name instead of a shard (a per-material task).
    pub only: Option<&'a str>,
    /// A content-addressed cache of bundles shared between output folders and runs:
    /// `<input_sha256>.texset` with its record `<input_sha256>.json`.
    pub cache_dir: Option<&'a Path>,
}

/// How one material of the batch ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitStatus {
    /// Compressed in this run.
    Compressed,
    /// Copied from the cache folder, where a run with the same inputs left it.
    Cached,
    /// Its bundle was already there for the same inputs: skipped.
    UpToDate,
    /// It failed; the error says why.
    Failed,
}

/// Whether a failure is for good or worth another attempt: what a scheduler's retry policy
/// needs to know (docs/scale.md, "Exit codes").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The material's files or its options are bad: the same run fails the same way again.
    Input,
    /// Training, scoring or writing failed for a reason of the machine (the GPU lost, an output
    /// not written): another attempt may succeed.
    Transient,
}

/// One material's result: also its record beside the bundle, `<material>.texset.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UnitRecord {
    /// Material folder name (the bundle is `<material>.texset`).
    pub material: String,
    /// What happened.
    pub status: UnitStatus,
    /// SHA-256 of the folder's files, the options and the target rate, hex: the cache key.
    pub input_sha256: String,
    /// SHA-256 of the bundle, hex.
    #[serde(default)]
    pub bundle_sha256: String,
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
    /// Whether the failure is for good.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub failure: Option<FailureKind>,
    /// Something that went wrong without failing the material (the cache not written).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub warning: Option<String>,
}

/// What a batch run did.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BatchSummary {
    /// The library folder.
    pub library: PathBuf,
    /// The shard run.
    pub shard: Shard,
    /// Who ran it, where, at which attempt.
    #[serde(default)]
    pub origin: ShardOrigin,
    /// The one material run, for a per-material task.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub only: Option<String>,
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

    /// How the run failed, if it did: transient when any failure was (a retry redoes only
    /// what is not up to date), else for good.
    #[must_use]
    pub fn failure(&self) -> Option<FailureKind> {
        let mut kinds = self.units.iter().filter(|u| u.status == UnitStatus::Failed).map(|u| u.failure.unwrap_or(FailureKind::Transient));
        let first = kinds.next()?;
        Some(if first == FailureKind::Transient || kinds.any(|k| k == FailureKind::Transient) {
            FailureKind::Transient
        } else {
            FailureKind::Input
        })
    }

    /// Where the summary of a run of `shard` (or of the one material `only`) goes in `out_dir`.
    #[must_use]
    pub fn path(out_dir: &Path, shard: Shard, only: Option<&str>) -> PathBuf {
        match only {
            Some(material) => out_dir.join(format!("summary-material-{material}.json")),
            None if shard.count == 1 => out_dir.join("summary.json"),
            None => out_dir.join(format!("summary-shard-{}-of-{}.json", shard.index, shard.count)),
        }
    }
}

/// One material of a [`plan`]: what a per-material task (`--only`) would do.
#[derive(Clone, Debug, Serialize)]
pub struct PlanEntry {
    /// Material folder name.
    pub material: String,
    /// Its folder.
    pub source: PathBuf,
    /// The bundle it makes.
    pub bundle: PathBuf,
    /// Its shard of the job's shard count.
    pub shard: u32,
    /// The cache key.
    pub input_sha256: String,
    /// Whether its bundle is already there and up to date (nothing to do).
    pub up_to_date: bool,
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut hex, b| {
        use std::fmt::Write;
        let _ = write!(hex, "{b:02x}");
        hex
    })
}

/// SHA-256 of `bytes`, hex.
#[must_use]
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// SHA-256 over texset's version, the options' fingerprint ([`CompressOptions::fingerprint`]),
/// the target rate and the grids it picks, the material's name (which the bundle holds) and the files ingest reads of
/// `folder` (its `texset.toml`, then each map's file: name, length, bytes, streamed): what decides
/// whether a finished bundle is still up to date, and its key in the cache. Files ingest leaves
/// out (a `.psd`, notes) are not read. A folder ingest refuses is keyed by the refusal and its
/// entries' names, sizes and times, read without opening a file: it fails when compressed, and
/// its record says why.
pub fn input_hash(folder: &Path, options: &CompressOptions, bits_per_texel: Option<f64>) -> Result<String, BatchError> {
    Ok(material_key(folder, options, bits_per_texel)?.0)
}

/// What a cached bundle of a material must hold: the material's name and its maps' kinds, in
/// order.
type Expected = (String, Vec<crate::set::MapKind>);

/// [`input_hash`], and what the material's bundle holds (`None`: ingest refuses the folder).
fn material_key(folder: &Path, options: &CompressOptions, bits_per_texel: Option<f64>) -> Result<(String, Option<Expected>), BatchError> {
    let start = |hasher: &mut Sha256| {
        hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
        hasher.update(options.fingerprint().as_bytes());
        hasher.update(bits_per_texel.map_or_else(|| "bpp:none".to_owned(), |b| format!("bpp:{:016x}", b.to_bits())).as_bytes());
        // The shape a rate picks is not in the options before the fit (decision 050): the rate's
        // row ([`RateShape::fingerprint`](crate::options::RateShape::fingerprint)) and what the
        // options keep as given decide it, so a new table redoes the material.
        if let Some(b) = bits_per_texel {
            let row = crate::options::rate_shape(b);
            hasher.update(format!("shape:{}:{:?}", row.fingerprint(), options.model.explicit).as_bytes());
        }
    };
    let field = |hasher: &mut Sha256, bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    let mut hasher = Sha256::new();
    start(&mut hasher);
    let refused = match crate::set::ingest::material_files(folder) {
        Ok((name, files, kinds)) => {
            field(&mut hasher, b"material");
            field(&mut hasher, name.as_bytes());
            match files.iter().try_for_each(|file| hash_file(&mut hasher, file)) {
                Ok(()) => return Ok((hex(&hasher.finalize()), Some((name, kinds)))),
                Err((path, source)) => BatchError::Io { path, source }.to_string(),
            }
        }
        Err(e) => e.to_string(),
    };
    let mut hasher = Sha256::new();
    start(&mut hasher);
    field(&mut hasher, b"refused");
    field(&mut hasher, refused.as_bytes());
    let io = |source| BatchError::Io { path: folder.to_path_buf(), source };
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(folder).map_err(io)?.filter_map(Result::ok).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        field(&mut hasher, entry.file_name().as_encoded_bytes());
        let meta = entry.metadata().ok();
        let modified = meta.as_ref().and_then(|m| m.modified().ok()).and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        hasher.update(meta.map_or(0, |m| m.len()).to_le_bytes());
        hasher.update(modified.map_or(0, |d| d.as_nanos()).to_le_bytes());
    }
    Ok((hex(&hasher.finalize()), None))
}

/// Hashes `file`'s name, length and bytes, read in pieces; a file that is not a regular file
/// (a FIFO would block) is refused.
fn hash_file(hasher: &mut Sha256, file: &Path) -> Result<(), (PathBuf, std::io::Error)> {
    use std::io::Read;
    let fail = |source| (file.to_path_buf(), source);
    let meta = std::fs::metadata(file).map_err(fail)?;
    if !meta.is_file() {
        return Err(fail(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file")));
    }
    let name = file.file_name().map(|n| n.as_encoded_bytes().to_vec()).unwrap_or_default();
    hasher.update((name.len() as u64).to_le_bytes());
    hasher.update(&name);
    hasher.update(meta.len().to_le_bytes());
    let mut reader = std::fs::File::open(file).map_err(fail)?.take(meta.len());
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let read = reader.read(&mut buffer).map_err(fail)?;
        if read == 0 {
            return Ok(());
        }
        hasher.update(&buffer[..read]);
    }
}

/// Largest record or summary (JSON) read, in bytes.
pub(crate) const MAX_RECORD_BYTES: u64 = 16 << 20;

/// Paths of one material's outputs.
struct Outputs {
    bundle: PathBuf,
    record: PathBuf,
}

impl Outputs {
    fn new(out_dir: &Path, material: &str) -> Self {
        Self { bundle: out_dir.join(format!("{material}.texset")), record: out_dir.join(format!("{material}.texset.json")) }
    }
}

/// The record at `record` and the bundle's bytes, when the record names the inputs
/// `input_sha256`, a bundle was made, and the bundle at `bundle` is the one it names (byte for
/// byte, by SHA-256).
fn finished(record: &Path, bundle: &Path, input_sha256: &str) -> Option<(UnitRecord, Vec<u8>)> {
    let record: UnitRecord = serde_json::from_slice(&crate::io::read_regular(record, MAX_RECORD_BYTES).ok()?).ok()?;
    let made = matches!(record.status, UnitStatus::Compressed | UnitStatus::Cached);
    if !made || record.input_sha256 != input_sha256 || record.bundle_sha256.is_empty() {
        return None;
    }
    let bytes = crate::io::read_regular(bundle, crate::bundle::limits::MAX_BUNDLE_BYTES).ok()?;
    (sha256_hex(&bytes) == record.bundle_sha256).then_some((record, bytes))
}

/// The folders this job covers: its shard, or its one material.
fn folders_of(job: &BatchJob<'_>) -> Result<(Vec<PathBuf>, usize), BatchError> {
    let all = material_folders(job.library)?;
    let count = all.len();
    let mine: Vec<PathBuf> = match job.only {
        Some(name) => {
            let folder = all.into_iter().find(|f| folder_name(f) == name);
            vec![folder.ok_or_else(|| BatchError::NoSuchMaterial { library: job.library.to_path_buf(), material: name.to_owned() })?]
        }
        None => all.into_iter().filter(|f| job.shard.owns(&folder_name(f))).collect(),
    };
    Ok((mine, count))
}

/// Lists this job's materials and whether each is already up to date, doing nothing: the work
/// list for a dynamic scheduler (one task per entry with [`BatchJob::only`]).
pub fn plan(job: &BatchJob<'_>) -> Result<Vec<PlanEntry>, BatchError> {
    Ok(survey(job)?.into_iter().map(|(entry, _)| entry).collect())
}

/// [`plan`]'s entries, each with its up-to-date record where it has one (what a merge gathers).
fn survey(job: &BatchJob<'_>) -> Result<Vec<(PlanEntry, Option<UnitRecord>)>, BatchError> {
    let (mine, _) = folders_of(job)?;
    mine.iter()
        .map(|folder| {
            let material = folder_name(folder);
            let input_sha256 = input_hash(folder, job.options, job.bits_per_texel)?;
            let out = Outputs::new(job.out_dir, &material);
            let record = finished(&out.record, &out.bundle, &input_sha256).map(|(record, _)| record);
            let entry = PlanEntry {
                shard: Shard::of(&material, job.shard.count),
                material,
                source: folder.clone(),
                bundle: out.bundle,
                input_sha256,
                up_to_date: record.is_some(),
            };
            Ok((entry, record))
        })
        .collect()
}

/// Runs this job: `jobs` materials at once, `report` hears of each as it ends. Writes the
/// run's summary, with `origin`, and returns it.
pub fn run(
    job: &BatchJob<'_>,
    jobs: usize,
    origin: &ShardOrigin,
    report: &(dyn Fn(&UnitRecord) + Sync),
) -> Result<BatchSummary, BatchError> {
    let start = Instant::now();
    let (mine, library_materials) = folders_of(job)?;
    std::fs::create_dir_all(job.out_dir).map_err(|source| BatchError::Io { path: job.out_dir.to_path_buf(), source })?;
    if let Some(cache) = job.cache_dir {
        std::fs::create_dir_all(cache).map_err(|source| BatchError::Io { path: cache.to_path_buf(), source })?;
    }
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
                    let record = run_guarded(i, folder, job);
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
            let record = run_guarded(0, folder, job);
            report(&record);
            *slot = Some(record);
        }
    }
    let summary = BatchSummary {
        library: job.library.to_path_buf(),
        shard: job.shard,
        origin: origin.clone(),
        only: job.only.map(str::to_owned),
        library_materials,
        jobs,
        wall_secs: start.elapsed().as_secs_f64(),
        units: slots.into_iter().flatten().collect(),
    };
    let path = BatchSummary::path(job.out_dir, job.shard, job.only);
    let json = serde_json::to_vec_pretty(&summary).unwrap_or_default();
    crate::io::fsutil::write_atomic(&path, &json).map_err(|source| BatchError::Io { path, source })?;
    Ok(summary)
}

/// A failed record.
fn failed(material: &str, input_sha256: String, failure: FailureKind, error: String) -> UnitRecord {
    UnitRecord {
        material: material.to_owned(),
        status: UnitStatus::Failed,
        input_sha256,
        bundle_sha256: String::new(),
        bundle_bytes: 0,
        bits_per_texel: 0.0,
        pooled_psnr_db: 0.0,
        train_secs: 0.0,
        error: Some(error),
        failure: Some(failure),
        warning: None,
    }
}

/// Whether a compression error is for good (the input or the options) or of the machine.
fn failure_kind(error: &crate::CompressError) -> FailureKind {
    use crate::CompressError as E;
    use crate::train::TrainError as T;
    match error {
        E::Analyse(_) | E::Options(_) | E::Unsupported(_) | E::Backend(_) | E::Bundle(_) | E::Train(T::InitFrom { .. }) => {
            FailureKind::Input
        }
        E::Train(_) => FailureKind::Transient,
    }
}

/// [`run_one`] on material `index` of the job, a panic in it caught: the material fails with
/// the panic's message (a transient failure, so a retry runs it again) and the others go on.
fn run_guarded(index: usize, folder: &Path, job: &BatchJob<'_>) -> UnitRecord {
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        assert!(
            !crate::io::fault::is_active(crate::io::fault::Fault::BatchPanicAt(index)),
            "simulated panic ({}=batch-panic-at={index})",
            crate::io::fault::ENV_VAR
        );
        run_one(folder, job)
    }));
    run.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        let record =
            failed(&folder_name(folder), String::new(), FailureKind::Transient, format!("texset panicked on this material: {message}"));
        let json = serde_json::to_vec_pretty(&record).unwrap_or_default();
        let _ = crate::io::fsutil::write_atomic(&Outputs::new(job.out_dir, &record.material).record, &json);
        record
    })
}

/// One material: up to date, copied from the cache, compressed, or failed. A failure's record
/// replaces the material's (stale) record too, so that a merge can say why it has no bundle;
/// that write is best effort, as the failure is already what the summary reports.
fn run_one(folder: &Path, job: &BatchJob<'_>) -> UnitRecord {
    let record = attempt_one(folder, job);
    if record.status == UnitStatus::Failed {
        let json = serde_json::to_vec_pretty(&record).unwrap_or_default();
        let _ = crate::io::fsutil::write_atomic(&Outputs::new(job.out_dir, &record.material).record, &json);
    }
    record
}

fn attempt_one(folder: &Path, job: &BatchJob<'_>) -> UnitRecord {
    let material = folder_name(folder);
    let (hash, expected) = match material_key(folder, job.options, job.bits_per_texel) {
        Ok(key) => key,
        Err(e) => return failed(&material, String::new(), FailureKind::Input, e.to_string()),
    };
    let out = Outputs::new(job.out_dir, &material);
    if let Some((earlier, _)) = finished(&out.record, &out.bundle, &hash) {
        return UnitRecord { status: UnitStatus::UpToDate, ..earlier };
    }
    if let Some(cache) = job.cache_dir
        && let Some(expected) = &expected
        && let Some(record) = from_cache(cache, &hash, expected, &material, &out)
    {
        return record;
    }
    let made = compress_one(folder, job, &material, &hash).and_then(|(record, bytes)| {
        write_outputs(&out, &record, &bytes).map(|()| (record, bytes)).map_err(|e| (FailureKind::Transient, e))
    });
    let (mut record, bytes) = match made {
        Ok(made) => made,
        Err((kind, error)) => return failed(&material, hash, kind, error),
    };
    if let Some(cache) = job.cache_dir
        && let Err(e) = to_cache(cache, &record, &bytes)
    {
        record.warning = Some(format!("not stored in the cache {}: {e}", cache.display()));
    }
    record
}

/// Ingests, fits to the rate, compresses and scores one material: its record and bundle bytes,
/// or how and why it failed.
fn compress_one(folder: &Path, job: &BatchJob<'_>, material: &str, hash: &str) -> Result<(UnitRecord, Vec<u8>), (FailureKind, String)> {
    let fail = |kind, text: String| (kind, text);
    let (set, _) = crate::set::ingest::load_library(&[folder.to_path_buf()]).map_err(|e| fail(FailureKind::Input, e.to_string()))?;
    let mut options = job.options.clone();
    if let Some(bits_per_texel) = job.bits_per_texel {
        options.fit_bits_per_texel_for(bits_per_texel, &set).map_err(|e| fail(FailureKind::Input, e.to_string()))?;
    }
    let compressed = crate::compress(&set, &options, &NoProgress, &Cancel::new()).map_err(|e| fail(failure_kind(&e), e.to_string()))?;
    let pooled_psnr_db = crate::eval::evaluate(&set, &crate::decode::Decoder::new(&compressed.bundle), false)
        .map_err(|e| fail(FailureKind::Transient, e.to_string()))?
        .pooled_psnr_db;
    let record = UnitRecord {
        material: material.to_owned(),
        status: UnitStatus::Compressed,
        input_sha256: hash.to_owned(),
        bundle_sha256: sha256_hex(&compressed.bundle_bytes),
        bundle_bytes: compressed.bundle_bytes.len() as u64,
        bits_per_texel: compressed.report.pack.bits_per_texel,
        pooled_psnr_db,
        train_secs: compressed.report.train.train_secs,
        error: None,
        failure: None,
        warning: None,
    };
    Ok((record, compressed.bundle_bytes))
}

/// Writes a material's bundle, then its record (so a record always names a whole bundle); the
/// error says which file could not be written.
fn write_outputs(out: &Outputs, record: &UnitRecord, bundle: &[u8]) -> Result<(), String> {
    let fail = |path: &Path, e: std::io::Error| format!("cannot write {}: {e}", path.display());
    crate::io::fsutil::write_atomic(&out.bundle, bundle).map_err(|e| fail(&out.bundle, e))?;
    let json = serde_json::to_vec_pretty(record).unwrap_or_default();
    crate::io::fsutil::write_atomic(&out.record, &json).map_err(|e| fail(&out.record, e))
}

/// A bundle made from the same inputs, from the cache into `out`, as a `Cached` record; `None`
/// when the cache has none, or one that is not what the material's bundle must be: it must match
/// its record byte for byte, read as a bundle, and hold one material of the `expected` name and
/// map kinds (another writer's, a forged or a damaged entry is compressed anew, not copied).
fn from_cache(cache: &Path, hash: &str, expected: &Expected, material: &str, out: &Outputs) -> Option<UnitRecord> {
    let (cached, bytes) = finished(&cache.join(format!("{hash}.json")), &cache.join(format!("{hash}.texset")), hash)?;
    if !holds(&bytes, expected) {
        return None;
    }
    let record = UnitRecord { material: material.to_owned(), status: UnitStatus::Cached, warning: None, ..cached };
    Some(match write_outputs(out, &record, &bytes) {
        Ok(()) => record,
        Err(error) => failed(material, hash.to_owned(), FailureKind::Transient, error),
    })
}

/// Whether `bytes` read as a bundle of one material, of the `expected` name and map kinds.
fn holds(bytes: &[u8], (name, kinds): &Expected) -> bool {
    crate::bundle::Bundle::from_bytes(bytes).is_ok_and(|bundle| {
        let materials = &bundle.manifest.materials;
        materials.len() == 1 && materials[0].name == *name && materials[0].maps.iter().map(|m| m.info.kind).eq(kinds.iter().copied())
    })
}

/// Stores a compressed material's `bundle` in the cache, keyed by its inputs: bundle first, then
/// record. Entries are content-addressed, so two runs storing one key write the same bytes.
fn to_cache(cache: &Path, record: &UnitRecord, bundle: &[u8]) -> std::io::Result<()> {
    crate::io::fsutil::write_atomic(&cache.join(format!("{}.texset", record.input_sha256)), bundle)?;
    let json = serde_json::to_vec_pretty(record).unwrap_or_default();
    crate::io::fsutil::write_atomic(&cache.join(format!("{}.json", record.input_sha256)), &json)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The grids a rate picks decide a bundle as the options do: the same options at one rate hash
    /// alike, and apart where one keeps its grids as given (decision 050).
    #[test]
    fn the_rate_and_the_grids_it_picks_are_in_the_input_hash() {
        let wood = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample_textures/wood");
        let options = CompressOptions::default();
        let mut given = options.clone();
        given.model.explicit.grids = true;
        let hash = |o: &CompressOptions, bpp| input_hash(&wood, o, bpp).unwrap();
        assert_eq!(hash(&options, Some(8.0)), hash(&options, Some(8.0)));
        assert_ne!(hash(&options, Some(8.0)), hash(&given, Some(8.0)));
        assert_ne!(hash(&options, Some(8.0)), hash(&options, Some(4.0)));
        // Without a rate the options' grids are the grids, wherever they came from.
        assert_eq!(hash(&options, None), hash(&given, None));
    }
}
