//! The fast CPU box filter (src/cpu/stencil.rs, what `Backend::Cpu` runs)
//! against the reference: every mode, windows 1-33, odd and tiny shapes,
//! pitches with poisoned gaps, non-finite values and cval, and the same bits
//! on 1, 2 and 3 threads.
mod common;

use common::{proptest_cases, Rng};
use kernpack::reference::stencil;
use kernpack::{
    Backend, BoundaryMode, BoxFilterOptions, Float, ImageLayout, Kernpack, UniformFilterOptions,
};
use proptest::prelude::*;

const MODES: [BoundaryMode; 6] = [
    BoundaryMode::Reflect,
    BoundaryMode::Constant,
    BoundaryMode::Nearest,
    BoundaryMode::Mirror,
    BoundaryMode::Wrap,
    BoundaryMode::Interior,
];

/// Rows between the fast path's exact re-seeds (src/cpu/stencil.rs RESEED).
const RESEED: usize = 128;

/// |fast - reference| for an output `w` of the reference, values of
/// magnitude <= m, window `sy x sx`. Before rounding to T the fast mean is
/// within (2 size + 2 RESEED + 4) eps64 m of the exact mean for the square
/// path (src/cpu/stencil.rs) and (3 sy + 3 sx + 4 RESEED) eps64 m for the
/// running sums of any window (src/cpu/uniform.rs), the reference's within
/// (sy + sx) eps64 m (row sums of sx terms, then sy adds); rounding both to
/// T moves each by half an ulp of T.
fn tolerance<T: Float>([sy, sx]: [usize; 2], m: f64, w: f64) -> f64 {
    let eps_t = if T::NAME == "f32" {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    let before = (4 * (sy + sx) + 4 * RESEED + 4) as f64 * f64::EPSILON * m;
    before + eps_t * (w.abs() + before)
}

fn kp(threads: usize) -> Kernpack {
    Kernpack::new(Backend::Cpu)
        .unwrap()
        .with_cpu_threads(threads)
        .unwrap()
}

/// Same value, or both NaN.
fn same_class(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// The fast filter on 1, 2 and 3 threads against the reference: the gaps
/// of the output keep their NaN poison, every point is written, non-finite
/// outputs match the reference's class, finite ones are within tolerance,
/// and the three thread counts give the same bits.
fn check<T: Float>(
    input: &[T],
    layout: ImageLayout,
    opts: impl Into<UniformFilterOptions>,
) -> Result<(), TestCaseError> {
    let opts: UniformFilterOptions = opts.into();
    let poison = T::from_f64(f64::NAN);
    let mut want = vec![poison; layout.output_len()];
    stencil::uniform_filter(input, &mut want, &layout, &opts);
    let m = (0..layout.rows)
        .flat_map(|y| (0..layout.cols).map(move |x| y * layout.in_pitch + x))
        .map(|i| input[i].to_f64())
        .filter(|v| v.is_finite())
        .fold(
            if opts.cval.is_finite() {
                opts.cval.abs()
            } else {
                0.0
            },
            |m, v| m.max(v.abs()),
        );
    let mut first: Option<Vec<T>> = None;
    for threads in [1, 2, 3] {
        let mut got = vec![poison; layout.output_len()];
        kp(threads)
            .uniform_filter_into(input, &mut got, &layout, &opts)
            .unwrap();
        for y in 0..layout.rows {
            for x in 0..layout.out_pitch {
                let i = y * layout.out_pitch + x;
                if i >= got.len() {
                    break;
                }
                let (g, w) = (got[i].to_f64(), want[i].to_f64());
                if x >= layout.cols {
                    prop_assert!(g.is_nan(), "gap ({y}, {x}) was written");
                } else if w.is_finite() {
                    let tol = tolerance::<T>(opts.size, m, w);
                    prop_assert!(
                        (g - w).abs() <= tol,
                        "({y}, {x}) of {layout:?} {opts:?} {}: fast {g} reference {w} (tol {tol:e})",
                        T::NAME
                    );
                } else {
                    prop_assert!(
                        same_class(g, w),
                        "({y}, {x}) of {layout:?} {opts:?} {}: fast {g} reference {w}",
                        T::NAME
                    );
                }
            }
        }
        match &first {
            None => first = Some(got),
            Some(one) => prop_assert!(
                one.iter()
                    .zip(&got)
                    .all(|(a, b)| a.to_f64().to_bits() == b.to_f64().to_bits()),
                "{threads} threads differ from 1 thread: {layout:?} {opts:?}"
            ),
        }
    }
    Ok(())
}

/// A random image of `layout.input_len()` values around a random offset,
/// with `spikes` NaN / +-inf values dropped in.
fn image<T: Float>(seed: u64, layout: &ImageLayout, spikes: usize) -> Vec<T> {
    let mut rng = Rng(seed);
    let offset = rng.range(-5.0, 5.0);
    let mut input: Vec<T> = (0..layout.input_len())
        .map(|_| T::from_f64(offset + rng.range(-1.0, 1.0)))
        .collect();
    for _ in 0..spikes {
        let at = (rng.next() * input.len() as f64) as usize % input.len().max(1);
        let bad = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][(rng.next() * 3.0) as usize % 3];
        if let Some(v) = input.get_mut(at) {
            *v = T::from_f64(bad);
        }
    }
    input
}

/// Tiny (1 .. 4, below most windows), small, and sizes that cross the fast
/// path's boundaries: RESEED rows (strips of 1-3 threads) and, for the
/// columns, its 1024-column tiles (src/cpu/stencil.rs TILE_COLS).
fn layout_strategy() -> impl Strategy<Value = ImageLayout> {
    let rows = prop_oneof![1usize..5, 5usize..40, 120usize..280];
    let cols = prop_oneof![1usize..5, 5usize..40, 120usize..280, 1015usize..1040];
    (rows, cols, 0usize..4, 0usize..4).prop_map(|(rows, cols, pi, po)| ImageLayout {
        rows,
        cols,
        in_pitch: cols + pi,
        out_pitch: cols + po,
    })
}

fn opts_strategy() -> impl Strategy<Value = BoxFilterOptions> {
    (0usize..=16, 0usize..6, -3.0f64..3.0).prop_map(|(r, m, cval)| BoxFilterOptions {
        size: 2 * r + 1,
        mode: MODES[m],
        cval,
    })
}

/// Non-finite and finite cvals, for the constant mode.
fn cval_strategy() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        -3.0f64..3.0
    ]
}

proptest! {
    // Fewer cases unoptimised, where the reference alone takes seconds a case.
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(if cfg!(debug_assertions) { 10 } else { 40 })))]
    #[test]
    fn fast_f32_matches_reference(seed in any::<u64>(), layout in layout_strategy(), opts in opts_strategy()) {
        check::<f32>(&image(seed, &layout, 0), layout, opts)?;
    }

    #[test]
    fn fast_f64_matches_reference(seed in any::<u64>(), layout in layout_strategy(), opts in opts_strategy()) {
        check::<f64>(&image(seed, &layout, 0), layout, opts)?;
    }

    /// NaN and infinities in the image spoil exactly the windows that hold
    /// them, at every window size (the running sums fall back to direct
    /// sums), and a non-finite cval takes the class the reference's sum has.
    #[test]
    fn fast_non_finite_values_match_reference(
        seed in any::<u64>(),
        layout in layout_strategy(),
        opts in opts_strategy(),
        spikes in 0usize..4,
        cval in cval_strategy(),
        f32 in any::<bool>(),
    ) {
        let opts = BoxFilterOptions { cval, ..opts };
        if f32 {
            check::<f32>(&image(seed, &layout, spikes), layout, opts)?;
        } else {
            check::<f64>(&image(seed, &layout, spikes), layout, opts)?;
        }
    }
}

/// A tall, wide image (many RESEED blocks and column pieces) in every mode:
/// the error stays within the same bound, which does not grow with the
/// image's height or width.
#[test]
fn fast_large_image_every_mode() {
    for (i, mode) in MODES.into_iter().enumerate() {
        // Smaller unoptimised (still 3 RESEED blocks and 2 column pieces).
        let (rows, cols) = if cfg!(debug_assertions) {
            (300, 600)
        } else {
            (1031, 1100)
        };
        let layout = ImageLayout {
            rows,
            cols,
            in_pitch: cols + 3,
            out_pitch: cols + 1,
        };
        for size in [[3, 5, 9, 11, 31, 33][i], 15] {
            let opts = BoxFilterOptions {
                size,
                mode,
                cval: 0.25,
            };
            check::<f32>(&image(100 + i as u64, &layout, 0), layout, opts).unwrap();
            check::<f64>(&image(200 + i as u64, &layout, 0), layout, opts).unwrap();
        }
    }
}

/// A NaN in a large image: the running column sums carry it on after it
/// leaves the window unless they are summed again; only the windows that
/// hold it may be NaN.
#[test]
fn fast_nan_in_a_large_image_stays_in_its_windows() {
    let (rows, cols) = (400, 1300);
    let layout = ImageLayout::contiguous(rows, cols);
    for size in [3, 17, 33] {
        let mut input: Vec<f64> = image(7, &layout, 0);
        input[300 * cols + 600] = f64::NAN;
        input[350 * cols + 1290] = f64::INFINITY;
        let opts = BoxFilterOptions {
            size,
            ..Default::default()
        };
        check::<f64>(&input, layout, opts).unwrap();
        let got = kp(2).box_filter(&input, rows, cols, &opts).unwrap();
        let r = size / 2;
        let bad = got.iter().filter(|v| !v.is_finite()).count();
        // The NaN's window, and the infinity's clipped by the right edge
        // (reflect mirrors the columns past it back inside).
        assert!(
            bad <= size * size + size * (size + 10),
            "{bad} non-finite outputs"
        );
        assert!(got[300 * cols + 600 + r].is_nan() && got[(300 + r + 1) * cols + 600].is_finite());
    }
}

/// A window of 0 and origins outside SciPy's range are refused on the CPU
/// backend too, with the output left as it was.
#[test]
fn fast_bad_windows_are_refused() {
    let input = vec![1.0f32; 12];
    let bad = [
        ([0, 3], [0, 0], "size 0 along the rows"),
        ([3, 0], [0, 0], "size 0 along the columns"),
        ([4, 3], [-3, 0], "origin -3 along the rows"),
        ([4, 3], [2, 0], "origin 2 along the rows"),
        ([3, 1], [0, 1], "origin 1 along the columns"),
    ];
    for (size, origin, message) in bad {
        let mut out = vec![-7.0f32; 12];
        let opts = UniformFilterOptions {
            size,
            origin,
            ..Default::default()
        };
        let err = kp(2)
            .uniform_filter_into(&input, &mut out, &ImageLayout::contiguous(3, 4), &opts)
            .unwrap_err();
        assert!(
            matches!(&err, kernpack::Error::InvalidInput(m) if m.contains(message)),
            "{opts:?}: {err}"
        );
        assert!(
            out.iter().all(|v| *v == -7.0),
            "{opts:?} changed the output"
        );
    }
    let err = kp(2)
        .box_filter(
            &input,
            3,
            4,
            &BoxFilterOptions {
                size: 0,
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(matches!(&err, kernpack::Error::InvalidInput(m) if m.contains("size 0")));
}

/// Sizes 1 to 70 per axis (even, odd, larger than the image), any valid
/// origin, every mode, with NaN / inf spikes and non-finite cvals.
fn uniform_strategy() -> impl Strategy<Value = UniformFilterOptions> {
    let size = prop_oneof![1usize..6, 1usize..71];
    (
        size.clone(),
        size,
        0.0f64..1.0,
        0.0f64..1.0,
        0usize..6,
        -3.0f64..3.0,
    )
        .prop_map(|(sy, sx, oy, ox, m, cval)| {
            // An origin drawn uniformly from SciPy's range -(n/2) ..= (n-1)/2.
            let origin = |n: usize, u: f64| -((n / 2) as i64) + (u * n as f64) as i64;
            UniformFilterOptions {
                size: [sy, sx],
                origin: [origin(sy, oy), origin(sx, ox)],
                mode: MODES[m],
                cval,
            }
        })
}

/// Images up to 60 x 60 (the reference costs sy sx per point), often
/// smaller than the window.
fn small_layout_strategy() -> impl Strategy<Value = ImageLayout> {
    let side = prop_oneof![1usize..5, 5usize..61];
    (side.clone(), side, 0usize..3, 0usize..3).prop_map(|(rows, cols, pi, po)| ImageLayout {
        rows,
        cols,
        in_pitch: cols + pi,
        out_pitch: cols + po,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(if cfg!(debug_assertions) { 24 } else { 96 })))]
    /// Any window: the running sums of src/cpu/uniform.rs (and the square
    /// path where the window is square, odd and centred) against the reference.
    #[test]
    fn any_window_matches_reference(
        seed in any::<u64>(),
        layout in small_layout_strategy(),
        opts in uniform_strategy(),
        spikes in prop_oneof![Just(0usize), 0usize..3],
        cval in prop_oneof![Just(None), cval_strategy().prop_map(Some)],
        f32 in any::<bool>(),
    ) {
        let opts = UniformFilterOptions { cval: cval.unwrap_or(opts.cval), ..opts };
        if f32 {
            check::<f32>(&image(seed, &layout, spikes), layout, opts)?;
        } else {
            check::<f64>(&image(seed, &layout, spikes), layout, opts)?;
        }
    }
}

/// Windows wider and taller than RESEED (the running sums' re-seeds) and an
/// image taller and wider than a few RESEED blocks, every mode, with origins.
#[test]
fn any_window_large_image_every_mode() {
    let layout = ImageLayout {
        rows: 300,
        cols: 290,
        in_pitch: 293,
        out_pitch: 291,
    };
    for (i, mode) in MODES.into_iter().enumerate() {
        let size = [34, 63, 2, 130, 64, 7][i];
        let origin: i64 = [-17, 30, 0, 12, 5, -3][i];
        let opts = UniformFilterOptions {
            size: [size, 200 - size],
            origin: [origin, 0],
            mode,
            cval: 0.25,
        };
        check::<f32>(&image(300 + i as u64, &layout, 0), layout, opts).unwrap();
        check::<f64>(&image(400 + i as u64, &layout, 1), layout, opts).unwrap();
    }
}

/// Windows of up to 2^31 - 1 points on a small image (a hostile size that
/// once cost a direct sum over the whole window per re-seed): the call
/// returns at once, and each mode's means are the limit of an ever larger
/// window, within n / size: the constant for constant mode, the mean over
/// one period of the line for reflect and wrap (each point equally often)
/// and mirror (the edges half as often), the mean of the four corners for
/// nearest (half the window reads each edge), the input for interior (no
/// window fits).
#[test]
fn huge_windows_cost_what_the_image_costs() {
    let (rows, cols) = (5usize, 7usize);
    let layout = ImageLayout::contiguous(rows, cols);
    let input: Vec<f64> = image(77, &layout, 0);
    let at = |y: usize, x: usize| input[y * cols + x];
    // Weights of a line's points over one period: edges half in mirror mode.
    let weights = |n: usize, mirror: bool| -> Vec<f64> {
        (0..n)
            .map(|i| {
                if mirror && n > 1 && (i == 0 || i == n - 1) {
                    0.5
                } else {
                    1.0
                }
            })
            .collect()
    };
    let huge = i32::MAX as usize;
    for mode in MODES {
        for size in [[huge, huge], [huge - 1, 1 << 30]] {
            let opts = UniformFilterOptions {
                size,
                origin: [0, 0],
                mode,
                cval: 0.75,
            };
            let mut out = vec![f64::NAN; rows * cols];
            kp(2)
                .uniform_filter_into(&input, &mut out, &layout, &opts)
                .unwrap();
            let (wy, wx) = (
                weights(rows, mode == BoundaryMode::Mirror),
                weights(cols, mode == BoundaryMode::Mirror),
            );
            let weighted: f64 = (0..rows)
                .flat_map(|y| (0..cols).map(move |x| (y, x)))
                .map(|(y, x)| wy[y] * wx[x] * at(y, x))
                .sum::<f64>()
                / (wy.iter().sum::<f64>() * wx.iter().sum::<f64>());
            let corners =
                (at(0, 0) + at(0, cols - 1) + at(rows - 1, 0) + at(rows - 1, cols - 1)) / 4.0;
            for y in 0..rows {
                for x in 0..cols {
                    let limit = match mode {
                        BoundaryMode::Constant => 0.75,
                        BoundaryMode::Nearest => corners,
                        BoundaryMode::Interior => at(y, x),
                        _ => weighted,
                    };
                    let got = out[y * cols + x];
                    assert!(
                        (got - limit).abs() <= 1e-6,
                        "{mode:?} {size:?} ({y}, {x}): {got} against the limit {limit}"
                    );
                }
            }
        }
    }
}

/// An output of more than 32 MB, which the fast path writes with streaming
/// (non-temporal) stores, the property tests' images being far smaller:
/// poisoned gaps stay untouched, and outputs at sampled points (every
/// edge row and column included) match the window sums computed here
/// point by point, for the tree sums (size <= 13 on AVX-512), the doubling
/// sums, the interior mode's edges and a NaN cval's edges.
#[test]
fn fast_streamed_output_matches_window_sums() {
    let (rows, cols) = (2049, 4099);
    let layout = ImageLayout {
        rows,
        cols,
        in_pitch: cols + 1,
        out_pitch: cols + 3,
    };
    assert!(layout.output_len() * 4 > 32 << 20);
    let mut input: Vec<f32> = image(11, &layout, 0);
    input[1000 * layout.in_pitch + 2000] = f32::NAN;
    let cases = [
        (7, BoundaryMode::Reflect, 0.0),
        (31, BoundaryMode::Wrap, 0.0),
        (9, BoundaryMode::Interior, 0.0),
        (13, BoundaryMode::Constant, f64::NAN),
    ];
    for (size, mode, cval) in cases {
        let opts = BoxFilterOptions { size, mode, cval };
        let mut got = vec![f32::NAN; layout.output_len()];
        kp(2)
            .box_filter_into(&input, &mut got, &layout, &opts)
            .unwrap();
        let r = size as i64 / 2;
        let value = |y: i64, x: i64| match (
            stencil::extend(y, rows as i64, mode),
            stencil::extend(x, cols as i64, mode),
        ) {
            (Some(y), Some(x)) => input[y as usize * layout.in_pitch + x as usize] as f64,
            _ => cval,
        };
        let mut rng = Rng(size as u64);
        let edges = (0..rows).flat_map(|y| [(y, 0), (y, 1), (y, cols - 2), (y, cols - 1)]);
        let sampled = (0..4000).map(|_| {
            let y = (rng.next() * rows as f64) as usize % rows;
            (y, (rng.next() * cols as f64) as usize % cols)
        });
        for (y, x) in edges.chain(sampled) {
            let (yi, xi) = (y as i64, x as i64);
            let fits = yi >= r && yi < rows as i64 - r && xi >= r && xi < cols as i64 - r;
            let want = if mode == BoundaryMode::Interior && !fits {
                input[y * layout.in_pitch + x] as f64
            } else {
                let sum: f64 = (-r..=r)
                    .flat_map(|dy| (-r..=r).map(move |dx| (dy, dx)))
                    .map(|(dy, dx)| value(yi + dy, xi + dx))
                    .sum();
                (sum / (size * size) as f64) as f32 as f64
            };
            let g = got[y * layout.out_pitch + x] as f64;
            assert!(
                same_class(g, want) || (g - want).abs() <= 1e-6 * (1.0 + want.abs()),
                "size {size} {mode:?} ({y}, {x}): {g}, want {want}"
            );
        }
        for y in 0..rows - 1 {
            let gap = &got[y * layout.out_pitch + cols..(y + 1) * layout.out_pitch];
            assert!(gap.iter().all(|v| v.is_nan()), "row {y}'s gap was written");
        }
    }
}
