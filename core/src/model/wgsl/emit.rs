//! The one writer of generated WGSL (issue 69): every generator (the MLP's layers here, the
//! GPU trainer's gather, scatter, `mlp_train`, `wgrad` and fused gradients, texset-shaders'
//! constants and latent fetch) writes its text through an [`Emitter`], which owns statements,
//! braces and indentation, and names its values through [`name`] and the protocol names below,
//! which own how a value's indices become a WGSL identifier. Expressions are [`expr!`] templates
//! over those names; `scripts/check-rules.sh` fails a generator file that formats text itself or
//! glues a name by hand.
//!
//! The names the generators share (an activation is written by one and read by another):
//! - [`act`]`(p, l, j)`: texel `p`'s inputs `4j..4j + 4` of layer `l` (`x…`), a `vec4`;
//! - [`pre`]`(p, l, j)`: the same before the activation (`z…`), where the trainer keeps it;
//! - [`grad`]`(p, l, j)`: the loss's gradient at layer `l`'s outputs `4j..4j + 4` (`d…`);
//! - [`grad_in`]`(p, l, j)`: layer `l`'s gradient at its inputs, before the activation (`gin…`);
//! - [`outs`]`(p, l)`: the array a layer's loop stores texel `p`'s outputs to (`o…`).

use std::fmt::{Display, Write as _};

/// WGSL expression text from a `format!` template whose names come from [`name`] and the
/// protocol names: the one way a generator writes an expression.
#[doc(hidden)]
#[macro_export]
macro_rules! __texset_wgsl_expr {
    ($($arg:tt)*) => {
        ::std::format!($($arg)*)
    };
}
pub use crate::__texset_wgsl_expr as expr;

/// The indices a [`name`] carries: one value, or a tuple of two or three.
pub trait Indices {
    /// Appends the indices, `_` between them.
    fn append_to(self, out: &mut String);
}

macro_rules! single_index {
    ($($ty:ty),*) => {$(
        impl Indices for $ty {
            fn append_to(self, out: &mut String) {
                let _ = write!(out, "{self}");
            }
        }
    )*};
}
single_index!(u32, usize, &str);

impl<A: Display, B: Display> Indices for (A, B) {
    fn append_to(self, out: &mut String) {
        let _ = write!(out, "{}_{}", self.0, self.1);
    }
}

impl<A: Display, B: Display, C: Display> Indices for (A, B, C) {
    fn append_to(self, out: &mut String) {
        let _ = write!(out, "{}_{}_{}", self.0, self.1, self.2);
    }
}

/// A generated value's name: `stem` then its indices, `_` between them (`name("w", (2, 5))` is
/// `w2_5`).
#[must_use]
pub fn name(stem: &str, at: impl Indices) -> String {
    let mut out = stem.to_owned();
    at.append_to(&mut out);
    out
}

/// Texel `p`'s inputs `4j..4j + 4` of layer `l` (the previous layer's activated outputs).
#[must_use]
pub fn act(p: impl Display, l: impl Display, j: impl Display) -> String {
    name("x", (p, l, j))
}

/// [`act`] before the activation: the values the trainer's backward pass differentiates at.
#[must_use]
pub fn pre(p: impl Display, l: impl Display, j: impl Display) -> String {
    name("z", (p, l, j))
}

/// The loss's gradient at layer `l`'s outputs `4j..4j + 4`, texel `p`.
#[must_use]
pub fn grad(p: impl Display, l: impl Display, j: impl Display) -> String {
    name("d", (p, l, j))
}

/// Layer `l`'s gradient at its inputs `4j..4j + 4` (before the previous activation), texel `p`.
#[must_use]
pub fn grad_in(p: impl Display, l: impl Display, j: impl Display) -> String {
    name("gin", (p, l, j))
}

/// The array layer `l`'s loop stores texel `p`'s outputs to.
#[must_use]
pub fn outs(p: impl Display, l: impl Display) -> String {
    name("o", (p, l))
}

/// `@group({group}) @binding({binding}) var`: how every generated binding begins (texset-shaders
/// moves a module's bindings by this text).
#[must_use]
pub fn binding_attributes(group: u32, binding: u32) -> String {
    expr!("@group({group}) @binding({binding}) var")
}

/// Generated WGSL being written: statements at the current depth (four spaces a level), blocks
/// opened and closed in pairs.
#[derive(Debug, Default)]
pub struct Emitter {
    text: String,
    depth: usize,
}

impl Emitter {
    /// An empty module.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A module that begins with the comment `// {text}`.
    #[must_use]
    pub fn with_comment(text: impl Display) -> Self {
        let mut e = Self::new();
        e.comment(text);
        e
    }

    /// The text written; every block must be closed.
    #[must_use]
    pub fn finish(self) -> String {
        debug_assert_eq!(self.depth, 0, "an unclosed block in generated WGSL:\n{}", self.text);
        self.text
    }

    fn line(&mut self, text: impl Display) {
        for _ in 0..self.depth {
            self.text.push_str("    ");
        }
        let _ = writeln!(self.text, "{text}");
    }

    /// `// {text}`.
    pub fn comment(&mut self, text: impl Display) {
        self.line(format_args!("// {text}"));
    }

    /// Text written as it is: a fixed WGSL file, or what another emitter finished.
    pub fn verbatim(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// `let {name} = {value};`
    pub fn let_(&mut self, name: impl Display, value: impl Display) {
        self.line(format_args!("let {name} = {value};"));
    }

    /// `var {name}: {ty};`
    pub fn var(&mut self, name: impl Display, ty: impl Display) {
        self.line(format_args!("var {name}: {ty};"));
    }

    /// `var {name} = {value};`
    pub fn var_init(&mut self, name: impl Display, value: impl Display) {
        self.line(format_args!("var {name} = {value};"));
    }

    /// `{target} = {value};`
    pub fn set(&mut self, target: impl Display, value: impl Display) {
        self.line(format_args!("{target} = {value};"));
    }

    /// `{target} += {value};`
    pub fn add(&mut self, target: impl Display, value: impl Display) {
        self.line(format_args!("{target} += {value};"));
    }

    /// `{target} -= {value};`
    pub fn sub(&mut self, target: impl Display, value: impl Display) {
        self.line(format_args!("{target} -= {value};"));
    }

    /// `return;`
    pub fn ret_void(&mut self) {
        self.line("return;");
    }

    /// `if {condition} { {target} = {value}; }` on one line.
    pub fn set_if(&mut self, condition: impl Display, target: impl Display, value: impl Display) {
        self.line(format_args!("if {condition} {{ {target} = {value}; }}"));
    }

    /// `{call};`
    pub fn call(&mut self, call: impl Display) {
        self.line(format_args!("{call};"));
    }

    /// `return {value};`
    pub fn ret(&mut self, value: impl Display) {
        self.line(format_args!("return {value};"));
    }

    /// `const {name}: {ty} = {value};`
    pub fn constant(&mut self, name: impl Display, ty: impl Display, value: impl Display) {
        self.line(format_args!("const {name}: {ty} = {value};"));
    }

    /// `const {name}: u32 = {value}u;` (`value` an unsigned integer).
    pub fn constant_u32(&mut self, name: impl Display, value: impl Display) {
        self.line(format_args!("const {name}: u32 = {value}u;"));
    }

    /// `const {name}: f32 = {value};`, `value` written so that it reads back to the same bits.
    pub fn constant_f32(&mut self, name: impl Display, value: f32) {
        self.line(format_args!("const {name}: f32 = {value:?};"));
    }

    /// `const {name} = {value};`, its type the value's.
    pub fn constant_inferred(&mut self, name: impl Display, value: impl Display) {
        self.line(format_args!("const {name} = {value};"));
    }

    /// `var<private> {name}: {ty} = {value};`
    pub fn private(&mut self, name: impl Display, ty: impl Display, value: impl Display) {
        self.line(format_args!("var<private> {name}: {ty} = {value};"));
    }

    /// A module-scope declaration, `{declaration};` (a binding, a workgroup array).
    pub fn declare(&mut self, declaration: impl Display) {
        self.line(format_args!("{declaration};"));
    }

    /// `struct {name} { {field}: {ty}, … }`.
    pub fn structure<F: Display, T: Display>(&mut self, name: impl Display, fields: impl IntoIterator<Item = (F, T)>) {
        self.open(format_args!("struct {name}"));
        for (field, ty) in fields {
            self.line(format_args!("{field}: {ty},"));
        }
        self.close();
    }

    /// `fn {signature} {`, closed by [`Emitter::close`].
    pub fn function(&mut self, signature: impl Display) {
        self.open(format_args!("fn {signature}"));
    }

    /// `for (var {index} = 0u; {index} < {end}; {index}++) {`, closed by [`Emitter::close`].
    pub fn for_range(&mut self, index: impl Display, end: impl Display) {
        self.open(format_args!("for (var {index} = 0u; {index} < {end}; {index}++)"));
    }

    /// `if {condition} {`, closed by [`Emitter::close`].
    pub fn if_(&mut self, condition: impl Display) {
        self.open(format_args!("if {condition}"));
    }

    /// `{head} {`, a block closed by [`Emitter::close`].
    pub fn open(&mut self, head: impl Display) {
        self.line(format_args!("{head} {{"));
        self.depth += 1;
    }

    /// `}`: the innermost block's end.
    pub fn close(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        self.line("}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_indent_their_statements_and_names_join_their_indices() {
        let mut e = Emitter::with_comment("generated");
        e.function("f(a: u32) -> u32");
        e.for_range("q", "4u");
        e.let_(act(0u32, 1usize, 2u32), expr!("{} + {}u", name("w", (3u32, 4u32)), 5));
        e.close();
        e.ret("a");
        e.close();
        assert_eq!(
            e.finish(),
            "// generated\nfn f(a: u32) -> u32 {\n    for (var q = 0u; q < 4u; q++) {\n        let x0_1_2 = w3_4 + 5u;\n    }\n    return a;\n}\n"
        );
        assert_eq!(
            (pre(1, 2, 3), grad(1, 2, 3), grad_in(1, 2, 3), outs(4, 5)),
            ("z1_2_3".into(), "d1_2_3".into(), "gin1_2_3".into(), "o4_5".into())
        );
        assert_eq!(name("mlp_hgelu", ("4", "f32")), "mlp_hgelu4_f32");
    }
}
