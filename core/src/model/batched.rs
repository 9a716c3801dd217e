//! The batched form of the MLP in [`crate::model::params`]: a block of texels at a time, laid out
//! feature-major (`[feature][texel]`, the texel count padded to [`TILE`]), through
//! register-blocked small-matrix kernels that read the weights as stored (no packing). The
//! fused CPU trainer (`train/kernel.rs`) and the whole-map decoder ([`crate::decode`]) run on it;
//! the scalar reference ([`crate::model::reference`]) stays the specification, and parity tests
//! tie the two.
//!
//! The kernels are written once over 16-lane tiles (`Lanes`) and run on AVX2 + FMA registers
//! when the CPU has them (detected at run time; `pulp` compiles the kernels for that instruction
//! set), else on plain arrays. Every product is a fused multiply-add (exactly rounded on every
//! path) and every sum runs in a fixed order (a texel's over the inputs in order; sums over texels
//! in 16 lanes, then a fixed tree), so the result is the same bits on every path and at any thread
//! count (tested). An AVX-512 path (pulp's `x86-v4`) measured no faster on the
//! development machine: the weight gradients' horizontal sums grow with the width. TODO(simd): a
//! NEON path for aarch64 (plain arrays there today).

// Reason: the kernels must be inlined into pulp's target-feature function to be compiled for
// AVX2 + FMA; an out-of-line call would run them as baseline x86-64 code.
#![allow(clippy::inline_always)]

use crate::model::params::{Activation, HGELU_MAX};
use std::array::from_fn;

/// Texels per micro-tile: feature-major buffers hold a multiple of this many texel columns. It is
/// also the lane count of every vector operation, whatever the vector width the CPU runs them at
/// (two AVX2 registers): the order of every sum.
pub(crate) const TILE: usize = 16;

/// `n` texels rounded up to a whole number of tiles: the row length of a feature-major buffer.
#[must_use]
pub(crate) fn padded_len(n: usize) -> usize {
    n.div_ceil(TILE) * TILE
}

/// Arithmetic on tiles of 16 lanes: AVX2 + FMA registers (two per tile), or plain arrays (the
/// same results on both: every multiply-add is fused and exactly rounded).
trait Lanes: Copy {
    /// One tile.
    type T: Copy;
    fn splat(self, x: f32) -> Self::T;
    fn load(self, x: [f32; TILE]) -> Self::T;
    fn store(self, v: Self::T) -> [f32; TILE];
    /// `a · b + c`, one rounding.
    fn mul_add(self, a: Self::T, b: Self::T, c: Self::T) -> Self::T;
    /// `v` where `gate > 0`, else `+0` (NaN gates give 0).
    fn keep_where_positive(self, v: Self::T, gate: Self::T) -> Self::T;
    /// `act` of every lane: `ReLU` as [`Lanes::keep_where_positive`], the others lane by lane
    /// through [`Activation::apply`] (inlined into the kernel, so compiled for its instruction
    /// set; the same bits on every path).
    #[inline(always)]
    fn activate(self, v: Self::T, act: Activation) -> Self::T {
        match act {
            Activation::Relu => self.keep_where_positive(v, v),
            Activation::Hgelu => self.hgelu(v),
        }
    }
    /// [`Activation::Hgelu`] of every lane.
    #[inline(always)]
    fn hgelu(self, v: Self::T) -> Self::T {
        self.load(self.store(v).map(|z| Activation::Hgelu.apply(z)))
    }
    /// `g` times [`Activation::Hgelu`]'s derivative at `z`, every lane.
    #[cfg(feature = "train")]
    #[inline(always)]
    fn hgelu_backward(self, g: Self::T, z: Self::T) -> Self::T {
        let (g, z) = (self.store(g), self.store(z));
        self.load(from_fn(|l| g[l] * Activation::Hgelu.derivative(z[l])))
    }
}

/// Plain arrays: the path for CPUs without AVX2 + FMA (`f32::mul_add` is exactly rounded
/// everywhere, in software where the CPU has no FMA).
#[derive(Clone, Copy)]
struct Plain;

impl Lanes for Plain {
    type T = [f32; TILE];
    #[inline(always)]
    fn splat(self, x: f32) -> Self::T {
        [x; TILE]
    }
    #[inline(always)]
    fn load(self, x: [f32; TILE]) -> Self::T {
        x
    }
    #[inline(always)]
    fn store(self, v: Self::T) -> [f32; TILE] {
        v
    }
    #[inline(always)]
    fn mul_add(self, a: Self::T, b: Self::T, c: Self::T) -> Self::T {
        from_fn(|l| a[l].mul_add(b[l], c[l]))
    }
    #[inline(always)]
    fn keep_where_positive(self, v: Self::T, gate: Self::T) -> Self::T {
        from_fn(|l| if gate[l] > 0.0 { v[l] } else { 0.0 })
    }
}

#[cfg(target_arch = "x86_64")]
impl Lanes for pulp::x86::V3 {
    type T = [pulp::f32x8; 2];
    #[inline(always)]
    fn splat(self, x: f32) -> Self::T {
        [self.splat_f32x8(x); 2]
    }
    #[inline(always)]
    fn load(self, x: [f32; TILE]) -> Self::T {
        pulp::cast(x)
    }
    #[inline(always)]
    fn store(self, v: Self::T) -> [f32; TILE] {
        pulp::cast(v)
    }
    #[inline(always)]
    fn mul_add(self, a: Self::T, b: Self::T, c: Self::T) -> Self::T {
        [self.mul_add_f32x8(a[0], b[0], c[0]), self.mul_add_f32x8(a[1], b[1], c[1])]
    }
    #[inline(always)]
    fn keep_where_positive(self, v: Self::T, gate: Self::T) -> Self::T {
        let zero = self.splat_f32x8(0.0);
        let keep = |v, gate| self.select_f32x8(self.cmp_gt_f32x8(gate, zero), v, zero);
        [keep(v[0], gate[0]), keep(v[1], gate[1])]
    }
    // The selects, multiplies and adds of `Activation::apply` and `derivative`, in that order.
    // Each half written out: a closure (`from_fn`) is not compiled for the kernel's instruction
    // set, and its intrinsics become calls (2.2× slower training, measured).
    #[inline(always)]
    fn hgelu(self, v: Self::T) -> Self::T {
        [hgelu_x8(self, v[0]), hgelu_x8(self, v[1])]
    }
    #[cfg(feature = "train")]
    #[inline(always)]
    fn hgelu_backward(self, g: Self::T, z: Self::T) -> Self::T {
        [hgelu_backward_x8(self, g[0], z[0]), hgelu_backward_x8(self, g[1], z[1])]
    }
}

/// [`Activation::Hgelu`] of eight lanes, as [`Activation::apply`] computes it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn hgelu_x8(s: pulp::x86::V3, z: pulp::f32x8) -> pulp::f32x8 {
    use pulp::Simd as _;
    let (zero, one, top) = (s.splat_f32x8(0.0), s.splat_f32x8(1.0), s.splat_f32x8(HGELU_MAX));
    let capped = s.select_f32x8(s.cmp_gt_f32x8(z, top), top, z);
    let gate = s.add_f32s(s.mul_f32s(z, s.splat_f32x8(1.0 / 3.0)), s.splat_f32x8(0.5));
    let gate = s.select_f32x8(s.cmp_lt_f32x8(gate, zero), zero, gate);
    let gate = s.select_f32x8(s.cmp_gt_f32x8(gate, one), one, gate);
    s.mul_f32s(capped, gate)
}

/// `g` times [`Activation::Hgelu`]'s derivative at `z`, eight lanes, as
/// [`Activation::derivative`] computes it.
#[cfg(feature = "train")]
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn hgelu_backward_x8(s: pulp::x86::V3, g: pulp::f32x8, z: pulp::f32x8) -> pulp::f32x8 {
    use pulp::Simd as _;
    let slope = s.add_f32s(s.mul_f32s(z, s.splat_f32x8(2.0 / 3.0)), s.splat_f32x8(0.5));
    let d = s.select_f32x8(s.cmp_ge_f32x8(z, s.splat_f32x8(1.5)), s.splat_f32x8(1.0), slope);
    let flat = s.or_m32s(s.cmp_le_f32x8(z, s.splat_f32x8(-1.5)), s.cmp_ge_f32x8(z, s.splat_f32x8(HGELU_MAX)));
    s.mul_f32s(g, s.select_f32x8(flat, s.splat_f32x8(0.0), d))
}

/// Defines a kernel entry point `$name(args)` that runs `$imp::<S>(s, args)` with the best vector
/// arithmetic this CPU has: AVX2 + FMA registers when detected at run time (cached by std),
/// with `$imp` compiled for that instruction set by pulp, else plain arrays. `$imp` and all it
/// calls must be `#[inline(always)]` to be compiled for the instruction set.
macro_rules! dispatched {
    ($(#[$doc:meta])* $vis:vis fn $name:ident => $imp:ident ($($arg:ident : $ty:ty),*)) => {
        $(#[$doc])*
        $vis fn $name<'a>($($arg: $ty),*) {
            // A struct, not a closure: its `call` is `#[inline(always)]`, so the kernel is inlined
            // into pulp's target-feature function and compiled for that instruction set.
            struct Op<'a, S> {
                simd: S,
                $($arg: $ty,)*
                _borrows: std::marker::PhantomData<&'a ()>,
            }
            impl<S: Lanes> pulp::NullaryFnOnce for Op<'_, S> {
                type Output = ();
                #[inline(always)]
                fn call(self) {
                    $imp(self.simd, $(self.$arg),*);
                }
            }
            #[cfg(target_arch = "x86_64")]
            if let Some(simd) = pulp::x86::V3::try_new() {
                simd.vectorize(Op { simd, $($arg,)* _borrows: std::marker::PhantomData });
                return;
            }
            $imp(Plain, $($arg),*);
        }
    };
}

/// Calls `$body` for consecutive blocks of rows of `$total`: blocks of `$max` rows, then one
/// block of the remainder; inside it `$r0` is the first row and `$n` a constant row count.
macro_rules! row_blocks {
    ($total:expr, $max:literal, [$($tail:literal),*], |$r0:ident, $n:ident| $body:block) => {{
        let total: usize = $total;
        let mut $r0 = 0usize;
        while $r0 + $max <= total {
            {
                const $n: usize = $max;
                $body
            }
            $r0 += $max;
        }
        match total - $r0 {
            $($tail => {
                const $n: usize = $tail;
                $body
            })*
            _ => {}
        }
    }};
}

/// The fixed-order sum of a tile's 16 lanes (a pairwise tree).
#[inline(always)]
#[cfg(feature = "train")]
fn lane_sum(v: [f32; TILE]) -> f32 {
    let h: [f32; 8] = from_fn(|l| v[l] + v[l + 8]);
    let q: [f32; 4] = from_fn(|l| h[l] + h[l + 4]);
    (q[0] + q[2]) + (q[1] + q[3])
}

/// `R` rows × tile `t` of texels: `init[r] + Σ_j weight(j)[r] · a[j][tile t]`, `j` over the
/// first `depth` rows of `a` in order, one fused multiply-add per term.
#[inline(always)]
fn rows_tile<S: Lanes, const R: usize>(
    s: S,
    a: &[f32],
    np: usize,
    depth: usize,
    t: usize,
    weight: impl Fn(usize) -> [f32; R],
    init: [f32; R],
) -> [S::T; R] {
    let mut acc: [S::T; R] = from_fn(|r| s.splat(init[r]));
    for (j, row) in a.chunks_exact(np).take(depth).enumerate() {
        let x = load_tile(s, row, t * TILE);
        let w = weight(j);
        for r in 0..R {
            acc[r] = s.mul_add(s.splat(w[r]), x, acc[r]);
        }
    }
    acc
}

/// Stores one tile at `dst[at..at + TILE]`.
#[inline(always)]
fn store_tile<S: Lanes>(s: S, values: S::T, dst: &mut [f32], at: usize) {
    dst[at..at + TILE].copy_from_slice(&s.store(values));
}

/// Loads one tile from `src[at..at + TILE]`.
#[inline(always)]
fn load_tile<S: Lanes>(s: S, src: &[f32], at: usize) -> S::T {
    let x = &src[at..at + TILE];
    s.load(from_fn(|l| x[l]))
}

/// One layer forward on a block: `out[o][i] = act(bias[o] + Σ_k w[o][k] · a[k][i])` (no
/// activation when `act` is `None`), `k` in order; `pre`, when given, receives the values before
/// the activation (what a backward pass through a non-`ReLU` activation needs).
///
/// Shapes: `w` `[outputs][inputs]` row-major (as stored), `bias` `[outputs]`, `a` `[inputs][np]`,
/// `out` and `pre` `[outputs][np]`; `np` a multiple of [`TILE`].
pub(crate) fn forward_layer(
    w: &[f32],
    bias: &[f32],
    inputs: usize,
    a: &[f32],
    np: usize,
    act: Option<Activation>,
    pre: Option<&mut [f32]>,
    out: &mut [f32],
) {
    let outputs = bias.len();
    assert!(
        w.len() >= outputs * inputs && a.len() >= inputs * np && out.len() >= outputs * np && np.is_multiple_of(TILE),
        "forward_layer shapes"
    );
    assert!(pre.as_ref().is_none_or(|p| p.len() >= outputs * np), "forward_layer shapes");
    forward_dispatch(w, bias, inputs, a, np, act, pre, out);
}

dispatched!(fn forward_dispatch => forward_imp(w: &'a [f32], bias: &'a [f32], inputs: usize, a: &'a [f32], np: usize, act: Option<Activation>, pre: Option<&'a mut [f32]>, out: &'a mut [f32]));

#[inline(always)]
fn forward_imp<S: Lanes>(
    s: S,
    w: &[f32],
    bias: &[f32],
    inputs: usize,
    a: &[f32],
    np: usize,
    act: Option<Activation>,
    mut pre: Option<&mut [f32]>,
    out: &mut [f32],
) {
    let outputs = bias.len();
    {
        for t in 0..np / TILE {
            let i0 = t * TILE;
            macro_rules! block {
                ($r0:ident, $R:ident) => {{
                    let rows: [&[f32]; $R] = from_fn(|r| &w[($r0 + r) * inputs..][..inputs]);
                    let acc = rows_tile::<_, $R>(s, a, np, inputs, t, |j| from_fn(|r| rows[r][j]), from_fn(|r| bias[$r0 + r]));
                    for (r, values) in acc.into_iter().enumerate() {
                        let at = ($r0 + r) * np + i0;
                        if let Some(pre) = pre.as_deref_mut() {
                            store_tile(s, values, pre, at);
                        }
                        let values = match act {
                            Some(act) => s.activate(values, act),
                            None => values,
                        };
                        store_tile(s, values, out, at);
                    }
                }};
            }
            row_blocks!(outputs, 6, [1, 2, 3, 4, 5], |r0, R| { block!(r0, R) });
        }
    }
}

/// How [`backward_inputs`] passes its gradient back through the previous layer's activation.
#[cfg(feature = "train")]
#[derive(Clone, Copy)]
pub(crate) enum Gate<'a> {
    /// `ReLU`: zero where the previous layer's output (this slice) is not positive.
    Relu(&'a [f32]),
    /// Times the activation's derivative ([`Activation::derivative`]) at the previous layer's
    /// values before it (this slice).
    Derivative(Activation, &'a [f32]),
}

#[cfg(feature = "train")]
impl Gate<'_> {
    fn len(&self) -> usize {
        match self {
            Self::Relu(a) | Self::Derivative(_, a) => a.len(),
        }
    }
}

/// One layer backward to its inputs on a block: `da[k][i] = Σ_o w[o][k] · dz[o][i]` for the first
/// `rows` inputs, `o` in order; through `gate` (the previous layer's activation) where given.
///
/// Shapes: `w` `[outputs][inputs]`, `dz` `[outputs][np]`, the gate's slice and `da`
/// `[rows..][np]`.
#[cfg(feature = "train")]
pub(crate) fn backward_inputs(
    w: &[f32],
    inputs: usize,
    outputs: usize,
    dz: &[f32],
    np: usize,
    rows: usize,
    gate: Option<Gate<'_>>,
    da: &mut [f32],
) {
    assert!(
        rows <= inputs && w.len() >= outputs * inputs && dz.len() >= outputs * np && da.len() >= rows * np && np.is_multiple_of(TILE),
        "backward_inputs shapes"
    );
    assert!(gate.is_none_or(|g| g.len() >= rows * np), "backward_inputs shapes");
    backward_dispatch(w, inputs, outputs, dz, np, rows, gate, da);
}

#[cfg(feature = "train")]
dispatched!(fn backward_dispatch => backward_imp(w: &'a [f32], inputs: usize, outputs: usize, dz: &'a [f32], np: usize, rows: usize, gate: Option<Gate<'a>>, da: &'a mut [f32]));

#[inline(always)]
#[cfg(feature = "train")]
fn backward_imp<S: Lanes>(
    s: S,
    w: &[f32],
    inputs: usize,
    outputs: usize,
    dz: &[f32],
    np: usize,
    rows: usize,
    gate: Option<Gate<'_>>,
    da: &mut [f32],
) {
    {
        for t in 0..np / TILE {
            let i0 = t * TILE;
            macro_rules! block {
                ($k0:ident, $R:ident) => {{
                    let weight = |o: usize| -> [f32; $R] {
                        let w = &w[o * inputs + $k0..][..$R];
                        from_fn(|r| w[r])
                    };
                    let acc = rows_tile::<_, $R>(s, dz, np, outputs, t, weight, [0.0; $R]);
                    for (r, values) in acc.into_iter().enumerate() {
                        let at = ($k0 + r) * np + i0;
                        let values = match gate {
                            Some(Gate::Relu(active)) => s.keep_where_positive(values, load_tile(s, active, at)),
                            Some(Gate::Derivative(Activation::Hgelu, pre)) => s.hgelu_backward(values, load_tile(s, pre, at)),
                            Some(Gate::Derivative(Activation::Relu, pre)) => s.keep_where_positive(values, load_tile(s, pre, at)),
                            None => values,
                        };
                        store_tile(s, values, da, at);
                    }
                }};
            }
            row_blocks!(rows, 6, [1, 2, 3, 4, 5], |k0, R| { block!(k0, R) });
        }
    }
}

/// `R × C` weight gradients: `Σ_i dz[o0 + r][i] · a[k0 + c][i]` in 16 lanes, then [`lane_sum`].
#[inline(always)]
#[cfg(feature = "train")]
fn grad_block<S: Lanes, const R: usize, const C: usize>(s: S, dz: &[f32], a: &[f32], np: usize, o0: usize, k0: usize) -> [[f32; C]; R] {
    let tiles = np / TILE;
    let d: [&[[f32; TILE]]; R] = from_fn(|r| &dz[(o0 + r) * np..][..np].as_chunks::<TILE>().0[..tiles]);
    let x: [&[[f32; TILE]]; C] = from_fn(|c| &a[(k0 + c) * np..][..np].as_chunks::<TILE>().0[..tiles]);
    let mut acc = [[s.splat(0.0); C]; R];
    for t in 0..tiles {
        let dv: [S::T; R] = from_fn(|r| s.load(d[r][t]));
        let xv: [S::T; C] = from_fn(|c| s.load(x[c][t]));
        for r in 0..R {
            for c in 0..C {
                acc[r][c] = s.mul_add(dv[r], xv[c], acc[r][c]);
            }
        }
    }
    from_fn(|r| from_fn(|c| lane_sum(s.store(acc[r][c]))))
}

/// One layer's parameter gradients on a block: `dw[o][k] = Σ_i dz[o][i] · a[k][i]` and
/// `db[o] = Σ_i dz[o][i]` (overwritten, not added), each summed in 8 lanes over the texels in
/// order, then across the lanes in a fixed order.
///
/// Shapes: `dz` `[outputs][np]`, `a` `[inputs][np]`, `dw` `[outputs][inputs]`, `db` `[outputs]`.
#[cfg(feature = "train")]
pub(crate) fn weight_grads(dz: &[f32], a: &[f32], inputs: usize, np: usize, dw: &mut [f32], db: &mut [f32]) {
    let outputs = db.len();
    assert!(
        dz.len() >= outputs * np && a.len() >= inputs * np && dw.len() >= outputs * inputs && np.is_multiple_of(TILE),
        "weight_grads shapes"
    );
    grads_dispatch(dz, a, inputs, np, dw, db);
}

#[cfg(feature = "train")]
dispatched!(fn grads_dispatch => grads_imp(dz: &'a [f32], a: &'a [f32], inputs: usize, np: usize, dw: &'a mut [f32], db: &'a mut [f32]));

#[inline(always)]
#[cfg(feature = "train")]
fn grads_imp<S: Lanes>(s: S, dz: &[f32], a: &[f32], inputs: usize, np: usize, dw: &mut [f32], db: &mut [f32]) {
    let outputs = db.len();
    {
        macro_rules! block {
            ($o0:ident, $R:ident, $k0:ident, $C:ident) => {{
                let block = grad_block::<_, $R, $C>(s, dz, a, np, $o0, $k0);
                for (r, row) in block.iter().enumerate() {
                    dw[($o0 + r) * inputs + $k0..][..$C].copy_from_slice(row);
                }
            }};
        }
        row_blocks!(outputs, 3, [1, 2], |o0, R| {
            row_blocks!(inputs, 2, [1], |k0, C| { block!(o0, R, k0, C) });
        });
        for (o, b) in db.iter_mut().enumerate() {
            let mut acc = [0.0f32; TILE];
            for d in dz[o * np..][..np].as_chunks::<TILE>().0 {
                for l in 0..TILE {
                    acc[l] += d[l];
                }
            }
            *b = lane_sum(acc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(len: usize, seed: f32) -> Vec<f32> {
        (0..len).map(|i| ((i as f32 * 0.618 + seed).sin() * 1.7).fract()).collect()
    }

    /// The kernels against plain triple loops, on shapes that exercise every row-block tail.
    /// Tolerance: fused multiply-adds and lane sums differ from sequential sums by a few ulps of
    /// the terms' magnitude (sums of ≤ 64 products of values below 2).
    #[test]
    fn kernels_match_plain_loops() {
        for (inputs, outputs, n) in [(41, 64, 37), (7, 9, 16), (13, 5, 1), (64, 11, 100)] {
            let np = padded_len(n);
            let w = values(outputs * inputs, 0.3);
            let bias = values(outputs, 0.9);
            let mut a = vec![0.0; inputs * np];
            for k in 0..inputs {
                for i in 0..n {
                    a[k * np + i] = values(1, (k * 131 + i) as f32)[0];
                }
            }
            let mut z = vec![0.0; outputs * np];
            forward_layer(&w, &bias, inputs, &a, np, Some(Activation::Relu), None, &mut z);
            for o in 0..outputs {
                for i in 0..n {
                    let want = (bias[o] + (0..inputs).map(|k| w[o * inputs + k] * a[k * np + i]).sum::<f32>()).max(0.0);
                    assert!((z[o * np + i] - want).abs() < 1e-4, "forward {inputs}x{outputs} ({o}, {i})");
                }
            }
            let mut dz = vec![0.0; outputs * np];
            for o in 0..outputs {
                for i in 0..n {
                    dz[o * np + i] = values(1, (o * 17 + i * 3) as f32)[0];
                }
            }
            let mut da = vec![0.0; inputs * np];
            backward_inputs(&w, inputs, outputs, &dz, np, inputs, Some(Gate::Relu(&a)), &mut da);
            for k in 0..inputs {
                for i in 0..n {
                    let sum: f32 = (0..outputs).map(|o| w[o * inputs + k] * dz[o * np + i]).sum();
                    let want = if a[k * np + i] > 0.0 { sum } else { 0.0 };
                    assert!((da[k * np + i] - want).abs() < 1e-4, "backward {inputs}x{outputs} ({k}, {i})");
                }
            }
            let (mut dw, mut db) = (vec![0.0; outputs * inputs], vec![0.0; outputs]);
            weight_grads(&dz, &a, inputs, np, &mut dw, &mut db);
            // The plain-array path gives the same bits as the one this CPU dispatched to.
            let mut plain = vec![0.0; outputs * np];
            forward_imp(Plain, &w, &bias, inputs, &a, np, Some(Activation::Relu), None, &mut plain);
            assert_eq!(plain, z, "forward: plain arrays against the dispatched path");
            let mut plain = vec![0.0; inputs * np];
            backward_imp(Plain, &w, inputs, outputs, &dz, np, inputs, Some(Gate::Relu(&a)), &mut plain);
            assert_eq!(plain, da, "backward: plain arrays against the dispatched path");
            let (mut plain_dw, mut plain_db) = (vec![0.0; outputs * inputs], vec![0.0; outputs]);
            grads_imp(Plain, &dz, &a, inputs, np, &mut plain_dw, &mut plain_db);
            assert_eq!((plain_dw, plain_db), (dw.clone(), db.clone()), "weight grads: plain arrays against the dispatched path");
            for o in 0..outputs {
                let want: f32 = (0..n).map(|i| dz[o * np + i]).sum();
                assert!((db[o] - want).abs() < 1e-4);
                for k in 0..inputs {
                    let want: f32 = (0..n).map(|i| dz[o * np + i] * a[k * np + i]).sum();
                    assert!((dw[o * inputs + k] - want).abs() < 1e-4, "weight grad {inputs}x{outputs} ({o}, {k})");
                }
            }
        }
    }

    /// `HGELUClamp` through the kernels: the forward pass (and the values before it) and the
    /// backward pass through its derivative, against plain loops over [`Activation`]'s scalar
    /// definitions, and the plain-array path's bits against the dispatched one's.
    #[test]
    fn hgelu_kernels_match_plain_loops() {
        let act = Activation::Hgelu;
        for (inputs, outputs, n) in [(41, 64, 37), (13, 5, 1)] {
            let np = padded_len(n);
            let w: Vec<f32> = values(outputs * inputs, 0.3).iter().map(|v| v * 2.0).collect();
            let bias = values(outputs, 0.9);
            let mut a = vec![0.0; inputs * np];
            for k in 0..inputs {
                for i in 0..n {
                    a[k * np + i] = values(1, (k * 131 + i) as f32)[0];
                }
            }
            let (mut z, mut pre) = (vec![0.0; outputs * np], vec![0.0; outputs * np]);
            forward_layer(&w, &bias, inputs, &a, np, Some(act), Some(&mut pre), &mut z);
            let mut regions = [0usize; 4];
            for o in 0..outputs {
                for i in 0..n {
                    let want = bias[o] + (0..inputs).map(|k| w[o * inputs + k] * a[k * np + i]).sum::<f32>();
                    let got = pre[o * np + i];
                    assert!((got - want).abs() < 1e-4, "pre-activation ({o}, {i})");
                    assert_eq!(z[o * np + i].to_bits(), act.apply(got).to_bits(), "activation ({o}, {i})");
                    regions[usize::from(got > -1.5) + usize::from(got > 0.0) + usize::from(got > 1.5)] += 1;
                }
            }
            if n > 1 {
                assert!(regions.iter().all(|&r| r > 0), "every piece of HGELU is exercised: {regions:?}");
            }
            let mut dz = vec![0.0; outputs * np];
            for o in 0..outputs {
                for i in 0..n {
                    dz[o * np + i] = values(1, (o * 17 + i * 3) as f32)[0];
                }
            }
            let gate_pre: Vec<f32> = a.iter().map(|v| v * 4.0 - 1.0).collect();
            let mut da = vec![0.0; inputs * np];
            backward_inputs(&w, inputs, outputs, &dz, np, inputs, Some(Gate::Derivative(act, &gate_pre)), &mut da);
            for k in 0..inputs {
                for i in 0..n {
                    let sum: f32 = (0..outputs).map(|o| w[o * inputs + k] * dz[o * np + i]).sum();
                    let want = sum * act.derivative(gate_pre[k * np + i]);
                    assert!((da[k * np + i] - want).abs() < 1e-4, "backward ({k}, {i})");
                }
            }
            let (mut plain, mut plain_pre) = (vec![0.0; outputs * np], vec![0.0; outputs * np]);
            forward_imp(Plain, &w, &bias, inputs, &a, np, Some(act), Some(&mut plain_pre), &mut plain);
            assert_eq!((plain, plain_pre), (z, pre), "forward: plain arrays against the dispatched path");
            let mut plain = vec![0.0; inputs * np];
            backward_imp(Plain, &w, inputs, outputs, &dz, np, inputs, Some(Gate::Derivative(act, &gate_pre)), &mut plain);
            assert_eq!(plain, da, "backward: plain arrays against the dispatched path");
        }
    }

    /// `HGELUClamp`'s derivative is the slope of its definition everywhere but at its kinks.
    #[test]
    fn hgelu_derivative_is_its_slope() {
        let act = Activation::Hgelu;
        for i in -400..=400 {
            let z = i as f32 * 0.01 + 0.005;
            let h = 1e-3f32;
            let slope = (act.apply(z + h) - act.apply(z - h)) / (2.0 * h);
            assert!((slope - act.derivative(z)).abs() < 2e-3, "z {z}: slope {slope}, derivative {}", act.derivative(z));
        }
        // Exact in f32: the minimum, the zero side (−2 × 0: a negative zero), the identity piece
        // and the clamp.
        assert_eq!(act.apply(-0.75).to_bits(), (-3.0f32 / 16.0).to_bits());
        let bits = |z: f32| act.apply(z).to_bits();
        assert_eq!((bits(-2.0), bits(2.0), bits(10.0)), ((-0.0f32).to_bits(), 2.0f32.to_bits(), 3.0f32.to_bits()));
    }
}
