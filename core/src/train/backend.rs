//! Which trainer trains a run: what `--backend auto` resolves to ([`resolve_auto`]), the one
//! capability check that sends `auto` to the fused CPU trainer when the trainer it resolved to
//! cannot train what the options ask ([`choose`]), and the run on the chosen backend, going on on
//! the CPU when GPU training fails ([`train_on`]).

use crate::model::layout::ModelLayout;
use crate::model::params::ModelParams;
use crate::options::{Backend, CompressOptions, RunOptions};
use crate::progress::{Cancel, Progress};
use crate::set::TextureSet;
use crate::train::TrainError;
use crate::train::run::{Capabilities, TrainReport};

/// What [`Backend::Auto`] resolves to: the fused GPU trainer when a hardware GPU adapter exists
/// (a software one is slower than the CPU trainer), else the fused CPU trainer. Returns the
/// choice and why.
#[must_use]
pub fn resolve_auto() -> (Backend, String) {
    match crate::train::burn::adapters().into_iter().find(|a| !a.is_software) {
        Some(a) => (Backend::Gpu, format!("GPU adapter {} ({})", a.name, a.backend)),
        None => (Backend::Cpu, "no hardware GPU adapter: training on the CPU".to_owned()),
    }
}

/// A backend the caller named that cannot do what the options ask; `auto` or the CPU backend
/// can. Front ends phrase it in their own terms (the CLI names its `--backend` flag).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the {name} backend cannot {task} yet ({why})", name = .backend.name())]
pub struct Unsupported {
    /// The backend named.
    pub backend: Backend,
    /// What it cannot do: "train channel pruning" ([`Capabilities::missing`]), "add materials to
    /// a library".
    pub task: String,
    /// Why not.
    pub why: String,
}

/// The backend a run trains on ([`choose`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Choice {
    /// The backend: never [`Backend::Auto`].
    pub backend: Backend,
    /// Why `auto` chose it (`None`: the user named it).
    pub auto_reason: Option<String>,
}

/// The backend `options` train on with the analysed `layout`: `auto` resolved ([`resolve_auto`])
/// and sent to the fused CPU trainer when the trainer it resolved to cannot train what the
/// options ask ([`Capabilities::missing`]); a backend the user named that cannot is refused.
pub(crate) fn choose(options: &CompressOptions, layout: &ModelLayout) -> Result<Choice, Unsupported> {
    let (backend, auto_reason) = match options.run.backend {
        Backend::Auto => {
            let (backend, reason) = resolve_auto();
            (backend, Some(reason))
        }
        other => (other, None),
    };
    let missing = match backend {
        Backend::BurnWgpu | Backend::BurnFlex => Capabilities::BURN.missing(options, layout),
        Backend::Gpu => Capabilities::FUSED_GPU.missing(options, layout),
        Backend::Auto | Backend::Cpu => None,
    };
    match (backend, missing) {
        (Backend::BurnWgpu | Backend::BurnFlex | Backend::Gpu, Some((what, why))) => {
            if options.run.backend != Backend::Auto {
                return Err(Unsupported { backend, task: format!("train {what}"), why: why.to_owned() });
            }
            Ok(Choice { backend: Backend::Cpu, auto_reason: Some(format!("{what} trains on the CPU trainer")) })
        }
        (backend, _) => Ok(Choice { backend, auto_reason }),
    }
}

/// Trains `set` with the analysed `layout` and `options` on `backend` ([`choose`]). When GPU
/// training fails ([`TrainError::Gpu`]: no adapter, no device, a device lost mid-run) it warns
/// and trains on the CPU instead, from the last checkpoint of a run that wrote them, the report
/// saying why ([`TrainReport::gpu_fallback`]).
pub(crate) fn train_on(
    set: &TextureSet,
    layout: &ModelLayout,
    options: &CompressOptions,
    backend: Backend,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<(ModelParams, TrainReport), TrainError> {
    let trained = match backend {
        Backend::Auto | Backend::Cpu => return crate::train::train_fused(set, layout, options, progress, cancel),
        Backend::Gpu => crate::train::gpu::train_gpu(set, layout, options, progress, cancel),
        Backend::BurnWgpu | Backend::BurnFlex => {
            let resolved = CompressOptions { run: RunOptions { backend, ..options.run.clone() }, ..options.clone() };
            crate::train::burn::train_burn_guarded(set, layout, &resolved, progress, cancel)
        }
    };
    let Err(TrainError::Gpu(why)) = trained else { return trained };
    progress.warning(&format!("GPU training failed ({why}); training on the CPU instead"));
    // A run that wrote checkpoints goes on from the last one.
    let mut resumed = options.clone();
    if resumed.run.resume_from.is_none() {
        resumed.run.resume_from = options.run.checkpoint.as_ref().map(|c| c.path.clone());
    }
    let (params, report) = crate::train::train_fused(set, layout, &resumed, progress, cancel)?;
    Ok((params, TrainReport { gpu_fallback: Some(why), ..report }))
}
