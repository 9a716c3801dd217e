//! The test kit every texset test crate shares (texset-shaders', the app's and the workspace's
//! integration tests): where the sample folders are, synthetic texture sets, a hand-built bundle,
//! and [`gpu_or_skip`] / [`skip`], which make a test that cannot run here say so in a way CI counts.
//!
//! # Skips
//! Stable Rust cannot mark a test ignored once it runs, so a test that finds no GPU adapter (or no
//! virtual display, or no shared texture sets) returns early and cargo counts it as passed. To keep
//! the totals honest, every such return goes through [`skip`] or [`skip_gpu`], which print one line
//! `SKIPPED: <test>: <reason>` and append it to the file named by `TEXSET_SKIP_LOG` (when set).
//! `.ci/run` sets it, and its closing line moves those tests from "passed" to "skipped".
//! With `TEXSET_REQUIRE_GPU=1` (set by `.ci/run` where lavapipe is installed) a missing GPU is a
//! failure instead: the GPU tests must have run.
#![allow(clippy::unwrap_used, clippy::missing_panics_doc)] // Test helpers: a broken fixture fails the test loudly.

mod bundle;
mod forge;
pub mod fuzz;
pub mod gltf;
mod set;

pub use bundle::{
    over_budget_bundle, tiny_bundle, tiny_bundle_in, tiny_bundle_with_activation, tiny_bundle_with_corner_reads,
    tiny_bundle_with_four_grids, tiny_bundle_with_grouped_mips, tiny_bundle_with_mips, tiny_bundle_with_pe_frequencies,
    tiny_bundle_with_widths,
};
pub use forge::forge_bundle;
#[cfg(feature = "train")]
pub use set::burn_decode;
pub use set::{small_set, texture};

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The environment variable naming the file each skip appends its line to.
pub const SKIP_LOG_ENV: &str = "TEXSET_SKIP_LOG";

/// The environment variable that turns a missing GPU into a test failure (`1`).
pub const REQUIRE_GPU_ENV: &str = "TEXSET_REQUIRE_GPU";

/// Why [`gpu_or_skip`] skips.
const NO_ADAPTER: &str = "no wgpu adapter (no GPU or software Vulkan driver; apt-get install mesa-vulkan-drivers for lavapipe)";

/// The repository root.
#[must_use]
pub fn repo_root() -> PathBuf {
    // tests/kit → the root, without `..` in the paths tests print and compare.
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

/// `../shared/textures` beside the checkout, if present.
#[must_use]
pub fn shared_textures() -> Option<PathBuf> {
    let p = repo_root().parent()?.join("shared").join("textures");
    p.is_dir().then_some(p)
}

/// The material folders of the bundled `sample_textures`, sorted.
#[must_use]
pub fn sample_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(repo_root().join("sample_textures")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs
}

/// Whether `TEXSET_REQUIRE_GPU` asks for every GPU test to run (set and neither empty nor `0`).
#[must_use]
pub fn gpu_required() -> bool {
    std::env::var(REQUIRE_GPU_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// `found` (what the test's own adapter lookup returned) when there is one; otherwise records
/// `test` as skipped for want of a GPU adapter ([`skip_gpu`]) and returns `None`, so the test
/// returns: `let Some((adapter, device, queue)) = gpu_or_skip(NAME, request_device()?) else { return };`.
///
/// # Panics
/// Without an adapter when `TEXSET_REQUIRE_GPU=1`.
pub fn gpu_or_skip<T>(test: &str, found: Option<T>) -> Option<T> {
    if found.is_none() {
        skip_gpu(test, NO_ADAPTER);
    }
    found
}

/// Records that `test` did not run because the GPU side it needs is missing here (`reason` says
/// what): as [`skip`], or a failure when `TEXSET_REQUIRE_GPU=1`.
///
/// # Panics
/// When `TEXSET_REQUIRE_GPU=1`.
pub fn skip_gpu(test: &str, reason: &str) {
    assert!(!gpu_required(), "{test}: {reason}, but {REQUIRE_GPU_ENV} is set: the GPU tests must run on this machine");
    skip(test, reason);
}

/// Records that `test` did not run (the caller returns next): prints `SKIPPED: <test>: <reason>`
/// and, when `TEXSET_SKIP_LOG` names a file, appends that line to it, so CI counts the test as
/// skipped rather than passed. One `write` of one line to a file opened for appending, so the
/// tests of a binary, running in parallel threads, never interleave their lines.
///
/// # Panics
/// When the log cannot be written: a skip that is not counted would be a false pass.
pub fn skip(test: &str, reason: &str) {
    let line = format!("SKIPPED: {test}: {}\n", reason.replace('\n', " "));
    print!("{line}");
    if let Some(path) = std::env::var_os(SKIP_LOG_ENV).filter(|p| !p.is_empty()) {
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{SKIP_LOG_ENV}={}: {e}", path.display()));
        log.write_all(line.as_bytes()).unwrap_or_else(|e| panic!("{SKIP_LOG_ENV}={}: {e}", PathBuf::from(&path).display()));
    }
}

/// This process's peak resident memory so far, in bytes (`VmHWM` of `/proc/self/status`; `None`
/// where there is none). cargo-nextest runs each test in a process of its own, so there it is the
/// test's peak.
#[must_use]
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kib| kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Run as a child of [`a_skip_is_logged_and_fails_when_a_gpu_is_required`] (this variable set).
    const CHILD_ENV: &str = "TEXSET_KIT_CHILD";

    /// The kit's own test binary runs this test again as a child process, with the environment
    /// set as CI sets it (a test cannot set its own environment without `unsafe`).
    #[test]
    fn a_skip_is_logged_and_fails_when_a_gpu_is_required() {
        if std::env::var_os(CHILD_ENV).is_some() {
            assert_eq!(gpu_or_skip("kit child", Some(7)), Some(7));
            assert!(gpu_or_skip::<()>("kit child", None).is_none());
            return;
        }
        let log = std::env::temp_dir().join(format!("texset-kit-skips-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&log);
        let child = |require_gpu: &str| {
            Command::new(std::env::current_exe().unwrap())
                .args(["tests::a_skip_is_logged_and_fails_when_a_gpu_is_required", "--exact", "--test-threads=1"])
                .env(CHILD_ENV, "1")
                .env(SKIP_LOG_ENV, &log)
                .env(REQUIRE_GPU_ENV, require_gpu)
                .output()
                .unwrap()
        };
        // Two runs append a line each (a found adapter records nothing).
        for _ in 0..2 {
            let out = child("0");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        }
        let line = format!("SKIPPED: kit child: {NO_ADAPTER}\n");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), line.repeat(2));
        // Required: the same missing adapter fails the test and is not counted as a skip.
        let out = child("1");
        assert!(!out.status.success(), "a missing adapter passed under {REQUIRE_GPU_ENV}=1");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), line.repeat(2));
        std::fs::remove_file(&log).unwrap();
    }

    #[test]
    fn the_paths_exist() {
        assert!(repo_root().join("Cargo.toml").is_file());
        assert!(!sample_dirs().is_empty());
    }
}
