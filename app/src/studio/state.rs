//! The studio's persisted state (saved on exit, restored on the next start) and the commands the
//! panels emit. No GPU resources and nothing derived live here: those are rebuilt from this.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use texset_core::{
    model::WeightFormat,
    options::{Preset, Quantisation},
    set::MapKind,
};
use texset_shaders::preview::{Background, DEFAULT_ERROR_FULL_SCALE, Lighting, OrbitCamera, ViewMode};

/// Key under which the settings are stored in eframe's storage.
pub const STORAGE_KEY: &str = "texset-studio";

/// Everything the studio remembers between sessions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Material folders of the library, in order.
    pub folders: Vec<PathBuf>,
    /// Training preset.
    pub preset: Preset,
    /// Target bits per texel (`None`: the preset's grids).
    pub bits_per_texel: Option<f64>,
    /// Training steps (`None`: the preset's).
    pub steps: Option<u32>,
    /// Store a full mip chain (latent pyramid) in the bundle.
    pub mips: bool,
    /// Learn every texture's channel budget in training (gates per texture and channel, cut
    /// part-way; `--learn-budgets`).
    pub learn_budgets: bool,
    /// Per-texture channel budgets set by the artist: `material/kind` → channels.
    pub budgets: BTreeMap<String, u32>,
    /// What training aims for: the preset (or bits-per-texel target) alone, a PSNR, or the set's
    /// own block-compressed quality (rate control: several trainings, the smallest that reaches).
    pub goal: RateGoal,
    /// Train for about this many seconds (`--time-budget`): a timed probe sets the steps.
    pub time_budget_secs: Option<f64>,
    /// Latent quantisation (`--latent-quant`).
    pub latent_quant: Quantisation,
    /// Decoder weight quantisation (`--weight-quant`).
    pub weight_quant: Quantisation,
    /// Decoder weight format (`--weight-format`).
    pub weight_format: WeightFormat,
    /// The last trained bundle of this library (in the studio's data folder), restored on start.
    pub trained_bundle: Option<PathBuf>,
    /// Last folder exported to.
    pub export_dir: Option<PathBuf>,
    /// The HDR environment (`.hdr`, `.exr`) the viewport is lit by (`None`: the procedural studio).
    pub environment: Option<PathBuf>,
    /// Views.
    pub view: ViewSettings,
    /// Runs an older studio kept here: read once, they move into the experiment log
    /// ([`super::store::ExperimentLog`], a file of its own), and are never written here again.
    #[serde(skip_serializing)]
    pub runs: Vec<super::runs::RunRecord>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            folders: Vec::new(),
            preset: Preset::Fast,
            bits_per_texel: None,
            steps: None,
            mips: false,
            learn_budgets: false,
            budgets: BTreeMap::new(),
            goal: RateGoal::None,
            time_budget_secs: None,
            latent_quant: Quantisation::Auto,
            weight_quant: Quantisation::Auto,
            weight_format: WeightFormat::Int8,
            trained_bundle: None,
            export_dir: None,
            environment: None,
            view: ViewSettings::default(),
            runs: Vec::new(),
        }
    }
}

/// Which texture is shown and how.
// Reason: independent view toggles (difference, block-compressed side, orbit, originals), each a
// checkbox; an enum per toggle would only rename `bool`.
#[allow(clippy::struct_excessive_bools)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ViewSettings {
    /// Selected material index.
    pub material: usize,
    /// Selected map index within it.
    pub map: usize,
    /// Compare: where the split between original (left) and decoded (right) is, 0..1.
    pub split: f32,
    /// Compare: show |decoded − original| × gain instead of the decoded map.
    pub difference: bool,
    /// Compare: difference gain.
    pub difference_gain: f32,
    /// Compare: show the map block-compressed (BC1/BC4/BC5/BC7, as engines ship it) on the right
    /// instead of the neural decode.
    pub bcn: bool,
    /// Compare: zoom (screen pixels per texel; 0 = fit).
    pub zoom: f32,
    /// Compare: texel at the view's centre, in UV.
    pub center_uv: [f32; 2],
    /// Preview: shape.
    pub shape: PreviewShape,
    /// Preview: lights orbit.
    pub lights_orbit: bool,
    /// Preview: orbit speed, radians per second.
    pub light_speed: f32,
    /// Preview: light intensity.
    pub light_intensity: f32,
    /// Preview: orbit angle now, radians (advances while orbiting).
    pub light_angle: f32,
    /// Preview: compare two sides (`compare_sides`), as a wipe or beside each other.
    #[serde(alias = "show_original")]
    pub compare: bool,
    /// Preview: what the compared sides show, left and right (`X` swaps them).
    pub compare_sides: [SideSource; 2],
    /// Preview: the sides as a wipe across one view with a draggable divider (false: two views
    /// beside each other).
    pub wipe: bool,
    /// Preview: where the wipe divides the view, 0..1 from the left.
    pub wipe_split: f32,
    /// Preview: the map the error view shows (`None`: pooled over the material's maps).
    pub error_map: Option<MapKind>,
    /// Preview: where the camera is (the mouse orbits, pans and zooms it; F frames, R resets).
    pub camera: CameraSettings,
    /// Preview: the turntable turns the camera about +Y (20°/s).
    pub turntable: bool,
    /// Preview: how it lights (the environment, exposure, tone mapper, background).
    pub lighting: LightingSettings,
    /// The library (left) and training (right) panels are shown (`P` hides them, so the central
    /// view takes the window).
    pub side_panels: bool,
    /// Preview: lit, or one channel unlit (`C` cycles, `M` returns to lit; not saved).
    #[serde(skip)]
    pub channel: ViewMode,
    /// Which panel the central area shows.
    pub central: CentralView,
    /// Two runs of the experiment log (ids) side by side, A left and B right, in Compare and in
    /// the PBR preview instead of original and decoded.
    pub ab: Option<[u64; 2]>,
}

impl Default for ViewSettings {
    fn default() -> Self {
        Self {
            material: 0,
            map: 0,
            split: 0.5,
            difference: false,
            difference_gain: 8.0,
            bcn: false,
            zoom: 0.0,
            center_uv: [0.5, 0.5],
            shape: PreviewShape::Sphere,
            lights_orbit: true,
            light_speed: 0.8,
            light_intensity: 3.0,
            light_angle: 0.0,
            compare: true,
            compare_sides: [SideSource::Decoded, SideSource::Original],
            wipe: true,
            wipe_split: 0.5,
            error_map: None,
            camera: CameraSettings::default(),
            turntable: false,
            lighting: LightingSettings::default(),
            channel: ViewMode::Lit,
            side_panels: true,
            central: CentralView::Compare,
            ab: None,
        }
    }
}

/// What one side of the viewport's comparison shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SideSource {
    /// The original maps.
    Original,
    /// The bundle on screen, decoded per pixel in the shader.
    Decoded,
    /// The original maps block-compressed as engines ship them (BC7, BC5, BC4).
    Bcn,
    /// A run of the experiment log (its id), decoded in the shader.
    Run(u64),
}

impl SideSource {
    /// Whether it shows a bundle decoded (the session's or a run's), not maps.
    #[must_use]
    pub fn decodes(self) -> bool {
        matches!(self, Self::Decoded | Self::Run(_))
    }

    /// Its name, as a side's label says it.
    #[must_use]
    pub fn name(self) -> String {
        match self {
            Self::Original => "original maps".to_owned(),
            Self::Decoded => "decoded in the shader from the bundle's bytes".to_owned(),
            Self::Bcn => "block-compressed (BC7/BC5/BC4, as engines ship)".to_owned(),
            Self::Run(id) => format!("run #{id}, decoded in the shader"),
        }
    }
}

/// How the viewport lights, as saved with the session (`texset_shaders::preview::Lighting`;
/// the environment's file is [`Settings::environment`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LightingSettings {
    /// Light by the environment (false: the two point lights alone, as before IBL).
    pub environment: bool,
    /// With the environment, add the two point lights.
    pub point_lights: bool,
    /// Exposure, EV.
    pub exposure_ev: f32,
    /// The environment's rotation about the vertical, degrees.
    pub rotation_deg: f32,
    /// The tone mapper.
    pub tone_mapper: ToneMapperSetting,
    /// What the viewport shows behind the asset.
    pub background: BackgroundSetting,
    /// The error view's top of the heat ramp (stored values, 0..1).
    pub error_full_scale: f32,
}

impl Default for LightingSettings {
    fn default() -> Self {
        // The glTF Sample Viewer's defaults: the environment, and punctual lights with it (here
        // the two orbiting ones, as the studio had before).
        Self {
            environment: true,
            point_lights: true,
            exposure_ev: 0.0,
            rotation_deg: 0.0,
            tone_mapper: ToneMapperSetting::PbrNeutral,
            background: BackgroundSetting::Blurred,
            error_full_scale: DEFAULT_ERROR_FULL_SCALE,
        }
    }
}

/// Exposure is kept within ±this many EV (a hand-edited file may say anything).
pub const MAX_EXPOSURE_EV: f32 = 10.0;

/// The solid background's linear grey.
const SOLID_BACKGROUND: [f32; 3] = [0.18; 3];

impl LightingSettings {
    /// What the shading pass is told (values that are not finite read as the defaults').
    #[must_use]
    pub fn lighting(&self) -> Lighting {
        use texset_shaders::environment::ToneMapper;
        let finite = |v: f32, fallback: f32| if v.is_finite() { v } else { fallback };
        Lighting {
            environment: self.environment,
            point_lights: self.point_lights,
            exposure_ev: finite(self.exposure_ev, 0.0).clamp(-MAX_EXPOSURE_EV, MAX_EXPOSURE_EV),
            tone_mapper: match self.tone_mapper {
                ToneMapperSetting::PbrNeutral => ToneMapper::PbrNeutral,
                ToneMapperSetting::Agx => ToneMapper::Agx,
                ToneMapperSetting::Aces => ToneMapper::AcesHill,
                ToneMapperSetting::None => ToneMapper::None,
            },
            rotation_rad: finite(self.rotation_deg, 0.0).rem_euclid(360.0).to_radians(),
            background: match self.background {
                BackgroundSetting::Environment => Background::Environment,
                BackgroundSetting::Blurred => Background::Blurred,
                BackgroundSetting::Solid => Background::Solid(SOLID_BACKGROUND),
            },
            view: ViewMode::Lit,
            error_full_scale: finite(self.error_full_scale, DEFAULT_ERROR_FULL_SCALE).clamp(MIN_ERROR_FULL_SCALE, 1.0),
        }
    }
}

/// The error view's top of the ramp is at least this (a hand-edited file may say anything).
pub const MIN_ERROR_FULL_SCALE: f32 = 1e-3;

/// The tone mappers (`texset_shaders::environment::ToneMapper`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToneMapperSetting {
    /// Khronos PBR Neutral: keeps base colours (the default).
    PbrNeutral,
    /// `AgX`.
    Agx,
    /// ACES (Stephen Hill's fit).
    Aces,
    /// None: clamped.
    None,
}

/// What the viewport shows behind the asset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BackgroundSetting {
    /// The environment, sharp.
    Environment,
    /// The environment, blurred.
    Blurred,
    /// A solid grey.
    Solid,
}

/// The preview's orbit camera as saved with the session (`texset_shaders::preview::OrbitCamera`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CameraSettings {
    /// The point it looks at.
    pub target: [f32; 3],
    /// Angle about +Y, radians.
    pub yaw_rad: f32,
    /// Angle above the horizontal, radians.
    pub pitch_rad: f32,
    /// Distance from the target, world units.
    pub distance: f32,
}

impl Default for CameraSettings {
    fn default() -> Self {
        Self::from_orbit(&OrbitCamera::default())
    }
}

impl CameraSettings {
    /// The orbit camera these settings describe (the field of view is the default's; a value
    /// that is not finite, as a hand-edited file may hold, is the default's too).
    #[must_use]
    pub fn orbit(&self) -> OrbitCamera {
        let default = OrbitCamera::default();
        let or = |value: f32, fallback: f32| if value.is_finite() { value } else { fallback };
        OrbitCamera {
            target: if self.target.iter().all(|v| v.is_finite()) { self.target } else { default.target },
            yaw_rad: or(self.yaw_rad, default.yaw_rad),
            pitch_rad: or(self.pitch_rad, default.pitch_rad),
            distance: if self.distance.is_finite() && self.distance > 0.0 { self.distance } else { default.distance },
            ..default
        }
    }

    /// Settings that describe `orbit`.
    #[must_use]
    pub fn from_orbit(orbit: &OrbitCamera) -> Self {
        Self { target: orbit.target, yaw_rad: orbit.yaw_rad, pitch_rad: orbit.pitch_rad, distance: orbit.distance }
    }
}

/// A quality target reached by rate control (`texset compress --target-psnr` / `--match-bc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum RateGoal {
    /// One training with the preset's grids (or the bits-per-texel target).
    #[default]
    None,
    /// The smallest bundle at or above this pooled PSNR, dB.
    Psnr(f64),
    /// The smallest bundle at or above the set's own BC7/BC5/BC4 PSNR.
    MatchBcHigh,
    /// The same for BC1/BC5/BC4.
    MatchBcLow,
}

/// Shapes the PBR preview can show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PreviewShape {
    /// A sphere.
    Sphere,
    /// A flat plane facing the viewer.
    Plane,
    /// A cube.
    Cube,
    /// The library's glTF meshes (its assets), each primitive of the material shown decoded and
    /// the others in clay; the sphere where the library has none.
    Asset,
}

/// The central area's content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CentralView {
    /// Original vs decoded, split.
    Compare,
    /// Lit preview.
    Preview,
}

/// What the panels ask the studio to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Add material folders (a file adds the folder it is in).
    AddPaths(Vec<PathBuf>),
    /// Light the viewport by this HDR environment (`.hdr`, `.exr`; `None`: the studio).
    SetEnvironment(Option<PathBuf>),
    /// Remove a material from the library.
    RemoveMaterial(usize),
    /// Start training from scratch with the current settings and budgets.
    StartTraining,
    /// Hold training.
    PauseTraining,
    /// Continue it.
    ResumeTraining,
    /// Stop it (the last snapshot stays on screen; nothing is kept as trained).
    CancelTraining,
    /// Set (`Some`) or clear (`None`) the artist's budget of a texture (`material/kind`).
    SetBudget(String, Option<u32>),
    /// Change the preset.
    SetPreset(Preset),
    /// Change the target bits per texel.
    SetBitsPerTexel(Option<f64>),
    /// Change the step count.
    SetSteps(Option<u32>),
    /// Store a mip chain or not.
    SetMips(bool),
    /// Learn budgets in training or not.
    SetLearnBudgets(bool),
    /// Change the rate-control goal.
    SetGoal(RateGoal),
    /// Train for about this many seconds, or for the preset's steps (`None`).
    SetTimeBudget(Option<f64>),
    /// Change the latent and weight quantisation modes.
    SetQuantisation(Quantisation, Quantisation),
    /// Change the decoder weight format.
    SetWeightFormat(WeightFormat),
    /// Block-compress a map (material, map) for the compare view's block-compressed side.
    ComputeBcn(usize, usize),
    /// Write the bundle (atomically).
    ExportBundle(PathBuf),
    /// Write the decoded maps as images into a folder.
    ExportImages(PathBuf),
    /// Write the generated decoder shaders (WGSL, GLSL, HLSL, MSL) into a folder.
    ExportShaders(PathBuf),
    /// Write the glTF asset the library came from back as glTF, with the bundle and PNG
    /// fallbacks decoded from it, into a folder.
    ExportGltf(PathBuf),
    /// Show a run of the experiment log (its bundle becomes the one on screen).
    ShowRun(u64),
    /// Put a run's settings back.
    RestoreRun(u64),
    /// Write a run's bundle (atomically).
    ExportRun(u64, PathBuf),
    /// Remove a run from the log (and its kept bundle).
    DeleteRun(u64),
    /// Load and decode a run's bundle for the A/B views.
    LoadRun(u64),
    /// Block-compress the library (both profiles) for the runs' rate–distortion chart.
    ComputeBcBaselines,
}
