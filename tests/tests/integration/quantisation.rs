//! Quantisation-aware training against post-training quantisation (`--latent-quant`,
//! `--weight-quant`): what each schedule does, and QAT's known win at low latent bits.
#![allow(clippy::unwrap_used)]

use crate::common;
use texset_core::decode::Decoder;
use texset_core::eval::evaluate;
use texset_core::options::Quantisation;
use texset_core::pipeline::analyse;
use texset_core::progress::TrainPhase::{FrozenLatents as F, Int8Weights as I, NoisyLatents as N};
use texset_core::train::Schedule;
use texset_core::{Backend, Cancel, CompressOptions, NoProgress, compress};

#[test]
fn ptq_trains_in_float_and_qat_wins_at_two_latent_bits() {
    let (set, _) = texset_core::ingest::load_library(&[common::repo_root().join("sample_textures/metal_plates")]).unwrap();
    let qat = CompressOptions { steps: 1000, backend: Backend::Cpu, seed: 3, ..CompressOptions::default() };
    let (layout, _) = analyse(&set, &qat).unwrap();
    let with = |latents, weights| CompressOptions { latent_quantisation: latents, weight_quantisation: weights, ..qat.clone() };
    let phases = |o: &CompressOptions| {
        let s = Schedule::new(o, &layout);
        (s.latent_noise, [0, 799, 800, 899, 900, 999].map(|step| s.phase(step)))
    };
    // QAT: noisy latents, rounded and frozen at 80 %, int8 fake-quantised weights from 90 %.
    assert_eq!(phases(&qat), (true, [N, N, F, F, I, I]));
    // PTQ latents: no noise and never rounded in training; they stop training where the weights'
    // fake-quantisation starts.
    assert_eq!(phases(&with(Quantisation::Ptq, Quantisation::Qat)), (false, [N, N, N, N, I, I]));
    // PTQ weights: no fake-quantised phase.
    assert_eq!(phases(&with(Quantisation::Qat, Quantisation::Ptq)), (true, [N, N, F, F, F, F]));
    // Both: float training to the end.
    assert_eq!(phases(&with(Quantisation::Ptq, Quantisation::Ptq)), (false, [N; 6]));

    // At 2 bits a latent has 4 levels: rounding latents that never trained against it costs
    // much more than rounding ones that did.
    let score = |o: &CompressOptions| {
        let mut o = o.clone();
        for g in &mut o.grids {
            g.bits = 2;
        }
        let out = compress(&set, &o, &NoProgress, &Cancel::new()).unwrap();
        (out.report.pack.bundle_bytes, evaluate(&set, &Decoder::new(&out.bundle), false).unwrap().pooled_psnr_db)
    };
    let (qat_bytes, qat_db) = score(&qat);
    let (ptq_bytes, ptq_db) = score(&with(Quantisation::Ptq, Quantisation::Qat));
    println!("2-bit latents: QAT {qat_db:.2} dB, PTQ {ptq_db:.2} dB");
    assert_eq!(qat_bytes, ptq_bytes, "the same shape at the same bits");
    assert!(qat_db > ptq_db + 1.0, "QAT {qat_db:.2} dB, PTQ {ptq_db:.2} dB");
}
