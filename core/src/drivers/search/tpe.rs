//! The samplers' random stream and the tree-structured Parzen estimator (Bergstra et al. 2011).

use super::DIMS;
use crate::base::rng::Rng;

/// The samplers' stream for `seed` (the one [`Rng`], its first output skipped).
pub(super) fn search_rng(seed: u64) -> Rng {
    Rng::from_state(seed).skip(1)
}

/// The next point a TPE proposes: `observed` are `(index, score)` of every short trial so far,
/// `open` the points not yet tried (non-empty).
pub(super) fn tpe_propose(sizes: [usize; DIMS], observed: &[([usize; DIMS], f64)], open: &[[usize; DIMS]], rng: &mut Rng) -> [usize; DIMS] {
    let mut order: Vec<usize> = (0..observed.len()).collect();
    order.sort_by(|&a, &b| observed[b].1.total_cmp(&observed[a].1));
    let good_count = observed.len().div_ceil(4).max(1);
    // Smoothed categorical frequencies per dimension: one pseudo-count spread over the values.
    let model = |members: &[usize]| -> Vec<Vec<f64>> {
        (0..DIMS)
            .map(|d| {
                let mut p = vec![1.0 / sizes[d] as f64; sizes[d]];
                for &i in members {
                    p[observed[i].0[d]] += 1.0;
                }
                let total: f64 = p.iter().sum();
                p.iter().map(|x| x / total).collect()
            })
            .collect()
    };
    let good = model(&order[..good_count]);
    let bad = model(&order[good_count..]);
    let ratio = |x: &[usize; DIMS]| -> f64 { (0..DIMS).map(|d| good[d][x[d]] / bad[d][x[d]]).product() };
    let mut best: Option<([usize; DIMS], f64)> = None;
    for _ in 0..24 {
        let mut x = [0usize; DIMS];
        for d in 0..DIMS {
            let mut u = rng.next_f64();
            x[d] = sizes[d] - 1;
            for (v, p) in good[d].iter().enumerate() {
                if u < *p {
                    x[d] = v;
                    break;
                }
                u -= p;
            }
        }
        if !open.contains(&x) {
            continue;
        }
        let r = ratio(&x);
        if best.is_none_or(|(_, b)| r > b) {
            best = Some((x, r));
        }
    }
    // Every draw was tried already: the open point the model likes best.
    best.map_or_else(|| *open.iter().max_by(|a, b| ratio(a).total_cmp(&ratio(b))).unwrap_or(&open[0]), |(x, _)| x)
}
