//! The trainer's WGSL, specialised as the trainer specialises it, passes naga's validator (no
//! adapter needed); the GPU runs are in `tests/tests/integration/gpu_trainer.rs`.

use super::fused::FusedPlan;
use super::layout::{Shapes, Tables, Wgrad, WgradTile, flatten, unflatten};
use super::spread;
use super::wgsl::specialise;
use crate::model::params::{GridParams, LayerParams, ModelParams};
use crate::model::wgsl::MlpShape;
use crate::model::wgsl::WeightMemory;
use crate::options::CompressOptions;
use crate::set::TextureSet;
use crate::train::sampler::Sampler;

fn set() -> TextureSet {
    let texels = (0..16 * 16 * 3).map(|i| (i % 7) as f32 / 7.0).collect();
    crate::set::test_sets::one_colour_map(16, 16, texels)
}

#[test]
fn the_specialised_trainer_validates_with_naga() {
    let set = set();
    // The default decoder with and without mips, and every other decoder a rate picks
    // (`options::RATE_SHAPES`) without: the widths meet no mip code.
    let default_widths = CompressOptions::default().model.hidden_widths;
    let mut cases = vec![(false, default_widths.clone()), (true, default_widths)];
    for row in &crate::options::RATE_SHAPES {
        if !cases.iter().any(|(_, d)| d.as_slice() == row.hidden_widths) {
            cases.push((false, row.hidden_widths.to_vec()));
        }
    }
    assert!(cases.len() > 2, "the rows' decoders are validated too");
    for (mips, hidden_widths) in &cases {
        let mips = *mips;
        let mut options = CompressOptions::default();
        options.model.mips = mips;
        options.model.hidden_widths.clone_from(hidden_widths);
        let (layout, _) = crate::analyse::analyse(&set, &options).expect("layout");
        let params = crate::train::initial_params(&set, &layout, 1);
        let mut shapes = Shapes::new(&params, 512).expect("shapes");
        let sampler = Sampler::new(&set, &layout);
        let tables = Tables::new(&sampler, &params, &shapes).expect("tables");
        let odd = Wgrad::Tiles(WgradTile::new(12, 20, 256).expect("a tile"));
        let fused = |texels| Wgrad::Fused(FusedPlan::new(&shapes.layers, texels).expect("a plan"));
        for (memory, wgrad) in [
            (WeightMemory::Uniform, Wgrad::Tiles(WgradTile::SMALL)),
            (WeightMemory::Workgroup, Wgrad::Tiles(WgradTile::LARGE)),
            (WeightMemory::Storage, odd),
            (WeightMemory::Uniform, Wgrad::Tiles(WgradTile::LARGE)),
            (WeightMemory::Uniform, fused(32)),
            (WeightMemory::Workgroup, fused(8)),
            (WeightMemory::Storage, fused(64)),
        ] {
            shapes.wgrad = wgrad;
            let (_, _, row) = spread(shapes.all());
            for shape in [MlpShape::Vec4Rows, MlpShape::Scalar] {
                let source = specialise(&params, &shapes, &tables, memory, shape, row);
                let what = format!(
                    "train.wgsl (mips {mips}, decoder {hidden_widths:?}, weights in {memory:?} memory, {}, {shape:?})",
                    shapes.wgrad.pass().name()
                );
                let module =
                    wgpu::naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(&source)));
                let mut validator = wgpu::naga::valid::Validator::new(
                    wgpu::naga::valid::ValidationFlags::all(),
                    wgpu::naga::valid::Capabilities::default(),
                );
                if let Err(e) = validator.validate(&module) {
                    panic!("{what}: {}", e.emit_to_string(&source));
                }
            }
        }
    }
    // The flat order is the checkpoint's: grids of every level, then weights and biases per layer.
    let params = ModelParams {
        grids: vec![GridParams { width: 2, height: 1, channels: 1, values: vec![1.0, 2.0], corners: false }],
        pe_frequencies: 0,
        layers: vec![LayerParams { inputs: 1, outputs: 1, weights: vec![3.0], biases: vec![4.0] }],
        mip_grids: Vec::new(),
        mip_group: 1,
        ..ModelParams::default()
    };
    let mut flat = Vec::new();
    flatten(&params, &mut flat);
    assert_eq!(flat, [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(unflatten(&params.zeros_like(), &flat), params);
}

/// `StepUniform` and train.wgsl's `Step` agree member for member, offset for offset, as naga lays
/// out the specialised shader.
#[test]
fn the_step_uniform_is_the_wgsl_step() {
    let set = set();
    let options = CompressOptions::default();
    let (layout, _) = crate::analyse::analyse(&set, &options).expect("layout");
    let params = crate::train::initial_params(&set, &layout, 1);
    let shapes = Shapes::new(&params, 512).expect("shapes");
    let tables = Tables::new(&Sampler::new(&set, &layout), &params, &shapes).expect("tables");
    let (_, _, row) = spread(shapes.all());
    let source = specialise(&params, &shapes, &tables, WeightMemory::Storage, MlpShape::Scalar, row);
    let (members, size) = crate::base::gpu_struct::wgsl_struct_layout(&source, "Step").expect("train.wgsl has a Step struct");
    let ours: Vec<(String, usize)> = super::StepUniform::FIELDS.iter().map(|&(name, offset)| (name.to_owned(), offset)).collect();
    assert_eq!(members, ours);
    assert_eq!(size, std::mem::size_of::<super::StepUniform>());
    // The seed's two words.
    let uniform = super::StepUniform::default().with_seed(0x0123_4567_89ab_cdef);
    let bytes = uniform.bytes();
    assert_eq!(bytes[4..12], [0x89ab_cdefu32.to_le_bytes(), 0x0123_4567u32.to_le_bytes()].concat());
}

/// A chunk is the tile's texels, or the largest power of two below them that divides the batch
/// (down to the sampler's 256), so every texel of a step is summed once.
#[test]
fn chunks_divide_the_batch() {
    let set = set();
    let (layout, _) = crate::analyse::analyse(&set, &CompressOptions::default()).expect("layout");
    let params = crate::train::initial_params(&set, &layout, 1);
    for (batch, texels, chunk) in [(65_536, 1024, 1024), (1024, 1024, 1024), (1536, 1024, 512), (768, 1024, 256), (8192, 256, 256)] {
        let mut shapes = Shapes::new(&params, batch).expect("shapes");
        shapes.wgrad = Wgrad::Tiles(WgradTile::new(8, 8, texels).expect("a tile"));
        assert_eq!((shapes.chunk_texels(), shapes.chunks()), (chunk, batch as u32 / chunk), "batch {batch}, tile of {texels} texels");
        assert!(shapes.scratch() > 0 && shapes.tiles() > 0);
        // Fused: a chunk per `fwd_bwd` workgroup, and no scratch.
        shapes.wgrad = Wgrad::Fused(FusedPlan::new(&shapes.layers, 32).expect("a plan"));
        assert_eq!(shapes.chunks(), shapes.fwd_bwd_workgroups(), "batch {batch}, fused");
        assert_eq!((shapes.scratch(), shapes.tiles()), (0, 0));
    }
}
