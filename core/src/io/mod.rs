//! Plumbing under every other module: atomic writes and bounded reads ([`fsutil`]), the record
//! of what texset wrote in an output folder ([`written`]) and test-only fault injection
//! ([`fault`]). Nothing here names another module of the crate.

pub mod fault;
pub(crate) mod fsutil;
pub(crate) mod written;

pub use fsutil::{AtomicFile, read_regular, read_regular_text, write_atomic};
pub use written::{Overwrite, RECORD_FILE, Written, WrittenError};
