//! `texset`: the studio (no arguments, or `texset studio DIR...`) and the command line of the
//! texset engine. Thin: the work is in texset-core, texset-shaders and the studio module; the
//! subcommands are in `cli/`, one module each.

mod cli;

use clap::Parser as _;

fn main() {
    quiet_device_select_without_wayland();
    let cli = cli::Cli::parse();
    if !cli.opens_a_window() {
        die_quietly_on_a_closed_pipe();
    }
    if let Err(e) = cli::run(cli) {
        eprintln!("texset: error: {}", error_chain(&e));
        std::process::exit(e.chain().find_map(|c| c.downcast_ref::<cli::Exit>()).map_or(1, |exit| exit.code));
    }
}

/// The error and its causes on one line, `outer: inner: …` (as anyhow's `{:#}`), leaving out a
/// cause whose text its outer message already quotes: texset's library errors name their OS
/// error in their own message (the studio shows that message alone), so `{:#}` would print
/// `cannot read "x": No such file or directory (os error 2): No such file or directory (os error 2)`.
fn error_chain(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cli_text(cause);
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// An error's text as the command line says it: the engine's typed errors that a flag answers
/// name the flag (the engine's own text names no flag: the studio phrases it otherwise).
fn cli_text(cause: &(dyn std::error::Error + 'static)) -> String {
    use texset_core::train::Unsupported;
    let unsupported = cause.downcast_ref::<Unsupported>().or(match cause.downcast_ref::<texset_core::CompressError>() {
        Some(texset_core::CompressError::Backend(u)) => Some(u),
        _ => None,
    });
    match unsupported {
        Some(u) => format!("--backend {} cannot {} yet ({}); use --backend cpu or auto", u.backend.name(), u.task, u.why),
        None => cause.to_string(),
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

/// A command-line run writes its report to stdout; piped into a reader that stops early
/// (`texset inspect b.texset | head`), Rust's `println!` would panic on the closed pipe, since
/// the standard library ignores `SIGPIPE`. A command-line tool ends there quietly instead, as
/// `cat` or `grep` do: `SIGPIPE` gets its default action back. Not for the windowed commands:
/// a window talks to its display server through a socket, where a broken connection must be an
/// error the toolkit handles, not a signal that ends the process.
fn die_quietly_on_a_closed_pipe() {
    #[cfg(unix)]
    {
        #[expect(unsafe_code, reason = "signal(2) has no safe wrapper in std; it takes two integers and no memory of ours")]
        // SAFETY: SIG_DFL is a valid disposition for SIGPIPE; no handler of ours is involved.
        let previous = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        let _ = previous;
    }
}
