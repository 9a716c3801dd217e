//! The hidden activation in the generated WGSL ([`crate::model::params::Activation`]): `ReLU` as
//! an inline `max`, `HGELUClamp` through small functions the generated module declares.

use super::MlpPrecision;
use super::emit::{Emitter, expr, name};
use crate::model::params::{Activation, HGELU_MAX};

/// The WGSL functions `activate` calls for `act` in `precision` (and in `f32`, which the int8
/// path and the GPU trainer compute in): none for `ReLU` (a `max`), `mlp_hgelu_{f32,f16}` and
/// `mlp_hgelu4_{f32,f16}` for `HGELUClamp`, [`Activation::apply`]'s arithmetic.
#[must_use]
pub fn activation_functions(act: Activation, precision: MlpPrecision) -> String {
    if act == Activation::Relu {
        return String::new();
    }
    let mut e = Emitter::new();
    let mut scalars = vec!["f32"];
    if precision.scalar() != "f32" {
        scalars.push(precision.scalar());
    }
    for s in scalars {
        let third = expr!("{:?}", 1.0f32 / 3.0);
        let max = expr!("{HGELU_MAX:?}");
        e.function(expr!("{}(z: {s}) -> {s}", name("mlp_hgelu", ("", s))));
        e.ret(expr!("min(z, {max}) * clamp(z * {third} + 0.5, 0.0, 1.0)"));
        e.close();
        let v = expr!("vec4<{s}>");
        e.function(expr!("{}(z: {v}) -> {v}", name("mlp_hgelu", ("4", s))));
        e.ret(expr!("min(z, {v}({max})) * clamp(z * {third} + {v}(0.5), {v}(0.0), {v}(1.0))"));
        e.close();
    }
    e.finish()
}

/// `act` of the WGSL expression `expr`, of type `ty` (`f32`, `f16`, `vec4<f32>` or `vec4<f16>`):
/// `ReLU` as `max(expr, 0)`, the others through [`activation_functions`]' functions.
#[must_use]
pub fn activate(act: Activation, expr: &str, ty: &str) -> String {
    let vector = ty.starts_with("vec4");
    match act {
        Activation::Relu if vector => expr!("max({expr}, {ty}(0.0))"),
        Activation::Relu => expr!("max({expr}, 0.0)"),
        Activation::Hgelu => {
            let scalar = ty.trim_start_matches("vec4<").trim_end_matches('>');
            expr!("{}({expr})", name("mlp_hgelu", (if vector { "4" } else { "" }, scalar)))
        }
    }
}

/// The derivative of `act` at the WGSL pre-activation `z` (a `vec4<f32>`), times `g` (a
/// `vec4<f32>`): [`Activation::derivative`], for the GPU trainer's backward pass. `ReLU` reads
/// its output `a` instead (`select(0, g, a > 0)`, the same where `z` is finite).
#[must_use]
pub fn activation_backward(act: Activation, g: &str, z: &str, a: &str) -> String {
    match act {
        Activation::Relu => expr!("select(vec4<f32>(0.0), {g}, {a} > vec4<f32>(0.0))"),
        Activation::Hgelu => {
            let slope = expr!("select({z} * {:?} + vec4<f32>(0.5), vec4<f32>(1.0), {z} >= vec4<f32>(1.5))", 2.0f32 / 3.0);
            let flat = expr!("{z} <= vec4<f32>(-1.5) | {z} >= vec4<f32>({HGELU_MAX:?})");
            expr!("{g} * select({slope}, vec4<f32>(0.0), {flat})")
        }
    }
}
