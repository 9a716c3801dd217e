//! The viewport's finished image drawn into a render pass as it is ([`ImageBlit`], `blit.wgsl`):
//! one rectangle, the image sampled nearest (1:1 with the screen) or bilinear (an image drawn at
//! a fraction of its side while the view moves), no blending and no colour arithmetic.
//!
//! Why not egui's own image: on a software GPU a frame costs the pixels it paints, and egui's
//! shader (a tint, sRGB-aware blending) is the slow path there. The viewport covers most of the
//! window and is drawn every frame (docs/decisions/052-viewport-image-blit.md has the timings).

use crate::GpuError;

/// WGSL of the blit: `vs_rect` and `fs_image`.
pub const BLIT_WGSL: &str = include_str!("blit.wgsl");

/// Size of `blit.wgsl`'s `Params`: two `vec2<f32>`.
const PARAMS_BYTES: u64 = 16;

/// The pipeline, and the last image uploaded.
pub struct ImageBlit {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    params: wgpu::Buffer,
    nearest: wgpu::Sampler,
    bilinear: wgpu::Sampler,
    /// Whether the target stores sRGB-encoded values the GPU converts (the image's texture is
    /// then an sRGB one, so that the bytes land as they are).
    srgb_target: bool,
    image: Option<Uploaded>,
}

/// The image on the GPU.
struct Uploaded {
    texture: wgpu::Texture,
    size: [u32; 2],
    bilinear: bool,
    bind_group: wgpu::BindGroup,
}

impl ImageBlit {
    /// The pipeline for colour targets of `target_format`.
    #[must_use]
    pub fn new(device: &wgpu::Device, target_format: wgpu::TextureFormat) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("texset viewport blit"),
            source: wgpu::ShaderSource::Wgsl(BLIT_WGSL.into()),
        });
        let pipeline = crate::triangle_pipeline(device, &module, "texset viewport blit", ["vs_rect", "fs_image"], &[target_format]);
        let layout = pipeline.get_bind_group_layout(0);
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("texset viewport blit params"),
            size: PARAMS_BYTES,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let sampler = |filter: wgpu::FilterMode| {
            device.create_sampler(&wgpu::SamplerDescriptor {
                label: Some("texset viewport blit"),
                mag_filter: filter,
                min_filter: filter,
                ..Default::default()
            })
        };
        Self {
            pipeline,
            layout,
            params,
            nearest: sampler(wgpu::FilterMode::Nearest),
            bilinear: sampler(wgpu::FilterMode::Linear),
            srgb_target: target_format.is_srgb(),
            image: None,
        }
    }

    /// Uploads `rgba` (`size`, tightly packed rows of 8-bit RGBA, sRGB-encoded as shown), to be
    /// sampled `bilinear` or nearest. A texture of the same size is written again in place.
    pub fn upload(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        size: [u32; 2],
        rgba: &[u8],
        bilinear: bool,
    ) -> Result<(), GpuError> {
        let [width, height] = size;
        let expected = u64::from(width) * u64::from(height) * 4;
        if width == 0 || height == 0 || rgba.len() as u64 != expected {
            return Err(GpuError::ImageBytes { width, height, expected, got: rgba.len() });
        }
        let limit = device.limits().max_texture_dimension_2d;
        if width.max(height) > limit {
            return Err(GpuError::DeviceLimit { what: "an image's side", got: u64::from(width.max(height)), limit: u64::from(limit) });
        }
        let reuse = self.image.as_ref().is_some_and(|i| i.size == size && i.bilinear == bilinear);
        if !reuse {
            let format = if self.srgb_target { wgpu::TextureFormat::Rgba8UnormSrgb } else { wgpu::TextureFormat::Rgba8Unorm };
            let texture = device.create_texture(&wgpu::TextureDescriptor {
                label: Some("texset viewport image"),
                size: wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                view_formats: &[],
            });
            let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
            let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("texset viewport blit"),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: self.params.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: wgpu::BindingResource::TextureView(&view) },
                    wgpu::BindGroupEntry {
                        binding: 2,
                        resource: wgpu::BindingResource::Sampler(if bilinear { &self.bilinear } else { &self.nearest }),
                    },
                ],
            });
            self.image = Some(Uploaded { texture, size, bilinear, bind_group });
        }
        let Some(image) = &self.image else { return Ok(()) };
        queue.write_texture(
            image.texture.as_image_copy(),
            rgba,
            wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(width * 4), rows_per_image: None },
            wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
        );
        Ok(())
    }

    /// Which part of the image the next draw spreads over its viewport: the image's coordinates
    /// at the viewport's top-left and bottom-right corners (`[0, 0]` and `[1, 1]`: all of it).
    pub fn set_uv(&self, queue: &wgpu::Queue, uv_min: [f32; 2], uv_max: [f32; 2]) {
        let values = [uv_min[0], uv_min[1], uv_max[0], uv_max[1]];
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        queue.write_buffer(&self.params, 0, &bytes);
    }

    /// Whether an image has been uploaded.
    #[must_use]
    pub fn has_image(&self) -> bool {
        self.image.is_some()
    }

    /// Draws the image over the pass's viewport (nothing before the first upload).
    pub fn draw(&self, pass: &mut wgpu::RenderPass<'_>) {
        let Some(image) = &self.image else { return };
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &image.bind_group, &[]);
        pass.draw(0..6, 0..1);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test: a failure is the message")]
mod tests {
    use super::*;
    use crate::{read_texture, request_device};

    /// Draws `image` through the blit into a `target_size` target of `format` with `uv`, and
    /// reads the target back.
    fn blit(image: (&[u8], [u32; 2]), format: wgpu::TextureFormat, target_size: [u32; 2], uv: ([f32; 2], [f32; 2])) -> Option<Vec<u8>> {
        let Some((_, device, queue)) = request_device().unwrap() else {
            eprintln!("SKIPPED: no wgpu adapter (the blit's parity test needs one; lavapipe will do)");
            return None;
        };
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut blit = ImageBlit::new(&device, format);
        blit.upload(&device, &queue, image.1, image.0, false).unwrap();
        blit.set_uv(&queue, uv.0, uv.1);
        let target = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("blit test"),
            size: wgpu::Extent3d { width: target_size[0], height: target_size[1], depth_or_array_layers: 1 },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        let view = target.create_view(&wgpu::TextureViewDescriptor::default());
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("blit test") });
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("blit test"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &view,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations { load: wgpu::LoadOp::Clear(wgpu::Color::RED), store: wgpu::StoreOp::Store },
                })],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            blit.draw(&mut pass);
        }
        Some(read_texture(&device, &queue, encoder, &target, target_size, 4, scope).unwrap())
    }

    /// A deterministic 8-bit RGBA image of `size`.
    fn image(size: [u32; 2]) -> Vec<u8> {
        (0..size[0] * size[1] * 4).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect()
    }

    /// The CPU reference of a nearest blit at 1:1 is the image itself, byte for byte, into a
    /// plain target and into an sRGB one (the bytes go through the sRGB texture unchanged).
    #[test]
    fn texture_blit_matches_the_image() {
        let size = [37, 23];
        let pixels = image(size);
        for format in [wgpu::TextureFormat::Rgba8Unorm, wgpu::TextureFormat::Rgba8UnormSrgb] {
            let Some(out) = blit((&pixels, size), format, size, ([0.0, 0.0], [1.0, 1.0])) else { return };
            assert_eq!(out, pixels, "{format:?}");
        }
    }

    /// A part of the image spread over the viewport (what is on screen when a panel covers the
    /// rest): the crop, byte for byte.
    #[test]
    fn a_uv_range_draws_that_part_of_the_image() {
        let size = [40, 20];
        let pixels = image(size);
        // Columns 10..30 and rows 5..15.
        let uv = ([10.0 / 40.0, 5.0 / 20.0], [30.0 / 40.0, 15.0 / 20.0]);
        let Some(out) = blit((&pixels, size), wgpu::TextureFormat::Rgba8Unorm, [20, 10], uv) else { return };
        let crop: Vec<u8> = (5..15).flat_map(|y| pixels[(y * 40 + 10) * 4..(y * 40 + 30) * 4].to_vec()).collect();
        assert_eq!(out, crop);
    }

    #[test]
    fn an_image_of_the_wrong_length_or_too_large_is_refused() {
        let Some((_, device, queue)) = request_device().unwrap() else {
            eprintln!("SKIPPED: no wgpu adapter");
            return;
        };
        let mut blit = ImageBlit::new(&device, wgpu::TextureFormat::Rgba8Unorm);
        let err = blit.upload(&device, &queue, [4, 4], &[0; 60], false).unwrap_err();
        assert!(err.to_string().contains("needs 64 bytes"), "{err}");
        let side = device.limits().max_texture_dimension_2d + 1;
        let err = blit.upload(&device, &queue, [side, 1], &vec![0; side as usize * 4], false).unwrap_err();
        assert!(err.to_string().contains("an image's side"), "{err}");
        assert!(!blit.has_image());
    }
}
