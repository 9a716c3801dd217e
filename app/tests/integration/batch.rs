//! `texset compress --batch`: shards give the unsharded run's bundles byte for byte, whatever
//! the job count; unchanged materials are skipped by content hash; a broken material fails alone.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

fn texset(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_texset")).args(args).output().unwrap()
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
    assert!(!run.status.success(), "{stderr}");
    assert!(stderr.contains("1 of 6 materials failed"), "{stderr}");
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
