//! The coupled F/G system (MODELS.md section 1) on the CPU: the same IEEE
//! operations in the same order as csrc/fg.cu, and the same summation tree
//! for delta, so GPU and CPU agree bit for bit in double precision and in
//! single precision too unless a value is subnormal (the pack flushes f32
//! subnormals to zero, the CPU keeps them). Chunks of the state are stepped
//! on all cores; the result does not depend on the thread count.
use crate::float::{Complex, Float};
pub use crate::params::fg::CHUNK;

const LANES: usize = 32;

// Each operation rounded to T as IEEE arithmetic in T rounds it. For f32 the
// f64 result is exact for a product and at worst double-rounded for a sum,
// which is innocuous: 53 >= 2 * 24 + 2 bits (so f64 then f32 rounding equals
// direct f32 rounding for +, -, *).
fn mul<T: Float>(a: T, b: T) -> T {
    T::from_f64(a.to_f64() * b.to_f64())
}
fn add<T: Float>(a: T, b: T) -> T {
    T::from_f64(a.to_f64() + b.to_f64())
}
fn sub<T: Float>(a: T, b: T) -> T {
    T::from_f64(a.to_f64() - b.to_f64())
}
fn neg<T: Float>(a: T) -> T {
    T::from_f64(-a.to_f64())
}

/// dF and Re dG at (F, G) for a given delta (dG is purely real:
/// -i (conj(d) F - d conj(F)) = 2 (dr fi - di fr)).
fn rhs<T: Float>(fr: T, fi: T, gr: T, gi: T, dr: T, di: T) -> (T, T, T) {
    let wr = sub(add(gr, gr), T::from_f64(1.0));
    let wi = add(gi, gi);
    let dfr = add(add(fi, fi), add(mul(dr, wi), mul(di, wr)));
    let dfi = sub(neg(add(fr, fr)), sub(mul(dr, wr), mul(di, wi)));
    let s = sub(mul(dr, fi), mul(di, fr));
    (dfr, dfi, add(s, s))
}

/// One classic RK4 step of one element with delta held at `d`.
fn rk4<T: Float>(f: &mut Complex<T>, g: &mut Complex<T>, d: Complex<T>, dt: T) {
    let (half, sixth, third) = (
        T::from_f64(0.5),
        T::from_f64(1.0 / 6.0),
        T::from_f64(1.0 / 3.0),
    );
    let gi = g.im;
    let scaled = |(a, b, c): (T, T, T)| [mul(dt, a), mul(dt, b), mul(dt, c)];
    let z = [f.re, f.im, g.re];
    let k1 = scaled(rhs(z[0], z[1], z[2], gi, d.re, d.im));
    // The stage points z + k/2 (twice), then z + k.
    let at = |k: &[T; 3], halve: bool| {
        let p = |i: usize| add(z[i], if halve { mul(k[i], half) } else { k[i] });
        rhs(p(0), p(1), p(2), gi, d.re, d.im)
    };
    let k2 = scaled(at(&k1, true));
    let k3 = scaled(at(&k2, true));
    let k4 = scaled(at(&k3, false));
    let next = |i: usize| {
        let inc = add(
            add(add(mul(k1[i], sixth), mul(k2[i], third)), mul(k3[i], third)),
            mul(k4[i], sixth),
        );
        add(z[i], inc)
    };
    (f.re, f.im, g.re) = (next(0), next(1), next(2));
}

fn add2(a: [f64; 2], b: [f64; 2]) -> [f64; 2] {
    [a[0] + b[0], a[1] + b[1]]
}

/// The kernels' warp tree: at each level lane i adds lane i + off, off = 16 .. 1.
fn lane_tree(mut v: [[f64; 2]; LANES]) -> [f64; 2] {
    let mut off = LANES / 2;
    while off > 0 {
        for i in 0..off {
            v[i] = add2(v[i], v[i + off]);
        }
        off /= 2;
    }
    v[0]
}

/// Sum of one chunk's F (up to CHUNK values): each warp of 32 by the lane
/// tree, then the 32 warp sums by the same tree; missing values are 0.
fn chunk_sum<T: Float>(f: &[Complex<T>]) -> [f64; 2] {
    let mut warps = [[0.0; 2]; LANES];
    for (w, warp) in f.chunks(LANES).enumerate() {
        let mut lanes = [[0.0; 2]; LANES];
        for (lane, c) in lanes.iter_mut().zip(warp) {
            *lane = [c.re.to_f64(), c.im.to_f64()];
        }
        warps[w] = lane_tree(lanes);
    }
    lane_tree(warps)
}

/// delta from the chunk sums: lane l adds sums l, l + 32, ... in order, then the lane tree.
fn total(sums: &[[f64; 2]]) -> [f64; 2] {
    let mut lanes = [[0.0; 2]; LANES];
    for (i, s) in sums.iter().enumerate() {
        lanes[i % LANES] = add2(lanes[i % LANES], *s);
    }
    lane_tree(lanes)
}

/// Integrates `nsteps` RK4 steps in place; F and G hold N*N values each (any
/// common length works). Returns `delta[0..=nsteps]`, `delta[0] = delta0`.
pub fn integrate<T: Float>(
    f: &mut [Complex<T>],
    g: &mut [Complex<T>],
    delta0: Complex<T>,
    dt: T,
    nsteps: usize,
) -> Vec<Complex<T>> {
    assert_eq!(f.len(), g.len(), "F and G differ in length");
    let nchunks = f.len().div_ceil(CHUNK);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(nchunks.div_ceil(16)) // ~16 chunks per thread before threads pay for their start
        .max(1);
    let per_thread = nchunks.div_ceil(threads).max(1);
    let mut sums = vec![[0.0f64; 2]; nchunks];
    let mut history = Vec::with_capacity(nsteps + 1);
    let mut delta = delta0;
    history.push(delta);
    let step_chunks = |f: &mut [Complex<T>], g: &mut [Complex<T>], sums: &mut [[f64; 2]], d| {
        for ((fc, gc), sum) in f.chunks_mut(CHUNK).zip(g.chunks_mut(CHUNK)).zip(sums) {
            for (fe, ge) in fc.iter_mut().zip(gc.iter_mut()) {
                rk4(fe, ge, d, dt);
            }
            *sum = chunk_sum(fc);
        }
    };
    for _ in 0..nsteps {
        if threads == 1 {
            step_chunks(f, g, &mut sums, delta);
        } else {
            std::thread::scope(|scope| {
                let span = per_thread * CHUNK;
                for ((fs, gs), ss) in f
                    .chunks_mut(span)
                    .zip(g.chunks_mut(span))
                    .zip(sums.chunks_mut(per_thread))
                {
                    scope.spawn(move || step_chunks(fs, gs, ss, delta));
                }
            });
        }
        let t = total(&sums);
        delta = Complex {
            re: T::from_f64(t[0]),
            im: T::from_f64(t[1]),
        };
        history.push(delta);
    }
    history
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_tree_adds_every_lane_once() {
        let mut v = [[0.0; 2]; LANES];
        for (i, x) in v.iter_mut().enumerate() {
            *x = [(1u64 << i) as f64, -(i as f64)];
        }
        assert_eq!(lane_tree(v), [((1u64 << 32) - 1) as f64, -496.0]);
    }

    #[test]
    fn f32_operations_round_like_f32_arithmetic() {
        let mut s = 0x1234_5678_9abc_def0u64;
        let mut draw = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            f32::from_bits((s as u32 & 0x3fff_ffff) | ((s >> 33) as u32 & 0x8000_0000))
        };
        for _ in 0..100_000 {
            let (a, b) = (draw(), draw());
            assert_eq!(mul(a, b).to_bits(), (a * b).to_bits(), "{a} * {b}");
            assert_eq!(add(a, b).to_bits(), (a + b).to_bits(), "{a} + {b}");
            assert_eq!(sub(a, b).to_bits(), (a - b).to_bits(), "{a} - {b}");
        }
    }
}
