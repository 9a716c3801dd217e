//! Keyboard shortcuts: one table ([`SHORTCUTS`]) that both the key handling and the help
//! overlay (`?` or F1) read, so the overlay lists exactly what works.

use eframe::egui::{self, Key, Modifiers};

/// What a shortcut does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Start training, or pause / resume a run.
    ToggleTraining,
    /// Show the Compare view.
    ShowCompare,
    /// Show the PBR preview.
    ShowPreview,
    /// Compare: difference view on / off.
    ToggleDifference,
    /// Compare: the block-compressed side on / off.
    ToggleBcn,
    /// Preview: lights orbit on / off.
    ToggleOrbit,
    /// Preview: frame the shape (or asset) in view.
    FrameView,
    /// Preview: the camera back to where a new view starts.
    ResetView,
    /// Preview: turntable on / off.
    ToggleTurntable,
    /// Preview: the next channel view, unlit (base colour, normal, roughness, …).
    CycleChannel,
    /// Preview: back to the lit material.
    ShowLit,
    /// Preview: swap the compared sides (left and right).
    FlipSides,
    /// Hide or show the side panels (the central view takes the window).
    ToggleSidePanels,
    /// Open material folders.
    OpenFolder,
    /// Export the bundle.
    Export,
    /// Show / hide the shortcut list.
    ToggleHelp,
}

/// A shortcut: modifiers, key, how the overlay writes it, what it does.
pub struct Shortcut {
    /// Modifiers that must be held (`COMMAND` is Ctrl, or ⌘ on macOS).
    pub modifiers: Modifiers,
    /// The key.
    pub key: Key,
    /// The keys as the help overlay shows them.
    pub keys: &'static str,
    /// What it does, in words.
    pub description: &'static str,
    /// The action.
    pub action: Action,
}

/// Every shortcut of the studio.
pub const SHORTCUTS: [Shortcut; 17] = [
    Shortcut {
        modifiers: Modifiers::NONE,
        key: Key::Space,
        keys: "Space",
        description: "start / pause / resume training",
        action: Action::ToggleTraining,
    },
    Shortcut { modifiers: Modifiers::NONE, key: Key::Num1, keys: "1", description: "Compare view", action: Action::ShowCompare },
    Shortcut { modifiers: Modifiers::NONE, key: Key::Num2, keys: "2", description: "PBR preview", action: Action::ShowPreview },
    Shortcut {
        modifiers: Modifiers::NONE,
        key: Key::D,
        keys: "D",
        description: "difference view on / off",
        action: Action::ToggleDifference,
    },
    Shortcut { modifiers: Modifiers::NONE, key: Key::B, keys: "B", description: "BCn side on / off", action: Action::ToggleBcn },
    Shortcut { modifiers: Modifiers::NONE, key: Key::L, keys: "L", description: "lights orbit on / off", action: Action::ToggleOrbit },
    Shortcut { modifiers: Modifiers::NONE, key: Key::F, keys: "F", description: "frame the view", action: Action::FrameView },
    Shortcut { modifiers: Modifiers::NONE, key: Key::R, keys: "R", description: "reset the camera", action: Action::ResetView },
    Shortcut { modifiers: Modifiers::NONE, key: Key::T, keys: "T", description: "turntable on / off", action: Action::ToggleTurntable },
    Shortcut {
        modifiers: Modifiers::NONE,
        key: Key::C,
        keys: "C",
        description: "next view, unlit (base colour, normal, roughness, metallic, AO, height, emissive, UV, checker, mip, error)",
        action: Action::CycleChannel,
    },
    Shortcut { modifiers: Modifiers::NONE, key: Key::M, keys: "M", description: "the lit material", action: Action::ShowLit },
    Shortcut { modifiers: Modifiers::NONE, key: Key::X, keys: "X", description: "swap the compared sides", action: Action::FlipSides },
    Shortcut {
        modifiers: Modifiers::NONE,
        key: Key::P,
        keys: "P",
        description: "hide / show the side panels",
        action: Action::ToggleSidePanels,
    },
    Shortcut {
        modifiers: Modifiers::COMMAND,
        key: Key::O,
        keys: "Ctrl+O",
        description: "open material folders",
        action: Action::OpenFolder,
    },
    Shortcut { modifiers: Modifiers::COMMAND, key: Key::E, keys: "Ctrl+E", description: "export the bundle", action: Action::Export },
    Shortcut { modifiers: Modifiers::NONE, key: Key::Questionmark, keys: "?", description: "this list", action: Action::ToggleHelp },
    Shortcut { modifiers: Modifiers::NONE, key: Key::F1, keys: "F1", description: "this list", action: Action::ToggleHelp },
];

/// The actions whose shortcuts were pressed this frame. Keys typed into a text field (a widget
/// with keyboard focus) are the field's, not shortcuts.
#[must_use]
pub fn pressed(ctx: &egui::Context) -> Vec<Action> {
    if ctx.memory(|m| m.focused().is_some()) {
        return Vec::new();
    }
    ctx.input_mut(|input| {
        let mut actions = Vec::new();
        for s in &SHORTCUTS {
            // `?` comes as a text event on most keyboard layouts (Shift+/), not always as a key.
            let typed = s.key == Key::Questionmark && input.events.iter().any(|e| matches!(e, egui::Event::Text(t) if t == "?"));
            if (input.consume_key(s.modifiers, s.key) || typed) && !actions.contains(&s.action) {
                actions.push(s.action);
            }
        }
        actions
    })
}

/// The help overlay: every shortcut, in a window the artist closes with `?`, F1 or its button.
pub fn help_ui(ctx: &egui::Context, open: &mut bool) {
    egui::Window::new("Keyboard shortcuts")
        .open(open)
        .collapsible(false)
        .resizable(false)
        .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
        .show(ctx, |ui| {
            egui::Grid::new("shortcuts").num_columns(2).striped(true).show(ui, |ui| {
                for s in &SHORTCUTS {
                    ui.monospace(s.keys);
                    ui.label(s.description);
                    ui.end_row();
                }
            });
        });
}
