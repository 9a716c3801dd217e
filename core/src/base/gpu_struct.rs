//! Structs shared with WGSL, declared once ([`gpu_struct!`]).

/// Declares a struct a shader reads, once: `#[repr(C)]`, every field a 4-byte scalar (`u32`,
/// `i32`, `f32`), with `FIELDS` (each field's name and byte offset: what the WGSL struct of the
/// same name must hold, which a test compares with naga's layout of the shader) and `bytes()`
/// (the little-endian bytes a buffer upload takes: the fields in order, as `#[repr(C)]` lays
/// 4-byte fields out).
macro_rules! gpu_struct {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($(#[$fmeta:meta])* $field:ident : $ty:ty,)* }) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        $vis struct $name { $($(#[$fmeta])* $field: $ty,)* }

        impl $name {
            /// Each field's name and byte offset, in order.
            #[cfg_attr(not(test), expect(dead_code, reason = "read by the layout tests"))]
            pub(crate) const FIELDS: &'static [(&'static str, usize)] =
                &[$((stringify!($field), ::std::mem::offset_of!($name, $field)),)*];

            /// The bytes a buffer upload takes.
            pub(crate) fn bytes(&self) -> Vec<u8> {
                let mut out = Vec::with_capacity(::std::mem::size_of::<Self>());
                $(out.extend_from_slice(&self.$field.to_le_bytes());)*
                out
            }
        }
    };
}
pub(crate) use gpu_struct;

/// The members of struct `name` in WGSL `source` as naga lays them out: each member's name and
/// byte offset, and the struct's size. `None` if the source does not parse or has no such struct.
#[cfg(test)]
pub(crate) fn wgsl_struct_layout(source: &str, name: &str) -> Option<(Vec<(String, usize)>, usize)> {
    let module = wgpu::naga::front::wgsl::parse_str(source).ok()?;
    module.types.iter().find_map(|(_, ty)| match &ty.inner {
        wgpu::naga::TypeInner::Struct { members, span } if ty.name.as_deref() == Some(name) => {
            Some((members.iter().map(|m| (m.name.clone().unwrap_or_default(), m.offset as usize)).collect(), *span as usize))
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    gpu_struct! {
        /// A struct of the shape a shader reads.
        struct Probe {
            a: u32,
            b: f32,
            c: u32,
        }
    }

    #[test]
    fn a_gpu_struct_lays_out_as_wgsl_does() {
        let probe = Probe { a: 1, b: 2.0, c: 3 };
        assert_eq!(probe.bytes(), [1u32.to_le_bytes(), 2f32.to_le_bytes(), 3u32.to_le_bytes()].concat());
        let wgsl = "struct Probe { a: u32, b: f32, c: u32 }\n@group(0) @binding(0) var<uniform> p: Probe;";
        let (members, size) = super::wgsl_struct_layout(wgsl, "Probe").expect("parses");
        let ours: Vec<(String, usize)> = Probe::FIELDS.iter().map(|&(n, o)| (n.to_owned(), o)).collect();
        assert_eq!(members, ours);
        assert_eq!(size, std::mem::size_of::<Probe>());
        // A member out of place is told apart.
        let swapped = "struct Probe { b: f32, a: u32, c: u32 }";
        assert_ne!(super::wgsl_struct_layout(swapped, "Probe").expect("parses").0, ours);
    }
}
