//! How the sides of an image share it ([`Layout`]: one view, two beside each other, or a wipe)
//! and the pass that draws them ([`side_by_side`]).

use super::color_attachments;

/// How the sides of an image share it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Layout {
    /// One view over the whole image.
    One,
    /// Two views beside each other, each half the width.
    Beside,
    /// Two views of the whole image through one camera, side 0 left of the split (a fraction of
    /// the width from the left) and side 1 right of it: a wipe.
    Wipe(f32),
}

impl Layout {
    /// One view, or `sides` (2) beside each other.
    #[must_use]
    pub fn beside(sides: usize) -> Self {
        if sides >= 2 { Self::Beside } else { Self::One }
    }

    /// How many sides it shows.
    #[must_use]
    pub fn sides(self) -> usize {
        match self {
            Self::One => 1,
            Self::Beside | Self::Wipe(_) => 2,
        }
    }

    /// Width / height of each side's view in an image of `size`.
    #[must_use]
    pub fn aspect(self, size: [u32; 2]) -> f32 {
        let width = match self {
            Self::Beside => size[0] as f32 / 2.0,
            Self::One | Self::Wipe(_) => size[0] as f32,
        };
        width / size[1].max(1) as f32
    }

    /// The column a wipe splits an image `width` pixels wide at (`None`: no wipe).
    #[must_use]
    pub fn split_px(self, width: u32) -> Option<u32> {
        match self {
            Self::Wipe(split) => Some((split.clamp(0.0, 1.0) * width as f32).round() as u32),
            Self::One | Self::Beside => None,
        }
    }

    /// Per side of an image `width` pixels wide: its viewport's left edge and width, and the
    /// columns it draws.
    pub(crate) fn columns(self, width: u32) -> Vec<([f32; 2], std::ops::Range<u32>)> {
        let full = width as f32;
        match self {
            Self::One => vec![([0.0, full], 0..width)],
            Self::Beside => {
                let half = width / 2;
                vec![([0.0, full / 2.0], 0..half), ([full / 2.0, full / 2.0], half..width)]
            }
            Self::Wipe(_) => {
                let split = self.split_px(width).unwrap_or(0);
                vec![([0.0, full], 0..split), ([0.0, full], split..width)]
            }
        }
    }
}

/// Records a pass over `targets` (each `size` = width × height) that draws the sides of `layout`,
/// each by `draw(pass, side)`, only within the pixel rows `rows` (the others keep their contents
/// unless `clear`), with the pass's `timestamps` where given.
#[allow(clippy::too_many_arguments, reason = "one pass's description: targets, size, layout, rows, clear and timestamps, and the draw")]
pub(crate) fn side_by_side(
    encoder: &mut wgpu::CommandEncoder,
    label: &str,
    targets: &[&wgpu::TextureView],
    size: [u32; 2],
    layout: Layout,
    rows: std::ops::Range<u32>,
    (clear, timestamps): (bool, Option<wgpu::RenderPassTimestampWrites<'_>>),
    mut draw: impl FnMut(&mut wgpu::RenderPass<'_>, usize),
) {
    let [width, height] = size;
    let load = if clear { wgpu::LoadOp::Clear(wgpu::Color::BLACK) } else { wgpu::LoadOp::Load };
    let attachments = color_attachments(targets, load);
    let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some(label),
        color_attachments: &attachments,
        depth_stencil_attachment: None,
        timestamp_writes: timestamps,
        occlusion_query_set: None,
        multiview_mask: None,
    });
    let first = rows.start.min(height);
    let last = rows.end.clamp(first, height);
    if last == first || width == 0 {
        return;
    }
    for (side, ([left, side_width], columns)) in layout.columns(width).into_iter().enumerate() {
        if columns.is_empty() {
            continue;
        }
        pass.set_scissor_rect(columns.start, first, columns.end - columns.start, last - first);
        pass.set_viewport(left, 0.0, side_width, height as f32, 0.0, 1.0);
        draw(&mut pass, side);
    }
}
