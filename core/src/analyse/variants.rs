//! Duplicates (the same data) and colour variants (an affine transform of another map).

/// A texture that an affine colour transform of an earlier texture (same kind, size, channels)
/// reproduces at this PSNR or better is stored as that texture's outputs plus the transform: a
/// few dozen bytes in the manifest instead of output rows and a share of the latents. 45 dB is
/// above what the model itself reaches at the default rate, so the transform's error does not
/// show next to the model's.
pub(crate) const AFFINE_PSNR_DB: f32 = 45.0;

/// Most texels the affine fit's normal equations use (an even sample of the map).
const AFFINE_FIT_SAMPLES: usize = 1 << 16;

/// Least-squares affine colour transform from `source` to `target` (same size and channels),
/// channel by channel over `[source channels, 1]`, and the PSNR of the transform as decoders apply
/// it (clamped, over every texel). `None` when the shapes differ.
#[must_use]
pub(crate) fn fit_color_transform(source: &crate::set::Texture, target: &crate::set::Texture) -> Option<(Vec<[f32; 5]>, f32)> {
    if (source.info.width, source.info.height, source.info.channels) != (target.info.width, target.info.height, target.info.channels)
        || source.info.channels > 4
    {
        return None;
    }
    let ch = source.info.channels as usize;
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

/// Whether two textures hold the same data (what a map may share outputs on).
pub(crate) fn same_data(a: &crate::set::Texture, b: &crate::set::Texture) -> bool {
    a.info.width == b.info.width
        && a.info.height == b.info.height
        && a.info.channels == b.info.channels
        && a.info.channel_ranges == b.info.channel_ranges
        && a.texels.len() == b.texels.len()
        && a.texels.iter().zip(&b.texels).all(|(x, y)| x.to_bits() == y.to_bits())
}

pub(crate) fn texel_hash(t: &crate::set::Texture) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&t.info.width.to_le_bytes());
    hasher.update(&t.info.height.to_le_bytes());
    hasher.update(&t.info.channels.to_le_bytes());
    for v in &t.texels {
        hasher.update(&v.to_bits().to_le_bytes());
    }
    hasher.finalize()
}
