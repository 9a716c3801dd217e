//! `texset-preview`, the preview's render thread: it prepares models, uploads the original maps
//! and draws images on a device of its own, so no frame of the UI waits for it (the module above
//! says why and how the scale is chosen).
//!
//! An image takes three passes: the surface pass finds the surface under every pixel (a shape
//! ray-cast, or the library's meshes rasterised); the material pass decodes the material on it
//! into a G-buffer, in bands of rows; the shading pass lights it. Lights that move only shade
//! again, so the image keeps the G-buffer's scale while they orbit; the G-buffer is drawn anew
//! when the model, the material, the shape, the camera or the size changes, and climbs to full
//! resolution meanwhile.

use super::{
    BAND_BUDGET_MS, IMAGE_INTERVAL, MOVING_IMAGE_MS, MapsKey, ModelInput, Reply, Request, SCALES, SETTLE, Shows, SideSource, Source,
    TARGET_FORMAT, View,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};
use texset_core::{bundle::Bundle, snapshot_bundle};
use texset_shaders::preview::{
    GBuffer, GpuMesh, Lighting, MaterialRenderer, Originals, PreparedMaterial, PreviewUniforms, Probe, ShadePass, SurfacePass,
    encode_material, read_rgba8,
};

/// GPU time the decode of a new snapshot's G-buffer may take (the last one stays on screen
/// meanwhile, at its scale), milliseconds.
const SNAPSHOT_DECODE_MS: f64 = 1000.0;

/// The largest scale a G-buffer climbs to while the lights move: the full resolution's decode
/// (four times this one's) waits until they rest, leaving the cores to training and the UI.
const MOVING_MAX_SCALE: f32 = 0.5;

/// A G-buffer: what it holds (an image's [`Shows`] with the lights left out: see [`unlit`]), at
/// what scale, and how many of its rows are decoded.
struct Decoding {
    holds: Shows,
    scale: f32,
    gbuffer: GBuffer,
    next_row: u32,
}

/// Whether `a` and `b` ask the same of the surface and material passes but for the snapshot of
/// the models (their sources).
fn same_but_snapshot(a: &Shows, b: &Shows) -> bool {
    Shows { sources: b.sources, ..*a } == *b
}

/// What `shows` asks of the surface and material passes: everything but the lighting.
fn unlit(shows: &Shows) -> Shows {
    Shows { view: lights_left_out(&shows.view), ..*shows }
}

/// `view` with what only the shading pass reads (the lights, the environment's lighting) left out.
fn lights_left_out(view: &View) -> View {
    View { light_angle: 0.0, light_intensity: 0.0, lighting: Lighting::default(), environment: 0, ..*view }
}

/// `texset-preview`: prepares models, uploads originals and draws images on its own device.
pub(super) struct RenderThread {
    device: wgpu::Device,
    queue: wgpu::Queue,
    replies: Sender<Reply>,
    repaint: Arc<dyn Fn() + Send + Sync>,
    bands: Arc<AtomicU64>,
    renderers: [Option<MaterialRenderer>; 2],
    surface: SurfacePass,
    shade: ShadePass,
    /// The library's meshes on this device, and the materials each can wear.
    mesh: Option<(GpuMesh, Arc<Vec<Vec<usize>>>)>,
    models: [Option<(Source, Arc<Bundle>)>; 2],
    /// The maps each renderer's texture holds (uploaded again to a renderer made anew).
    maps: [Option<(MapsKey, Arc<Originals>)>; 2],
    view: Option<View>,
    /// When the material pass's part of the view (not the lights) last changed.
    view_since: Instant,
    /// When the view (the lights too) last changed.
    lights_since: Instant,
    /// What the last image sent shows, and its scale.
    sent: Option<(Shows, f32)>,
    /// The last G-buffer decoded whole, and the one being decoded.
    front: Option<Decoding>,
    back: Option<Decoding>,
    /// Measured GPU time per pixel of the material pass, nanoseconds (moving average).
    ns_per_pixel: f64,
    /// When the last image was sent.
    last_image: Instant,
}

impl RenderThread {
    pub(super) fn new(
        device: wgpu::Device,
        queue: wgpu::Queue,
        replies: Sender<Reply>,
        repaint: Arc<dyn Fn() + Send + Sync>,
        bands: Arc<AtomicU64>,
    ) -> Self {
        // No decoder in it: compiled in a moment on any driver.
        let shade = ShadePass::new(&device, TARGET_FORMAT);
        let surface = SurfacePass::new(&device);
        Self {
            device,
            queue,
            replies,
            repaint,
            bands,
            renderers: [None, None],
            surface,
            shade,
            mesh: None,
            models: [None, None],
            maps: [None, None],
            view: None,
            view_since: Instant::now(),
            lights_since: Instant::now(),
            sent: None,
            front: None,
            back: None,
            // A first guess (a software GPU's), corrected by the first band.
            ns_per_pixel: 2000.0,
            last_image: Instant::now(),
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
            let idle = self.next_image().is_none() && self.next_decode().is_none() && self.back.is_none();
            // A view still settling wants its full-resolution image once it has rested: when the
            // image at the moving scale finished sooner than that, wake then, not at the next
            // request (which may never come: the lights stopped).
            let settling = self.view.is_some().then(|| SETTLE.saturating_sub(self.lights_since.elapsed())).filter(|d| !d.is_zero());
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
                let result = self.take_model(slot, source, input);
                self.reply(Reply::Model(slot, source, result))
            }
            Request::Maps(slot, key, set, bcn) => {
                let Some(m) = set.materials.get(key.material) else { return true };
                // Manifest order is the set's order (pack writes maps as ingest sorted them). A
                // block-compressed side's texture holds its maps, then the originals (the error
                // view's reference).
                let mut maps: Vec<(u32, u32, u32, &[f32])> = Vec::new();
                if let Some(bcn) = &bcn {
                    maps.extend(
                        m.textures.iter().zip(bcn).map(|(t, b)| (t.info.width, t.info.height, t.info.channels, b.values.as_slice())),
                    );
                }
                maps.extend(m.textures.iter().map(|t| (t.info.width, t.info.height, t.info.channels, t.texels.as_slice())));
                let originals = Arc::new(Originals::from_maps(&maps));
                self.maps[slot.min(1)] = Some((key, originals));
                self.upload_maps(slot)
            }
            Request::Meshes(meshes, transforms, wears) => {
                // Whatever was drawn of the meshes before is stale.
                (self.front, self.back, self.sent) = (None, None, None);
                self.mesh = None;
                if meshes.is_empty() {
                    return true;
                }
                match GpuMesh::new(&self.device, &meshes, &transforms) {
                    Ok(mesh) => self.mesh = Some((mesh, wears)),
                    Err(e) => return self.reply(Reply::Error(format!("the asset's meshes: {e}"))),
                }
                true
            }
            Request::Environment(prepared) => {
                if let Err(e) = self.shade.set_environment(&self.device, &self.queue, &prepared) {
                    return self.reply(Reply::Error(format!("the environment: {e}")));
                }
                // The image on screen was lit by the last one.
                self.sent = None;
                true
            }
            Request::View(view) => {
                let lights_only = self.view.is_some_and(|v| lights_left_out(&v) == lights_left_out(&view));
                if !lights_only {
                    self.view_since = Instant::now();
                }
                if self.view != Some(view) {
                    self.lights_since = Instant::now();
                }
                self.view = Some(view);
                true
            }
        }
    }

    /// What the next image should show (`None`: nothing to show yet): every side's model and
    /// maps are there. A decoded side takes any snapshot of the bundle (the newest arrives in its
    /// place); a side that reads maps takes the library's model (the bundle or a placeholder).
    fn wanted(&self) -> Option<Shows> {
        let view = self.view?;
        let mut sources = [None, None];
        for (slot, side) in view.sides.iter().enumerate() {
            let Some(side) = *side else { continue };
            let (source, bundle) = self.models[slot].as_ref()?;
            let model_fits = match side {
                SideSource::Decoded => matches!(source, Source::Decoded(_)),
                SideSource::Run(id) => *source == Source::Run(id),
                SideSource::Original | SideSource::Bcn => !matches!(source, Source::Run(_)),
            };
            let maps = MapsKey { library: view.library, material: view.material, bcn: side == SideSource::Bcn };
            let maps_fit = self.maps[slot].as_ref().is_some_and(|(key, _)| *key == maps);
            if !model_fits || !maps_fit || view.material >= bundle.manifest.materials.len() {
                return None;
            }
            sources[slot] = Some(*source);
        }
        Some(Shows { view, sources })
    }

    /// The image to shade next, at the scale of the G-buffer it lights (`None`: no G-buffer holds
    /// what the view shows, or the last image sent is it).
    /// The last G-buffer decoded is lit with the lights of the view asked for, whatever it holds
    /// (an older snapshot of the models, or the camera of a moment ago while it moves: what the
    /// image shows says so), until a newer one is decoded.
    fn next_image(&self) -> Option<(Shows, f32)> {
        let wanted = self.wanted()?;
        let front = self.front.as_ref()?;
        let v = wanted.view;
        let view = View {
            light_angle: v.light_angle,
            light_intensity: v.light_intensity,
            lighting: v.lighting,
            environment: v.environment,
            ..front.holds.view
        };
        let shows = Shows { view, sources: front.holds.sources };
        (self.sent != Some((shows, front.scale))).then_some((shows, front.scale))
    }

    /// The largest scale whose whole material pass fits `budget_ms` by the measured cost.
    fn scale_within(&self, full_pixels: f64, budget_ms: f64) -> f32 {
        SCALES.iter().copied().find(|s| self.ns_per_pixel * full_pixels * f64::from(s * s) / 1e6 <= budget_ms).unwrap_or(0.125)
    }

    /// The G-buffer to decode next, and its scale (`None`: the one on screen is complete at full
    /// resolution). A new material, shape or size is decoded first at the scale that fits
    /// [`MOVING_IMAGE_MS`] (full resolution once it has settled, where an image is on screen
    /// already); a new snapshot of the model shown at the scale on screen, within
    /// [`SNAPSHOT_DECODE_MS`]; then each scale above in turn, up to [`MOVING_MAX_SCALE`] while
    /// the lights move.
    fn next_decode(&self) -> Option<(Shows, f32)> {
        let holds = unlit(&self.wanted()?);
        let full_pixels = f64::from(holds.view.size[0]) * f64::from(holds.view.size[1]);
        let settled = self.view_since.elapsed() >= SETTLE;
        let top = if self.lights_since.elapsed() >= SETTLE { 1.0 } else { MOVING_MAX_SCALE };
        let scale = match &self.front {
            Some(f) if f.holds == holds => SCALES.iter().rev().copied().find(|&s| s > f.scale).filter(|&s| s <= top)?,
            Some(f) if Shows { sources: holds.sources, ..f.holds } == holds => {
                f.scale.min(self.scale_within(full_pixels, SNAPSHOT_DECODE_MS)).max(self.scale_within(full_pixels, MOVING_IMAGE_MS))
            }
            // A view still, over an image of another: at full resolution at once. With nothing on
            // screen yet, the first image comes at the moving scale and climbs.
            Some(_) if settled => 1.0,
            _ => self.scale_within(full_pixels, MOVING_IMAGE_MS),
        };
        Some((holds, scale))
    }

    /// The uniforms of side `side` of `shows`, from its model's manifest.
    fn uniforms(&self, shows: &Shows, side: usize) -> Option<PreviewUniforms> {
        let v = shows.view;
        let source = v.sides.get(side).copied().flatten()?;
        let (_, bundle) = self.models.get(side)?.as_ref()?;
        let u = PreviewUniforms::new(&bundle.manifest, v.material, v.light_angle, v.light_intensity, v.shape, v.layout.aspect(v.size))
            .with_camera(&v.camera)
            .with_srgb_encoding(true)
            // Each side is `size[1]` pixels high: filter by level of detail so a surface that
            // shows the texture smaller than its texels does not shimmer (a bundle without mips
            // decodes level 0 whatever the level), and give the mip view its footprint.
            .with_lod_filter(v.size[1] as f32);
        // A block-compressed side finds the originals after its own maps.
        let reference_offset = match source {
            SideSource::Bcn => bundle.manifest.materials.get(v.material).map_or(0, |m| m.maps.len() as u32),
            _ => 0,
        };
        let probe = match v.probe {
            Probe::Error { map, .. } => Probe::Error { map, reference_offset },
            other => other,
        };
        Some(u.with_originals(matches!(source, SideSource::Original | SideSource::Bcn)).with_probe(probe))
    }

    /// Prepares `source`'s model for renderer `slot`: the other renderer's when it holds the
    /// same, else compiled (unless a snapshot of the same shapes was: the pipelines are reused).
    fn take_model(&mut self, slot: usize, source: Source, input: ModelInput) -> Result<(), String> {
        let slot = slot.min(1);
        let other = self.models[1 - slot].as_ref().filter(|(s, _)| *s == source).map(|(_, b)| Arc::clone(b));
        let shared = other.zip(self.renderers[1 - slot].as_ref().map(|r| r.prepared().clone()));
        let (prepared, bundle) = if let Some((bundle, prepared)) = shared {
            (prepared, bundle)
        } else {
            let reuse = self.renderers[slot].as_ref().map(MaterialRenderer::prepared);
            let bundle = match input {
                ModelInput::Bundle(b) => b,
                ModelInput::Placeholder(set, layout) => {
                    Arc::new(snapshot_bundle(&set, &layout, &layout.zero_params()).map_err(|e| e.to_string())?)
                }
            };
            // No compile here: the decoder's pipeline is made by the first band that draws it,
            // after the G-buffer under way (the lit originals, before the first snapshot).
            (PreparedMaterial::new(&self.device, &bundle, reuse).map_err(|e| e.to_string())?, bundle)
        };
        if let Some(r) = &mut self.renderers[slot] {
            r.set_prepared(&self.device, prepared);
        } else {
            self.renderers[slot] = Some(MaterialRenderer::from_prepared(&self.device, prepared));
            // A new renderer's texture is empty: its maps go up again.
            if !self.upload_maps(slot) {
                return Err("the UI side is gone".to_owned());
            }
        }
        self.models[slot] = Some((source, bundle));
        Ok(())
    }

    /// Uploads renderer `slot`'s maps to it, where both are there; false when the UI side is gone.
    fn upload_maps(&mut self, slot: usize) -> bool {
        let slot = slot.min(1);
        let (Some(r), Some((_, originals))) = (&mut self.renderers[slot], &self.maps[slot]) else { return true };
        match r.set_originals(&self.device, &self.queue, originals) {
            Ok(()) => true,
            Err(e) => {
                self.maps[slot] = None;
                self.reply(Reply::Error(e.to_string()))
            }
        }
    }

    /// Shades one image or decodes one band of a G-buffer; false when the UI side is gone.
    fn step(&mut self) -> bool {
        let wait = IMAGE_INTERVAL.saturating_sub(self.last_image.elapsed());
        if let Some((shows, scale)) = self.next_image() {
            if wait.is_zero() {
                return self.shade_image(shows, scale);
            }
            if self.back.is_none() && self.next_decode().is_none() {
                std::thread::sleep(wait);
                return true;
            }
        }

        // A G-buffer under way for what the view no longer shows is dropped (one for what it
        // shows is finished, whatever scale the measured cost now suggests).
        // A G-buffer under way is finished for a newer snapshot of the same models, and for a newer
        // view when it is no finer than that view's would start (the camera moving): on a slow GPU
        // snapshots and camera moves come faster than a G-buffer is decoded, and no image would
        // ever be finished. A finer one (a still view's climb to full resolution) gives way.
        // With nothing on screen yet, the first G-buffer of the material shown is finished too,
        // whatever else changed: the first snapshot (which also turns one side into the wipe of
        // decoded and original) came before the lit originals had finished, and the image waited
        // for the decoder's compile (decision 045).
        let next = self.next_decode();
        if self.back.is_none() && next.is_none() && self.warm_decoder() {
            return true;
        }
        let first = |b: &Decoding| {
            self.front.is_none()
                && next.is_some_and(|(holds, _)| (holds.view.library, holds.view.material) == (b.holds.view.library, b.holds.view.material))
        };
        let keep = |b: &Decoding| first(b) || next.is_some_and(|(holds, scale)| same_but_snapshot(&b.holds, &holds) || b.scale <= scale);
        if self.back.as_ref().is_some_and(|b| !keep(b)) {
            self.back = None;
        }
        if self.back.is_none() {
            let Some((holds, scale)) = next else { return true };
            if !self.start(holds, scale) {
                return true;
            }
        }
        let Some(b) = &self.back else { return true };
        let layout = b.holds.view.layout;
        let sides: Vec<(&MaterialRenderer, usize)> = self.renderers.iter().take(layout.sides()).flatten().map(|r| (r, 0)).collect();
        if sides.len() != layout.sides() {
            self.back = None;
            return true;
        }
        let [width, height] = b.gbuffer.size();
        let rows_fit = (BAND_BUDGET_MS * 1e6 / (self.ns_per_pixel * f64::from(width))).floor();
        let rows = (rows_fit.clamp(1.0, f64::from(height)) as u32).min(height - b.next_row);
        let compiled =
            |sides: &[(&MaterialRenderer, usize)]| sides.iter().map(|(r, _)| r.prepared().decoder_pipelines_made()).sum::<usize>();
        let compiled_before = compiled(&sides);
        let start = Instant::now();
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset preview band") });
        encode_material(&self.device, &mut encoder, &b.gbuffer, (&sides, layout), b.next_row..b.next_row + rows);
        let submission = self.queue.submit(Some(encoder.finish()));
        if let Err(e) = self.device.poll(wgpu::PollType::Wait { submission_index: Some(submission), timeout: None }) {
            self.back = None;
            return self.reply(Reply::Error(format!("the preview's GPU work failed: {e}")));
        }
        let elapsed = start.elapsed();
        // A band that made a pipeline includes the driver's compile: not a per-pixel cost.
        let ns = elapsed.as_nanos() as f64 / (f64::from(rows) * f64::from(width)).max(1.0);
        if self.bands.load(Ordering::Relaxed) == 0 {
            self.ns_per_pixel = ns.min(20_000.0);
        } else if compiled(&sides) == compiled_before {
            self.ns_per_pixel = 0.7 * self.ns_per_pixel + 0.3 * ns;
        }
        self.bands.fetch_add(1, Ordering::Relaxed);
        if let Some(b) = &mut self.back {
            b.next_row += rows;
            if b.next_row >= height {
                self.front = self.back.take();
            }
        }
        // Rest as long as the band took: the UI and training keep half the machine.
        std::thread::sleep(elapsed.min(Duration::from_millis(100)));
        true
    }

    /// With an image on screen and nothing to decode, compiles the decoder of a side that will
    /// draw decoded (before training, the placeholder's program is the first snapshot's), so
    /// that the snapshot draws without waiting for the driver; true when it did.
    fn warm_decoder(&self) -> bool {
        let Some(view) = self.view.filter(|_| self.front.is_some()) else { return false };
        let decodes = |slot: usize| matches!(view.sides.get(slot).copied().flatten(), Some(SideSource::Decoded | SideSource::Run(_)));
        let cold =
            self.renderers.iter().enumerate().find_map(|(slot, r)| r.as_ref().filter(|r| decodes(slot) && !r.prepared().decoder_made()));
        cold.inspect(|r| r.prepared().make_decoder(&self.device)).is_some()
    }

    /// Starts decoding a G-buffer of `holds` at `scale` (false: a model it needs is missing).
    fn start(&mut self, holds: Shows, scale: f32) -> bool {
        let layout = holds.view.layout;
        let size =
            [((holds.view.size[0] as f32 * scale).round() as u32).max(2), ((holds.view.size[1] as f32 * scale).round() as u32).max(1)];
        for side in 0..layout.sides() {
            let Some(u) = self.uniforms(&holds, side) else { return false };
            let u = u.with_surface(holds.view.near_plane, size[1]);
            if let Some(r) = &mut self.renderers[side] {
                r.write_uniforms(&self.queue, 0, &u);
            }
            self.surface.write_uniforms(&self.queue, side, &u);
        }
        let gbuffer = GBuffer::new(&self.device, size);
        // The surface first (cheap: no decoder), whole; the material's bands read it.
        let mesh = self.mesh.as_ref().filter(|_| holds.view.asset).map(|(mesh, wears)| {
            let shown: Vec<bool> = wears.iter().map(|w| w.contains(&holds.view.material)).collect();
            mesh.show(&self.queue, &shown);
            mesh
        });
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset preview surface") });
        self.surface.encode(&self.device, &mut encoder, &gbuffer, layout, mesh);
        self.queue.submit(Some(encoder.finish()));
        self.back = Some(Decoding { holds, scale, gbuffer, next_row: 0 });
        true
    }

    /// Lights the front G-buffer as `shows` asks and sends the image; false when the UI side is
    /// gone.
    fn shade_image(&mut self, shows: Shows, scale: f32) -> bool {
        let Some(front) = &self.front else { return true };
        for side in 0..shows.view.layout.sides() {
            let Some(u) = self.uniforms(&shows, side) else { return true };
            self.shade.write_uniforms(&self.queue, side, &u);
        }
        self.shade.set_lighting(&self.queue, shows.view.lighting);
        let size = front.gbuffer.size();
        let start = Instant::now();
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
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset preview shading") });
        self.shade.encode(&self.device, &mut encoder, &view, &front.gbuffer, shows.view.layout);
        self.queue.submit(Some(encoder.finish()));
        let sent = match read_rgba8(&self.device, &self.queue, &texture, size) {
            Ok(rgba) => {
                self.sent = Some((shows, scale));
                self.last_image = Instant::now();
                self.reply(Reply::Image(Box::new(shows), scale, size, rgba))
            }
            Err(e) => self.reply(Reply::Error(e.to_string())),
        };
        // Rest as long as shading took, as after a band.
        std::thread::sleep(start.elapsed().min(Duration::from_millis(100)));
        sent
    }
}
