//! Fault injection for the reliability tests (docs/reliability.md): the `TEXSET_FAULT`
//! environment variable, read once per process, names faults to simulate, comma-separated:
//!
//! - `gpu-no-adapter`: GPU training finds no adapter.
//! - `gpu-device`: the adapter fails to create a device.
//! - `gpu-lost-at-step=N`: the device is lost at training step N.
//! - `disk-full`: every atomic write fails with "no space left" halfway through its bytes.
//! - `slow-write`: atomic writes go out in 1 KiB pieces 5 ms apart, so a test can kill the
//!   process in the middle of one.
//! - `batch-panic-at=I`: a batch panics on its material `I` (0-based, in the job's order).
//!
//! Only builds with the `fault-injection` feature read the variable: the app's integration tests
//! turn it on (their dev-dependency on texset-core), so the `texset` binary they run honours it.
//! Without the feature (`cargo build`, `cargo build --release`, an engine using the crate) no fault
//! is ever active and the functions below are constants the compiler folds away.

/// A simulated failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// No GPU adapter.
    GpuNoAdapter,
    /// The adapter fails to create a device.
    GpuDevice,
    /// The device is lost at this training step.
    GpuLostAtStep(u32),
    /// The disk fills up during a write.
    DiskFull,
    /// Writes are slow.
    SlowWrite,
    /// A batch panics on its material of this index.
    BatchPanicAt(usize),
}

/// The name of the environment variable.
pub const ENV_VAR: &str = "TEXSET_FAULT";

/// The faults this process simulates (empty unless `TEXSET_FAULT` is set).
#[cfg(feature = "fault-injection")]
#[must_use]
pub fn active() -> &'static [Fault] {
    static FAULTS: std::sync::OnceLock<Vec<Fault>> = std::sync::OnceLock::new();
    FAULTS.get_or_init(|| std::env::var(ENV_VAR).map(|v| parse(&v)).unwrap_or_default())
}

/// The faults this process simulates: none, in a build without the `fault-injection` feature.
#[cfg(not(feature = "fault-injection"))]
#[inline]
#[must_use]
pub fn active() -> &'static [Fault] {
    &[]
}

/// Whether `fault` is simulated.
#[inline]
#[must_use]
pub fn is_active(fault: Fault) -> bool {
    active().contains(&fault)
}

/// The step at which a device loss is simulated.
#[inline]
#[must_use]
pub fn gpu_lost_at_step() -> Option<u32> {
    active().iter().find_map(|f| match f {
        Fault::GpuLostAtStep(step) => Some(*step),
        _ => None,
    })
}

/// Parses a `TEXSET_FAULT` value; unknown names are reported on stderr and ignored (this is a
/// test hook, not user input).
#[cfg(any(test, feature = "fault-injection"))]
#[must_use]
pub fn parse(value: &str) -> Vec<Fault> {
    value
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .filter_map(|t| {
            let fault = match t.split_once('=') {
                None if t == "gpu-no-adapter" => Some(Fault::GpuNoAdapter),
                None if t == "gpu-device" => Some(Fault::GpuDevice),
                None if t == "disk-full" => Some(Fault::DiskFull),
                None if t == "slow-write" => Some(Fault::SlowWrite),
                Some(("gpu-lost-at-step", n)) => n.parse().ok().map(Fault::GpuLostAtStep),
                Some(("batch-panic-at", n)) => n.parse().ok().map(Fault::BatchPanicAt),
                _ => None,
            };
            if fault.is_none() {
                eprintln!("warning: {ENV_VAR}: unknown fault {t:?} ignored");
            }
            fault
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_fault() {
        assert_eq!(
            parse("gpu-no-adapter, gpu-device,gpu-lost-at-step=7,disk-full,slow-write,bogus,gpu-lost-at-step=x,batch-panic-at=2"),
            vec![Fault::GpuNoAdapter, Fault::GpuDevice, Fault::GpuLostAtStep(7), Fault::DiskFull, Fault::SlowWrite, Fault::BatchPanicAt(2)]
        );
        assert!(parse("").is_empty());
    }
}
