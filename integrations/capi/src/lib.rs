//! texset's C API: open a `.texset` bundle, list its materials and maps, decode maps and texels
//! on the CPU, and get the GPU decoder's shader source and the exact bytes of the buffers it
//! binds, so that a C or C++ engine decodes per pixel without Rust.
//!
//! `include/texset.h` is written from this crate by cbindgen (`cbindgen.toml`); a test fails when
//! the committed header differs from what cbindgen writes. docs/integration.md ("C and C++")
//! states the ABI: ownership, threads, limits and errors.
//!
//! Every entry point:
//! - checks each pointer and length it is given before it reads or writes through it;
//! - catches a panic (a texset bug) and returns [`TexsetStatus::Panic`] instead of unwinding into
//!   C;
//! - returns a [`TexsetStatus`] and, on failure, leaves a message for [`texset_last_error`] on
//!   the calling thread.
//!
//! This crate is the only one of texset's with `unsafe`: the C boundary. Each block says why it
//! is sound.

mod bundle;
mod gpu;

pub use bundle::{
    TexsetBundle, TexsetColorSpace, TexsetLimits, TexsetMapInfo, TexsetMapKind, TexsetNormalConvention, TexsetOpenOptions,
    TexsetSampleFormat, TexsetTexelFormat, texset_bundle_free, texset_bundle_material_count, texset_bundle_open_memory,
    texset_bundle_open_path, texset_decode_map_level, texset_decode_texels, texset_map_info, texset_map_level_bytes,
    texset_material_map_count, texset_material_name, texset_open_options_default,
};
pub use gpu::{
    TexsetDecodeMode, TexsetEntryPoint, TexsetGpuBuffers, TexsetGpuModel, TexsetGpuOptions, TexsetPrecision, TexsetShaderLang,
    texset_gpu_buffers, texset_gpu_dispatch, texset_gpu_model_free, texset_gpu_model_new, texset_gpu_options_default, texset_gpu_params,
    texset_gpu_shader, texset_string_free,
};

use std::cell::RefCell;
use std::ffi::{CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The API's major version: a change here breaks programs built against an older header.
pub const TEXSET_VERSION_MAJOR: u32 = 0;
/// The API's minor version: additions that keep the ABI.
pub const TEXSET_VERSION_MINOR: u32 = 1;
/// The API's patch version.
pub const TEXSET_VERSION_PATCH: u32 = 0;
/// `MAJOR * 10000 + MINOR * 100 + PATCH`, what `texset_version` returns: compare it with the
/// header's to catch a library of another version at run time.
pub const TEXSET_VERSION: u32 = TEXSET_VERSION_MAJOR * 10000 + TEXSET_VERSION_MINOR * 100 + TEXSET_VERSION_PATCH;

/// What an entry point returns. Anything but `TEXSET_STATUS_OK` leaves a message for
/// `texset_last_error` on the calling thread.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexsetStatus {
    /// Done.
    Ok = 0,
    /// A pointer the call needs was null.
    NullArgument = 1,
    /// An argument is out of range: a material, map or mip level that does not exist, an unknown
    /// enum value, a length that does not fit.
    InvalidArgument = 2,
    /// The file could not be read (missing, not a regular file, over the size limit).
    Io = 3,
    /// The bytes are not a bundle this library reads: truncated, corrupt (checksums), an
    /// unsupported format version, or a manifest that contradicts itself.
    BadBundle = 4,
    /// The bundle declares more decoding than the limits it was opened with allow.
    OverLimit = 5,
    /// The caller's buffer is smaller than the result (its size is in the message).
    BufferTooSmall = 6,
    /// The GPU decoder cannot be made for this bundle or language.
    Shader = 7,
    /// texset panicked (a bug: please report the message); nothing crossed into C.
    Panic = 8,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// The message of the last failed call on this thread, UTF-8, NUL-terminated; "" when none has
/// failed. The pointer stays valid until the next call into texset on this thread; copy it to
/// keep it. Never null.
#[unsafe(no_mangle)]
pub extern "C" fn texset_last_error() -> *const c_char {
    LAST_ERROR.with(|last| last.borrow().as_ptr())
}

/// The library's version, [`TEXSET_VERSION`]'s form.
#[unsafe(no_mangle)]
pub extern "C" fn texset_version() -> u32 {
    TEXSET_VERSION
}

/// An error on its way to C: a status and its message.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) status: TexsetStatus,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(status: TexsetStatus, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }

    pub(crate) fn null(what: &str) -> Self {
        Self::new(TexsetStatus::NullArgument, format!("{what} is null"))
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(TexsetStatus::InvalidArgument, message)
    }
}

fn set_last_error(message: &str) {
    // A message with a NUL inside (from a file name, say) is cut at it rather than lost.
    let text = message.split('\0').next().unwrap_or_default();
    let message = CString::new(text).unwrap_or_default();
    LAST_ERROR.with(|last| *last.borrow_mut() = message);
}

/// Runs one entry point's body: its result as a status, its error as the thread's last message,
/// and a panic caught at the boundary.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Failure>) -> TexsetStatus {
    set_last_error("");
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => TexsetStatus::Ok,
        Ok(Err(failure)) => {
            set_last_error(&failure.message);
            failure.status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_owned());
            set_last_error(&format!("texset panicked (a bug; please report it): {what}"));
            TexsetStatus::Panic
        }
    }
}

/// `*out = value` for an out-pointer that was checked to be non-null.
///
/// # Safety
/// `out` must be null or valid for a write of a `T`, suitably aligned.
pub(crate) unsafe fn write_out<T>(out: *mut T, what: &str, value: T) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: not null (checked above); valid and aligned for a `T` by the caller's contract,
    // which each entry point states in the header.
    unsafe { out.write(value) };
    Ok(())
}

/// A reference from a handle pointer, or a null-argument failure.
///
/// # Safety
/// `handle` must be null or a pointer this library returned and that was not freed.
pub(crate) unsafe fn handle<'a, T>(handle: *const T, what: &str) -> Result<&'a T, Failure> {
    // SAFETY: the caller's contract: null (refused) or a live handle from this library.
    unsafe { handle.as_ref() }.ok_or_else(|| Failure::null(what))
}

#[cfg(test)]
mod tests {
    use super::{Failure, TexsetStatus, guard, texset_last_error};
    use std::ffi::CStr;

    fn last_error() -> String {
        // SAFETY: texset_last_error never returns null, and the string lives until this thread's
        // next call into texset.
        unsafe { CStr::from_ptr(texset_last_error()) }.to_string_lossy().into_owned()
    }

    /// A panic stops at the boundary as a status with its message; the next call clears it.
    #[test]
    fn a_panic_is_caught_and_reported() {
        let status = guard(|| panic!("the decoder fell over"));
        assert_eq!(status, TexsetStatus::Panic);
        assert!(last_error().contains("the decoder fell over"), "{}", last_error());
        assert_eq!(guard(|| Ok(())), TexsetStatus::Ok);
        assert_eq!(last_error(), "");
    }

    /// A failure's status and message reach C; a NUL inside a message cuts it there.
    #[test]
    fn a_failure_reaches_c_with_its_message() {
        let status = guard(|| Err(Failure::new(TexsetStatus::BadBundle, "bad\0hidden")));
        assert_eq!(status, TexsetStatus::BadBundle);
        assert_eq!(last_error(), "bad");
    }
}
