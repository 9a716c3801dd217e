#![allow(clippy::unwrap_used)]
use super::*;
use crate::studio::runs::{RunRecord, RunSettings};
use crate::studio::state::Settings;

fn record(id: u64, bundle: PathBuf) -> RunRecord {
    RunRecord {
        id,
        folders: vec![PathBuf::from("/materials/wood")],
        settings: RunSettings::of(&Settings::default()),
        bundle_bytes: 1234,
        bits_per_texel: 1.5,
        psnr_db: Some(31.25),
        rendered_psnr_db: None,
        train_secs: 2.5,
        bundle,
    }
}

/// Takes an id, writes its bundle and records it, as the studio does after a run.
fn keep_run(log: &mut ExperimentLog) -> u64 {
    let (id, path) = log.allocate().unwrap();
    write_atomic(&path, format!("bundle {id}").as_bytes()).unwrap();
    log.runs.push(record(id, path));
    log.save().unwrap();
    id
}

#[test]
fn the_log_is_its_own_file_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, problems) = ExperimentLog::open(Some(dir.path()), Vec::new());
    assert!(problems.is_empty() && log.runs.is_empty() && log.keeps_runs());
    assert_eq!([keep_run(&mut log), keep_run(&mut log)], [1, 2]);
    let (again, problems) = ExperimentLog::open(Some(dir.path()), Vec::new());
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(again.runs, log.runs);
    assert_eq!(again.get(2).unwrap().bundle, dir.path().join("runs/run-2.texset"));
}

/// At e9a7c80 the ids came from the log alone: a lost log restarted them at 1 and the next run
/// overwrote `runs/run-1.texset`.
#[test]
fn a_lost_log_never_reuses_an_id_nor_overwrites_a_kept_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = ExperimentLog::open(Some(dir.path()), Vec::new());
    keep_run(&mut log);
    keep_run(&mut log);
    std::fs::remove_file(dir.path().join(LOG_FILE)).unwrap();
    let (mut fresh, _) = ExperimentLog::open(Some(dir.path()), Vec::new());
    assert!(fresh.runs.is_empty());
    assert_eq!(keep_run(&mut fresh), 3);
    assert_eq!(std::fs::read(dir.path().join("runs/run-1.texset")).unwrap(), b"bundle 1");
}

#[test]
fn a_deleted_runs_id_stays_taken() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = ExperimentLog::open(Some(dir.path()), Vec::new());
    keep_run(&mut log);
    keep_run(&mut log);
    let deleted = log.runs.pop().unwrap();
    std::fs::remove_file(&deleted.bundle).unwrap();
    log.save().unwrap();
    let (mut again, _) = ExperimentLog::open(Some(dir.path()), Vec::new());
    assert_eq!(keep_run(&mut again), 3);
}

#[test]
fn an_unreadable_log_is_set_aside_and_reported_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = ExperimentLog::open(Some(dir.path()), Vec::new());
    keep_run(&mut log);
    let path = dir.path().join(LOG_FILE);
    let text = std::fs::read(&path).unwrap();
    // Truncated mid-write, as eframe's in-place writes could leave app.ron.
    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    let (fresh, problems) = ExperimentLog::open(Some(dir.path()), Vec::new());
    assert!(fresh.runs.is_empty());
    let [StoreError::Unreadable { path: named, set_aside, .. }] = problems.as_slice() else { panic!("{problems:?}") };
    assert_eq!(named, &path);
    assert_eq!(std::fs::read(set_aside).unwrap(), &text[..text.len() / 2], "the unreadable log is kept, under a new name");
    assert!(problems[0].to_string().contains("log.json"), "{}", problems[0]);
    assert!(!path.exists());
}

#[test]
fn a_log_of_a_newer_format_is_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("runs")).unwrap();
    std::fs::write(dir.path().join(LOG_FILE), br#"{"version": 99, "runs": []}"#).unwrap();
    let (_, problems) = ExperimentLog::open(Some(dir.path()), Vec::new());
    assert!(problems[0].to_string().contains("format version 99"), "{problems:?}");
}

#[test]
fn runs_kept_in_app_ron_move_into_the_log_once() {
    let dir = tempfile::tempdir().unwrap();
    let old = vec![record(4, dir.path().join("runs/run-4.texset"))];
    let (log, problems) = ExperimentLog::open(Some(dir.path()), old.clone());
    assert!(problems.is_empty());
    assert_eq!(log.runs, old);
    assert!(dir.path().join(LOG_FILE).is_file(), "the migrated log is written at once");
    // Once the log exists, what app.ron still holds is ignored.
    let (mut again, _) = ExperimentLog::open(Some(dir.path()), vec![record(9, PathBuf::from("x"))]);
    assert_eq!(again.runs, old);
    assert_eq!(again.allocate().unwrap().0, 5);
}

#[test]
fn a_second_studio_on_one_data_folder_is_refused_the_lock_and_keeps_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let first = lock(dir.path()).unwrap();
    let second = lock(dir.path()).unwrap_err();
    assert!(matches!(second, StoreError::Locked(_)), "{second:?}");
    assert!(second.to_string().contains("another texset studio"), "{second}");
    let (mut log, problems) = ExperimentLog::read_only(dir.path());
    assert!(problems.is_empty() && !log.keeps_runs());
    assert!(log.allocate().is_err());
    log.save().unwrap();
    assert!(!dir.path().join(LOG_FILE).exists(), "a read-only log writes nothing");
    drop(first);
    lock(dir.path()).unwrap();
}

#[test]
fn an_unreadable_app_state_is_set_aside_and_a_good_one_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    assert!(check_app_state(dir.path(), "texset-studio").is_none(), "no file: nothing to say");
    let settings = ron::to_string(&Settings::default()).unwrap();
    let good = ron::to_string(&std::collections::HashMap::from([("texset-studio".to_owned(), settings)])).unwrap();
    std::fs::write(dir.path().join("app.ron"), &good).unwrap();
    assert!(check_app_state(dir.path(), "texset-studio").is_none());
    std::fs::write(dir.path().join("app.ron"), &good[..good.len() / 3]).unwrap();
    let problem = check_app_state(dir.path(), "texset-studio").unwrap();
    assert!(matches!(problem, StoreError::Unreadable { .. }), "{problem:?}");
    assert!(!dir.path().join("app.ron").exists());
}
