//! Drivers: runs of the pipeline that answer a bigger question. Rate control to a target PSNR
//! ([`rate`]), the precision search ([`search`]), adding materials to a trained library
//! ([`extend`]) and batch compression of a library folder ([`batch`]).

pub mod batch;
pub(crate) mod extend;
pub(crate) mod rate;
pub(crate) mod search;

pub use extend::{AddOptions, AddReport, Extended, add_materials};
pub use rate::{RateError, RateReport, RateTarget, RateTrial, compress_to_psnr};
pub use search::{
    FinalRun, SearchCache, SearchError, SearchOptions, SearchPoint, SearchReport, SearchSpace, SearchTrial, Source, Strategy,
    search_precision,
};
