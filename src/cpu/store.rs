//! Streaming (non-temporal) stores for outputs far larger than the caches.
//!
//! A plain store first reads the line it writes (read for ownership): an
//! output written once costs a read and a write of memory, a third more
//! traffic than a filter's input read plus output write. Non-temporal stores
//! skip that read (and leave the caches to the data still in use), which is
//! also what `memcpy` does for large copies. Only the baseline SSE2 of every
//! x86_64 CPU is used; elsewhere this is a plain copy.

/// Outputs smaller than this are stored normally: they may still be in the
/// cache when the caller reads them.
pub(crate) const STREAM_MIN_BYTES: usize = 32 << 20;

/// `dst.copy_from_slice(src)` (equal lengths) with non-temporal stores for
/// the whole cache lines of the middle. Call [`fence`] after the last one, before
/// another thread may read `dst`.
#[inline]
pub(crate) fn stream_copy<T: Copy>(dst: &mut [T], src: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let size = std::mem::size_of::<T>();
        let n = dst.len().min(src.len());
        // Values before the first 64-byte boundary of dst (T is 4 or 8
        // bytes, so the boundary falls between values).
        let head = ((64 - dst.as_ptr() as usize % 64) % 64 / size).min(n);
        // A whole cache line per step: four 16-byte stores that fill it
        // (so the write-combining buffer goes out whole).
        let per = 64 / size;
        let body = (n - head) / per * per;
        dst[..head].copy_from_slice(&src[..head]);
        for k in (head..head + body).step_by(per) {
            // SAFETY: k .. k + per lies inside both slices (body <= n - head);
            // dst + k is 64-byte aligned (head was chosen so); the source
            // loads are unaligned. SSE2 is part of every x86_64 target.
            unsafe {
                let s = src.as_ptr().add(k) as *const __m128i;
                let d = dst.as_mut_ptr().add(k) as *mut __m128i;
                let v = [0, 1, 2, 3].map(|i| _mm_loadu_si128(s.add(i)));
                for (i, v) in v.into_iter().enumerate() {
                    _mm_stream_si128(d.add(i), v);
                }
            }
        }
        dst[head + body..n].copy_from_slice(&src[head + body..n]);
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// Orders the non-temporal stores before any later store (they are weakly
/// ordered): call it once a thread's streaming is done.
#[inline]
pub(crate) fn fence() {
    // SAFETY: SSE is part of every x86_64 target; a fence has no operands.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}
