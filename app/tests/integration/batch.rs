//! `texset compress --batch`: shards give the unsharded run's bundles byte for byte, whatever
//! the job count; unchanged materials are skipped by content hash; a broken material fails alone,
//! with the exit code for bad input; a scheduler's array variables choose the shard; a killed
//! shard is a gap the merge reports until a rerun fills it; the cache serves other folders.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use texset_core::drivers::batch::sha256_hex;

fn texset(args: &[&str]) -> Output {
    texset_with(args, &[])
}

/// `texset` with only these scheduler variables set (any of the caller's own removed).
fn texset_with(args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_texset"));
    for (name, _) in std::env::vars() {
        if name.starts_with("SLURM_") || name.starts_with("AWS_BATCH_") || name.starts_with("TEXSET_") || name == "JOB_COMPLETION_INDEX" {
            command.env_remove(name);
        }
    }
    command.args(args).envs(vars.iter().copied()).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn bundles(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "texset"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect()
}

fn statuses(summary: &Path) -> BTreeMap<String, String> {
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(summary).unwrap()).unwrap();
    json["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["material"].as_str().unwrap().to_owned(), u["status"].as_str().unwrap().to_owned()))
        .collect()
}

#[test]
fn sharded_batches_match_the_unsharded_run_and_skip_unchanged_materials() {
    let tmp = tempfile::tempdir().unwrap();
    let library = tmp.path().join("library");
    texset::synth::write_sample_textures(&library, 16, 3).unwrap();
    let broken = library.join("zz_broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("b_basecolor.png"), b"\x89PNG\r\n\x1a\nnot really").unwrap();
    let lib = library.to_str().unwrap();
    let common = ["--steps", "30", "--seed", "5"];

    // Unsharded, two jobs at once: the broken material fails alone, the exit code tells.
    let all = tmp.path().join("all");
    let run = texset(&[&["compress", "--batch", lib, "-o", all.to_str().unwrap(), "--jobs", "2"], &common[..]].concat());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(65), "bad input exits with EX_DATAERR: {stderr}");
    assert!(stderr.contains("1 of 6 materials failed for good"), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(all.join("summary.json")).unwrap()).unwrap();
    let failed: Vec<&serde_json::Value> = json["units"].as_array().unwrap().iter().filter(|u| u["status"] == "failed").collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["material"], "zz_broken");
    assert!(failed[0]["error"].as_str().unwrap().contains("b_basecolor.png"), "{}", failed[0]);
    let unsharded = bundles(&all);
    assert_eq!(unsharded.len(), 5, "{:?}", unsharded.keys());

    // Two shards, one job each, into one folder: every material in exactly one shard, and the
    // same bundles byte for byte.
    let sharded = tmp.path().join("sharded");
    for shard in ["0/2", "1/2"] {
        let _ = texset(&[&["compress", "--batch", lib, "-o", sharded.to_str().unwrap(), "--shard", shard], &common[..]].concat());
    }
    let (s0, s1) = (statuses(&sharded.join("summary-shard-0-of-2.json")), statuses(&sharded.join("summary-shard-1-of-2.json")));
    assert_eq!(s0.len() + s1.len(), 6);
    assert!(s0.keys().all(|k| !s1.contains_key(k)), "{s0:?} {s1:?}");
    assert!(!s0.is_empty() && !s1.is_empty(), "one shard got everything: {s0:?} {s1:?}");
    assert_eq!(bundles(&sharded), unsharded, "sharded bundles differ from the unsharded run's");

    // A rerun skips what is up to date; a changed source is compressed again, alone.
    std::fs::remove_dir_all(&broken).unwrap();
    let rerun = texset(&[&["compress", "--batch", lib, "-o", all.to_str().unwrap()], &common[..]].concat());
    assert!(rerun.status.success(), "{}", String::from_utf8_lossy(&rerun.stderr));
    assert!(statuses(&all.join("summary.json")).values().all(|s| s == "up_to_date"));
    let wood = library.join("wood");
    let map =
        std::fs::read_dir(&wood).unwrap().map(|e| e.unwrap().path()).find(|p| p.to_string_lossy().ends_with("roughness.png")).unwrap();
    image::GrayImage::from_fn(16, 16, |x, y| image::Luma([(x * y) as u8])).save(&map).unwrap();
    let rerun = texset(&[&["compress", "--batch", lib, "-o", all.to_str().unwrap()], &common[..]].concat());
    assert!(rerun.status.success(), "{}", String::from_utf8_lossy(&rerun.stderr));
    let after = statuses(&all.join("summary.json"));
    for (material, status) in &after {
        let expected = if material == "wood" { "compressed" } else { "up_to_date" };
        assert_eq!(status, expected, "{material}: {after:?}");
    }
    assert_ne!(bundles(&all)["wood.texset"], unsharded["wood.texset"]);
}

/// A library of five small materials under `root`.
fn library(root: &Path) -> std::path::PathBuf {
    let library = root.join("library");
    texset::synth::write_sample_textures(&library, 16, 3).unwrap();
    library
}

/// Each material of a plan with its shard index.
type Planned = Vec<(String, u64)>;

/// `--plan --json` with `--shard shard` under these variables: every entry's shard, or the exit
/// code and stderr.
fn planned_shards(lib: &str, out: &str, shard: &str, vars: &[(&str, &str)]) -> Result<Planned, (Option<i32>, String)> {
    let run = texset_with(&["compress", "--batch", lib, "-o", out, "--shard", shard, "--plan", "--json"], vars);
    if !run.status.success() {
        return Err((run.status.code(), stderr(&run)));
    }
    let json: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    Ok(json.as_array().unwrap().iter().map(|e| (e["material"].as_str().unwrap().to_owned(), e["shard"].as_u64().unwrap())).collect())
}

#[test]
fn scheduler_variables_choose_the_shard_and_bad_ones_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let library = library(tmp.path());
    let (lib, out) = (library.to_str().unwrap(), tmp.path().join("out"));
    let out = out.to_str().unwrap();
    let by_hand = |shard: &str| planned_shards(lib, out, shard, &[]).unwrap();
    for index in 0..3_u64 {
        let expected = by_hand(&format!("{index}/3"));
        assert!(expected.iter().all(|(_, s)| *s == index), "{expected:?}");
        let i = index.to_string();
        let k8s = planned_shards(lib, out, "auto", &[("JOB_COMPLETION_INDEX", &i), ("TEXSET_SHARD_COUNT", "3")]).unwrap();
        assert_eq!(k8s, expected, "Kubernetes index {index}");
        let aws = planned_shards(lib, out, "auto", &[("AWS_BATCH_JOB_ARRAY_INDEX", &i), ("AWS_BATCH_JOB_ARRAY_SIZE", "3")]).unwrap();
        assert_eq!(aws, expected, "AWS Batch index {index}");
        let id = (index + 7).to_string();
        let slurm = planned_shards(
            lib,
            out,
            "auto",
            &[("SLURM_ARRAY_TASK_ID", &id), ("SLURM_ARRAY_TASK_MIN", "7"), ("SLURM_ARRAY_TASK_COUNT", "3")],
        )
        .unwrap();
        assert_eq!(slurm, expected, "Slurm task {id} of 7..9");
    }
    // Refusals: exit 64, naming the variables.
    let refusals: [(&[(&str, &str)], &str); 4] = [
        (&[], "no batch scheduler's array variables are set"),
        (&[("JOB_COMPLETION_INDEX", "0")], "JOB_COMPLETION_INDEX is set but TEXSET_SHARD_COUNT is not"),
        (
            &[
                ("JOB_COMPLETION_INDEX", "0"),
                ("TEXSET_SHARD_COUNT", "2"),
                ("AWS_BATCH_JOB_ARRAY_INDEX", "1"),
                ("AWS_BATCH_JOB_ARRAY_SIZE", "2"),
            ],
            "Kubernetes says shard 0/2 but AWS Batch says shard 1/2",
        ),
        (&[("AWS_BATCH_JOB_ARRAY_INDEX", "4"), ("AWS_BATCH_JOB_ARRAY_SIZE", "4")], "index 4 is not below the count 4"),
    ];
    for (vars, message) in refusals {
        let (code, text) = planned_shards(lib, out, "auto", vars).unwrap_err();
        assert_eq!(code, Some(64), "{vars:?}: {text}");
        assert!(text.contains(message), "{vars:?}: {text}");
    }
    assert!(!Path::new(out).exists(), "a plan or a refusal wrote {out}");
}

#[test]
fn a_killed_shard_is_a_gap_until_its_rerun_gives_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let library = library(tmp.path());
    let lib = library.to_str().unwrap();
    let common = ["--steps", "100", "--seed", "9"];
    let all = tmp.path().join("all");
    let run = texset(&[&["compress", "--batch", lib, "-o", all.to_str().unwrap(), "--jobs", "2"], &common[..]].concat());
    assert!(run.status.success(), "{}", stderr(&run));
    let unsharded = bundles(&all);

    // Shard 0 of 2 runs as a Slurm array task; shard 1 is killed after its first material.
    let sharded = tmp.path().join("sharded");
    let out = sharded.to_str().unwrap();
    let slurm = |task: &'static str| [("SLURM_ARRAY_TASK_ID", task), ("SLURM_ARRAY_TASK_MIN", "0"), ("SLURM_ARRAY_TASK_COUNT", "2")];
    let first = texset_with(&[&["compress", "--batch", lib, "-o", out, "--shard", "auto"], &common[..]].concat(), &slurm("0"));
    assert!(first.status.success(), "{}", stderr(&first));
    let second_shard: Vec<String> = statuses(&all.join("summary.json"))
        .into_keys()
        .filter(|m| !statuses(&sharded.join("summary-shard-0-of-2.json")).contains_key(m))
        .collect();
    assert!(second_shard.len() >= 2, "shard 1 needs two materials for a kill between them: {second_shard:?}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_texset"))
        .args([&["compress", "--batch", lib, "-o", out, "--shard", "1/2"], &common[..]].concat())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let records = |m: &[String]| m.iter().filter(|m| sharded.join(format!("{m}.texset.json")).exists()).count();
    let deadline = std::time::Instant::now() + std::time::Duration::from_mins(10);
    while records(&second_shard) == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let done = records(&second_shard);
    assert!(done >= 1 && done < second_shard.len(), "the kill did not land between materials: {done} of {second_shard:?} done");

    // The merge names the missing shard and materials, exits non-zero and writes no manifest.
    let merge = || texset(&[&["compress", "--batch", lib, "-o", out, "--merge", "--json"], &common[..]].concat());
    let gapped = merge();
    assert!(!gapped.status.success(), "{}", stderr(&gapped));
    let report: serde_json::Value = serde_json::from_slice(&gapped.stdout).unwrap();
    assert_eq!(report["complete"], false);
    assert_eq!(report["missing_shards"], serde_json::json!(["1/2"]));
    let gaps: Vec<&str> = report["gaps"].as_array().unwrap().iter().map(|g| g["material"].as_str().unwrap()).collect();
    assert_eq!(gaps.len(), second_shard.len() - done, "{report}");
    assert!(gaps.iter().all(|g| second_shard.iter().any(|m| m == g)), "{gaps:?} not all of shard 1 {second_shard:?}");
    assert!(stderr(&gapped).contains("no up-to-date bundle"), "{}", stderr(&gapped));
    assert!(!sharded.join("manifest.json").exists());
    let run0 = &report["runs"].as_array().unwrap()[0];
    assert_eq!(run0["origin"]["scheduler"], "slurm", "{run0}");
    assert_eq!(run0["shard"], serde_json::json!({"index": 0, "count": 2}));

    // The rerun finishes the shard: the same bytes as the unsharded run, and a clean merge
    // (twice: a merge can be rerun).
    let rerun = texset(&[&["compress", "--batch", lib, "-o", out, "--shard", "1/2"], &common[..]].concat());
    assert!(rerun.status.success(), "{}", stderr(&rerun));
    let after = statuses(&sharded.join("summary-shard-1-of-2.json"));
    assert_eq!(after.values().filter(|s| *s == "up_to_date").count(), done, "{after:?}");
    assert_eq!(bundles(&sharded), unsharded, "the rerun shard's bundles differ from the unsharded run's");
    for _ in 0..2 {
        let clean = merge();
        assert!(clean.status.success(), "{}", stderr(&clean));
        let report: serde_json::Value = serde_json::from_slice(&clean.stdout).unwrap();
        assert_eq!((report["complete"].clone(), report["gaps"].clone()), (serde_json::json!(true), serde_json::json!([])));
    }
    let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(sharded.join("manifest.json")).unwrap()).unwrap();
    let entries = manifest["materials"].as_array().unwrap();
    assert_eq!(entries.len(), unsharded.len());
    for entry in entries {
        let bytes = &unsharded[entry["bundle"].as_str().unwrap()];
        assert_eq!(entry["bytes"].as_u64().unwrap(), bytes.len() as u64);
        assert_eq!(entry["sha256"].as_str().unwrap(), sha256_hex(bytes));
        assert!(entry["pooled_psnr_db"].as_f64().unwrap() > 15.0, "{entry}");
    }
}

#[test]
fn the_cache_serves_another_folder_and_only_runs_one_material() {
    let tmp = tempfile::tempdir().unwrap();
    let library = library(tmp.path());
    let lib = library.to_str().unwrap();
    let cache = tmp.path().join("cache");
    let common = ["--steps", "20", "--seed", "3", "--cache", cache.to_str().unwrap()];
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let first = texset(&[&["compress", "--batch", lib, "-o", a.to_str().unwrap()], &common[..]].concat());
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(statuses(&a.join("summary.json")).values().all(|s| s == "compressed"));
    let second = texset(&[&["compress", "--batch", lib, "-o", b.to_str().unwrap(), "--jobs", "2"], &common[..]].concat());
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(statuses(&b.join("summary.json")).values().all(|s| s == "cached"), "{:?}", statuses(&b.join("summary.json")));
    assert_eq!(bundles(&a), bundles(&b));

    // A folder renamed is another material (its bundle holds its name): compressed, not served
    // the old name's bundle from the cache; the others still are.
    std::fs::rename(library.join("wood"), library.join("oak")).unwrap();
    let renamed = tmp.path().join("renamed");
    let third = texset(&[&["compress", "--batch", lib, "-o", renamed.to_str().unwrap()], &common[..]].concat());
    assert!(third.status.success(), "{}", stderr(&third));
    let third_statuses = statuses(&renamed.join("summary.json"));
    assert_eq!(third_statuses.get("oak").map(String::as_str), Some("compressed"), "{third_statuses:?}");
    assert!(third_statuses.iter().filter(|(m, _)| *m != "oak").all(|(_, s)| s == "cached"), "{third_statuses:?}");
    std::fs::rename(library.join("oak"), library.join("wood")).unwrap();

    // Other options are another key: `--only` compresses the one material, not from the cache.
    let only = tmp.path().join("only");
    let args =
        ["compress", "--batch", lib, "-o", only.to_str().unwrap(), "--only", "wood", "--steps", "21", "--cache", cache.to_str().unwrap()];
    let run = texset(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(bundles(&only).into_keys().collect::<Vec<_>>(), ["wood.texset"]);
    assert_eq!(statuses(&only.join("summary-material-wood.json")), BTreeMap::from([("wood".to_owned(), "compressed".to_owned())]));
    let missing = texset(&["compress", "--batch", lib, "-o", only.to_str().unwrap(), "--only", "no_such", "--steps", "21"]);
    assert!(!missing.status.success());
    assert!(stderr(&missing).contains("no material folder \"no_such\""), "{}", stderr(&missing));
}

/// A panic on one material (simulated: `TEXSET_FAULT=batch-panic-at=1`) fails that material,
/// with the panic's message in its record and the summary, and the batch goes on: the others
/// are compressed, the summary is written, the exit says a retry may clear it.
#[test]
fn a_panic_on_one_material_fails_it_and_the_batch_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let library = library(tmp.path());
    let out = tmp.path().join("out");
    let args = ["compress", "--batch", library.to_str().unwrap(), "-o", out.to_str().unwrap(), "--steps", "10", "--jobs", "1"];
    let run = texset_with(&args, &[("TEXSET_FAULT", "batch-panic-at=1")]);
    assert!(!run.status.success(), "a failed material must fail the run: {}", stderr(&run));
    assert!(stderr(&run).contains("1 of 5 materials failed, some for a reason a retry may clear"), "{}", stderr(&run));
    let statuses = statuses(&out.join("summary.json"));
    let failed: Vec<&String> = statuses.iter().filter(|(_, s)| *s == "failed").map(|(m, _)| m).collect();
    assert_eq!(failed.len(), 1, "{statuses:?}");
    assert_eq!(statuses.values().filter(|s| *s == "compressed").count(), 4, "{statuses:?}");
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join(format!("{}.texset.json", failed[0]))).unwrap()).unwrap();
    assert!(record["error"].as_str().unwrap().contains("texset panicked on this material: simulated panic"), "{record}");
}

/// The cache entry of material `name` in `cache`: its record's and bundle's paths.
fn cache_entry(cache: &Path, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    for entry in std::fs::read_dir(cache).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let record: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            if record["material"] == name {
                return (path.clone(), path.with_extension("texset"));
            }
        }
    }
    panic!("no cache entry of {name} in {}", cache.display());
}

/// A cache entry is checked before it is copied: a record that names its bundle's bytes (as a
/// forger or another writer's mistake would leave it) but whose bundle is another material's,
/// or not a bundle at all, is compressed anew, never copied into the outputs. The key reads only
/// the files ingest reads: a FIFO beside the maps (never opened: it would block a read) and notes
/// added to a folder change nothing. At a59669d this test failed: wood's forged entry was copied
/// ("cached"), and the notes made `metal_plates` compress again.
#[test]
fn cache_entries_are_checked_and_the_key_reads_only_what_ingest_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let library = library(tmp.path());
    let lib = library.to_str().unwrap();
    let cache = tmp.path().join("cache");
    let common = ["--steps", "20", "--seed", "3", "--cache", cache.to_str().unwrap()];
    let first = texset(&[&["compress", "--batch", lib, "-o", tmp.path().join("a").to_str().unwrap()], &common[..]].concat());
    assert!(first.status.success(), "{}", stderr(&first));
    // wood's entry holds bricks's bundle; fabric_indigo's holds bytes that are no bundle; each
    // record names its bundle's SHA-256, so only a check of what the bundle holds tells.
    let forge = |name: &str, bytes: &[u8]| {
        let (record_path, bundle_path) = cache_entry(&cache, name);
        std::fs::write(&bundle_path, bytes).unwrap();
        let mut record: serde_json::Value = serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap();
        record["bundle_sha256"] = serde_json::json!(sha256_hex(bytes));
        std::fs::write(&record_path, serde_json::to_vec(&record).unwrap()).unwrap();
    };
    forge("wood", &std::fs::read(cache_entry(&cache, "bricks").1).unwrap());
    forge("fabric_indigo", b"not a bundle, but its record names these bytes");
    // Notes and a FIFO beside metal_plates's maps: ingest leaves them out, so the key does too.
    std::fs::write(library.join("metal_plates").join("notes.txt"), "reviewed").unwrap();
    let fifo = library.join("metal_plates").join("layers.psd");
    let have_fifo = Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
    let b = tmp.path().join("b");
    let mut second = Command::new(env!("CARGO_BIN_EXE_texset"))
        .args([&["compress", "--batch", lib, "-o", b.to_str().unwrap()], &common[..]].concat())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_mins(5);
    while second.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "the batch hung (reading the FIFO {}?)", fifo.display());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let second = second.wait_with_output().unwrap();
    assert!(second.status.success(), "{}", stderr(&second));
    let statuses = statuses(&b.join("summary.json"));
    for (material, status) in [("wood", "compressed"), ("fabric_indigo", "compressed"), ("bricks", "cached"), ("metal_plates", "cached")] {
        assert_eq!(statuses[material], status, "{material}: {statuses:?} (FIFO made: {have_fifo})");
    }
    let wood = texset_core::bundle::Bundle::read(&b.join("wood.texset")).unwrap();
    assert_eq!(wood.manifest.materials[0].name, "wood");
    assert_eq!(bundles(&b), bundles(&tmp.path().join("a")), "the outputs are not the first run's bundles");
}

/// Shard counts are bounded (65,536) wherever they come from: a flag, a scheduler's variable, a
/// summary file in the output folder, which a merge reads. A merge lists as missing only the
/// shards that own a material, so a summary naming a large count costs it no more than the
/// library, and its manifest names bundles by folder, whatever a record file says. At a59669d
/// `--shard 0/70000` was taken (this test failed there), and a merge's list of missing shards
/// looped over every shard of every count a summary named.
#[test]
fn shard_counts_are_bounded_and_merge_names_bundles_by_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let library = library(tmp.path());
    let lib = library.to_str().unwrap();
    let out = tmp.path().join("out");
    let out_str = out.to_str().unwrap();
    for (vars, shard) in [(&[][..], "0/70000"), (&[("JOB_COMPLETION_INDEX", "0"), ("TEXSET_SHARD_COUNT", "4294967295")][..], "auto")] {
        let run = texset_with(&["compress", "--batch", lib, "-o", out_str, "--shard", shard, "--plan"], vars);
        assert_eq!(run.status.code(), Some(64), "{shard} {vars:?}: {}", stderr(&run));
        assert!(stderr(&run).contains("more than the 65536"), "{}", stderr(&run));
    }
    let common = ["--steps", "10", "--seed", "2"];
    let run = texset(&[&["compress", "--batch", lib, "-o", out_str], &common[..]].concat());
    assert!(run.status.success(), "{}", stderr(&run));
    // Forged summaries: 4e9 shards (past the bound: not a run's), and 60,000 (within it).
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    for count in [4_000_000_000_u64, 60_000] {
        let mut forged = summary.clone();
        forged["shard"] = serde_json::json!({"index": 0, "count": count});
        std::fs::write(out.join(format!("summary-shard-0-of-{count}.json")), serde_json::to_vec(&forged).unwrap()).unwrap();
    }
    // A record that names another material: the manifest still names the folder's bundle.
    let record_path = out.join("wood.texset.json");
    let mut record: serde_json::Value = serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap();
    record["material"] = serde_json::json!("../../elsewhere/evil");
    std::fs::write(&record_path, serde_json::to_vec(&record).unwrap()).unwrap();
    let start = std::time::Instant::now();
    let merge = texset(&[&["compress", "--batch", lib, "-o", out_str, "--merge", "--json"], &common[..]].concat());
    let merge_secs = start.elapsed().as_secs_f64();
    let report: serde_json::Value = serde_json::from_slice(&merge.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&merge)));
    assert!(report["runs"].as_array().unwrap().iter().all(|r| r["shard"]["count"] != 4_000_000_000_u64), "{report}");
    let missing = report["missing_shards"].as_array().unwrap();
    assert!(
        !missing.is_empty() && missing.len() <= 5,
        "{} missing shards of 60000 listed: more than the 5 that own a material",
        missing.len()
    );
    assert!(merge_secs < 30.0, "the merge took {merge_secs:.1} s");
    let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let named: Vec<&str> = manifest["materials"].as_array().unwrap().iter().map(|m| m["bundle"].as_str().unwrap()).collect();
    assert!(named.contains(&"wood.texset") && named.iter().all(|b| !b.contains('/')), "{named:?}");
}
