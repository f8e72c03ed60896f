//! Lomb-Scargle on the fast CPU backend.
pub(crate) mod nufft;
