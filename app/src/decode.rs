//! One way to decode a bundle material by material for the CLI (`texset decode`, `texset
//! transcode`): on the GPU through the WGSL decoder when asked and possible, else on the CPU
//! reference decoder. Any GPU trouble (no adapter, no device, a failure mid-way; or one simulated
//! through `TEXSET_FAULT`) is a warning, and decoding goes on on the CPU from the material where it
//! happened, so the output is whole either way.

use anyhow::{Result, bail};
use texset_core::{
    bundle::Bundle,
    decode::{DecodeError, DecodeLimits, DecodedMap, Decoder},
    export::mip_chain,
    io::fault::{self, Fault},
    model::full_mip_count,
};

/// A GPU decoder with its device.
struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    decoder: texset_shaders::GpuDecoder,
}

/// Decodes a bundle's materials, on the GPU while that works and on the CPU after.
pub struct MaterialDecoder<'b> {
    bundle: &'b Bundle,
    cpu: Decoder,
    gpu: Option<Gpu>,
    /// Maps decoded on the GPU so far (for `TEXSET_FAULT=gpu-lost-at-step=N`).
    gpu_maps: u32,
    lost_at: Option<u32>,
}

impl<'b> MaterialDecoder<'b> {
    /// A decoder for `bundle` within `limits` (refused at once if decoding all of it would run
    /// over them); with `gpu`, opens a device and uploads the bundle, and says on stderr which
    /// adapter decodes (or why the CPU does).
    pub fn new(bundle: &'b Bundle, gpu: bool, limits: DecodeLimits) -> Result<Self, DecodeError> {
        let cpu = Decoder::with_limits(bundle, limits)?;
        let mut this = Self { bundle, cpu, gpu: None, gpu_maps: 0, lost_at: fault::gpu_lost_at_step() };
        if gpu {
            match open(bundle) {
                Ok(g) => this.gpu = Some(g),
                Err(why) => this.fall_back(&format!("{why:#}")),
            }
        }
        Ok(this)
    }

    fn fall_back(&mut self, why: &str) {
        eprintln!("warning: GPU decode failed ({why}); decoding with the CPU reference");
        self.gpu = None;
    }

    /// Every map of material `m`, in manifest order. Only the CPU decoder's errors are errors.
    pub fn decode_material(&mut self, m: usize) -> Result<Vec<DecodedMap>, DecodeError> {
        self.decode_material_level(m, 0)
    }

    /// Mip level `level` of every map of material `m` (see `Decoder::decode_map_level`).
    pub fn decode_material_level(&mut self, m: usize, level: u32) -> Result<Vec<DecodedMap>, DecodeError> {
        if let Some(gpu) = &self.gpu {
            let maps = self.bundle.manifest.materials.get(m).map_or(0, |mat| mat.maps.len());
            let mut out = Vec::with_capacity(maps);
            let mut failure = None;
            for k in 0..maps {
                if self.lost_at == Some(self.gpu_maps) {
                    failure = Some(format!("device lost at map {} (simulated: TEXSET_FAULT=gpu-lost-at-step={0})", self.gpu_maps));
                    break;
                }
                match gpu.decoder.decode_map_level(&gpu.device, &gpu.queue, m, k, level, texset_shaders::DecodeMode::Stored) {
                    Ok(map) => out.push(map),
                    Err(e) => {
                        failure = Some(e.to_string());
                        break;
                    }
                }
                self.gpu_maps += 1;
            }
            match failure {
                None => return Ok(out),
                Some(why) => self.fall_back(&why),
            }
        }
        self.cpu.decode_material_level(m, level)
    }

    /// Every map of material `m` with its full mip chain, level 0 first: each level decoded from
    /// the bundle's latent pyramid when it stores one, else box-filtered from the decoded level 0
    /// (texset-core's `export::mip_chain`).
    pub fn decode_material_chains(&mut self, m: usize) -> Result<Vec<Vec<DecodedMap>>, DecodeError> {
        let level0 = self.decode_material_level(m, 0)?;
        let material = self.bundle.manifest.materials.get(m).ok_or(DecodeError::NoMaterial(m))?;
        if self.bundle.manifest.mip_levels <= 1 {
            return Ok(level0.iter().zip(&material.maps).map(|(map, entry)| mip_chain(map, entry)).collect());
        }
        let counts: Vec<u32> = material.maps.iter().map(|e| full_mip_count(e.info.width, e.info.height)).collect();
        let mut chains: Vec<Vec<DecodedMap>> = level0.into_iter().map(|l| vec![l]).collect();
        for level in 1..counts.iter().copied().max().unwrap_or(1) {
            for ((chain, map), count) in chains.iter_mut().zip(self.decode_material_level(m, level)?).zip(&counts) {
                if level < *count {
                    chain.push(map);
                }
            }
        }
        Ok(chains)
    }
}

fn open(bundle: &Bundle) -> Result<Gpu> {
    if fault::is_active(Fault::GpuNoAdapter) {
        bail!("no GPU adapter (simulated: TEXSET_FAULT=gpu-no-adapter)");
    }
    if fault::is_active(Fault::GpuDevice) {
        bail!("the adapter failed to create a device (simulated: TEXSET_FAULT=gpu-device)");
    }
    let Some((adapter, device, queue)) = texset_shaders::request_device()? else {
        bail!("no GPU adapter found");
    };
    let info = adapter.get_info();
    eprintln!("decoding on the GPU: {} ({:?})", info.name, info.backend);
    let decoder = texset_shaders::GpuDecoder::new(&device, bundle)?;
    Ok(Gpu { device, queue, decoder })
}
