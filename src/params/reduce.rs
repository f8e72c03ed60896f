//! Results of the batched normalise: plain data shared by the API, the CPU
//! backend and the reference.

/// Per-array status of the device batch: normalised.
pub const BATCH_OK: i32 = 0;

/// Per-array status: the sum is zero, not finite or too small to invert; the array is unchanged.
pub const BATCH_BAD_SUM: i32 = 1;

/// Per-array status: the offsets are invalid; no array was changed.
pub const BATCH_BAD_OFFSETS: i32 = 2;

/// What a batched normalise did: every array's sum, and the arrays left
/// unchanged because their sum was zero, not finite or too small to invert (empty ones included).
#[derive(Debug, Clone, PartialEq)]
pub struct BatchNormalized {
    pub sums: Vec<f64>,
    /// Indices of the arrays that were not normalised, ascending.
    pub failed: Vec<usize>,
}

impl BatchNormalized {
    pub(crate) fn from_statuses(sums: Vec<f64>, status: &[i32]) -> Self {
        let failed = (0..status.len())
            .filter(|&a| status[a] != BATCH_OK)
            .collect();
        BatchNormalized { sums, failed }
    }
}
