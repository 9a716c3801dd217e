//! The shader crate's integration tests, one binary (see app/tests/integration/main.rs for why).
#![allow(missing_docs)]

mod environment;
mod export;
mod gpu_matches_cpu;
mod naga_validates;
mod preview_deferred;
mod preview_environment;
mod preview_matches_cpu;
mod preview_mesh;
mod preview_probe;

/// The GPU adapter, device and queue for a test that renders to `Rgba32Float`, or `None` after
/// saying loudly why the test `name` skips (no adapter; or one, such as GL's, that cannot render
/// to that format).
fn rendering_gpu_or_skip(name: &str) -> Option<(wgpu::Adapter, wgpu::Device, wgpu::Queue)> {
    #[allow(clippy::unwrap_used, reason = "a test: a failed request is the test's failure")]
    let (adapter, device, queue) = texset_testkit::gpu_or_skip(name, texset_shaders::request_device().unwrap())?;
    if !texset_shaders::renders_fragment_format(&adapter) {
        texset_testkit::skip_gpu(name, &format!("{} cannot render to Rgba32Float (a GL adapter?)", adapter.get_info().name));
        return None;
    }
    Some((adapter, device, queue))
}
