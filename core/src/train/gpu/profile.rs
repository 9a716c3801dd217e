//! Where a step's GPU time goes: each of the step's dispatches in a compute pass of its own, with
//! a timestamp written at its start and end (`wgpu::Features::TIMESTAMP_QUERY`, requested where
//! the adapter has it), read back after every step. For `texset bench train --gpu`; training runs
//! its steps as one pass without timestamps.

use super::GpuTrainer;
use crate::train::TrainError;
use serde::Serialize;

/// The step's dispatches, in order (`train.wgsl` says what each does; `adam` sums the loss too;
/// there is no `wgrad` where `fwd_bwd` sums the weight gradients itself).
pub const STAGES: [&str; 4] = ["prepare", "fwd_bwd", "wgrad", "adam"];

/// The timestamp queries of one step and the buffer they resolve into (read back as any other
/// trainer buffer is, by `Gpu::read_bytes`).
pub(super) struct Timing {
    pub(super) query_set: wgpu::QuerySet,
    pub(super) resolve: wgpu::Buffer,
}

impl Timing {
    /// Queries a step's stages use: a start and an end each.
    pub(super) const QUERIES: u32 = 2 * STAGES.len() as u32;
    /// Their resolved size.
    const BYTES: u64 = Self::QUERIES as u64 * wgpu::QUERY_SIZE as u64;

    fn new(device: &wgpu::Device) -> Self {
        Self {
            query_set: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("texset train timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: Self::QUERIES,
            }),
            resolve: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("texset train timestamps"),
                size: Self::BYTES,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
        }
    }

    /// The compute pass's timestamp writes for stage `stage`.
    pub(super) fn writes(&self, stage: u32) -> wgpu::ComputePassTimestampWrites<'_> {
        wgpu::ComputePassTimestampWrites {
            query_set: &self.query_set,
            beginning_of_pass_write_index: Some(2 * stage),
            end_of_pass_write_index: Some(2 * stage + 1),
        }
    }

    /// Resolves `stages` stages' queries into `resolve`.
    pub(super) fn resolve(&self, encoder: &mut wgpu::CommandEncoder, stages: u32) {
        encoder.resolve_query_set(&self.query_set, 0..2 * stages, &self.resolve, 0);
    }
}

/// Ticks per stage (end − start) from the resolved timestamps.
fn stage_ticks(bytes: &[u8]) -> Vec<u64> {
    let ticks: Vec<u64> = bytes.chunks_exact(8).map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect();
    ticks.chunks_exact(2).map(|pair| pair[1].saturating_sub(pair[0])).collect()
}

/// GPU time per dispatch of the trainer's step, averaged over the steps profiled.
#[derive(Clone, Debug, Serialize)]
pub struct DispatchTimes {
    /// Steps profiled.
    pub steps: u32,
    /// Each dispatch's name ([`STAGES`]) and its mean GPU time per step, milliseconds.
    pub stage_ms: Vec<(String, f64)>,
}

impl DispatchTimes {
    /// The step's GPU time: its dispatches' sum, milliseconds.
    #[must_use]
    pub fn total_ms(&self) -> f64 {
        self.stage_ms.iter().map(|(_, ms)| ms).sum()
    }
}

impl GpuTrainer<'_> {
    /// Runs `steps` training steps, each dispatch in a pass of its own with timestamps, and
    /// returns the GPU time of each; `None` when the device has no timestamp queries (a device
    /// shared without the feature, or an adapter without it). The steps train as any others do.
    pub fn profile_steps(&mut self, steps: u32) -> Result<Option<DispatchTimes>, TrainError> {
        if !self.gpu.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) || steps == 0 {
            return Ok(None);
        }
        let timing = Timing::new(&self.gpu.device);
        let period_ns = f64::from(self.gpu.queue.get_timestamp_period());
        self.timing = Some(timing);
        let names = self.stage_names();
        let mut sums = vec![0u64; names.len()];
        let result = (|| {
            for _ in 0..steps {
                self.step_once()?;
                let Some(timing) = &self.timing else { break };
                for (sum, ticks) in sums.iter_mut().zip(stage_ticks(&self.gpu.read_bytes(&timing.resolve, Timing::BYTES)?)) {
                    *sum += ticks;
                }
            }
            Ok(())
        })();
        self.timing = None;
        result?;
        let stage_ms =
            names.iter().zip(&sums).map(|(name, &ticks)| ((*name).to_owned(), ticks as f64 * period_ns / 1e6 / f64::from(steps))).collect();
        Ok(Some(DispatchTimes { steps, stage_ms }))
    }
}
