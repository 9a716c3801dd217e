//! `texset eval`: a bundle scored against the original folders: PSNR, SSIM, FLIP per map, the
//! normals' mean angle, the rendered error and, with a mip chain, every level's PSNR.

use anyhow::{Result, bail};
use serde::Serialize;
use std::path::PathBuf;
use texset::rendered::{MapRenderedScore, RenderedScore, rebuild_normal_z, rendered_by_map, rendered_scores};
use texset_core::{
    decode::Decoder,
    eval::{EvalReport, MapScore, MipReport, decode_set, evaluate_mips, score},
    set::load_library,
};

use super::common::{JsonArg, mip_summary, read_bundle};

// `texset eval`.
#[derive(clap::Args)]
pub(super) struct EvalArgs {
    /// Reference material folders, then the bundle last.
    #[arg(required = true, num_args = 2..)]
    paths: Vec<PathBuf>,
    /// Also render each map decoded alone (the others the originals): the rendered PSNR each
    /// map's errors cost.
    #[arg(long)]
    by_map: bool,
    /// Rebuild each decoded normal map's z from its x and y (`sqrt(1 − x² − y²)`, as a BC5
    /// shader does) before scoring: what a decoder of x and y alone would give.
    #[arg(long)]
    rebuild_normal_z: bool,
    /// Score the bundle as the GPU decoder's packed-int8 path decodes it (`--precision int8` of
    /// `export-shader`: int8 activations), through its CPU twin, one texel at a time.
    #[arg(long)]
    int8: bool,
    #[command(flatten)]
    json: JsonArg,
}

/// `eval --json`.
#[derive(Serialize)]
struct EvalJson<'a> {
    pooled_psnr_db: f64,
    maps: &'a [MapScore],
    rendered: &'a [RenderedScore],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    rendered_by_map: &'a [MapRenderedScore],
    mips: Option<&'a MipReport>,
}

/// Lights around the rendered plane, and its size in pixels a side.
const RENDER_LIGHTS: usize = 8;
const RENDER_SIZE_PX: u32 = 256;

impl EvalArgs {
    pub(super) fn run(mut self) -> Result<()> {
        let Some(bundle) = self.paths.pop() else { bail!("eval needs reference folders and a bundle") };
        let b = read_bundle(&bundle)?;
        let (set, _) = load_library(&self.paths)?;
        let decoder = if self.int8 { Decoder::int8_twin(&b) } else { Decoder::new(&b) };
        let mut decoded = decode_set(&set, &decoder)?;
        if self.rebuild_normal_z {
            rebuild_normal_z(&set, &mut decoded);
        }
        let eval = score(&set, &decoded, true);
        let mips = evaluate_mips(&set, &decoder)?;
        let rendered = rendered_scores(&set, &b.manifest, &decoded, RENDER_LIGHTS, RENDER_SIZE_PX);
        let by_map = if self.by_map { rendered_by_map(&set, &b.manifest, &decoded, RENDER_LIGHTS, RENDER_SIZE_PX) } else { Vec::new() };
        if self.json.json {
            JsonArg::print(&EvalJson {
                pooled_psnr_db: eval.pooled_psnr_db,
                maps: &eval.maps,
                rendered: &rendered,
                rendered_by_map: &by_map,
                mips: mips.as_ref(),
            })
        } else {
            print_text(&eval, &rendered, &by_map, mips.as_ref());
            Ok(())
        }
    }
}

fn print_text(eval: &EvalReport, rendered: &[RenderedScore], by_map: &[MapRenderedScore], mips: Option<&MipReport>) {
    println!("pooled PSNR {:.2} dB", eval.pooled_psnr_db);
    for m in &eval.maps {
        let ch: Vec<String> = m.channel_psnr_db.iter().map(|p| format!("{p:.2}")).collect();
        let flip = m.flip.map_or_else(String::new, |f| format!(", FLIP {f:.4}"));
        let angle = m.normal_angular_error_deg.map_or_else(String::new, |a| format!(", mean angular error {a:.2} deg"));
        println!("  {}/{}: PSNR {:.2} dB (channels {}), SSIM {:.4}{flip}{angle}", m.material, m.map, m.psnr_db, ch.join(" "), m.ssim);
    }
    println!(
        "rendered error (the preview's plane under {RENDER_LIGHTS} light positions, {RENDER_SIZE_PX}x{RENDER_SIZE_PX}, original vs decoded maps):"
    );
    for r in rendered {
        println!("  {}: PSNR {:.2} dB, FLIP {:.4}", r.material, r.rendered_psnr_db, r.rendered_flip);
    }
    if !by_map.is_empty() {
        println!("rendered error with one map decoded, the others original:");
        for r in by_map {
            println!("  {}/{}: PSNR {:.2} dB", r.material, r.map, r.rendered_psnr_db);
        }
    }
    if let Some(m) = mips {
        print!("{}", mip_summary(m));
    }
}
