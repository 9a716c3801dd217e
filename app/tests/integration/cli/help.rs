//! The help texts match the README's synopsis, and the process behaves as a command-line tool:
//! no Wayland noise headless, a quiet end on a closed pipe.

use super::{samples, texset};
use std::path::Path;
use std::process::Command;

/// The flags a `--help` text lists, by long name (`--output`), with the short name (`-o`) of those
/// that have one; without `--help` and `--version`.
fn help_flags(help: &str) -> std::collections::BTreeMap<String, Option<String>> {
    help.lines()
        .filter_map(|line| {
            // `  -o, --output <OUTPUT>` or `      --bpp <BPP>`: a short flag first, or none. Deeper
            // lines are descriptions.
            let indent = line.len() - line.trim_start().len();
            let line = line.trim_start();
            if indent > 6 {
                return None;
            }
            let (short, line) = match line.split_once(", ") {
                Some((short, rest)) if short.len() == 2 && short.starts_with('-') => (Some(short.to_owned()), rest),
                _ => (None, line),
            };
            let flag: String = line.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            (flag.starts_with("--") && !["--help", "--version"].contains(&flag.as_str())).then_some((flag, short))
        })
        .collect()
}

/// The subcommands a `--help` text lists (its `Commands:` section), without `help`.
fn help_commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A command's line; deeper ones continue its description.
        .filter(|l| !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// The README's CLI synopsis: for each command line (`texset compress …`, `texset bench rd …`, and
/// the lines indented under it), the command and the long flags it shows. Comments (`# …`) are
/// not part of it.
fn readme_synopsis() -> Vec<(String, std::collections::BTreeSet<String>)> {
    let readme = std::fs::read_to_string(texset_testkit::repo_root().join("README.md")).unwrap();
    let block = readme.split_once("## CLI\n```\n").unwrap().1.split_once("```").unwrap().0;
    let mut commands: Vec<(String, std::collections::BTreeSet<String>)> = Vec::new();
    for line in block.lines() {
        let code = line.split_once('#').map_or(line, |(code, _)| code);
        if let Some(rest) = code.strip_prefix("texset") {
            let mut words =
                rest.split_whitespace().take_while(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-') && !w.starts_with('-'));
            let mut command = words.next().unwrap_or_default().to_owned();
            if command == "bench" {
                command = format!("bench {}", words.next().unwrap());
            }
            commands.push((command, std::collections::BTreeSet::new()));
        }
        // `--name`, or a short `-o` (a single letter; `-` alone is a hyphen).
        let flags = code
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| w.starts_with("--") && w.len() > 2 || w.len() == 2 && w.starts_with('-') && w.as_bytes()[1].is_ascii_alphabetic());
        commands.last_mut().unwrap().1.extend(flags.map(str::to_owned));
    }
    commands
}

#[test]
fn readme_synopsis_matches_every_subcommands_help() {
    let help = |args: &[&str]| {
        let out = texset(&[args, &["--help"]].concat());
        assert!(out.status.success(), "{args:?} --help: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    // Every command of `--help` (bench: each of its subcommands) has a line in the README.
    let mut commands = Vec::new();
    for command in help_commands(&help(&[])) {
        if command == "bench" {
            commands.extend(help_commands(&help(&["bench"])).into_iter().map(|sub| format!("bench {sub}")));
        } else {
            commands.push(command);
        }
    }
    let synopsis = readme_synopsis();
    let shown: Vec<&str> = synopsis.iter().map(|(c, _)| c.as_str()).collect();
    for command in &commands {
        assert!(shown.contains(&command.as_str()), "README's CLI synopsis has no `texset {command}` line");
    }
    // Each command's README lines show exactly the flags its `--help` lists (a command may have
    // several lines: `compress --batch`, `bench rd --from`).
    for command in &commands {
        let args: Vec<&str> = command.split(' ').collect();
        let flags = help_flags(&help(&args));
        // A short flag in the README stands for its long name.
        let long_name =
            |f: &String| flags.iter().find(|(_, short)| short.as_ref() == Some(f)).map_or_else(|| f.clone(), |(long, _)| long.clone());
        let readme: std::collections::BTreeSet<String> =
            synopsis.iter().filter(|(c, _)| c == command).flat_map(|(_, flags)| flags.iter().map(long_name)).collect();
        let actual: std::collections::BTreeSet<String> = flags.into_keys().collect();
        let missing: Vec<_> = actual.difference(&readme).collect();
        let unknown: Vec<_> = readme.difference(&actual).collect();
        assert!(missing.is_empty() && unknown.is_empty(), "texset {command}: README lacks {missing:?}; --help has no {unknown:?}");
    }
    // The bare `texset` line (the studio) is the only one that is not a subcommand.
    for (command, _) in &synopsis {
        assert!(command.is_empty() || commands.contains(command), "README shows `texset {command}`, which --help does not list");
    }
}

/// Without `XDG_RUNTIME_DIR` (unset or empty) a headless run prints no error line from Mesa's
/// Vulkan device-select layer, which connects to Wayland on every instance (before the fix: two
/// `error: XDG_RUNTIME_DIR is invalid …` lines per `compress` on this machine). Where that layer
/// is not installed there is nothing to check.
#[test]
fn a_headless_run_without_xdg_runtime_dir_prints_no_wayland_error() {
    const NAME: &str = "a_headless_run_without_xdg_runtime_dir_prints_no_wayland_error";
    let manifests = ["/usr/share/vulkan/implicit_layer.d", "/etc/vulkan/implicit_layer.d"];
    let layer = manifests.iter().any(|d| Path::new(d).join("VkLayer_MESA_device_select.json").exists());
    if !layer {
        texset_testkit::skip(NAME, "Mesa's device-select Vulkan layer is not installed here");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bricks.texset");
    for runtime_dir in [None, Some("")] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_texset"));
        command.args(["compress", samples().join("bricks").to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", "2", "--no-ssim"]);
        command.env_remove("XDG_RUNTIME_DIR").env_remove("NODEVICE_SELECT");
        if let Some(dir) = runtime_dir {
            command.env("XDG_RUNTIME_DIR", dir);
        }
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(!stderr.contains("XDG_RUNTIME_DIR is invalid"), "XDG_RUNTIME_DIR {runtime_dir:?}: {stderr}");
    }
}

/// Output into a reader that stopped early (`texset inspect b.texset | head -1`) ends the run as
/// it ends `cat`, by `SIGPIPE`, not with a panic about a broken pipe on stderr (which it did
/// before: exit 101 and a backtrace).
#[cfg(unix)]
#[test]
fn output_into_a_closed_pipe_ends_the_run_quietly() {
    use std::os::unix::process::ExitStatusExt as _;
    const SIGPIPE: i32 = 13;
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bricks.texset");
    let out =
        texset(&["compress", samples().join("bricks").to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", "2", "--no-ssim"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A pipe whose only reader is already closed: the first write fails, whatever the timing.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_texset")).args(["inspect", bundle.to_str().unwrap()]).stdout(writer).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(SIGPIPE), "{:?}: {stderr}", out.status);
}
