//! The front door: `compress(&set, &options, &progress, &cancel)`, run as explicit passes
//! (analyse/budget → train → prune → quantise → pack), each returning a report.

use crate::bundle::{Bundle, GridEntry, LayerEntry, Manifest, MapEntry, MaterialEntry, SectionSizes, WeightFormat};
use crate::model::layout::{GridShape, ModelLayout, TextureSlot};
use crate::model::params::ModelParams;
use crate::model::quant::{self, QuantizedLayer};
use crate::options::{Backend, CompressOptions, Quantisation, RunOptions};
use crate::progress::{Cancel, Pass, Progress};
use crate::set::TextureSet;
use crate::train::run::Capabilities;
use crate::train::{TrainError, TrainReport};
use serde::Serialize;

/// Why compression failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompressError {
    /// The set is empty.
    #[error("the texture set has no maps")]
    EmptySet,
    /// An option is out of range.
    #[error("invalid options: {0}")]
    Options(#[from] crate::options::OptionsError),
    /// The options, the backend or the library ask for something this build cannot do (the
    /// message says what, and what to use instead).
    #[error("{0}")]
    Unsupported(String),
    /// A budget names a texture that is not in the set.
    #[error("budget '{0}' names no texture of the set (use a map kind like 'roughness' or 'material/roughness')")]
    UnknownBudget(String),
    /// Training failed or was cancelled.
    #[error(transparent)]
    Train(#[from] TrainError),
    /// The bundle could not be built.
    #[error(transparent)]
    Bundle(#[from] crate::bundle::BundleError),
}

/// Where a texture's budget came from: what later passes decide on (the words are in
/// [`TextureBudget::reason`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetSource {
    /// The same map as another: stored once.
    Duplicate,
    /// An affine colour transform of another map.
    ColourVariant,
    /// Named in the options' budget overrides.
    Manual,
    /// Near-constant: the MLP bias carries it, no channels.
    Flat,
    /// The content estimate (applied or only proposed).
    Content,
}

/// The budget of one texture, with the reason.
#[derive(Clone, Debug, Serialize)]
pub struct TextureBudget {
    /// `material/kind`.
    pub texture: String,
    /// Latent channels it reads.
    pub channels: u32,
    /// Of how many.
    pub total_channels: u32,
    /// Where the budget came from.
    pub source: BudgetSource,
    /// Why, in words.
    pub reason: String,
    /// Mean of its values (all channels).
    pub mean: f32,
    /// Largest per-channel standard deviation of its values (a first measure of content).
    pub std_dev: f32,
}

/// What the analyse pass decided.
#[derive(Clone, Debug, Serialize)]
pub struct AnalyseReport {
    /// Grid shapes.
    pub grids: Vec<GridShape>,
    /// MLP widths, input to output.
    pub mlp_widths: Vec<usize>,
    /// Budgets per texture.
    pub budgets: Vec<TextureBudget>,
    /// Textures identical to an earlier one (stored once).
    pub duplicates: Vec<DuplicateFinding>,
}

/// A texture found identical to an earlier one at ingest: same size, channels, value ranges and
/// every decoded value. It shares the earlier texture's MLP outputs (stored once).
#[derive(Clone, Debug, Serialize)]
pub struct DuplicateFinding {
    /// `material/kind` of the duplicate.
    pub texture: String,
    /// `material/kind` of the texture it repeats.
    pub same_as: String,
    /// Output channels saved.
    pub channels: u32,
    /// For a colour variant: PSNR of the affine colour transform that reproduces it from the
    /// texture it repeats (`None`: identical).
    pub transform_fit_psnr_db: Option<f32>,
}

/// A texture that an affine colour transform of an earlier texture (same kind, size, channels)
/// reproduces at this PSNR or better is stored as that texture's outputs plus the transform: a
/// few dozen bytes in the manifest instead of output rows and a share of the latents. 45 dB is
/// above what the model itself reaches at the default rate, so the transform's error does not
/// show next to the model's.
pub const AFFINE_PSNR_DB: f32 = 45.0;

/// Most texels the affine fit's normal equations use (an even sample of the map).
const AFFINE_FIT_SAMPLES: usize = 1 << 16;

/// Least-squares affine colour transform from `source` to `target` (same size and channels),
/// channel by channel over `[source channels, 1]`, and the PSNR of the transform as decoders apply
/// it (clamped, over every texel). `None` when the shapes differ.
#[must_use]
pub fn fit_color_transform(source: &crate::set::Texture, target: &crate::set::Texture) -> Option<(Vec<[f32; 5]>, f32)> {
    if (source.width, source.height, source.channels) != (target.width, target.height, target.channels) || source.channels > 4 {
        return None;
    }
    let ch = source.channels as usize;
    let texels = source.texel_count();
    let stride = texels.div_ceil(AFFINE_FIT_SAMPLES).max(1);
    let n = ch + 1;
    // Normal equations AᵀA m = Aᵀy, shared by all output channels (same A).
    let mut ata = vec![0.0f64; n * n];
    let mut aty = vec![0.0f64; n * ch];
    let mut row = vec![0.0f64; n];
    for i in (0..texels).step_by(stride) {
        for (r, &v) in row.iter_mut().zip(&source.texels[i * ch..(i + 1) * ch]) {
            *r = f64::from(v);
        }
        row[ch] = 1.0;
        for a in 0..n {
            for b in 0..n {
                ata[a * n + b] += row[a] * row[b];
            }
            for c in 0..ch {
                aty[c * n + a] += row[a] * f64::from(target.texels[i * ch + c]);
            }
        }
    }
    // A small ridge keeps a constant source channel solvable.
    for a in 0..n {
        ata[a * n + a] += 1e-9 * (1.0 + ata[a * n + a]);
    }
    let mut rows = Vec::with_capacity(ch);
    for c in 0..ch {
        let m = solve(&ata, &aty[c * n..(c + 1) * n], n)?;
        let mut r = [0.0f32; 5];
        for k in 0..ch {
            r[k] = m[k] as f32;
        }
        r[4] = m[ch] as f32;
        rows.push(r);
    }
    let entry_rows = Some(rows.clone());
    let mut se = 0.0f64;
    for i in 0..texels {
        let mut t = [0.0f32; 4];
        t[..ch].copy_from_slice(&source.texels[i * ch..(i + 1) * ch]);
        crate::bundle::apply_color_rows(entry_rows.as_deref(), &mut t);
        for (a, b) in t.iter().zip(&target.texels[i * ch..(i + 1) * ch]) {
            se += f64::from(a - b).powi(2);
        }
    }
    let mse = se / (texels * ch).max(1) as f64;
    Some((rows, (-10.0 * mse.max(1e-12).log10()) as f32))
}

/// Solves the `n × n` system `a x = b` by Gaussian elimination with partial pivoting.
fn solve(a: &[f64], b: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut m: Vec<f64> = Vec::with_capacity(n * (n + 1));
    for r in 0..n {
        m.extend_from_slice(&a[r * n..(r + 1) * n]);
        m.push(b[r]);
    }
    let w = n + 1;
    for col in 0..n {
        let pivot = (col..n).max_by(|&x, &y| m[x * w + col].abs().total_cmp(&m[y * w + col].abs()))?;
        if m[pivot * w + col].abs() < 1e-300 {
            return None;
        }
        for k in 0..w {
            m.swap(col * w + k, pivot * w + k);
        }
        for r in 0..n {
            if r != col {
                let f = m[r * w + col] / m[col * w + col];
                for k in col..w {
                    m[r * w + k] -= f * m[col * w + k];
                }
            }
        }
    }
    Some((0..n).map(|r| m[r * w + n] / m[r * w + r]).collect())
}

/// A texture whose every channel a constant (its mean) reproduces at this PSNR or better counts
/// as flat: the MLP bias carries it, so it gets no latent channels (it then costs one output row
/// of the last layer, nothing else). 48 dB is a per-channel standard deviation of ~1/255.
pub const FLAT_PSNR_DB: f32 = 48.0;

/// Per channel standard deviations of a texture's values.
fn channel_std_devs(t: &crate::set::Texture) -> Vec<f32> {
    let ch = t.channels as usize;
    let n = t.texel_count().max(1) as f64;
    (0..ch)
        .map(|c| {
            let values = t.texels.iter().skip(c).step_by(ch).map(|&v| f64::from(v));
            let mean = values.clone().sum::<f64>() / n;
            (values.map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt() as f32
        })
        .collect()
}

/// The distortion the content estimate aims at: mean squared error of 40 dB.
pub const CONTENT_TARGET_PSNR_DB: f32 = 40.0;

/// How much a texture has to say, in bits per texel at [`CONTENT_TARGET_PSNR_DB`]: per channel,
/// the Gaussian rate `½·log2(1 + σ²/D)` of its whole variance plus the same rate of its detail
/// energy above the finest latent grid's Nyquist rate (the variance left after averaging over
/// `block × block` cells, which only latent channels, not the MLP's smooth inputs, can carry).
/// Returns `(bits, detail energy of the busiest channel)`.
#[must_use]
pub fn content_bits(t: &crate::set::Texture, block: u32) -> (f32, f32) {
    let (w, h, ch) = (t.width as usize, t.height as usize, t.channels as usize);
    let block = block.max(1) as usize;
    let distortion = 10f64.powf(-f64::from(CONTENT_TARGET_PSNR_DB) / 10.0);
    let (bw, bh) = (w.div_ceil(block), h.div_ceil(block));
    let mut bits = 0.0f64;
    let mut busiest = 0.0f64;
    for c in 0..ch {
        let value = |x: usize, y: usize| f64::from(t.texels[(y * w + x) * ch + c]);
        let mut sums = vec![(0.0f64, 0u32); bw * bh];
        let (mut sum, mut sum_sq) = (0.0f64, 0.0f64);
        for y in 0..h {
            for x in 0..w {
                let v = value(x, y);
                sum += v;
                sum_sq += v * v;
                let cell = &mut sums[(y / block) * bw + x / block];
                cell.0 += v;
                cell.1 += 1;
            }
        }
        let n = (w * h).max(1) as f64;
        let variance = (sum_sq / n - (sum / n).powi(2)).max(0.0);
        let mut detail = 0.0f64;
        for y in 0..h {
            for x in 0..w {
                let (s, k) = sums[(y / block) * bw + x / block];
                detail += (value(x, y) - s / f64::from(k.max(1))).powi(2);
            }
        }
        let detail = detail / n;
        busiest = busiest.max(detail);
        bits += 0.5 * (1.0 + variance / distortion).log2() + 0.5 * (1.0 + detail / distortion).log2();
    }
    (bits as f32, busiest as f32)
}

/// A texture whose content is at most this fraction of the library's busiest texture reads half
/// the channels; at most [`QUARTER_BUDGET_SHARE`], a quarter. Budgets come in these three steps
/// (not a continuum) because textures of a material with one budget share one MLP evaluation per
/// texel in training and decoding; every distinct budget adds one.
pub const HALF_BUDGET_SHARE: f32 = 0.5;
/// See [`HALF_BUDGET_SHARE`].
pub const QUARTER_BUDGET_SHARE: f32 = 0.25;

/// Whether two textures hold the same data (what a map may share outputs on).
fn same_data(a: &crate::set::Texture, b: &crate::set::Texture) -> bool {
    a.width == b.width
        && a.height == b.height
        && a.channels == b.channels
        && a.channel_ranges == b.channel_ranges
        && a.texels.len() == b.texels.len()
        && a.texels.iter().zip(&b.texels).all(|(x, y)| x.to_bits() == y.to_bits())
}

fn texel_hash(t: &crate::set::Texture) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&t.width.to_le_bytes());
    hasher.update(&t.height.to_le_bytes());
    hasher.update(&t.channels.to_le_bytes());
    for v in &t.texels {
        hasher.update(&v.to_bits().to_le_bytes());
    }
    hasher.finalize()
}

/// What the prune pass removed.
#[derive(Clone, Debug, Serialize)]
pub struct PruneReport {
    /// Latent channels before.
    pub channels_before: usize,
    /// Latent channels after (channels no texture reads are removed).
    pub channels_after: usize,
    /// What the removal during training did, when it ran.
    pub during_training: Option<String>,
    /// Every texture's budget before training (the analyse pass's, or an override) and in the
    /// bundle, with the reason for a change; in the order of [`AnalyseReport::budgets`].
    pub budgets: Vec<BudgetChange>,
}

/// Why a texture's learned budget is what it is: how many of its channels the cut kept and how
/// strong the kept and the dropped ones were.
fn learned_budget_reason(cut: &crate::train::LearnedCut, slot: usize, before: usize, after: usize) -> String {
    let importance = cut.importance.get(slot).map(Vec::as_slice).unwrap_or_default();
    let bar = cut.drop_below;
    let kept_min = importance.iter().copied().filter(|&i| i >= bar).fold(f32::INFINITY, f32::min);
    let dropped_max = importance.iter().copied().filter(|&i| i < bar).fold(0.0f32, f32::max);
    let pct = |v: f32| format!("{:.1}%", 100.0 * v);
    if before == 0 {
        "unchanged: it read no channels".to_owned()
    } else if after == before {
        format!("learned: kept all {before} (weakest at {} of the library's strongest, the bar {})", pct(kept_min), pct(bar))
    } else if after == 0 {
        format!("learned: dropped all {before} (strongest at {}, under the bar {}): decoded from the biases", pct(dropped_max), pct(bar))
    } else {
        format!(
            "learned: dropped {} of {before} under the bar {} (strongest dropped {}, weakest kept {})",
            before - after,
            pct(bar),
            pct(dropped_max),
            pct(kept_min)
        )
    }
}

/// One texture's channel budget before and after training.
#[derive(Clone, Debug, Serialize)]
pub struct BudgetChange {
    /// `material/kind`.
    pub texture: String,
    /// Latent channels it read when training started.
    pub before: u32,
    /// Latent channels it reads in the bundle.
    pub after: u32,
    /// Why they differ, or that they do not.
    pub reason: String,
}

/// What the quantise pass did.
#[derive(Clone, Debug, Serialize)]
pub struct QuantiseReport {
    /// Bits per latent, per grid.
    pub latent_bits: Vec<u32>,
    /// Largest |dequantised − trained| weight difference. Training hands over weights already
    /// rounded to the format (QAT or PTQ alike), so this checks that quantising them again is
    /// exact: 0 unless something between training and the pass changed them.
    pub max_weight_error: f32,
    /// Weight format.
    pub weight_format: WeightFormat,
    /// How the latents met their bits in training (`auto` decided: `qat` or `ptq`).
    pub latent_quantisation: Quantisation,
    /// How the weights met their format in training (`auto` decided: `qat` or `ptq`).
    pub weight_quantisation: Quantisation,
}

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

/// Reports of every pass.
#[derive(Clone, Debug, Serialize)]
pub struct CompressReport {
    /// Analyse/budget.
    pub analyse: AnalyseReport,
    /// Train.
    pub train: TrainReport,
    /// Prune.
    pub prune: PruneReport,
    /// Quantise.
    pub quantise: QuantiseReport,
    /// Pack.
    pub pack: PackReport,
}

/// A compressed library and how it was made.
#[derive(Clone, Debug)]
pub struct Compressed {
    /// The bundle.
    pub bundle: Bundle,
    /// The serialised bundle (what [`Bundle::write`] writes).
    pub bundle_bytes: Vec<u8>,
    /// Reports.
    pub report: CompressReport,
}

/// Channel priority order: grids interleaved in proportion to their channel counts, so a budget
/// of `k` channels takes the same share of every grid and smaller budgets are prefixes of larger
/// ones (the shared channels are the common prefix).
#[must_use]
pub fn channel_priority(grids: &[GridShape]) -> Vec<u32> {
    let mut order = Vec::new();
    let mut taken = vec![0u32; grids.len()];
    let total: u32 = grids.iter().map(|g| g.channels).sum();
    while (order.len() as u32) < total {
        // Next: the grid furthest behind its proportional share.
        let (g, _) = grids
            .iter()
            .enumerate()
            .filter(|(i, grid)| taken[*i] < grid.channels)
            .map(|(i, grid)| (i, f64::from(taken[i]) / f64::from(grid.channels)))
            .fold((usize::MAX, f64::INFINITY), |best, (i, share)| if share < best.1 { (i, share) } else { best });
        let Some(grid) = grids.get(g) else { break };
        let offset: u32 = grids[..g].iter().map(|x| x.channels).sum();
        order.push(offset + taken[g]);
        taken[g] += 1;
        debug_assert!(taken[g] <= grid.channels);
    }
    order
}

/// Analyse/budget pass: grid shapes from the largest map, budgets from the options.
pub fn analyse(set: &TextureSet, options: &CompressOptions) -> Result<(ModelLayout, AnalyseReport), CompressError> {
    options.validate()?;
    if set.textures().next().is_none() {
        return Err(CompressError::EmptySet);
    }
    let extent = set.max_extent();
    let grids: Vec<GridShape> = options
        .model
        .grids
        .iter()
        .map(|g| {
            let (width, height) = g.cells(extent);
            GridShape { width, height, channels: g.channels, bits: g.bits }
        })
        .collect();
    let total: u32 = grids.iter().map(|g| g.channels).sum();
    let priority = channel_priority(&grids);
    for key in options.budgets.overrides.keys() {
        let matches = set.textures().any(|(m, _, t)| *key == t.kind.token() || *key == format!("{}/{}", set.materials[m].name, t.kind));
        if !matches {
            return Err(CompressError::UnknownBudget(key.clone()));
        }
    }
    let mut textures: Vec<Vec<TextureSlot>> = Vec::new();
    let mut budgets = Vec::new();
    let mut duplicates = Vec::new();
    let mut seen: std::collections::HashMap<u32, Vec<(usize, usize)>> = std::collections::HashMap::new();
    let mut output_offset = 0;
    let mut originals: Vec<(usize, usize)> = Vec::new();
    // Content of every texture; the busiest sets the scale of the graded budgets.
    let block = options.model.grids.iter().map(|g| g.texels_per_cell).min().unwrap_or(1);
    let extent = set.max_extent();
    let contents: Vec<Vec<(f32, f32)>> = set
        .materials
        .iter()
        .map(|m| {
            m.textures
                .iter()
                .map(|t| {
                    // The grid cell as this map sees it (a smaller map has fewer texels per cell).
                    let scaled = (block as usize * t.width as usize).div_ceil(extent.0.max(1) as usize).max(1) as u32;
                    content_bits(t, scaled)
                })
                .collect()
        })
        .collect();
    let busiest = contents.iter().flatten().map(|c| c.0).fold(0.0f32, f32::max).max(1e-6);
    for (mi, material) in set.materials.iter().enumerate() {
        let mut slots: Vec<TextureSlot> = Vec::new();
        for (ti, t) in material.textures.iter().enumerate() {
            let name = format!("{}/{}", material.name, t.kind);
            let std_devs = channel_std_devs(t);
            let std_dev = std_devs.iter().copied().fold(0.0f32, f32::max);
            let n = t.texels.len().max(1) as f64;
            let mean = (t.texels.iter().map(|&v| f64::from(v)).sum::<f64>() / n) as f32;
            let loss_weight = options.schedule.loss_weights.get(t.kind.token()).copied().unwrap_or(1.0);

            // Exact duplicate of an earlier texture: share its outputs and budget.
            let hash = texel_hash(t);
            let original = seen
                .get(&hash)
                .and_then(|candidates| candidates.iter().copied().find(|&(m, k)| same_data(&set.materials[m].textures[k], t)));
            if let Some((m, k)) = original {
                // The original is trained once for every copy: its loss counts each of them, as
                // an evaluation of the whole set does.
                let source = if m == mi { &mut slots[k] } else { &mut textures[m][k] };
                source.loss_weight += loss_weight;
                let slot = TextureSlot { duplicate_of: Some((m, k)), loss_weight, ..source.clone() };
                let same_as = format!("{}/{}", set.materials[m].name, set.materials[m].textures[k].kind);
                budgets.push(TextureBudget {
                    texture: name.clone(),
                    channels: slot.latent_channels.len() as u32,
                    total_channels: total,
                    source: BudgetSource::Duplicate,
                    reason: format!("identical to {same_as}: stored once, shares its outputs"),
                    mean,
                    std_dev,
                });
                duplicates.push(DuplicateFinding { texture: name, same_as, channels: t.channels, transform_fit_psnr_db: None });
                slots.push(slot);
                continue;
            }
            // A colour variant of an earlier texture: its outputs plus an affine transform.
            let variant = originals
                .iter()
                .copied()
                .filter(|&(m, k)| {
                    let o = &set.materials[m].textures[k];
                    o.kind == t.kind && o.color_space == t.color_space && o.channel_ranges == t.channel_ranges
                })
                .filter_map(|(m, k)| fit_color_transform(&set.materials[m].textures[k], t).map(|(rows, db)| ((m, k), rows, db)))
                .filter(|(_, _, db)| *db >= AFFINE_PSNR_DB)
                .max_by(|a, b| a.2.total_cmp(&b.2));
            if let Some(((m, k), rows, fit_db)) = variant {
                let source = if m == mi { &mut slots[k] } else { &mut textures[m][k] };
                source.loss_weight += loss_weight;
                let slot = TextureSlot { duplicate_of: Some((m, k)), color_transform: Some(rows), loss_weight, ..source.clone() };
                let same_as = format!("{}/{}", set.materials[m].name, set.materials[m].textures[k].kind);
                budgets.push(TextureBudget {
                    texture: name.clone(),
                    channels: slot.latent_channels.len() as u32,
                    total_channels: total,
                    source: BudgetSource::ColourVariant,
                    reason: format!(
                        "colour variant of {same_as}: an affine transform reproduces it at {fit_db:.1} dB (>= {AFFINE_PSNR_DB} dB), stored as its outputs plus a {}x5 matrix",
                        t.channels
                    ),
                    mean,
                    std_dev,
                });
                duplicates.push(DuplicateFinding { texture: name, same_as, channels: t.channels, transform_fit_psnr_db: Some(fit_db) });
                slots.push(slot);
                continue;
            }
            seen.entry(hash).or_default().push((mi, ti));
            originals.push((mi, ti));

            let (count, source, reason) = match options
                .budgets
                .overrides
                .get(&name)
                .or_else(|| options.budgets.overrides.get(t.kind.token()))
            {
                Some(&k) => (k.min(total), BudgetSource::Manual, format!("manual override ({k} requested)")),
                // PSNR of its mean as a constant: -10 log10(variance).
                None if std_dev <= 10f32.powf(-FLAT_PSNR_DB / 20.0) => (
                    0,
                    BudgetSource::Flat,
                    format!(
                        "flat: its mean reproduces it at {:.1} dB (>= {FLAT_PSNR_DB} dB), so the MLP bias carries it",
                        -20.0 * std_dev.max(1e-12).log10()
                    ),
                ),
                None => {
                    let (bits, detail) = contents[mi][ti];
                    let share = bits / busiest;
                    let proposed = if share <= QUARTER_BUDGET_SHARE {
                        total.div_ceil(4)
                    } else if share <= HALF_BUDGET_SHARE {
                        total.div_ceil(2)
                    } else {
                        total
                    }
                    .max(1);
                    let content = format!(
                        "content {bits:.1} bits/texel at {CONTENT_TARGET_PSNR_DB} dB ({:.0}% of the busiest), detail above the grid {:.1} dB below full scale",
                        100.0 * share,
                        -10.0 * detail.max(1e-12).log10()
                    );
                    if options.budgets.auto {
                        (proposed, BudgetSource::Content, content)
                    } else if proposed < total {
                        (
                            total,
                            BudgetSource::Content,
                            format!("every channel; {content}: the analysis proposes {proposed} (--auto-budgets applies it)"),
                        )
                    } else {
                        (total, BudgetSource::Content, format!("every channel; {content}"))
                    }
                }
            };
            let mut latent_channels: Vec<u32> = priority[..count as usize].to_vec();
            latent_channels.sort_unstable();
            budgets.push(TextureBudget { texture: name, channels: count, total_channels: total, source, reason, mean, std_dev });
            slots.push(TextureSlot {
                output_offset,
                channels: t.channels as usize,
                latent_channels,
                loss_weight,
                duplicate_of: None,
                color_transform: None,
            });
            output_offset += t.channels as usize;
        }
        textures.push(slots);
    }
    if options.budgets.sharing == crate::options::LibrarySharing::Related && set.materials.len() > 1 {
        split_channels_by_material_group(set, &grids, &contents, &mut textures, &mut budgets);
    }
    let layout = ModelLayout {
        grids: grids.clone(),
        pe_frequencies: options.model.pe_frequencies,
        hidden_widths: options.model.hidden_widths.clone(),
        textures,
        mip_levels: 1,
        mip_grids: Vec::new(),
        weight_format: options.model.weight_format,
    };
    let layout = if options.model.mips { with_pyramid(layout, set.max_extent(), options.model.mip_cell_growth) } else { layout };
    let mut mlp_widths = vec![layout.latent_channels() + 4 * options.model.pe_frequencies as usize + usize::from(layout.mip_levels > 1)];
    mlp_widths.extend(&options.model.hidden_widths);
    mlp_widths.push(layout.output_channels());
    Ok((layout, AnalyseReport { grids, mlp_widths, budgets, duplicates }))
}

/// Groups of related materials: two materials are related when a map of one is a duplicate or a
/// colour variant of a map of the other. Returns each material's group (groups numbered in order
/// of their first material).
#[must_use]
pub fn material_groups(textures: &[Vec<TextureSlot>]) -> Vec<usize> {
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut parent: Vec<usize> = (0..textures.len()).collect();
    for (m, slots) in textures.iter().enumerate() {
        for slot in slots {
            if let Some((other, _)) = slot.duplicate_of {
                let (a, b) = (root(&mut parent, m), root(&mut parent, other));
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut ids: Vec<Option<usize>> = vec![None; textures.len()];
    let mut next = 0;
    (0..textures.len())
        .map(|m| {
            let r = root(&mut parent, m);
            *ids[r].get_or_insert_with(|| {
                next += 1;
                next - 1
            })
        })
        .collect()
}

/// Gives each group of related materials its own channels of every grid, in proportion to the
/// group's content (bits per texel × texels, summed over its maps), at least one per grid. A map
/// keeps its budget's share of its group's channels. Leaves everything shared when a grid has
/// fewer channels than there are groups.
fn split_channels_by_material_group(
    set: &TextureSet,
    grids: &[GridShape],
    contents: &[Vec<(f32, f32)>],
    textures: &mut [Vec<TextureSlot>],
    budgets: &mut [TextureBudget],
) {
    let groups = material_groups(textures);
    let count = groups.iter().max().map_or(0, |g| g + 1);
    if count < 2 || grids.iter().any(|g| (g.channels as usize) < count) {
        return;
    }
    let mut weight = vec![0.0f64; count];
    for (m, material) in set.materials.iter().enumerate() {
        for (t, texture) in material.textures.iter().enumerate() {
            if textures[m][t].duplicate_of.is_none() {
                weight[groups[m]] += f64::from(contents[m][t].0) * texture.texel_count() as f64;
            }
        }
    }
    let sum: f64 = weight.iter().sum::<f64>().max(1e-12);
    // Per group, its channels of each grid (contiguous ranges), then in priority order.
    let mut own: Vec<Vec<u32>> = vec![Vec::new(); count];
    let mut offset = 0u32;
    for g in grids {
        let free = g.channels as usize - count;
        // One each, then the rest by largest remainder.
        let shares: Vec<f64> = weight.iter().map(|w| w / sum * free as f64).collect();
        let mut take: Vec<usize> = shares.iter().map(|s| 1 + s.floor() as usize).collect();
        let mut left = g.channels as usize - take.iter().sum::<usize>();
        let mut order: Vec<usize> = (0..count).collect();
        order.sort_by(|&a, &b| (shares[b] - shares[b].floor()).total_cmp(&(shares[a] - shares[a].floor())));
        for &k in order.iter().cycle() {
            if left == 0 {
                break;
            }
            take[k] += 1;
            left -= 1;
        }
        let mut start = offset;
        for (k, n) in take.iter().enumerate() {
            own[k].extend(start..start + *n as u32);
            start += *n as u32;
        }
        offset += g.channels;
    }
    let priority = channel_priority(grids);
    let rank: std::collections::HashMap<u32, usize> = priority.iter().enumerate().map(|(i, &c)| (c, i)).collect();
    for list in &mut own {
        list.sort_by_key(|c| rank.get(c).copied().unwrap_or(usize::MAX));
    }
    let total: usize = grids.iter().map(|g| g.channels as usize).sum();
    let names: Vec<Vec<&str>> = (0..count)
        .map(|k| set.materials.iter().enumerate().filter(|(m, _)| groups[*m] == k).map(|(_, mat)| mat.name.as_str()).collect())
        .collect();
    let mut b = budgets.iter_mut();
    for (m, slots) in textures.iter_mut().enumerate() {
        let list = &own[groups[m]];
        for slot in slots {
            let budget = b.next();
            // An artist's budget is a channel count (up to the group's own channels); the
            // analysis's budgets are fractions of all channels, scaled to the group's.
            let manual = budget.as_ref().is_some_and(|b| b.source == BudgetSource::Manual);
            let k = if manual { slot.latent_channels.len() } else { (slot.latent_channels.len() * list.len()).div_ceil(total.max(1)) };
            let mut channels = list[..k.min(list.len())].to_vec();
            channels.sort_unstable();
            slot.latent_channels = channels;
            if let Some(budget) = budget {
                budget.channels = slot.latent_channels.len() as u32;
                budget.reason = format!(
                    "{}; material group {} of {count} ({}) reads its own {} channels",
                    budget.reason.replacen("every channel", "every channel of its group", 1),
                    groups[m] + 1,
                    names[groups[m]].join(", "),
                    list.len()
                );
            }
        }
    }
}

/// Prune pass: removes latent channels that no texture reads (their inputs are always masked to
/// zero, so removal is exact), with the matching first-layer weight columns.
#[must_use]
pub fn prune(layout: &ModelLayout, params: &ModelParams) -> (ModelLayout, ModelParams, PruneReport) {
    let lc = layout.latent_channels();
    let mut used = layout.read_channels();
    // Keep at least one channel per grid (the format needs one; an unread one costs its bits only).
    let mut offset = 0usize;
    for g in &layout.grids {
        let ch = g.channels as usize;
        if ch > 0 && !used[offset..offset + ch].contains(&true) {
            used[offset] = true;
        }
        offset += ch;
    }
    let mut remap = vec![None; lc];
    let mut next = 0u32;
    for (c, u) in used.iter().enumerate() {
        if *u {
            remap[c] = Some(next);
            next += 1;
        }
    }
    let mut new_layout = layout.clone();
    let mut new_params = params.clone();
    let mut offset = 0usize;
    let mut keep_inputs: Vec<usize> = Vec::new();
    let per_level = layout.grids.len().max(1);
    let mut kept_per_grid: Vec<Vec<usize>> = Vec::with_capacity(per_level);
    for shape in &mut new_layout.grids {
        let ch = shape.channels as usize;
        let kept: Vec<usize> = (0..ch).filter(|c| used[offset + c]).collect();
        keep_inputs.extend(kept.iter().map(|c| offset + c));
        shape.channels = kept.len() as u32;
        kept_per_grid.push(kept);
        offset += ch;
    }
    for (i, shape) in new_layout.mip_grids.iter_mut().enumerate() {
        shape.channels = kept_per_grid[i % per_level].len() as u32;
    }
    // Every pyramid level drops the same channels as level 0.
    for (i, (grid, old)) in new_params.all_grids_mut().zip(params.all_grids()).enumerate() {
        let kept = &kept_per_grid[i % per_level];
        let ch = old.channels as usize;
        let cells = grid.width as usize * grid.height as usize;
        grid.values = (0..cells).flat_map(|cell| kept.iter().map(move |&c| old.values[cell * ch + c])).collect();
        grid.channels = kept.len() as u32;
    }
    keep_inputs.extend(lc..params.mlp_inputs());
    if let (Some(first), Some(old)) = (new_params.layers.first_mut(), params.layers.first()) {
        first.inputs = keep_inputs.len();
        first.weights = (0..old.outputs).flat_map(|o| keep_inputs.iter().map(move |&i| old.weights[o * old.inputs + i])).collect();
    }
    for slot in new_layout.textures.iter_mut().flatten() {
        slot.latent_channels = slot.latent_channels.iter().filter_map(|&c| remap[c as usize]).collect();
    }
    let report = PruneReport { channels_before: lc, channels_after: next as usize, during_training: None, budgets: Vec::new() };
    (new_layout, new_params, report)
}

/// Quantise pass: latent levels per grid and the layers in the layout's weight format, with the
/// largest |dequantised − trained| weight difference.
#[must_use]
pub fn quantise(layout: &ModelLayout, params: &ModelParams) -> (Vec<Vec<u8>>, Vec<QuantizedLayer>, f32) {
    let per_level = layout.grids.len().max(1);
    let levels = params.all_grids().enumerate().map(|(i, g)| quant::grid_levels(g, layout.grids[i % per_level].bits)).collect();
    let layers: Vec<QuantizedLayer> = params.layers.iter().map(|l| QuantizedLayer::quantize_as(l, layout.weight_format)).collect();
    let max_weight_error = params
        .layers
        .iter()
        .zip(&layers)
        .flat_map(|(p, q)| {
            let d = q.dequantize();
            p.weights.iter().zip(d.weights).map(|(a, b)| (a - b).abs()).collect::<Vec<_>>()
        })
        .fold(0.0f32, f32::max);
    (levels, layers, max_weight_error)
}

/// The bundle a model in training would make if training stopped now: the quantise and pack
/// passes on `params` (what [`Progress::snapshot`] hands over), for live previews.
pub fn snapshot_bundle(set: &TextureSet, layout: &ModelLayout, params: &ModelParams) -> Result<Bundle, CompressError> {
    let (levels, layers, _) = quantise(layout, params);
    let (bundle, _, _) = pack(set, layout, levels, layers)?;
    Ok(bundle)
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
                activation: if i == last { "linear".into() } else { "relu".into() },
            })
            .collect(),
        mip_levels: layout.mip_levels,
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
                    kind: t.kind,
                    width: t.width,
                    height: t.height,
                    channels: t.channels,
                    sample_format: t.sample_format,
                    color_space: t.color_space,
                    normal_convention: t.normal_convention,
                    channel_ranges: t.channel_ranges.clone(),
                    output_offset: s.output_offset as u32,
                    latent_channels: s.latent_channels.clone(),
                    source_file: t.source_path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned(),
                    color_transform: s.color_transform.clone(),
                })
                .collect(),
        })
        .collect()
}

/// `layout` with a latent pyramid for the full mip chain of maps up to `extent` (width, height):
/// level `k` of each grid from [`crate::model::params::mip_grid_side`] with `growth`.
#[must_use]
pub fn with_pyramid(mut layout: ModelLayout, extent: (u32, u32), growth: f32) -> ModelLayout {
    let (width, height) = extent;
    layout.mip_levels = crate::model::params::full_mip_count(width, height);
    layout.mip_grids = (1..layout.mip_levels)
        .flat_map(|k| {
            let (tw, th) = crate::model::mips::level_size(width, height, k);
            layout.grids.iter().map(move |g| GridShape {
                width: crate::model::params::mip_grid_side(g.width, k, growth, tw),
                height: crate::model::params::mip_grid_side(g.height, k, growth, th),
                ..g.clone()
            })
        })
        .collect();
    layout
}

/// The manifest entries of the grids (levels over [`quant::LATENT_RANGE`]).
pub(crate) fn grid_entries(grids: &[GridShape]) -> Vec<GridEntry> {
    grids
        .iter()
        .map(|g| GridEntry { width: g.width, height: g.height, channels: g.channels, bits: g.bits, range: quant::LATENT_RANGE })
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

/// Compresses a library into a bundle. The one entry point of the studio, the CLI and the tests.
pub fn compress(
    set: &TextureSet,
    options: &CompressOptions,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<Compressed, CompressError> {
    progress.pass_started(Pass::Analyse);
    let (layout, analyse_report) = analyse(set, options)?;
    progress.pass_finished(
        Pass::Analyse,
        &format!(
            "{} textures ({} stored once as duplicates, {} flat), grids {}, MLP {:?}",
            analyse_report.budgets.len(),
            analyse_report.duplicates.len(),
            analyse_report.budgets.iter().filter(|b| b.source == BudgetSource::Flat).count(),
            analyse_report
                .grids
                .iter()
                .map(|g| format!("{}x{}x{}@{}b", g.width, g.height, g.channels, g.bits))
                .collect::<Vec<_>>()
                .join(" + "),
            analyse_report.mlp_widths
        ),
    );

    progress.pass_started(Pass::Train);
    let (backend, backend_reason) = match options.run.backend {
        Backend::Auto => {
            let (backend, reason) = crate::train::burn::resolve_auto();
            (backend, format!(" (auto: {reason})"))
        }
        other => (other, String::new()),
    };
    // burn's model has no latent pyramid, channel removal or budget gates yet: those train on
    // the fused CPU trainer.
    // One capability check: what the chosen trainer cannot train sends `auto` to the fused one.
    let cpu_only = match backend {
        Backend::Wgpu | Backend::Flex => Capabilities::BURN.missing(options, &layout),
        Backend::Auto | Backend::Cpu => None,
    };
    let (backend, backend_reason) = match (backend, cpu_only) {
        (Backend::Wgpu | Backend::Flex, Some((what, why))) => {
            if options.run.backend != Backend::Auto {
                return Err(CompressError::Unsupported(format!(
                    "--backend {} cannot train {what} yet ({why}); use --backend cpu or auto",
                    format!("{backend:?}").to_lowercase()
                )));
            }
            (Backend::Cpu, format!(" (auto: {what} trains on the CPU trainer)"))
        }
        (other, _) => (other, backend_reason),
    };
    let (params, train_report) = match backend {
        Backend::Auto | Backend::Cpu => crate::train::train_fused(set, &layout, options, progress, cancel)?,
        Backend::Wgpu | Backend::Flex => {
            let resolved = CompressOptions { run: RunOptions { backend, ..options.run.clone() }, ..options.clone() };
            match crate::train::burn::train_burn_guarded(set, &layout, &resolved, progress, cancel) {
                Ok(trained) => trained,
                Err(TrainError::Gpu(why)) => {
                    progress.warning(&format!("GPU training failed ({why}); training on the CPU instead"));
                    let (params, report) = crate::train::train_fused(set, &layout, options, progress, cancel)?;
                    (params, TrainReport { gpu_fallback: Some(why), ..report })
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    progress.pass_finished(
        Pass::Train,
        &format!(
            "{} steps on {}{backend_reason} in {:.1} s ({:.2} M texels/s)",
            train_report.steps_run,
            train_report.backend,
            train_report.train_secs,
            train_report.texels_per_sec / 1e6
        ),
    );

    progress.pass_started(Pass::Prune);
    // Channels training removed are read by no texture any more.
    let mut layout = layout;
    let budgets_before: Vec<usize> = layout.textures.iter().flatten().map(|s| s.latent_channels.len()).collect();
    if !train_report.pruned_channels.is_empty() {
        for slot in layout.textures.iter_mut().flatten() {
            slot.latent_channels.retain(|c| train_report.pruned_channels.binary_search(c).is_err());
        }
    }
    if let Some(cut) = &train_report.learned_budgets {
        layout = cut.apply(&layout);
    }
    let (layout, params, mut prune_report) = prune(&layout, &params);
    if let (Some(cut), Some(b)) = (&train_report.learned_budgets, &options.budgets.learned) {
        let before: usize = budgets_before.iter().sum();
        let after: usize = cut.budgets.iter().map(Vec::len).sum();
        prune_report.during_training = Some(format!(
            "budgets learned: gates per texture and channel with a group lasso of {}, cut at step {} keeping importance ≥ {:.0}% of the largest: {before} → {after} texture-channel reads",
            b.strength,
            cut.step,
            100.0 * cut.drop_below
        ));
    }
    if let Some(p) = &options.budgets.prune {
        prune_report.during_training = Some(format!(
            "{} channels removed at {:.0}% of training by {:?} (group lasso {}), keeping {:?} per grid",
            train_report.pruned_channels.len(),
            100.0 * p.at,
            p.method,
            p.group_lasso,
            p.keep_per_grid
        ));
    }
    // The layout holds one slot per texture of the set, in the set's order (as the analyse pass
    // named them).
    let names = set.materials.iter().flat_map(|m| m.textures.iter().map(move |t| format!("{}/{}", m.name, t.kind)));
    let method = options.budgets.prune.as_ref().map(|p| format!("{:?} pruning at {:.0}% of training", p.method, 100.0 * p.at));
    let learned = train_report.learned_budgets.as_ref();
    prune_report.budgets = layout
        .textures
        .iter()
        .flatten()
        .zip(&budgets_before)
        .zip(names)
        .enumerate()
        .map(|(s, ((slot, &before), texture))| {
            let after = slot.latent_channels.len();
            if let Some(cut) = learned {
                let reason = learned_budget_reason(cut, s, before, after);
                return BudgetChange { texture, before: before as u32, after: after as u32, reason };
            }
            let reason = match (after.cmp(&before), &method) {
                (std::cmp::Ordering::Less, Some(method)) => {
                    format!(
                        "{} of its channels were among the {} that {method} removed",
                        before - after,
                        train_report.pruned_channels.len()
                    )
                }
                (std::cmp::Ordering::Equal, Some(_)) => "unchanged: pruning removed none of its channels".to_owned(),
                _ => "unchanged: no channel pruning during training".to_owned(),
            };
            BudgetChange { texture, before: before as u32, after: after as u32, reason }
        })
        .collect();
    progress.pass_finished(
        Pass::Prune,
        &format!(
            "latent channels {} → {}{}",
            prune_report.channels_before,
            prune_report.channels_after,
            prune_report.during_training.as_deref().map(|d| format!(" ({d})")).unwrap_or_default()
        ),
    );

    progress.pass_started(Pass::Quantise);
    let (levels, layers, max_weight_error) = quantise(&layout, &params);
    let quantise_report = QuantiseReport {
        latent_bits: layout.grids.iter().map(|g| g.bits).collect(),
        max_weight_error,
        weight_format: layout.weight_format,
        latent_quantisation: options.resolved_latent_quantisation(),
        weight_quantisation: options.resolved_weight_quantisation(),
    };
    progress.pass_finished(
        Pass::Quantise,
        &format!(
            "latents at {:?} bits ({}), weights {} ({}; re-quantisation error {:.2e})",
            quantise_report.latent_bits,
            quantise_report.latent_quantisation.label(),
            quantise_report.weight_format.label(),
            quantise_report.weight_quantisation.label(),
            quantise_report.max_weight_error
        ),
    );

    progress.pass_started(Pass::Pack);
    let (bundle, bundle_bytes, pack_report) = pack(set, &layout, levels, layers)?;
    progress.pass_finished(Pass::Pack, &format!("{} bytes, {:.3} bits per texel", pack_report.bundle_bytes, pack_report.bits_per_texel));

    Ok(Compressed {
        bundle,
        bundle_bytes,
        report: CompressReport {
            analyse: analyse_report,
            train: train_report,
            prune: prune_report,
            quantise: quantise_report,
            pack: pack_report,
        },
    })
}
