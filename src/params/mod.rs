//! The parameter, option and result types of every family: plain data that
//! both the safe API (`crate::api`, which validates and launches) and the CPU
//! reference (`crate::reference`, the oracle) import, so neither depends on
//! the other. The API re-exports them where users find them.
pub mod lombscargle;
pub mod lorenz;
pub mod stencil;
