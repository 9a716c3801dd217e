//! Training checkpoints: parameters, Adam moments and the step, so `--resume` continues a run
//! exactly where it stopped (same final bundle as an uninterrupted run with the same seed).
//!
//! Layout: 8-byte magic `TXCKPT01`, u64 LE header length, a JSON header, then every float of
//! params, m and v (grids then layers, weights then biases) as f32 LE.

use crate::model::layout::ModelLayout;
use crate::model::params::ModelParams;
use crate::options::CompressOptions;
use crate::set::TextureSet;
use crate::train::{FusedTrainer, TrainError};
use serde::{Deserialize, Serialize};
use std::path::Path;

const MAGIC: &[u8; 8] = b"TXCKPT01";

#[derive(Serialize, Deserialize)]
struct Header {
    fingerprint: String,
    step: u32,
    adam_t: u32,
    floats: u64,
    /// Budget gates of a run that learns budgets ([`crate::options::LearnedBudgets`]).
    #[serde(default)]
    gates: Option<GateState>,
}

/// The budget gates of a run that learns budgets, as a checkpoint keeps them.
#[derive(Serialize, Deserialize)]
pub(crate) struct GateState {
    values: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    t: u32,
    cut: Option<crate::train::LearnedCut>,
}

/// A string that changes whenever the set's shapes, the layout or a training option that shapes
/// the run changes ([`CompressOptions::fingerprint`]: the run options are not part of it).
#[must_use]
pub(crate) fn fingerprint(set: &TextureSet, layout: &ModelLayout, options: &CompressOptions) -> String {
    let shapes: Vec<String> = set
        .textures()
        .map(|(m, _, t)| format!("{}:{}:{}x{}x{}", set.materials[m].name, t.info.kind, t.info.width, t.info.height, t.info.channels))
        .collect();
    let text = format!("{}|{}|{}", options.fingerprint(), serde_json::to_string(layout).unwrap_or_default(), shapes.join(","));
    format!("{:08x}{:08x}", crc32fast::hash(text.as_bytes()), text.len())
}

fn all_slices(p: &ModelParams) -> Vec<&[f32]> {
    let mut v: Vec<&[f32]> = p.all_grids().map(|g| g.values.as_slice()).collect();
    for l in &p.layers {
        v.push(&l.weights);
        v.push(&l.biases);
    }
    v
}

fn all_slices_mut(p: &mut ModelParams) -> Vec<&mut [f32]> {
    let ModelParams { grids, layers, mip_grids, .. } = p;
    let mut v: Vec<&mut [f32]> = grids.iter_mut().chain(mip_grids.iter_mut()).map(|g| g.values.as_mut_slice()).collect();
    for l in layers {
        v.push(&mut l.weights);
        v.push(&mut l.biases);
    }
    v
}

/// Writes a checkpoint of the fused trainer atomically.
pub(crate) fn save(path: &Path, fingerprint: &str, trainer: &FusedTrainer<'_>) -> Result<(), TrainError> {
    let gates = trainer.budget_gates().map(|g| {
        let (m, v, t) = g.moments();
        GateState { values: g.values.clone(), m: m.to_vec(), v: v.to_vec(), t, cut: g.cut.clone() }
    });
    save_state(path, fingerprint, trainer.run.step, trainer.adam.t, [&trainer.params, &trainer.adam.m, &trainer.adam.v], gates)
}

/// Writes a checkpoint atomically: the step, Adam's step, `[params, m, v]` and the gates of a run
/// that learns budgets. Any trainer's: the format does not say which wrote it.
pub(crate) fn save_state(
    path: &Path,
    fingerprint: &str,
    step: u32,
    adam_t: u32,
    state: [&ModelParams; 3],
    gates: Option<GateState>,
) -> Result<(), TrainError> {
    let bytes = state_bytes(fingerprint, step, adam_t, state, gates)
        .map_err(|message| TrainError::Checkpoint { path: path.to_path_buf(), message })?;
    crate::io::fsutil::write_atomic(path, &bytes).map_err(|e| TrainError::Checkpoint { path: path.to_path_buf(), message: e.to_string() })
}

/// A checkpoint's bytes: the magic, the header's length and JSON, then the parameters and both
/// Adam moments as little-endian f32.
pub(crate) fn state_bytes(
    fingerprint: &str,
    step: u32,
    adam_t: u32,
    state: [&ModelParams; 3],
    gates: Option<GateState>,
) -> Result<Vec<u8>, String> {
    let floats = 3 * state[0].parameter_count() as u64;
    let header =
        serde_json::to_vec(&Header { fingerprint: fingerprint.to_owned(), step, adam_t, floats, gates }).map_err(|e| e.to_string())?;
    let mut bytes = Vec::with_capacity(16 + header.len() + floats as usize * 4);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(header.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&header);
    for p in state {
        for s in all_slices(p) {
            for v in s {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    Ok(bytes)
}

/// The bytes of a checkpoint at `step` whose parameters and moments are all `params`: seeds for
/// the `checkpoint` fuzz target.
#[must_use]
pub fn seed_bytes(fingerprint: &str, step: u32, params: &ModelParams) -> Vec<u8> {
    state_bytes(fingerprint, step, step, [params, params, params], None).unwrap_or_default()
}

/// A checkpoint as read ([`load_state`]).
pub(crate) struct CheckpointState {
    /// Steps done.
    pub step: u32,
    /// Adam's updates done.
    pub adam_t: u32,
    /// Parameters, first and second moments.
    pub params: [ModelParams; 3],
    /// Budget gates, when the run learns budgets.
    pub gates: Option<GateState>,
}

/// Loads a checkpoint into a trainer built for the same set and options.
pub(crate) fn load(path: &Path, fingerprint: &str, trainer: &mut FusedTrainer<'_>) -> Result<(), TrainError> {
    let state = load_state(path, fingerprint, trainer.run.schedule.steps, &trainer.params)?;
    let [params, m, v] = state.params;
    if let Some(gates) = state.gates {
        trainer
            .restore_gates(gates.values, (gates.m, gates.v, gates.t), gates.cut)
            .map_err(|e| TrainError::Checkpoint { path: path.to_path_buf(), message: e.to_owned() })?;
    }
    trainer.params = params;
    trainer.adam.m = m;
    trainer.adam.v = v;
    trainer.run.step = state.step;
    trainer.adam.t = state.adam_t;
    Ok(())
}

/// Reads a checkpoint of a run of `steps` steps whose parameters have `shape`'s shapes.
pub(crate) fn load_state(path: &Path, fingerprint: &str, steps: u32, shape: &ModelParams) -> Result<CheckpointState, TrainError> {
    // Parameters and both Adam moments as f32: three times the largest model the bundle limits
    // allow is well under this.
    let bytes =
        crate::io::read_regular(path, 4 << 30).map_err(|e| TrainError::Checkpoint { path: path.to_path_buf(), message: e.to_string() })?;
    state_from_bytes(&bytes, path, fingerprint, steps, shape)
}

/// The step a checkpoint's bytes resume at, read as [`load_state`] reads them (`path` names it in
/// errors): what the `checkpoint` fuzz target feeds.
pub fn step_from_bytes(bytes: &[u8], path: &Path, fingerprint: &str, steps: u32, shape: &ModelParams) -> Result<u32, TrainError> {
    state_from_bytes(bytes, path, fingerprint, steps, shape).map(|state| state.step)
}

/// [`load_state`] of a checkpoint's bytes (`path` names it in errors).
fn state_from_bytes(bytes: &[u8], path: &Path, fingerprint: &str, steps: u32, shape: &ModelParams) -> Result<CheckpointState, TrainError> {
    let err = |message: String| TrainError::Checkpoint { path: path.to_path_buf(), message };
    if bytes.len() < 16 || &bytes[..8] != MAGIC {
        return Err(err("not a texset checkpoint".into()));
    }
    let mut len8 = [0u8; 8];
    len8.copy_from_slice(&bytes[8..16]);
    let header_len = u64::from_le_bytes(len8);
    let header_end = 16u64.checked_add(header_len).filter(|&e| e <= bytes.len() as u64).ok_or_else(|| err("truncated header".into()))?;
    let header: Header = serde_json::from_slice(&bytes[16..header_end as usize]).map_err(|e| err(e.to_string()))?;
    if header.fingerprint != fingerprint {
        return Err(err("it was made for another set or other options".into()));
    }
    if header.adam_t != header.step || header.step > steps {
        return Err(err(format!("step {} / optimiser step {} do not fit a run of {steps} steps", header.step, header.adam_t)));
    }
    let expected = 3 * shape.parameter_count() as u64;
    if header.floats != expected || bytes.len() as u64 != header_end + 4 * expected {
        return Err(err(format!("size does not match ({} floats, expected {expected})", header.floats)));
    }
    let mut at = header_end as usize;
    let mut params = [shape.clone(), shape.clone(), shape.clone()];
    for p in &mut params {
        for s in all_slices_mut(p) {
            for v in s.iter_mut() {
                *v = f32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
                if !v.is_finite() {
                    return Err(err("holds a non-finite value".into()));
                }
                at += 4;
            }
        }
    }
    Ok(CheckpointState { step: header.step, adam_t: header.adam_t, params, gates: header.gates })
}
