//! `texset`: the studio (no arguments, or `texset studio DIR...`) and the command line of the
//! texset engine. Thin: the work is in texset-core, texset-shaders and the studio module; the
//! subcommands are in `cli/`, one module each.

mod cli;

use clap::Parser as _;

fn main() {
    quiet_device_select_without_wayland();
    let cli = cli::Cli::parse();
    if let Err(e) = cli::run(cli) {
        eprintln!("texset: error: {e:#}");
        std::process::exit(1);
    }
}

/// Mesa's Vulkan device-select layer, an implicit layer on most Linux systems, connects to
/// Wayland whenever a Vulkan instance is made. Without `XDG_RUNTIME_DIR`, or with it empty (a
/// container, CI, a root shell), libwayland then prints `error: XDG_RUNTIME_DIR is invalid or not
/// set in the environment.` for each instance: error lines in a headless `compress` that nothing
/// went wrong to cause. With no `XDG_RUNTIME_DIR` there is no Wayland compositor for the layer to
/// ask, so it is turned off through its manifest's switch, `NODEVICE_SELECT` (the loader honours
/// it set to anything), unless the user set that. wgpu picks adapters itself, so nothing texset
/// chooses depends on the layer.
fn quiet_device_select_without_wayland() {
    let no_runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").is_none_or(|d| d.is_empty());
    if cfg!(target_os = "linux") && no_runtime_dir && std::env::var_os("NODEVICE_SELECT").is_none() {
        #[expect(unsafe_code, reason = "set_var is unsafe with other threads running; this is the first line of main, before any")]
        // SAFETY: no other thread exists yet (the first call in `main`), so nothing reads the
        // environment concurrently.
        unsafe {
            std::env::set_var("NODEVICE_SELECT", "1");
        }
    }
}
