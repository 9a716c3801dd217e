//! Deterministic procedural generator of small PBR material texture sets.
//!
//! Each material is built the way a texture artist's procedural tool would build it: one
//! tileable height field is authored first (bricks and mortar, planks and grain, riveted
//! plates, a twill weave), and every other map is derived from that height field plus the
//! masks used to build it. Normals come from central differences of the height, ambient
//! occlusion from a multi-scale "how far below the local average" cavity measure, and the
//! base colour, roughness and metallic maps from the same masks and noise.
//!
//! Determinism: all randomness comes from a splitmix64 hash of integer lattice coordinates,
//! noise is hashed value noise with a quintic fade, and the arithmetic only uses `+ - * /`,
//! `sqrt`, `floor` and comparisons, which IEEE 754 rounds identically on every platform
//! (no `sin`, `cos`, `exp` or `powf`). The same seed and size therefore give byte-identical
//! PNG files on every machine. Every map wraps around at the edges, so the textures tile.
//!
//! Colours are authored directly in sRGB-encoded 8-bit space, which is what the base colour
//! files store; the normal maps use the OpenGL (+Y up) tangent-space convention.

use std::fs;
use std::path::{Path, PathBuf};

mod field;
mod materials;

use field::{Field, material_seed, quantize_u8, quantize_u16};
use materials::{INDIGO, MaterialSet, OCHRE, bricks, fabric, metal_plates, wood};

use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::{ExtendedColorType, ImageEncoder};
use texset_core::io::write_atomic;

/// Errors writing generated textures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SynthError {
    /// The requested texture size is outside `MIN_SIZE_PX..=MAX_SIZE_PX`.
    #[error("texture size {size} px is outside the supported range {MIN_SIZE_PX}..={MAX_SIZE_PX}")]
    InvalidSize {
        /// The rejected size in pixels.
        size: u32,
    },
    /// Creating a folder or writing, syncing or renaming a file failed.
    #[error("I/O error at {}: {source}", path.display())]
    Io {
        /// The path being created or written.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The PNG encoder failed.
    #[error("PNG encoding failed for {}: {source}", path.display())]
    Encode {
        /// The file being encoded.
        path: PathBuf,
        /// The underlying encoder error.
        #[source]
        source: image::ImageError,
    },
}

/// The names of the generated materials, in order.
pub const MATERIALS: &[&str] = &["bricks", "wood", "metal_plates", "fabric_indigo", "fabric_ochre"];

/// The smallest supported texture size in pixels.
pub const MIN_SIZE_PX: u32 = 16;

/// The largest supported texture size in pixels.
pub const MAX_SIZE_PX: u32 = 2048;

/// Writes every material under `out_dir/<material>/`, creating folders; returns the written file paths sorted.
///
/// The textures are square, `size` × `size` pixels, with `size` in
/// `MIN_SIZE_PX..=MAX_SIZE_PX`. The same `seed` and `size` always give byte-identical files.
/// Each file is written to a temporary file in its folder and then renamed into place.
pub fn write_sample_textures(out_dir: &Path, size: u32, seed: u64) -> Result<Vec<PathBuf>, SynthError> {
    if !(MIN_SIZE_PX..=MAX_SIZE_PX).contains(&size) {
        return Err(SynthError::InvalidSize { size });
    }
    let size_px = size as usize;
    let mut written = Vec::new();

    let bricks = bricks(size_px, material_seed(seed, 1));
    write_standard_set(out_dir, "bricks", &bricks, &mut written)?;
    drop(bricks);

    let wood = wood(size_px, material_seed(seed, 2));
    write_standard_set(out_dir, "wood", &wood, &mut written)?;
    drop(wood);

    let metal = metal_plates(size_px, material_seed(seed, 3));
    write_orm_set(out_dir, "metal_plates", &metal, &mut written)?;
    drop(metal);

    // Both colourways share one weave; only the base colour is recoloured, so every other
    // file is byte-identical between the two.
    let fabric = fabric(size_px, material_seed(seed, 4));
    for (name, colourway) in [("fabric_indigo", &INDIGO), ("fabric_ochre", &OCHRE)] {
        let set = fabric.with_colourway(colourway);
        write_standard_set(out_dir, name, &set, &mut written)?;
    }

    written.sort();
    Ok(written)
}

// ---------------------------------------------------------------------------------------------
// Encoding and atomic writing.
// ---------------------------------------------------------------------------------------------

/// Writes basecolor, normal, roughness, ao, height and (if present) metallic maps.
fn write_standard_set(out_dir: &Path, name: &str, set: &MaterialSet, written: &mut Vec<PathBuf>) -> Result<(), SynthError> {
    let dir = create_dir(out_dir, name)?;
    write_common(&dir, name, set, written)?;
    write_gray8(&dir, name, "roughness", &set.roughness, written)?;
    write_gray8(&dir, name, "ao", &set.ao, written)?;
    if let Some(metallic) = &set.metallic {
        write_gray8(&dir, name, "metallic", metallic, written)?;
    }
    Ok(())
}

/// Writes basecolor, normal, height and a packed ORM map (R = occlusion, G = roughness,
/// B = metallic, the glTF convention) instead of separate ao/roughness/metallic maps.
fn write_orm_set(out_dir: &Path, name: &str, set: &MaterialSet, written: &mut Vec<PathBuf>) -> Result<(), SynthError> {
    let dir = create_dir(out_dir, name)?;
    write_common(&dir, name, set, written)?;
    let mut orm = Vec::with_capacity(set.ao.data.len() * 3);
    for (i, (&ao, &rough)) in set.ao.data.iter().zip(&set.roughness.data).enumerate() {
        let metal = set.metallic.as_ref().map_or(0.0, |m| m.data[i]);
        orm.extend([quantize_u8(ao), quantize_u8(rough), quantize_u8(metal)]);
    }
    let path = dir.join(format!("{name}_orm.png"));
    write_png(&path, &orm, set.ao.size_px, ExtendedColorType::Rgb8)?;
    written.push(path);
    Ok(())
}

/// Writes the basecolor, normal and 16-bit height maps.
fn write_common(dir: &Path, name: &str, set: &MaterialSet, written: &mut Vec<PathBuf>) -> Result<(), SynthError> {
    let size_px = set.height.size_px;
    let basecolor: Vec<u8> = set.basecolor.iter().flat_map(|c| c.map(quantize_u8)).collect();
    let path = dir.join(format!("{name}_basecolor.png"));
    write_png(&path, &basecolor, size_px, ExtendedColorType::Rgb8)?;
    written.push(path);

    let path = dir.join(format!("{name}_normal.png"));
    write_png(&path, &set.normal, size_px, ExtendedColorType::Rgb8)?;
    written.push(path);

    // The encoder expects 16-bit samples in native byte order and stores them big-endian.
    let height: Vec<u8> = set.height.data.iter().flat_map(|&h| quantize_u16(h).to_ne_bytes()).collect();
    let path = dir.join(format!("{name}_height.png"));
    write_png(&path, &height, size_px, ExtendedColorType::L16)?;
    written.push(path);
    Ok(())
}

/// Writes an 8-bit grayscale map.
fn write_gray8(dir: &Path, name: &str, map: &str, field: &Field, written: &mut Vec<PathBuf>) -> Result<(), SynthError> {
    let bytes: Vec<u8> = field.data.iter().map(|&x| quantize_u8(x)).collect();
    let path = dir.join(format!("{name}_{map}.png"));
    write_png(&path, &bytes, field.size_px, ExtendedColorType::L8)?;
    written.push(path);
    Ok(())
}

/// Creates `out_dir/name` (and its parents) and returns it.
fn create_dir(out_dir: &Path, name: &str) -> Result<PathBuf, SynthError> {
    let dir = out_dir.join(name);
    fs::create_dir_all(&dir).map_err(|source| SynthError::Io { path: dir.clone(), source })?;
    Ok(dir)
}

/// Encodes a square PNG and writes it atomically ([`write_atomic`]).
fn write_png(path: &Path, bytes: &[u8], size_px: usize, color: ExtendedColorType) -> Result<(), SynthError> {
    let mut encoded = Vec::new();
    PngEncoder::new_with_quality(&mut encoded, CompressionType::Best, FilterType::Adaptive)
        .write_image(bytes, size_px as u32, size_px as u32, color)
        .map_err(|source| SynthError::Encode { path: path.to_path_buf(), source })?;
    write_atomic(path, &encoded).map_err(|source| SynthError::Io { path: path.to_path_buf(), source })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly on any error")]
mod tests {
    use super::field::{clamp01, fbm, normal_map, value_noise};
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A fresh, unique temporary folder for one test run.
    fn temp_dir(tag: &str) -> PathBuf {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        std::env::temp_dir().join(format!("texset-synth-{tag}-{}-{nanos}-{unique}", std::process::id()))
    }

    /// Reads a file's bytes, panicking with its path on failure.
    fn read(path: &Path) -> Vec<u8> {
        fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
    }

    /// The bundled `sample_textures` are this generator's output at its defaults (256 texels,
    /// seed 7), byte for byte: `texset gen-samples` rebuilds them.
    #[test]
    fn the_bundled_samples_are_this_generators_output() {
        let dir = temp_dir("bundled");
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample_textures");
        for file in write_sample_textures(&dir, 256, 7).unwrap() {
            let bundled = repo.join(file.strip_prefix(&dir).unwrap());
            assert!(read(&file) == read(&bundled), "{} differs from the generator's output", bundled.display());
        }
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn same_seed_and_size_give_identical_bytes() {
        let (a, b) = (temp_dir("det-a"), temp_dir("det-b"));
        let files_a = write_sample_textures(&a, 48, 7).unwrap();
        let files_b = write_sample_textures(&b, 48, 7).unwrap();
        assert_eq!(files_a.len(), files_b.len());
        for (fa, fb) in files_a.iter().zip(&files_b) {
            assert_eq!(fa.strip_prefix(&a).unwrap(), fb.strip_prefix(&b).unwrap());
            assert!(read(fa) == read(fb), "{} differs between runs", fa.display());
        }
        let other = temp_dir("det-c");
        let files_c = write_sample_textures(&other, 48, 8).unwrap();
        assert!(read(&files_a[0]) != read(&files_c[0]), "a different seed should change the output");
        for dir in [a, b, other] {
            fs::remove_dir_all(dir).unwrap();
        }
    }

    #[test]
    fn writes_expected_files_sorted() {
        let dir = temp_dir("list");
        let files = write_sample_textures(&dir, 16, 1).unwrap();
        let mut sorted = files.clone();
        sorted.sort();
        assert_eq!(files, sorted);
        let names: Vec<String> = files.iter().map(|p| p.strip_prefix(&dir).unwrap().to_string_lossy().replace('\\', "/")).collect();
        for material in MATERIALS {
            for map in ["basecolor", "normal", "height"] {
                assert!(names.contains(&format!("{material}/{material}_{map}.png")), "{material} {map}");
            }
            let packed = *material == "metal_plates";
            for map in ["ao", "roughness"] {
                assert_eq!(names.contains(&format!("{material}/{material}_{map}.png")), !packed);
            }
            assert_eq!(names.contains(&format!("{material}/{material}_orm.png")), packed);
        }
        // No temporary files are left behind.
        for material in MATERIALS {
            for entry in fs::read_dir(dir.join(material)).unwrap() {
                let name = entry.unwrap().file_name().to_string_lossy().into_owned();
                assert!(!name.starts_with('.'), "leftover {name}");
            }
        }
        let height = image::open(dir.join("wood/wood_height.png")).unwrap();
        assert_eq!(height.color(), image::ColorType::L16);
        assert_eq!((height.width(), height.height()), (16, 16));
        let orm = image::open(dir.join("metal_plates/metal_plates_orm.png")).unwrap();
        assert_eq!(orm.color(), image::ColorType::Rgb8);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn colour_variant_pair_shares_everything_but_basecolor() {
        let dir = temp_dir("pair");
        write_sample_textures(&dir, 40, 3).unwrap();
        for map in ["height", "normal", "roughness", "ao"] {
            let a = read(&dir.join(format!("fabric_indigo/fabric_indigo_{map}.png")));
            let b = read(&dir.join(format!("fabric_ochre/fabric_ochre_{map}.png")));
            assert!(a == b, "{map} differs between colourways");
        }
        let a = image::open(dir.join("fabric_indigo/fabric_indigo_basecolor.png")).unwrap().to_rgb8();
        let b = image::open(dir.join("fabric_ochre/fabric_ochre_basecolor.png")).unwrap().to_rgb8();
        assert!(a != b);
        // Same luminance ordering: a brighter indigo texel is never a clearly darker ochre texel.
        let luma = |p: &image::Rgb<u8>| 0.2126 * f32::from(p[0]) + 0.7152 * f32::from(p[1]) + 0.0722 * f32::from(p[2]);
        let (pa, pb): (Vec<_>, Vec<_>) = (a.pixels().map(luma).collect(), b.pixels().map(luma).collect());
        for i in (0..pa.len()).step_by(7) {
            for j in (0..pa.len()).step_by(11) {
                if pa[i] > pa[j] + 3.0 {
                    assert!(pb[i] + 3.0 >= pb[j]);
                }
            }
        }
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn normals_decode_to_unit_length() {
        let dir = temp_dir("normals");
        let files = write_sample_textures(&dir, 64, 11).unwrap();
        let normals: Vec<_> = files.iter().filter(|p| p.to_string_lossy().ends_with("_normal.png")).collect();
        assert_eq!(normals.len(), MATERIALS.len());
        for path in normals {
            let img = image::open(path).unwrap().to_rgb8();
            let mut tilted = 0;
            for p in img.pixels() {
                let d = |c: u8| f32::from(c) / 255.0 * 2.0 - 1.0;
                let (x, y, z) = (d(p[0]), d(p[1]), d(p[2]));
                let len = (x * x + y * y + z * z).sqrt();
                assert!((len - 1.0).abs() <= 2.0 / 255.0, "{}: length {len}", path.display());
                assert!(z > 0.0, "{}: normal points into the surface", path.display());
                tilted += usize::from(z < 0.999);
            }
            assert!(tilted > 0, "{} is flat", path.display());
        }
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn normal_map_follows_opengl_convention() {
        // A single bump in the middle: its right flank faces +X and its upper flank +Y.
        let size_px = 32;
        let height = Field::from_fn(size_px, |u, v| {
            let (du, dv) = (u - 0.5, v - 0.5);
            clamp01(1.0 - (du * du + dv * dv) * 16.0)
        });
        let normal = normal_map(&height, 0.05);
        let texel = |x: usize, y: usize| &normal[(y * size_px + x) * 3..(y * size_px + x) * 3 + 3];
        assert!(texel(20, 16)[0] > 140, "right flank should face +X");
        assert!(texel(12, 16)[0] < 116, "left flank should face -X");
        assert!(texel(16, 12)[1] > 140, "upper flank should face +Y (OpenGL)");
        assert!(texel(16, 20)[1] < 116, "lower flank should face -Y");
    }

    #[test]
    fn noise_tiles_seamlessly() {
        for (cu, cv) in [(3, 5), (16, 16)] {
            let a = value_noise(9, 0.0, 0.3, cu, cv);
            let b = value_noise(9, 1.0, 0.3, cu, cv);
            assert!((a - b).abs() < 1e-5);
            let c = fbm(9, 0.4, 0.0, cu, cv, 4, 0.5);
            let d = fbm(9, 0.4, 1.0, cu, cv, 4, 0.5);
            assert!((c - d).abs() < 1e-5);
        }
    }

    #[test]
    fn sizes_out_of_range_are_rejected() {
        let dir = temp_dir("bad-size");
        for size in [0, 1, 15, 2049, u32::MAX] {
            let err = write_sample_textures(&dir, size, 1).unwrap_err();
            assert!(matches!(err, SynthError::InvalidSize { size: s } if s == size));
        }
        assert!(!dir.exists(), "nothing should be written for an invalid size");
    }

    #[test]
    fn odd_sizes_work() {
        let dir = temp_dir("odd");
        let files = write_sample_textures(&dir, 17, 5).unwrap();
        let img = image::open(&files[0]).unwrap();
        assert_eq!((img.width(), img.height()), (17, 17));
        fs::remove_dir_all(dir).unwrap();
    }
}
