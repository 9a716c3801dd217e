//! The environment module against files on disk (the shared HDRIs, bad files) and its WGSL tone
//! mappers against their CPU twins on a GPU (lavapipe in CI).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use texset_shaders::environment::{Environment, EnvironmentError, PrepareOptions, TONEMAP_WGSL, ToneMapper, prepare, tonemap::tonemap};
use texset_shaders::request_device;
use texset_testkit::{gpu_or_skip, repo_root, skip};

/// `../shared/hdri` beside the checkout (read in place, never copied), if present.
fn shared_hdri() -> Option<PathBuf> {
    let dir = repo_root().parent()?.join("shared").join("hdri");
    dir.is_dir().then_some(dir)
}

#[test]
fn the_shared_hdris_load_and_prepare() {
    const NAME: &str = "the_shared_hdris_load_and_prepare";
    let Some(dir) = shared_hdri() else {
        skip(NAME, "no ../shared/hdri beside the checkout");
        return;
    };
    // Small (a debug build), but with 4×4-texel faces at the roughest level: the mean of fewer
    // output texels is too coarse a quadrature for the energy check.
    let options = PrepareOptions { face_size_px: 64, level_count: 5, base_samples: 16, brdf_size_px: 16, brdf_samples: 64 };
    for name in ["royal_esplanade_1k.hdr", "venice_sunset_1k.hdr"] {
        let path = dir.join(name);
        if !path.is_file() {
            skip(NAME, &format!("{} is missing", path.display()));
            continue;
        }
        let env = Environment::load(&path).unwrap();
        assert_eq!((env.width_px(), env.height_px()), (1024, 512), "{name}");
        assert!(env.texels().iter().flatten().all(|v| v.is_finite() && *v >= 0.0), "{name}");
        let mean = env.mean_radiance();
        assert!(mean.iter().all(|m| *m > 0.01), "{name}: mean {mean:?}");
        let prepared = prepare(&env, &options).unwrap();
        // Energy: the roughest level keeps the source's mean (a sun makes this the hard case).
        let roughest = prepared.specular_levels().last().unwrap().mean_radiance();
        for c in 0..3 {
            assert!((roughest[c] / mean[c] - 1.0).abs() <= 0.05, "{name}, channel {c}: {roughest:?} vs {mean:?}");
        }
        // The irradiance overhead of an outdoor scene is lit, and finite everywhere.
        assert!(prepared.irradiance([0.0, 1.0, 0.0]).iter().all(|v| v.is_finite() && *v > 0.0), "{name}");
    }
}

/// The error of loading `path`, which must name the file.
fn load_error(path: &Path) -> EnvironmentError {
    let error = Environment::load(path).unwrap_err();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(error.to_string().contains(&name), "{error} does not name {name}");
    error
}

#[test]
fn bad_environment_files_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let header = |width: u32, height: u32| format!("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y {height} +X {width}\n").into_bytes();

    // A header, then fewer texels than it promises.
    let truncated = dir.path().join("truncated.hdr");
    let mut bytes = header(64, 32);
    bytes.extend_from_slice(&[128, 128, 128, 129].repeat(100));
    std::fs::write(&truncated, bytes).unwrap();
    assert!(matches!(load_error(&truncated), EnvironmentError::Decode { .. }));

    // A header claiming 100000×100000: refused before a texel is decoded.
    let huge = dir.path().join("huge.hdr");
    let mut bytes = header(100_000, 100_000);
    bytes.extend_from_slice(&[0; 64]);
    std::fs::write(&huge, bytes).unwrap();
    match load_error(&huge) {
        EnvironmentError::Size { width_px, height_px, .. } => assert_eq!((width_px, height_px), (100_000, 100_000)),
        // A decoder that refuses such a header itself is as good.
        EnvironmentError::Decode { .. } => {}
        other => panic!("{other:?}"),
    }

    // A PNG under an .hdr name.
    let png = dir.path().join("picture.hdr");
    image::RgbImage::from_pixel(4, 4, image::Rgb([200, 100, 50])).save_with_format(&png, image::ImageFormat::Png).unwrap();
    assert!(matches!(load_error(&png), EnvironmentError::Decode { .. }));

    // A folder, a missing file, another extension.
    let folder = dir.path().join("folder.hdr");
    std::fs::create_dir(&folder).unwrap();
    assert!(matches!(load_error(&folder), EnvironmentError::NotAFile { .. }));
    assert!(matches!(load_error(&dir.path().join("missing.exr")), EnvironmentError::Read { .. }));
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not an image").unwrap();
    assert!(matches!(load_error(&text), EnvironmentError::UnknownExtension { .. }));
    // An empty EXR.
    let empty = dir.path().join("empty.EXR");
    std::fs::write(&empty, []).unwrap();
    assert!(matches!(load_error(&empty), EnvironmentError::Decode { .. }));
}

/// The tone-mapping twin's kernel: every input through all four tone mappers.
const KERNEL: &str = r"
@group(0) @binding(0) var<storage, read> inputs: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> outputs: array<vec4<f32>>;

@compute @workgroup_size(64)
fn cs_main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i >= arrayLength(&inputs) {
        return;
    }
    let input = inputs[i];
    for (var mapper = 0u; mapper < 4u; mapper++) {
        outputs[i * 4u + mapper] = vec4<f32>(tonemap(input.xyz, mapper, input.w), 0.0);
    }
}
";

/// Inputs spread over what a viewport shows: greys from 1e-4 to 1e3, saturated and dim colours,
/// values around each tone mapper's knees, at a few exposures (the fourth component, in EV).
fn tonemap_inputs() -> Vec<[f32; 4]> {
    let mut state = 0x9e37_79b9u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state as f32 / u32::MAX as f32
    };
    let mut inputs = Vec::new();
    for i in 0..64 {
        let grey = 1e-4 * 10f32.powf(i as f32 / 63.0 * 7.0);
        inputs.push([grey, grey, grey, 0.0]);
    }
    for _ in 0..192 {
        let scale = 10f32.powf(next() * 5.0 - 3.0);
        let ev = [-2.0, 0.0, 0.5, 1.5][(next() * 3.999) as usize];
        inputs.push([next() * scale, next() * scale, next() * scale, ev]);
    }
    inputs.extend([[0.0, 0.0, 0.0, 0.0], [0.08, 0.5, 0.9, 0.0], [0.76, 0.2, 0.1, 0.0], [-1.0, 0.5, 2.0, 0.0], [1e4, 1e4, 1e4, 3.0]]);
    inputs
}

// Tolerance ±1e-5: the same f32 operations in the same order on both sides; they differ by FMA
// contraction and the GPU's exp2/log2/pow (Vulkan allows 2^-21 absolute error of log2 near 1).
// Measured on lavapipe (Mesa 22.3): AgX 6.1e-6 (log2, the sigmoid, then ^2.2), the others
// 2.4e-7 or less. A wrong constant or operation moves outputs by 1e-3 or more.
const TONEMAP_TOLERANCE: f32 = 1e-5;

#[test]
fn tonemap_wgsl_matches_the_cpu() {
    const NAME: &str = "tonemap_wgsl_matches_the_cpu";
    let Some((_, device, queue)) = gpu_or_skip(NAME, request_device().unwrap()) else {
        return;
    };
    let inputs = tonemap_inputs();
    let gpu = run_tonemap_kernel(&device, &queue, &inputs);
    let mut worst = [0.0f32; 4];
    for (i, input) in inputs.iter().enumerate() {
        for mapper in ToneMapper::ALL {
            let worst = &mut worst[mapper.wgsl_id() as usize];
            let want = tonemap([input[0], input[1], input[2]], mapper, input[3]);
            let got = &gpu[(i * 4 + mapper.wgsl_id() as usize) * 4..][..3];
            for (g, w) in got.iter().zip(want) {
                *worst = worst.max((g - w).abs());
                assert!((g - w).abs() <= TONEMAP_TOLERANCE, "{mapper:?} of {input:?}: GPU {got:?}, CPU {want:?}");
            }
        }
    }
    println!("{} inputs: largest difference per tone mapper {:?}: {worst:?}", inputs.len(), ToneMapper::ALL);
}

/// Runs [`KERNEL`] after [`TONEMAP_WGSL`] over `inputs`; four RGBA outputs per input.
fn run_tonemap_kernel(device: &wgpu::Device, queue: &wgpu::Queue, inputs: &[[f32; 4]]) -> Vec<f32> {
    use wgpu::util::DeviceExt;
    let source = format!("{TONEMAP_WGSL}\n{KERNEL}");
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("tonemap twin"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("tonemap twin"),
        layout: None,
        module: &module,
        entry_point: Some("cs_main"),
        compilation_options: wgpu::PipelineCompilationOptions::default(),
        cache: None,
    });
    let input_bytes: Vec<u8> = inputs.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
    let input = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("tonemap inputs"),
        contents: &input_bytes,
        usage: wgpu::BufferUsages::STORAGE,
    });
    let output_bytes = (inputs.len() * 4 * 16) as u64;
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("tonemap outputs"),
        size: output_bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("tonemap read-back"),
        size: output_bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("tonemap twin"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: input.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: output.as_entire_binding() },
        ],
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("tonemap twin") });
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("tonemap twin"), timestamp_writes: None });
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups((inputs.len() as u32).div_ceil(64), 1, 1);
    }
    encoder.copy_buffer_to_buffer(&output, 0, &staging, 0, output_bytes);
    let submission = queue.submit([encoder.finish()]);
    if let Some(error) = texset_shaders::block_on(scope.pop()) {
        panic!("tonemap twin: {error}");
    }
    staging.map_async(wgpu::MapMode::Read, .., |result| result.unwrap());
    device.poll(wgpu::PollType::Wait { submission_index: Some(submission), timeout: None }).unwrap();
    let bytes = staging.get_mapped_range(..).unwrap().to_vec();
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}
