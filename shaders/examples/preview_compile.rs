//! Times a driver's compile of the studio preview's program for a bundle: making the pipeline,
//! its first 8×8 draw (where drivers that compile at first use, such as lavapipe, compile) and
//! the next draw. With `--dump` it writes the generated program (the decoder specialised to the
//! bundle with `preview.wgsl` appended); with `--wgsl` it times edited copies of it instead, one
//! after the other, so that what each part of the program costs the compiler can be measured
//! without rebuilding (docs/decisions/026). `--compute ENTRY` times making a compute pipeline of
//! each program's `ENTRY` instead (drivers such as lavapipe compile compute at creation).
//!
//! ```text
//! cargo build --workspace --locked --examples
//! MESA_SHADER_CACHE_DISABLE=true target/debug/examples/preview_compile \
//!     BUNDLE [--dump OUT.wgsl] [--wgsl EDITED.wgsl]... [--compute ENTRY] [--size PX]
//! ```
//!
//! `--size` sets the side of the second draw (8 by default), whose time is the program's running
//! cost once compiled.

use std::error::Error;
use std::path::PathBuf;
use std::time::Instant;
use texset_core::bundle::Bundle;
use texset_shaders::preview::{PreparedModel, PreviewRenderer, PreviewUniforms, Shape, empty_originals, preview_wgsl};
use texset_shaders::{GpuModel, GpuModelOptions, request_device};

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let bundle_path = PathBuf::from(args.next().ok_or("usage: preview_compile BUNDLE [--dump OUT.wgsl] [--wgsl EDITED.wgsl]...")?);
    let mut dump = None;
    let mut edited = Vec::new();
    let mut compute = None;
    let mut size = 8;
    while let Some(arg) = args.next() {
        let value = args.next().ok_or_else(|| format!("{arg} needs a path"))?;
        match arg.as_str() {
            "--dump" => dump = Some(PathBuf::from(value)),
            "--wgsl" => edited.push(PathBuf::from(value)),
            "--compute" => compute = Some(value),
            "--size" => size = value.parse().map_err(|e| format!("--size {value}: {e}"))?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let bundle = Bundle::read(&bundle_path)?;
    let Some((adapter, device, queue)) = request_device()? else {
        return Err("no GPU adapter (install mesa-vulkan-drivers for lavapipe)".into());
    };
    let info = adapter.get_info();
    println!("adapter: {} ({:?}, {})", info.name, info.backend, info.driver_info);
    let generated = preview_wgsl(&GpuModel::with_options(&bundle, GpuModelOptions::for_device(&device))?);
    if let Some(path) = &dump {
        std::fs::write(path, &generated).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {} ({} lines)", path.display(), generated.lines().count());
    }
    let programs: Vec<(String, String)> = if edited.is_empty() {
        vec![("generated".to_owned(), generated)]
    } else {
        edited
            .iter()
            .map(|p| std::fs::read_to_string(p).map(|s| (p.display().to_string(), s)).map_err(|e| format!("{}: {e}", p.display())))
            .collect::<Result<_, _>>()?
    };
    for (name, wgsl) in programs {
        if let Some(entry) = &compute {
            let t = Instant::now();
            let module = device
                .create_shader_module(wgpu::ShaderModuleDescriptor { label: Some(&name), source: wgpu::ShaderSource::Wgsl(wgsl.into()) });
            let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&name),
                layout: None,
                module: &module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                cache: None,
            });
            let made_secs = t.elapsed().as_secs_f64();
            let t = Instant::now();
            dispatch_64x64(&device, &queue, &bundle, &pipeline)?;
            println!("{name}: compute pipeline {entry} made in {made_secs:.2} s, first 64x64 dispatch {:.2} s", t.elapsed().as_secs_f64());
            continue;
        }
        let t = Instant::now();
        let model = PreparedModel::with_wgsl(&device, &bundle, wgpu::TextureFormat::Rgba32Float, wgsl)?;
        let made_secs = t.elapsed().as_secs_f64();
        let renderer = PreviewRenderer::from_prepared(&device, model);
        renderer.write_uniforms(&queue, 0, &PreviewUniforms::new(&bundle.manifest, 0, 0.7, 3.0, Shape::Sphere, 1.0));
        let mut draw_secs = [0.0; 2];
        for (secs, side) in draw_secs.iter_mut().zip([8, size]) {
            let t = Instant::now();
            std::hint::black_box(renderer.render(&device, &queue, side, side)?);
            *secs = t.elapsed().as_secs_f64();
        }
        println!(
            "{name}: pipeline made in {made_secs:.2} s, first 8x8 draw {:.2} s, next {size}x{size} {:.3} s",
            draw_secs[0], draw_secs[1]
        );
    }
    Ok(())
}

/// One 64×64 dispatch of `pipeline` (8×8 workgroups of 8×8) with the bundle's buffers in group 0,
/// a zeroed `Preview` uniform and a 1×1 originals array in group 1 and a pixel buffer in group 2,
/// waited for: lavapipe compiles a compute shader at its first dispatch.
fn dispatch_64x64(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    bundle: &Bundle,
    pipeline: &wgpu::ComputePipeline,
) -> Result<(), Box<dyn Error>> {
    let model = GpuModel::with_options(bundle, GpuModelOptions::for_device(device))?;
    let buffers = texset_shaders::ModelBuffers::upload(device, &model)?;
    let group0 = buffers.bind_group(device, &pipeline.get_bind_group_layout(0), &[]);
    let buffer = |size: u64, usage: wgpu::BufferUsages| {
        device.create_buffer(&wgpu::BufferDescriptor { label: None, size, usage, mapped_at_creation: false })
    };
    let uniform = buffer(128, wgpu::BufferUsages::UNIFORM);
    let pixels = buffer(64 * 64 * 16, wgpu::BufferUsages::STORAGE);
    let view = empty_originals(device);
    let group1 = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(1),
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: wgpu::BindingResource::TextureView(&view) },
        ],
    });
    let group2 = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(2),
        entries: &[wgpu::BindGroupEntry { binding: 0, resource: pixels.as_entire_binding() }],
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        pass.set_pipeline(pipeline);
        for (i, group) in [&group0, &group1, &group2].into_iter().enumerate() {
            pass.set_bind_group(i as u32, group, &[]);
        }
        pass.dispatch_workgroups(8, 8, 1);
    }
    queue.submit([encoder.finish()]);
    device.poll(wgpu::PollType::wait_indefinitely())?;
    Ok(())
}
