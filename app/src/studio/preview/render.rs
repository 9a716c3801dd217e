//! `texset-preview`, the preview's render thread: it prepares models, uploads the original maps
//! and draws images in bands of rows on a device of its own, so no frame of the UI waits for it
//! (the module above says why and how the scale is chosen).

use super::{BAND_BUDGET_MS, MOVING_IMAGE_MS, ModelInput, Reply, Request, SCALES, SETTLE, Shows, Source, TARGET_FORMAT, View};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};
use texset_core::{bundle::Bundle, snapshot_bundle};
use texset_shaders::preview::{Originals, PreparedModel, PreviewRenderer, PreviewUniforms, encode_sides, read_rgba8};

/// The image being drawn on the render thread.
struct Drawing {
    shows: Shows,
    scale: f32,
    size: [u32; 2],
    texture: wgpu::Texture,
    view: wgpu::TextureView,
    next_row: u32,
}

/// `texset-preview`: prepares models, uploads originals and draws images on its own device.
pub(super) struct RenderThread {
    device: wgpu::Device,
    queue: wgpu::Queue,
    replies: Sender<Reply>,
    repaint: Arc<dyn Fn() + Send + Sync>,
    bands: Arc<AtomicU64>,
    renderers: [Option<PreviewRenderer>; 2],
    models: [Option<(Source, Arc<Bundle>)>; 2],
    originals_of: Option<(usize, usize)>,
    view: Option<View>,
    view_since: Instant,
    /// What the last image sent shows, and its scale.
    sent: Option<(Shows, f32)>,
    drawing: Option<Drawing>,
    /// Measured GPU time per pixel, nanoseconds (moving average).
    ns_per_pixel: f64,
}

impl RenderThread {
    pub(super) fn new(
        device: wgpu::Device,
        queue: wgpu::Queue,
        replies: Sender<Reply>,
        repaint: Arc<dyn Fn() + Send + Sync>,
        bands: Arc<AtomicU64>,
    ) -> Self {
        Self {
            device,
            queue,
            replies,
            repaint,
            bands,
            renderers: [None, None],
            models: [None, None],
            originals_of: None,
            view: None,
            view_since: Instant::now(),
            sent: None,
            drawing: None,
            // A first guess (a software GPU's), corrected by the first band.
            ns_per_pixel: 2000.0,
        }
    }

    fn reply(&self, reply: Reply) -> bool {
        let sent = self.replies.send(reply).is_ok();
        (self.repaint)();
        sent
    }

    /// Runs until the UI side is dropped.
    pub(super) fn run(mut self, requests: &Receiver<Request>) {
        loop {
            // Wait for work when there is nothing to draw; otherwise only look.
            let idle = self.next_image().is_none() && self.drawing.is_none();
            // A view still settling wants its full-resolution image once it has rested: when the
            // image at the moving scale finished sooner than that, wake then, not at the next
            // request (which may never come: the lights stopped).
            let settling = self.view.is_some().then(|| SETTLE.saturating_sub(self.view_since.elapsed())).filter(|d| !d.is_zero());
            let first = match (idle, settling) {
                (false, _) => None,
                (true, Some(wait)) => match requests.recv_timeout(wait) {
                    Ok(r) => Some(r),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                },
                (true, None) => match requests.recv() {
                    Ok(r) => Some(r),
                    Err(_) => return,
                },
            };
            for request in first.into_iter().chain(requests.try_iter()) {
                if !self.take(request) {
                    return;
                }
            }
            if !self.step() {
                return;
            }
        }
    }

    /// Takes in one request; false when the UI side is gone.
    fn take(&mut self, request: Request) -> bool {
        match request {
            Request::Model(slot, source, input) => {
                let bundle = match input {
                    ModelInput::Bundle(b) => Ok(b),
                    ModelInput::Placeholder(set, layout) => {
                        snapshot_bundle(&set, &layout, &layout.zero_params()).map(Arc::new).map_err(|e| e.to_string())
                    }
                };
                let reuse = self.renderers[slot].as_ref().map(PreviewRenderer::prepared);
                let prepared = bundle
                    .and_then(|b| PreparedModel::new(&self.device, &b, TARGET_FORMAT, reuse).map(|p| (p, b)).map_err(|e| e.to_string()));
                let result = prepared.map(|(p, bundle)| {
                    if let Some(r) = &mut self.renderers[slot] {
                        r.set_prepared(&self.device, p);
                    } else {
                        self.renderers[slot] = Some(PreviewRenderer::from_prepared(&self.device, p));
                        if slot == 0 {
                            self.originals_of = None;
                        }
                    }
                    self.models[slot] = Some((source, bundle));
                });
                self.reply(Reply::Model(slot, source, result))
            }
            Request::Originals(of, set) => {
                let Some(m) = set.materials.get(of.1) else { return true };
                // Manifest order is the set's order (pack writes maps as ingest sorted them).
                let maps: Vec<(u32, u32, u32, &[f32])> =
                    m.textures.iter().map(|t| (t.width, t.height, t.channels, t.texels.as_slice())).collect();
                let originals = Originals::from_maps(&maps);
                if let Some(r) = &mut self.renderers[0] {
                    match r.set_originals(&self.device, &self.queue, &originals) {
                        Ok(()) => self.originals_of = Some(of),
                        Err(e) => return self.reply(Reply::Error(e.to_string())),
                    }
                }
                true
            }
            Request::View(view) => {
                if self.view != Some(view) {
                    self.view = Some(view);
                    self.view_since = Instant::now();
                }
                true
            }
        }
    }

    /// What the next image should show, and at what scale (`None`: the last one sent will do).
    fn next_image(&self) -> Option<(Shows, f32)> {
        let view = self.view?;
        let (_, bundle) = self.models[0].as_ref()?;
        if view.material >= bundle.manifest.materials.len() {
            return None;
        }
        let ab = view.ab && self.models[1].is_some();
        let decoded = !matches!(self.models[0], Some((Source::Originals(_), _)));
        let sides = if ab || (decoded && view.show_original) { 2 } else { 1 };
        let sources = [self.models[0].as_ref().map(|m| m.0), if ab { self.models[1].as_ref().map(|m| m.0) } else { None }];
        let shows = Shows { view: View { ab, ..view }, sources, sides, originals_of: self.originals_of };
        let moving = self.view_since.elapsed() < SETTLE;
        let full_pixels = f64::from(view.size[0]) * f64::from(view.size[1]);
        let scale = if moving {
            SCALES.iter().copied().find(|s| self.ns_per_pixel * full_pixels * f64::from(s * s) / 1e6 <= MOVING_IMAGE_MS).unwrap_or(0.125)
        } else {
            1.0
        };
        match &self.sent {
            Some((s, sc)) if *s == shows && *sc >= scale => None,
            _ => Some((shows, scale)),
        }
    }

    /// The uniforms of side `side` of `shows`, from the models' manifests.
    fn uniforms(&self, shows: &Shows, side: usize) -> Option<PreviewUniforms> {
        let v = shows.view;
        let slot = if shows.view.ab { side } else { 0 };
        let (_, bundle) = self.models[slot].as_ref()?;
        let mut u =
            PreviewUniforms::new(&bundle.manifest, v.material, v.light_angle, v.light_intensity, v.shape, 1.0).with_srgb_encoding(true);
        if bundle.manifest.mip_levels > 1 {
            // Each side is a square of `size[1]` pixels: filter by level of detail so a shape that
            // shows the texture smaller than its texels does not shimmer.
            u = u.with_lod_filter(v.size[1] as f32);
        }
        let originals = matches!(shows.sources[0], Some(Source::Originals(_))) || (!shows.view.ab && side == 1);
        Some(u.with_originals(originals))
    }

    /// Draws one band (starting an image first if needed); false when the UI side is gone.
    fn step(&mut self) -> bool {
        // A full-resolution image under way for a view that moved on is dropped if finishing it
        // would take long; an image drawn at the moving scale always finishes (so a view that
        // keeps moving still gets images).
        if let (Some(d), Some((next, next_scale))) = (&self.drawing, self.next_image())
            && d.shows != next
            && d.scale > next_scale
        {
            let left_pixels = f64::from(d.size[1].saturating_sub(d.next_row)) * f64::from(d.size[0]);
            if self.ns_per_pixel * left_pixels / 1e6 > MOVING_IMAGE_MS {
                self.drawing = None;
            }
        }
        if self.drawing.is_none() {
            let Some((shows, scale)) = self.next_image() else { return true };
            self.start(shows, scale);
        }
        let Some(d) = &self.drawing else { return true };
        let sides: Vec<(&PreviewRenderer, usize)> = if d.shows.view.ab {
            self.renderers.iter().flatten().map(|r| (r, 0)).collect()
        } else {
            self.renderers[0].iter().flat_map(|r| [(r, 0), (r, 1)]).take(d.shows.sides).collect()
        };
        if sides.len() != d.shows.sides {
            self.drawing = None;
            return true;
        }
        let [width, height] = d.size;
        let rows_fit = (BAND_BUDGET_MS * 1e6 / (self.ns_per_pixel * f64::from(width))).floor();
        let rows = (rows_fit.clamp(1.0, f64::from(height)) as u32).min(height - d.next_row);
        let start = Instant::now();
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset preview band") });
        encode_sides(&mut encoder, &d.view, d.size, &sides, d.next_row..d.next_row + rows, d.next_row == 0);
        let submission = self.queue.submit(Some(encoder.finish()));
        if let Err(e) = self.device.poll(wgpu::PollType::Wait { submission_index: Some(submission), timeout: None }) {
            self.drawing = None;
            return self.reply(Reply::Error(format!("the preview's GPU work failed: {e}")));
        }
        let elapsed = start.elapsed();
        // The first band with a new pipeline includes the driver's compile: not a per-pixel cost.
        let ns = elapsed.as_nanos() as f64 / (f64::from(rows) * f64::from(width)).max(1.0);
        self.ns_per_pixel = if self.bands.load(Ordering::Relaxed) == 0 { ns.min(20_000.0) } else { 0.7 * self.ns_per_pixel + 0.3 * ns };
        self.bands.fetch_add(1, Ordering::Relaxed);
        let finished = {
            let Some(d) = &mut self.drawing else { return true };
            d.next_row += rows;
            d.next_row >= d.size[1]
        };
        if finished && let Some(d) = self.drawing.take() {
            match read_rgba8(&self.device, &self.queue, &d.texture, d.size) {
                Ok(rgba) => {
                    self.sent = Some((d.shows, d.scale));
                    if !self.reply(Reply::Image(d.shows, d.scale, d.size, rgba)) {
                        return false;
                    }
                }
                Err(e) => return self.reply(Reply::Error(e.to_string())),
            }
        }
        // Rest as long as the band took: the UI and training keep half the machine.
        std::thread::sleep(elapsed.min(Duration::from_millis(100)));
        true
    }

    /// Starts an image of `shows` at `scale`: a target, and the uniforms of its sides.
    fn start(&mut self, shows: Shows, scale: f32) {
        let size = [
            ((shows.view.size[0] as f32 * scale).round() as u32).max(shows.sides as u32),
            ((shows.view.size[1] as f32 * scale).round() as u32).max(1),
        ];
        for side in 0..shows.sides {
            let Some(u) = self.uniforms(&shows, side) else { return };
            let (renderer, slot) = if shows.view.ab { (side, 0) } else { (0, side) };
            if let Some(r) = &self.renderers[renderer] {
                r.write_uniforms(&self.queue, slot, &u);
            }
        }
        let texture = self.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("texset preview image"),
            size: wgpu::Extent3d { width: size[0], height: size[1], depth_or_array_layers: 1 },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: TARGET_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
        self.drawing = Some(Drawing { shows, scale, size, texture, view, next_row: 0 });
    }
}
