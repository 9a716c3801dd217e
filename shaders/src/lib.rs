//! texset GPU side. The WGSL decoder lands with the GPU-decoding issue; this crate is empty until then.
