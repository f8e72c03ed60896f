// Which toolkit builds which part of the fatbin. Included by build.rs and by
// the crate (src/gpu/image.rs), so both sides split the archs the same way.

/// SASS built by CUDA 11.8, the last toolkit that targets these GPUs
/// (Kepler sm_35/37, Maxwell sm_50/52/53, Pascal sm_60/61/62, Volta sm_70/72).
pub const LEGACY_SASS: &[u32] = &[35, 37, 50, 52, 53, 60, 61, 62, 70, 72];
/// PTX of the lowest arch, built by CUDA 11.8: any GPU can JIT it.
pub const LEGACY_PTX: u32 = 35;
/// Archs from this one up are built by the pinned CUDA 13.0 toolkit.
pub const MODERN_MIN_ARCH: u32 = 75;
