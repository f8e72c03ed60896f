//! Adaptive Lorenz 63 ensembles on the CPU: members in blocks over threads,
//! each member stepped on its own with the operations of
//! csrc/lorenz63.cu's `dopri5_run` in the same order (Dormand-Prince 5(4),
//! SciPy RK45's step control, dense output at the save times, time and step
//! size in f64), rounded after every operation where the GPU contracts
//! some into FMAs. Members take different step counts, so a member is one
//! scalar loop (no lanes).
use super::{member_blocks, Block};
use crate::float::Float;
use crate::params::dopri5::{A, B, E, ERROR_EXPONENT, MAX_FACTOR, MIN_FACTOR, P, SAFETY};
use crate::params::lorenz63::{AdaptiveStatus, Lorenz63AdaptiveParams, PerMember};

use super::super::parallel::for_each_chunk;

/// Members per block handed to a thread.
const BLOCK_MEMBERS: usize = 64;

/// What one call returns: final states, saved states, and per member the
/// accepted and rejected steps and the status.
pub(crate) struct AdaptiveRun<T> {
    pub final_state: Vec<T>,
    pub saved: Vec<T>,
    pub accepted: Vec<u32>,
    pub rejected: Vec<u32>,
    pub status: Vec<AdaptiveStatus>,
}

/// An adaptive run (inputs validated by the caller).
pub(crate) fn lorenz63_adaptive<T: Float>(
    p: &Lorenz63AdaptiveParams<&[T]>,
    initial: &[T],
    save_times: &[f64],
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> AdaptiveRun<T> {
    let members = initial.len() / 3;
    let mut final_state = initial.to_vec();
    let mut saved = vec![T::default(); save_times.len() * initial.len()];
    let mut stats: Vec<Stats> = vec![(0, 0, AdaptiveStatus::Reached); members];
    {
        let blocks = member_blocks(&mut final_state, &mut saved, BLOCK_MEMBERS);
        let mut work: Vec<(Block<T>, &mut [Stats])> = blocks
            .into_iter()
            .zip(stats.chunks_mut(BLOCK_MEMBERS))
            .collect();
        for_each_chunk(threads, &mut work, 1, progress, |_, piece| {
            for ((first, state, frames), stats) in piece.iter_mut() {
                for (j, s) in stats.iter_mut().enumerate() {
                    *s = run_member(
                        p,
                        *first + j,
                        &mut state[3 * j..3 * j + 3],
                        frames,
                        3 * j,
                        save_times,
                    );
                }
            }
        });
    }
    AdaptiveRun {
        final_state,
        saved,
        accepted: stats.iter().map(|s| s.0).collect(),
        rejected: stats.iter().map(|s| s.1).collect(),
        status: stats.iter().map(|s| s.2).collect(),
    }
}

type V3<T> = [T; 3];

/// A member's accepted and rejected steps and status.
type Stats = (u32, u32, AdaptiveStatus);

/// `k` of every stage weighted by `w` (zero weights skipped as the kernel
/// skips them), in stage order.
fn weighted<T: Float>(k: &[V3<T>], w: impl IntoIterator<Item = T>) -> V3<T> {
    let mut out = [T::default(); 3];
    let mut first = true;
    for (kj, c) in k.iter().zip(w) {
        if c == T::default() {
            continue;
        }
        for i in 0..3 {
            out[i] = if first { c * kj[i] } else { out[i] + c * kj[i] };
        }
        first = false;
    }
    out
}

/// The tableau's f64 weights in T.
fn in_t<T: Float>(w: &[f64]) -> impl Iterator<Item = T> + '_ {
    w.iter().map(|v| T::from_f64(*v))
}

fn abs<T: Float>(v: T) -> T {
    if v < T::default() {
        -v
    } else {
        v
    }
}

/// The larger of two values (a NaN: the other, as CUDA's fmax).
fn max<T: Float>(a: T, b: T) -> T {
    if a < b || a.to_f64().is_nan() {
        b
    } else {
        a
    }
}

/// v^e through f64 (the GPU's pow differs in the last bits anyway).
fn pow<T: Float>(v: T, e: f64) -> T {
    T::from_f64(v.to_f64().powf(e))
}

/// y + h d.
fn along<T: Float>(y: &V3<T>, h: T, d: &V3<T>) -> V3<T> {
    std::array::from_fn(|i| y[i] + h * d[i])
}

/// RMS of three values (f64's correctly rounded square root is f32's too).
fn rms<T: Float>(v: V3<T>) -> T {
    let mean = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) / T::from_f64(3.0);
    T::from_f64(mean.to_f64().sqrt())
}

/// Ten times the spacing of f64 values at t, toward +infinity.
fn min_step(t: f64) -> f64 {
    let bits = t.to_bits();
    let next = if t >= 0.0 { bits + 1 } else { bits - 1 };
    10.0 * (f64::from_bits(next) - t).abs()
}

/// Member `m` (state `y`, its saved values at offset `at` of each frame):
/// runs it, returns (accepted, rejected, status).
fn run_member<T: Float>(
    p: &Lorenz63AdaptiveParams<&[T]>,
    m: usize,
    state: &mut [T],
    frames: &mut [&mut [T]],
    at: usize,
    save_times: &[f64],
) -> (u32, u32, AdaptiveStatus) {
    let value = |v: &PerMember<&[T]>| match v {
        PerMember::All(a) => T::from_f64(*a),
        PerMember::Each(values) => values[m],
    };
    let (sigma, rho, beta) = (value(&p.sigma), value(&p.rho), value(&p.beta));
    let f = |v: &V3<T>| -> V3<T> {
        [
            sigma * (v[1] - v[0]),
            v[0] * (rho - v[2]) - v[1],
            v[0] * v[1] - beta * v[2],
        ]
    };
    let c = &p.control;
    let (rtol, atol) = (c.effective_rtol(), c.atol);
    let (t_r, t_a) = (T::from_f64(rtol), T::from_f64(atol));
    let (t0, t_end) = (p.t0, p.t_end);
    let mut y: V3<T> = [state[0], state[1], state[2]];
    let mut k1 = f(&y);
    let mut t = t0;
    let mut h_abs = match c.first_step {
        Some(h) => h,
        None => initial_step(&f, &y, &k1, t_end - t0, t_r, t_a, c.max_step),
    };
    let (mut accepted, mut rejected, mut status) = (0u32, 0u32, AdaptiveStatus::Reached);
    let mut frame = 0;
    let mut write = |frame: usize, v: &V3<T>| frames[frame][at..at + 3].copy_from_slice(v);
    'run: while t < t_end {
        let min_h = min_step(t);
        h_abs = if h_abs > c.max_step {
            c.max_step
        } else if h_abs < min_h {
            min_h
        } else {
            h_abs
        };
        let mut rejected_here = false;
        loop {
            if accepted + rejected >= c.max_steps {
                status = AdaptiveStatus::MaxSteps;
                break 'run;
            }
            if h_abs < min_h {
                status = AdaptiveStatus::StepTooSmall;
                break 'run;
            }
            let t_new = (t + h_abs).min(t_end);
            let h = t_new - t;
            h_abs = h;
            let ht = T::from_f64(h);
            let mut k = [k1; 7];
            for s in 1..6 {
                k[s] = f(&along(&y, ht, &weighted(&k[..s], in_t(&A[s][..s]))));
            }
            let y_new = along(&y, ht, &weighted(&k[..6], in_t(&B)));
            k[6] = f(&y_new);
            let e = weighted(&k, in_t(&E));
            let err = rms(std::array::from_fn(|i| {
                ht * e[i] / (t_a + max(abs(y[i]), abs(y_new[i])) * t_r)
            }));
            if err < T::from_f64(1.0) {
                let ten = T::from_f64(MAX_FACTOR);
                let mut factor = if err == T::default() {
                    ten
                } else {
                    let grow = T::from_f64(SAFETY) * pow(err, ERROR_EXPONENT);
                    if grow < ten {
                        grow
                    } else {
                        ten
                    }
                };
                if rejected_here && factor > T::from_f64(1.0) {
                    factor = T::from_f64(1.0);
                }
                h_abs *= factor.to_f64();
                accepted += 1;
                while frame < save_times.len() && save_times[frame] <= t_new {
                    if save_times[frame] == t_new {
                        write(frame, &y_new);
                    } else {
                        let x = T::from_f64((save_times[frame] - t) / h);
                        let powers = [x, x * x, x * x * x, x * x * x * x];
                        let coef = P.iter().map(|row| {
                            ht * (T::from_f64(row[0]) * powers[0]
                                + T::from_f64(row[1]) * powers[1]
                                + T::from_f64(row[2]) * powers[2]
                                + T::from_f64(row[3]) * powers[3])
                        });
                        let d = weighted(&k, coef);
                        write(frame, &std::array::from_fn(|i| y[i] + d[i]));
                    }
                    frame += 1;
                }
                t = t_new;
                y = y_new;
                k1 = k[6];
                break;
            }
            // A NaN error compares false: the factor is then the smallest.
            let shrink = T::from_f64(SAFETY) * pow(err, ERROR_EXPONENT);
            h_abs *= if shrink > T::from_f64(MIN_FACTOR) {
                shrink.to_f64()
            } else {
                MIN_FACTOR
            };
            rejected_here = true;
            rejected += 1;
        }
    }
    let nan = [T::from_f64(f64::NAN); 3];
    for k in frame..save_times.len() {
        write(
            k,
            if status == AdaptiveStatus::Reached {
                &y
            } else {
                &nan
            },
        );
    }
    state.copy_from_slice(&y);
    (accepted, rejected, status)
}

/// SciPy's `select_initial_step` (error order 4), in T as the kernel.
fn initial_step<T: Float>(
    f: &impl Fn(&V3<T>) -> V3<T>,
    y0: &V3<T>,
    f0: &V3<T>,
    interval: f64,
    rtol: T,
    atol: T,
    max_step: f64,
) -> f64 {
    if interval == 0.0 {
        return 0.0;
    }
    let s: V3<T> = std::array::from_fn(|i| atol + abs(y0[i]) * rtol);
    let d0 = rms(std::array::from_fn(|i| y0[i] / s[i]));
    let d1 = rms(std::array::from_fn(|i| f0[i] / s[i]));
    let tiny = T::from_f64(1e-5);
    let h0 = if d0 < tiny || d1 < tiny {
        T::from_f64(1e-6)
    } else {
        T::from_f64(0.01) * d0 / d1
    };
    let h0 = if T::from_f64(interval) < h0 {
        T::from_f64(interval)
    } else {
        h0
    };
    let f1 = f(&along(y0, h0, f0));
    let d2 = rms(std::array::from_fn(|i| (f1[i] - f0[i]) / s[i])) / h0;
    let small = T::from_f64(1e-15);
    let h1 = if d1 <= small && d2 <= small {
        max(T::from_f64(1e-6), h0 * T::from_f64(1e-3))
    } else {
        pow(T::from_f64(0.01) / max(d1, d2), 0.2)
    };
    (100.0 * h0.to_f64())
        .min(h1.to_f64())
        .min(interval)
        .min(max_step)
}
