//! The pack pass: the manifest and the bundle's bytes.

use super::CompressError;
use crate::bundle::{Bundle, GridEntry, LayerEntry, Manifest, MapEntry, MaterialEntry, SectionSizes};
use crate::model::layout::{GridShape, ModelLayout, TextureSlot};
use crate::model::quant::{self, QuantizedLayer};
use crate::set::TextureSet;
use serde::Serialize;

/// What the pack pass wrote.
#[derive(Clone, Debug, Serialize)]
pub struct PackReport {
    /// Bundle size in bytes.
    pub bundle_bytes: u64,
    /// Bundle bits per texel of the library (bytes × 8 / texels).
    pub bits_per_texel: f64,
    /// Library texels (sum over materials of their largest map).
    pub texel_count: u64,
    /// Bytes per section.
    pub sections: SectionSizes,
}

/// Pack pass: the manifest and the bundle bytes.
pub fn pack(
    set: &TextureSet,
    layout: &ModelLayout,
    latent_levels: Vec<Vec<u8>>,
    layers: Vec<QuantizedLayer>,
) -> Result<(Bundle, Vec<u8>, PackReport), CompressError> {
    let last = layers.len().saturating_sub(1);
    let manifest = Manifest {
        materials: material_entries(set, &layout.textures),
        grids: grid_entries(&layout.grids),
        mip_grids: grid_entries(&layout.mip_grids),
        pe_frequencies: layout.pe_frequencies,
        layers: layers
            .iter()
            .enumerate()
            .map(|(i, l)| LayerEntry {
                inputs: l.inputs as u32,
                outputs: l.outputs as u32,
                format: l.format,
                activation: if i == last { "linear".into() } else { layout.activation.name().into() },
            })
            .collect(),
        mip_levels: layout.mip_levels,
        mip_group: layout.mip_group,
        producer: format!("texset {}", env!("CARGO_PKG_VERSION")),
    };
    let bundle = Bundle { manifest, latent_levels, layers };
    let (bytes, report) = serialise(&bundle)?;
    Ok((bundle, bytes, report))
}

/// The manifest entries of the set's materials, each map at its slot (output slice, budget,
/// colour transform).
pub(crate) fn material_entries(set: &TextureSet, slots: &[Vec<TextureSlot>]) -> Vec<MaterialEntry> {
    set.materials
        .iter()
        .zip(slots)
        .map(|(m, slots)| MaterialEntry {
            name: m.name.clone(),
            maps: m
                .textures
                .iter()
                .zip(slots)
                .map(|(t, s)| MapEntry {
                    info: t.info.clone(),
                    output_offset: s.output_offset as u32,
                    latent_channels: s.latent_channels.clone(),
                    source_file: t.source_path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned(),
                    color_transform: s.color_transform.clone(),
                })
                .collect(),
        })
        .collect()
}

/// The manifest entries of the grids (levels over [`quant::LATENT_RANGE`]).
pub(crate) fn grid_entries(grids: &[GridShape]) -> Vec<GridEntry> {
    grids
        .iter()
        .map(|g| GridEntry {
            width: g.width,
            height: g.height,
            channels: g.channels,
            bits: g.bits,
            range: quant::LATENT_RANGE,
            corners: g.corners,
        })
        .collect()
}

/// The bundle's bytes and what the pack pass reports of them.
pub(crate) fn serialise(bundle: &Bundle) -> Result<(Vec<u8>, PackReport), CompressError> {
    let (bytes, sections) = bundle.to_bytes()?;
    let texel_count = bundle.texel_count();
    let report = PackReport {
        bundle_bytes: bytes.len() as u64,
        bits_per_texel: bytes.len() as f64 * 8.0 / texel_count.max(1) as f64,
        texel_count,
        sections,
    };
    Ok((bytes, report))
}
