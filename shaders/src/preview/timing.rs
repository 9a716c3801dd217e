//! The viewport's frame in GPU time: a timestamp at the start and end of each of its three passes
//! (surface, material, shading), where the device has `wgpu::Features::TIMESTAMP_QUERY`. For
//! `texset render --gpu-time`, which measures the full-resolution frame of the per-pixel decoded
//! viewport on a hardware GPU (`scripts/gpu-check.sh`); the studio draws without timestamps.

use crate::GpuError;

/// The frame's passes, in order: the surface under each pixel, the material on it (the decoder,
/// per pixel), its lighting.
pub const PASSES: [&str; 3] = ["surface", "material", "shading"];

/// Queries a frame writes: a start and an end per pass.
const QUERIES: u32 = 2 * PASSES.len() as u32;

/// Their resolved bytes.
const BYTES: u64 = QUERIES as u64 * wgpu::QUERY_SIZE as u64;

/// The timestamp queries of one frame, and the buffers they are resolved and read back through.
pub struct PassTimer {
    query_set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    readback: wgpu::Buffer,
    /// Nanoseconds per timestamp tick (the queue's).
    period_ns: f64,
}

impl PassTimer {
    /// A timer for frames drawn on `device`; `None` where the device was made without
    /// `TIMESTAMP_QUERY` (the adapter lacks it: [`crate::request_device`] asks for it wherever it
    /// is).
    #[must_use]
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Option<Self> {
        if !device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return None;
        }
        let buffer = |label, usage| {
            device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: BYTES, usage, mapped_at_creation: false })
        };
        Some(Self {
            query_set: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("texset preview pass timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: QUERIES,
            }),
            resolve: buffer("texset preview pass timestamps", wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
            readback: buffer("texset preview pass timestamps read-back", wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
            period_ns: f64::from(queue.get_timestamp_period()),
        })
    }

    /// The timestamp writes of pass `pass` (an index of [`PASSES`]): its start and its end.
    #[must_use]
    pub fn writes(&self, pass: usize) -> wgpu::RenderPassTimestampWrites<'_> {
        let start = 2 * pass.min(PASSES.len() - 1) as u32;
        wgpu::RenderPassTimestampWrites {
            query_set: &self.query_set,
            beginning_of_pass_write_index: Some(start),
            end_of_pass_write_index: Some(start + 1),
        }
    }

    /// Records the queries' resolution and their copy to the read-back buffer, after the passes.
    pub(crate) fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.resolve_query_set(&self.query_set, 0..QUERIES, &self.resolve, 0);
        encoder.copy_buffer_to_buffer(&self.resolve, 0, &self.readback, 0, BYTES);
    }

    /// The times of the frame last resolved, once its submission is done.
    pub(crate) fn read(&self, device: &wgpu::Device, queue: &wgpu::Queue) -> Result<PassTimes, GpuError> {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset preview pass timestamps") });
        let bytes = crate::device::map_read_bytes(device, queue, encoder, &self.readback, scope)?;
        Ok(PassTimes::from_ticks(&ticks(&bytes), self.period_ns))
    }
}

/// The little-endian `u64` ticks of resolved timestamp queries.
fn ticks(bytes: &[u8]) -> Vec<u64> {
    bytes.chunks_exact(8).map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect()
}

/// One frame's GPU time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PassTimes {
    /// Each pass's time, start to end, milliseconds, in [`PASSES`] order.
    pub pass_ms: [f64; 3],
    /// The frame's: the first pass's start to the last pass's end, milliseconds (the passes and
    /// whatever the GPU did between them).
    pub frame_ms: f64,
}

impl PassTimes {
    /// From the six timestamps (start and end of each pass, in order) of `period_ns` per tick.
    /// A timestamp before its predecessor (a counter that wrapped, or a driver's reordering)
    /// counts as no time, never as a negative one.
    fn from_ticks(ticks: &[u64], period_ns: f64) -> Self {
        let at = |i: usize| ticks.get(i).copied().unwrap_or(0);
        let ms = |start: u64, end: u64| end.saturating_sub(start) as f64 * period_ns / 1e6;
        let mut pass_ms = [0.0; 3];
        for (pass, slot) in pass_ms.iter_mut().enumerate() {
            *slot = ms(at(2 * pass), at(2 * pass + 1));
        }
        Self { pass_ms, frame_ms: ms(at(0), at(2 * PASSES.len() - 1)) }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::float_cmp, reason = "a test: exact tick arithmetic")]
    use super::*;

    #[test]
    fn pass_times_are_differences_of_ticks_and_never_negative() {
        let times = PassTimes::from_ticks(&[100, 300, 300, 1300, 1400, 1500], 2.0);
        assert_eq!(times.pass_ms, [400.0 / 1e6, 2000.0 / 1e6, 200.0 / 1e6]);
        assert_eq!(times.frame_ms, 2800.0 / 1e6);
        let wrapped = PassTimes::from_ticks(&[500, 100, 0, 0, 0, 0], 1.0);
        assert_eq!((wrapped.pass_ms[0], wrapped.frame_ms), (0.0, 0.0));
        let bytes: Vec<u8> = [7u64, u64::MAX].iter().flat_map(|t| t.to_le_bytes()).collect();
        assert_eq!(ticks(&bytes), [7, u64::MAX]);
    }
}
