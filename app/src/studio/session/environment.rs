//! The viewport's environment: the procedural studio or an HDR file ([`Settings::environment`]),
//! prepared for image-based lighting on the task `texset-environment` and cached by content in
//! the data folder's `environments/` (preparing the 1k studio takes 140-150 ms in a release build
//! on two cores, `texset bench ibl`; a debug build, about a second).
//!
//! [`Settings::environment`]: crate::studio::state::Settings::environment

use super::Session;
use crate::studio::task::{Task, take_finished};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use texset_shaders::environment::{Environment, PrepareOptions, PreparedEnvironment, STUDIO_WIDTH_PX, prepare};

/// The environment the viewport is lit by, and the task preparing the next one.
#[derive(Default)]
pub struct EnvironmentState {
    /// The prepared environment and what it is (`None` until the first is ready).
    pub prepared: Option<(EnvironmentSource, Arc<PreparedEnvironment>)>,
    /// Counts environments made ready, so the viewport knows when to upload one.
    pub generation: u64,
    task: Option<Task<(EnvironmentSource, Result<PreparedEnvironment, String>)>>,
}

/// Where an environment comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvironmentSource {
    /// The procedural studio texset makes.
    Studio,
    /// An HDR file.
    File(PathBuf),
}

impl EnvironmentSource {
    /// How the panel names it.
    #[must_use]
    pub fn name(&self) -> String {
        match self {
            Self::Studio => "studio".to_owned(),
            Self::File(path) => path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned()),
        }
    }
}

impl Session {
    /// Prepares the settings' environment on the task `texset-environment` (the one on screen
    /// stays until it is ready).
    pub(super) fn prepare_environment(&mut self) {
        let source = self.settings.environment.clone().map_or(EnvironmentSource::Studio, EnvironmentSource::File);
        let cache = self.env.data_dir.as_ref().map(|d| d.join("environments"));
        let task = Task::spawn("texset-environment", Arc::clone(&self.env.repaint), move || {
            let prepared = prepare_cached(&source, cache.as_deref());
            (source, prepared)
        });
        self.environment.task = Some(task);
    }

    /// Lights the viewport by `path` (`None`: the studio) from now on.
    pub(super) fn set_environment(&mut self, path: Option<PathBuf>) {
        self.settings.environment = path;
        self.prepare_environment();
    }

    /// Takes in a prepared environment.
    pub(super) fn poll_environment(&mut self) {
        match take_finished(&mut self.environment.task) {
            Some(Ok((source, Ok(prepared)))) => {
                self.say(false, format!("environment: {}", source.name()));
                self.environment.prepared = Some((source, Arc::new(prepared)));
                self.environment.generation += 1;
            }
            Some(Ok((source, Err(e)))) => {
                self.say(true, format!("environment {}: {e}", source.name()));
                // A file that does not load leaves the one on screen, and is not tried again.
                if self.environment.prepared.is_none() && source != EnvironmentSource::Studio {
                    self.settings.environment = None;
                    self.prepare_environment();
                } else if let Some((shown, _)) = &self.environment.prepared {
                    self.settings.environment = match shown {
                        EnvironmentSource::Studio => None,
                        EnvironmentSource::File(path) => Some(path.clone()),
                    };
                }
            }
            Some(Err(died)) => self.report_death(&died),
            None => {}
        }
    }

    /// Whether an environment is being prepared.
    pub(super) fn preparing_environment(&self) -> bool {
        self.environment.task.is_some()
    }
}

/// `source` prepared with the default options, read from `cache` (a folder) when it holds it and
/// written there when it did not (a cache that cannot be written only costs the next start).
fn prepare_cached(source: &EnvironmentSource, cache: Option<&Path>) -> Result<PreparedEnvironment, String> {
    let options = PrepareOptions::default();
    let (environment, key) = match source {
        EnvironmentSource::Studio => {
            let key = format!("texset studio {STUDIO_WIDTH_PX}");
            (None, PreparedEnvironment::cache_key(key.as_bytes(), &options))
        }
        EnvironmentSource::File(path) => {
            let key = PreparedEnvironment::file_cache_key(path, &options).map_err(|e| format!("{}: {e}", path.display()))?;
            (Some(path), key)
        }
    };
    let cached = cache.map(|dir| dir.join(format!("{key}.txibl")));
    if let Some(prepared) = cached.as_deref().and_then(|path| PreparedEnvironment::read_cache(path).ok()) {
        return Ok(prepared);
    }
    let environment = Environment::load_or_studio(environment.map(PathBuf::as_path)).map_err(|e| e.to_string())?;
    let prepared = prepare(&environment, &options).map_err(|e| e.to_string())?;
    if let (Some(dir), Some(path)) = (cache, &cached)
        && std::fs::create_dir_all(dir).is_ok()
    {
        // Best effort: the next start prepares it again.
        let _ = prepared.write_cache(path);
    }
    Ok(prepared)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_studio_environment_is_prepared_once_then_read_from_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let first = prepare_cached(&EnvironmentSource::Studio, Some(dir.path())).unwrap();
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(files.len(), 1, "{files:?}");
        let second = prepare_cached(&EnvironmentSource::Studio, Some(dir.path())).unwrap();
        assert_eq!(first, second);
        // A file that is not an environment is refused by name, and nothing is cached for it.
        let elsewhere = tempfile::tempdir().unwrap();
        let bad = elsewhere.path().join("sky.hdr");
        std::fs::write(&bad, b"not a radiance file").unwrap();
        let error = prepare_cached(&EnvironmentSource::File(bad.clone()), Some(dir.path())).unwrap_err();
        assert!(error.contains("sky.hdr"), "{error}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
