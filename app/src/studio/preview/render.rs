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
//!
//! A decoded side draws from textures while the view moves (or while its decoder compiles): the
//! session's CPU decode of the bundle (the reference the GPU decoder is tested against) lead its
//! renderer's texture, and the pipeline that reads maps lights them, as an engine that decodes on
//! load would (decision 051). Still, it decodes per pixel, as shipped. The decoder compiles on a
//! thread of its own, `texset-compile`, so no image waits for the driver.

use super::maps::{SlotMaps, decoded_maps_of};
use super::{
    BAND_BUDGET_MS, IMAGE_INTERVAL, MOVING_IMAGE_MS, MapsKey, ModelInput, Reply, Request, SCALES, SETTLE, Shows, SideSource, Source,
    TARGET_FORMAT, View,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use texset_core::decode::DecodedMap;
use texset_core::eval::bcn::BcRoundTrip;
use texset_core::set::TextureSet;
use texset_core::{bundle::Bundle, snapshot_bundle};
use texset_shaders::preview::{
    GBuffer, GpuMesh, Lighting, MaterialRenderer, Originals, PreparedMaterial, PreviewUniforms, Probe, ShadePass, SurfacePass,
    encode_material, read_rgba8,
};

/// GPU time the decode of a new snapshot's G-buffer may take (the last one stays on screen
/// meanwhile, at its scale), milliseconds.
const SNAPSHOT_DECODE_MS: f64 = 1000.0;

/// The largest scale a G-buffer climbs to while the lights move: the full resolution's decode
/// (four times this one's) waits until they rest, leaving the cores to training and the UI. It
/// holds for the textured path too: its full-resolution images, each a 4 MB upload in a UI frame
/// on lavapipe, put the p95 frame at 146 ms with the lights orbiting.
const MOVING_MAX_SCALE: f32 = 0.5;

/// The least scale of an image that reads textures only (no side decodes per pixel).
const TEXTURES_LEAST_SCALE: f32 = 0.25;

/// GPU time the material pass of a moving image that reads textures only may take,
/// milliseconds: the camera moves through such images, so they come often rather than large
/// (on 2-core lavapipe while training, 150 ms gave images at 35–70 % of the side, 2.4 a second).
const TEXTURES_MOVING_IMAGE_MS: f64 = 25.0;

/// The fewest pixels a band of the material pass draws (but for the last of an image): each
/// submission costs a software GPU a few milliseconds of its own, more while training takes the
/// cores, and bands of a few rows measured that, not the pixels (the scale fell to ⅛).
const MIN_BAND_PIXELS: u32 = 16_384;

/// About how many pixels one band of the shading pass lights. Lavapipe rasterises every device's
/// draws on the screen's threads, one scene at a time, so a UI frame waits behind the whole of a
/// preview scene under way: an image shaded in one scene put the UI's p95 29–39 ms above its
/// median with the lights orbiting, in bands of this size 8.5–12.9 ms (decision 051).
const SHADE_BAND_PIXELS: u32 = 40_000;

/// How often the render thread looks at a decoder compiling on `texset-compile` when it has
/// nothing else to do.
const COMPILE_POLL: Duration = Duration::from_millis(100);

/// Whether `shows` decodes a side per pixel (the slow material pass): the cost measured for it
/// is kept apart from the passes that read textures.
fn decodes_per_pixel(shows: &Shows) -> bool {
    shows.view.sides.iter().zip(&shows.textures).any(|(side, textures)| side.is_some_and(SideSource::decodes) && !textures)
}

/// A G-buffer: what it holds (an image's [`Shows`] with the lights left out: see [`unlit`]), at
/// what scale, and how many of its rows are decoded.
struct Decoding {
    holds: Shows,
    scale: f32,
    gbuffer: GBuffer,
    next_row: u32,
    /// When it was started.
    started: Instant,
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
    maps: [Option<SlotMaps>; 2],
    /// The session's CPU decode of its bundle (its generation), per material, per map: a decoded
    /// side's texture leads with its material's.
    decoded: Option<(u64, Arc<Vec<Vec<DecodedMap>>>)>,
    /// A decoder compiling on `texset-compile`.
    compiling: Option<JoinHandle<()>>,
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
    /// Measured GPU time per pixel of the material pass, nanoseconds (moving average): reading
    /// textures only, and decoding per pixel.
    ns_per_pixel: [f64; 2],
    /// When the last image was started (its shading submitted).
    last_image: Instant,
    /// How long the last G-buffer took from its start to its last band (rests included).
    last_gbuffer: Duration,
    /// Whether the device is a software GPU, which shades an image in bands.
    software: bool,
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
        let software = device.adapter_info().device_type == wgpu::DeviceType::Cpu;
        Self {
            software,
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
            decoded: None,
            compiling: None,
            view: None,
            view_since: Instant::now(),
            lights_since: Instant::now(),
            sent: None,
            front: None,
            back: None,
            // First guesses (a software GPU's), corrected by the first bands.
            ns_per_pixel: [200.0, 2000.0],
            last_image: Instant::now(),
            last_gbuffer: Duration::ZERO,
        }
    }

    fn reply(&self, reply: Reply) -> bool {
        let sent = self.replies.send(reply).is_ok();
        (self.repaint)();
        sent
    }

    /// Runs until the UI side is dropped (then waits for a decoder compiling).
    pub(super) fn run(mut self, requests: &Receiver<Request>) {
        self.serve(requests);
        if let Some(compile) = self.compiling.take() {
            let _ = compile.join();
        }
    }

    fn serve(&mut self, requests: &Receiver<Request>) {
        loop {
            // Wait for work when there is nothing to draw; otherwise only look.
            let idle = self.next_image().is_none() && self.next_decode().is_none() && self.back.is_none();
            // A view still settling wants its full-resolution image once it has rested: when the
            // image at the moving scale finished sooner than that, wake then, not at the next
            // request (which may never come: the lights stopped).
            // So does a decoder compiling on `texset-compile`: its side is drawn per pixel once it
            // is made.
            let settling = self.view.is_some().then(|| SETTLE.saturating_sub(self.lights_since.elapsed())).filter(|d| !d.is_zero());
            let compiling = self.compiling.as_ref().map(|_| COMPILE_POLL);
            let settling = settling.into_iter().chain(compiling).min();
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
                let lead = self.decoded.as_ref().filter(|_| key.decoded).map(|(generation, _)| *generation);
                self.fill_maps(slot.min(1), key, set, bcn, lead)
            }
            Request::Decoded(generation, decoded) => {
                self.decoded = Some((generation, decoded));
                // The decoded sides' textures lead with the new maps.
                for slot in 0..2 {
                    let Some(m) = self.maps[slot].take() else { continue };
                    if m.key.decoded && m.lead != Some(generation) {
                        // A G-buffer under way that reads the decoded maps, or the error view's
                        // reference after them, reads them no longer.
                        let reads = |b: &Decoding| b.holds.textures[slot] || matches!(b.holds.view.probe, Probe::Error { .. });
                        if self.back.as_ref().is_some_and(reads) {
                            self.back = None;
                        }
                        if !self.fill_maps(slot, m.key, m.set, m.bcn, Some(generation)) {
                            return false;
                        }
                    } else {
                        self.maps[slot] = Some(m);
                    }
                }
                true
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
    /// A decoded side reads the decoded maps its texture leads with while the view moves (where
    /// decoding per pixel would not draw it whole in [`MOVING_IMAGE_MS`]: a hardware GPU decodes
    /// per pixel throughout) or while its decoder is not made yet, and decodes per pixel
    /// otherwise.
    fn wanted(&self) -> Option<Shows> {
        let view = self.view?;
        let full_pixels = f64::from(view.size[0]) * f64::from(view.size[1]);
        let moving = self.view_since.elapsed() < SETTLE && self.scale_within(full_pixels, MOVING_IMAGE_MS, true) < 1.0;
        let mut sources = [None, None];
        let mut textures = [false, false];
        for (slot, side) in view.sides.iter().enumerate() {
            let Some(side) = *side else { continue };
            let (source, bundle) = self.models[slot].as_ref()?;
            let model_fits = match side {
                SideSource::Decoded => matches!(source, Source::Decoded(_)),
                SideSource::Run(id) => *source == Source::Run(id),
                SideSource::Original | SideSource::Bcn => !matches!(source, Source::Run(_)),
            };
            let maps = self.maps[slot].as_ref().filter(|m| m.key == MapsKey::of(&view, side));
            if !model_fits || maps.is_none() || view.material >= bundle.manifest.materials.len() {
                return None;
            }
            let decoder_made = self.renderers[slot].as_ref().is_some_and(|r| r.prepared().decoder_made());
            match maps.and_then(|m| m.lead) {
                Some(lead) if moving || !decoder_made => {
                    sources[slot] = Some(Source::Decoded(lead));
                    textures[slot] = true;
                }
                _ => sources[slot] = Some(*source),
            }
        }
        Some(Shows { view, sources, textures })
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
        let shows = Shows { view, ..front.holds };
        (self.sent != Some((shows, front.scale))).then_some((shows, front.scale))
    }

    /// The largest scale whose whole material pass fits `budget_ms` by the cost measured for
    /// passes that decode per pixel, or not.
    fn scale_within(&self, full_pixels: f64, budget_ms: f64, per_pixel: bool) -> f32 {
        let ns = self.ns_per_pixel[usize::from(per_pixel)];
        SCALES.iter().copied().find(|s| ns * full_pixels * f64::from(s * s) / 1e6 <= budget_ms).unwrap_or(0.125)
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
        let per_pixel = decodes_per_pixel(&holds);
        let scale_within = |budget_ms| self.scale_within(full_pixels, budget_ms, per_pixel);
        let settled = self.view_since.elapsed() >= SETTLE;
        let top = if self.lights_since.elapsed() >= SETTLE { 1.0 } else { MOVING_MAX_SCALE };
        let scale = match &self.front {
            Some(f) if f.holds == holds => SCALES.iter().rev().copied().find(|&s| s > f.scale).filter(|&s| s <= top)?,
            Some(f) if Shows { sources: holds.sources, ..f.holds } == holds => {
                f.scale.min(scale_within(SNAPSHOT_DECODE_MS)).max(scale_within(MOVING_IMAGE_MS))
            }
            // A view still, over an image of another (or of the other path): at the top scale at
            // once, full resolution unless the lights move. With nothing on screen yet, the first
            // image comes at the moving scale and climbs.
            Some(_) if settled => top,
            _ => scale_within(if per_pixel { MOVING_IMAGE_MS } else { TEXTURES_MOVING_IMAGE_MS }),
        };
        // A pass that reads textures costs about what shading costs: below a quarter of the side
        // a moving image saves little time and shows little (decision 051).
        let scale = if per_pixel { scale } else { scale.max(TEXTURES_LEAST_SCALE) };
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
        // A block-compressed side, and a decoded one whose texture leads with the decoded maps,
        // find the originals after them.
        let reference_offset = self.maps.get(side)?.as_ref().map_or(0, SlotMaps::reference_offset);
        let probe = match v.probe {
            Probe::Error { map, .. } => Probe::Error { map, reference_offset },
            other => other,
        };
        let reads_maps = matches!(source, SideSource::Original | SideSource::Bcn) || shows.textures.get(side).copied().unwrap_or(false);
        Some(u.with_originals(reads_maps).with_probe(probe))
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

    /// Makes renderer `slot`'s texture of `key`'s maps and uploads it; false when the UI side is
    /// gone. Manifest order is the set's order (pack writes maps as ingest sorted them). The maps
    /// a side shows lead (the block-compressed ones `bcn`, or the decoded ones of generation
    /// `lead` where they are still there), then the originals (the error view's reference).
    fn fill_maps(
        &mut self,
        slot: usize,
        key: MapsKey,
        set: Arc<TextureSet>,
        bcn: Option<Vec<Arc<BcRoundTrip>>>,
        lead: Option<u64>,
    ) -> bool {
        let Some(m) = set.materials.get(key.material) else { return true };
        let decoded = self
            .decoded
            .as_ref()
            .filter(|(generation, _)| lead == Some(*generation))
            .and_then(|(_, d)| decoded_maps_of(&set, key.material, d));
        let mut layers: Vec<(u32, u32, u32, &[f32])> = Vec::new();
        if let Some(bcn) = &bcn {
            layers.extend(m.textures.iter().zip(bcn).map(|(t, b)| (t.info.width, t.info.height, t.info.channels, b.values.as_slice())));
        } else if let Some(decoded) = decoded {
            layers.extend(decoded.iter().map(|d| (d.width, d.height, d.channels, d.values.as_slice())));
        }
        layers.extend(m.textures.iter().map(|t| (t.info.width, t.info.height, t.info.channels, t.texels.as_slice())));
        let uploaded = Arc::new(Originals::from_maps(&layers));
        let lead = lead.filter(|_| decoded.is_some());
        self.maps[slot] = Some(SlotMaps { key, set, bcn, lead, uploaded });
        self.upload_maps(slot)
    }

    /// Uploads renderer `slot`'s maps to it, where both are there; false when the UI side is gone.
    fn upload_maps(&mut self, slot: usize) -> bool {
        let slot = slot.min(1);
        let (Some(r), Some(maps)) = (&mut self.renderers[slot], &self.maps[slot]) else { return true };
        match r.set_originals(&self.device, &self.queue, &maps.uploaded) {
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
            // An image is due sooner than a new G-buffer would be decoded: while the camera
            // moves it waits for no fresher view (on lavapipe with the camera turning, three of
            // four G-buffers were decoded for nothing, and images came 3.1 times a second, not 5).
            // While only the lights move a G-buffer is not made stale by the next view, so one
            // for a new snapshot starts and draws in bands between the images (before, with the
            // lights orbiting, no snapshot reached the screen until training ended).
            let camera_moving = self.view_since.elapsed() < SETTLE;
            let no_time = self.back.is_none() && camera_moving && wait <= self.last_gbuffer;
            if no_time || (self.back.is_none() && self.next_decode().is_none()) {
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
        // A G-buffer that reads textures while the view moves, or decodes per pixel once it
        // rests, does not stand in for the other.
        let keep = |b: &Decoding| {
            first(b)
                || next.is_some_and(|(holds, scale)| {
                    same_but_snapshot(&b.holds, &holds) || (b.scale <= scale && b.holds.textures == holds.textures)
                })
        };
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
        let cost = usize::from(decodes_per_pixel(&b.holds));
        // A pass that reads textures only draws a moving image in one band (its whole budget).
        let budget_ms = if cost == 0 { TEXTURES_MOVING_IMAGE_MS } else { BAND_BUDGET_MS };
        let rows_fit = (budget_ms * 1e6 / (self.ns_per_pixel[cost] * f64::from(width))).floor();
        let fewest_rows = MIN_BAND_PIXELS.div_ceil(width.max(1));
        let left = height - b.next_row;
        let rows = (rows_fit.clamp(1.0, f64::from(height)) as u32).max(fewest_rows);
        // A remainder too small for a band of its own goes with this one.
        let rows = if left < rows + fewest_rows { left } else { rows };
        let compiled =
            |sides: &[(&MaterialRenderer, usize)]| sides.iter().map(|(r, _)| r.prepared().decoder_pipelines_made()).sum::<usize>();
        let compiled_before = compiled(&sides);
        let start = Instant::now();
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset preview band") });
        encode_material(&self.device, &mut encoder, &b.gbuffer, (&sides, layout), b.next_row..b.next_row + rows, None);
        let submission = self.queue.submit(Some(encoder.finish()));
        if let Err(e) = self.device.poll(wgpu::PollType::Wait { submission_index: Some(submission), timeout: None }) {
            self.back = None;
            return self.reply(Reply::Error(format!("the preview's GPU work failed: {e}")));
        }
        let elapsed = start.elapsed();
        // A band that made a pipeline includes the driver's compile: not a per-pixel cost.
        let ns = elapsed.as_nanos() as f64 / (f64::from(rows) * f64::from(width)).max(1.0);
        // A band that waited for a driver's compile at its first draw (lavapipe compiles there),
        // or for the CPU, moves the estimate a step at most: a quarter of it or four times it.
        if compiled(&sides) == compiled_before {
            let estimate = &mut self.ns_per_pixel[cost];
            *estimate = 0.7 * *estimate + 0.3 * ns.clamp(*estimate / 4.0, *estimate * 4.0);
        }
        self.bands.fetch_add(1, Ordering::Relaxed);
        // Rest as long as the band took: the UI and training keep half the machine.
        let mut rest = elapsed.min(Duration::from_millis(100));
        if let Some(b) = &mut self.back {
            b.next_row += rows;
            if b.next_row >= height {
                // A finished G-buffer rests no longer than until its image is due: the interval
                // between images paces them, and a rest past it delayed every image of a moving
                // camera (3.6 against 4.0 images a second on lavapipe, decision 051).
                rest = rest.min(IMAGE_INTERVAL.saturating_sub(self.last_image.elapsed()));
                self.last_gbuffer = b.started.elapsed() + rest;
                self.front = self.back.take();
            }
        }
        std::thread::sleep(rest);
        true
    }

    /// With an image on screen and nothing to decode, starts compiling a renderer's decoder on
    /// `texset-compile` (before training, the placeholder's program is the first snapshot's), so
    /// that no image waits for the driver: meanwhile a decoded side reads textures. True when it
    /// started one.
    fn warm_decoder(&mut self) -> bool {
        if self.compiling.as_ref().is_some_and(|c| !c.is_finished()) || self.front.is_none() {
            return false;
        }
        if let Some(done) = self.compiling.take() {
            let _ = done.join();
        }
        let Some(cold) = self.renderers.iter().flatten().find(|r| !r.prepared().decoder_made()) else { return false };
        let (prepared, device) = (cold.prepared().clone(), self.device.clone());
        self.compiling = crate::studio::worker::spawn_background("texset-compile", move || prepared.make_decoder(&device)).ok();
        self.compiling.is_some()
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
        self.surface.encode(&self.device, &mut encoder, &gbuffer, (layout, mesh), None);
        self.queue.submit(Some(encoder.finish()));
        self.back = Some(Decoding { holds, scale, gbuffer, next_row: 0, started: Instant::now() });
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
        // On a software GPU in bands, each its own submission, waited for: a UI frame waits for
        // one band at most. A hardware GPU lights the image at once.
        let band_rows = if self.software { SHADE_BAND_PIXELS.div_ceil(size[0].max(1)) } else { size[1] };
        let mut first = 0;
        while first < size[1] {
            let last = first.saturating_add(band_rows).min(size[1]);
            let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset preview shading") });
            self.shade.encode_rows(&self.device, &mut encoder, &view, &front.gbuffer, shows.view.layout, first..last, (first == 0, None));
            let submission = self.queue.submit(Some(encoder.finish()));
            if last < size[1]
                && let Err(e) = self.device.poll(wgpu::PollType::Wait { submission_index: Some(submission), timeout: None })
            {
                return self.reply(Reply::Error(format!("the preview's GPU work failed: {e}")));
            }
            first = last;
        }
        let sent = match read_rgba8(&self.device, &self.queue, &texture, size) {
            Ok(rgba) => {
                self.sent = Some((shows, scale));
                self.last_image = start;
                self.reply(Reply::Image(Box::new(shows), scale, size, rgba))
            }
            Err(e) => self.reply(Reply::Error(e.to_string())),
        };
        // Rest as long as shading took, as after a band.
        std::thread::sleep(start.elapsed().min(Duration::from_millis(100)));
        sent
    }
}
