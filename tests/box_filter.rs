//! The 2D box filter: the CPU reference and the kernels against SciPy's
//! uniform_filter (committed fixtures, every mode), and the kernels against
//! the reference on random shapes, pitches, windows and modes.
mod common;

use std::str::FromStr;

use common::{gpu_or_skip, proptest_cases, Rng};
use kernpack::reference::stencil;
use kernpack::{
    Backend, BoundaryMode, BoxFilterOnDevice, BoxFilterOptions, Error, Float, ImageLayout,
    Kernpack, UniformFilterOptions, MAX_BOX_SIZE,
};
use proptest::prelude::*;

struct Case {
    name: String,
    f32: bool,
    rows: usize,
    cols: usize,
    opts: BoxFilterOptions,
    input: Vec<f64>,
    output: Vec<f64>,
}

/// tests/fixtures/box_filter_scipy.txt (scripts/gen_box_filter_fixtures.py).
fn fixtures() -> Vec<Case> {
    let text = include_str!("fixtures/box_filter_scipy.txt");
    let mut cases = Vec::new();
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    while let Some(header) = lines.next() {
        let words: Vec<&str> = header.split_whitespace().collect();
        let field = |key: &str| words[words.iter().position(|w| *w == key).unwrap() + 1];
        let f32 = field("dtype") == "f32";
        // f32 values are written as the shortest decimals that round-trip as f32.
        let numbers = |line: &str, key: &str| -> Vec<f64> {
            let rest = line.strip_prefix(key).expect(key);
            rest.split_whitespace()
                .map(|v| {
                    if f32 {
                        v.parse::<f32>().unwrap() as f64
                    } else {
                        v.parse::<f64>().unwrap()
                    }
                })
                .collect()
        };
        let input = numbers(lines.next().unwrap(), "in ");
        let output = numbers(lines.next().unwrap(), "out ");
        assert_eq!(lines.next(), Some("end"));
        cases.push(Case {
            name: words[1].to_string(),
            f32,
            rows: field("rows").parse().unwrap(),
            cols: field("cols").parse().unwrap(),
            opts: BoxFilterOptions {
                size: field("size").parse().unwrap(),
                mode: BoundaryMode::from_str(field("mode")).unwrap(),
                cval: field("cval").parse().unwrap(),
            },
            input,
            output,
        });
    }
    assert!(cases.len() > 400, "fixture file truncated");
    cases
}

/// Bound on |ours - SciPy| (or - reference): each of the two passes sums
/// `size` terms of magnitude <= m in T (a rounding of eps * size * m each,
/// divided by size^2 / size later), SciPy's running sums drift by eps per
/// step along a line, and both round the result once more.
fn tolerance(eps: f64, m: f64, size: usize, rows: usize, cols: usize) -> f64 {
    4.0 * eps * m * (2 * size + rows + cols) as f64
}

fn magnitude(values: &[f64], cval: f64) -> f64 {
    values.iter().fold(cval.abs(), |m, v| m.max(v.abs()))
}

fn run_case<T: Float>(kp: &Kernpack, case: &Case) -> f64 {
    let input: Vec<T> = case.input.iter().map(|v| T::from_f64(*v)).collect();
    let out = kp
        .box_filter(&input, case.rows, case.cols, &case.opts)
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    out.iter()
        .zip(&case.output)
        .map(|(a, b)| (a.to_f64() - b).abs())
        .fold(0.0, f64::max)
}

fn check_fixtures(kp: &Kernpack) {
    let cases = fixtures();
    let mut modes_seen = std::collections::HashSet::new();
    for case in &cases {
        let (err, eps) = if case.f32 {
            (run_case::<f32>(kp, case), f32::EPSILON as f64)
        } else {
            (run_case::<f64>(kp, case), f64::EPSILON)
        };
        let tol = tolerance(
            eps,
            magnitude(&case.input, case.opts.cval),
            case.opts.size,
            case.rows,
            case.cols,
        );
        assert!(
            err <= tol,
            "{} on {}: error {err:e} > {tol:e}",
            case.name,
            kp.backend_name()
        );
        modes_seen.insert(case.opts.mode);
    }
    assert_eq!(modes_seen.len(), 6, "every mode has fixtures");
}

#[test]
fn cpu_reference_matches_scipy() {
    check_fixtures(&Kernpack::new(Backend::Cpu).unwrap());
}

#[test]
fn gpu_matches_scipy() {
    if gpu_or_skip("gpu_matches_scipy").is_some() {
        check_fixtures(&Kernpack::new(Backend::Gpu).unwrap());
    }
}

const MODES: [BoundaryMode; 6] = [
    BoundaryMode::Reflect,
    BoundaryMode::Constant,
    BoundaryMode::Nearest,
    BoundaryMode::Mirror,
    BoundaryMode::Wrap,
    BoundaryMode::Interior,
];

/// GPU vs reference on one random image with gaps between rows: the gaps of
/// the output must keep their (NaN) poison, every point must be written.
fn gpu_matches_reference<T: Float>(
    seed: u64,
    layout: ImageLayout,
    opts: impl Into<UniformFilterOptions>,
) -> Result<(), TestCaseError> {
    let opts: UniformFilterOptions = opts.into();
    let Some(gpu) = gpu_or_skip("gpu_matches_reference") else {
        return Ok(());
    };
    let mut rng = Rng(seed);
    let offset = rng.range(-5.0, 5.0);
    let input: Vec<T> = (0..layout.input_len())
        .map(|_| T::from_f64(offset + rng.range(-1.0, 1.0)))
        .collect();
    let poison = T::from_f64(f64::NAN);
    let mut got = vec![poison; layout.output_len()];
    let mut want = got.clone();
    Kernpack::from(gpu.clone())
        .uniform_filter_into(&input, &mut got, &layout, &opts)
        .unwrap();
    stencil::uniform_filter(&input, &mut want, &layout, &opts);
    let inside: Vec<f64> = (0..layout.rows)
        .flat_map(|y| (0..layout.cols).map(move |x| y * layout.in_pitch + x))
        .map(|i| input[i].to_f64())
        .collect();
    // Windows 3-9 (square, centred) in f64: the same sums in the same order,
    // so only the rounding of the scale could differ; f32: the kernel sums
    // in f32, the reference in f64 (the first term). Other windows: running
    // sums in f64 (csrc/stencil.cu box_filter_running: off by at most
    // (size_y + 2 chunk + 2 segment) eps64 m before the rounding to T, with a
    // chunk of at most the image's rows and a segment of at most
    // 32 KP_BOX_RUN_K_WIDE = 1056 columns).
    let eps = if T::NAME == "f32" {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    let m = magnitude(&inside, opts.cval);
    let [sy, sx] = opts.size;
    let tol = 4.0 * eps * m * (sy + sx) as f64
        + 8.0 * f64::EPSILON * m * (sy + sx + 2 * layout.rows + 2 * 1056) as f64;
    for y in 0..layout.rows {
        for x in 0..layout.out_pitch {
            let i = y * layout.out_pitch + x;
            if i >= got.len() {
                break;
            }
            let (g, w) = (got[i].to_f64(), want[i].to_f64());
            if x >= layout.cols {
                prop_assert!(g.is_nan(), "gap ({y}, {x}) was written");
            } else {
                prop_assert!(
                    (g - w).abs() <= tol,
                    "({y}, {x}) of {layout:?} {opts:?}: gpu {g} cpu {w}"
                );
            }
        }
    }
    Ok(())
}

fn layout_strategy() -> impl Strategy<Value = ImageLayout> {
    (1usize..200, 1usize..200, 0usize..5, 0usize..5).prop_map(|(rows, cols, pi, po)| ImageLayout {
        rows,
        cols,
        in_pitch: cols + pi,
        out_pitch: cols + po,
    })
}

fn opts_strategy() -> impl Strategy<Value = BoxFilterOptions> {
    (0usize..=MAX_BOX_SIZE / 2, 0usize..6, -3.0f64..3.0).prop_map(|(r, m, cval)| BoxFilterOptions {
        size: 2 * r + 1,
        mode: MODES[m],
        cval,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]
    #[test]
    fn gpu_f32_matches_reference(seed in any::<u64>(), layout in layout_strategy(), opts in opts_strategy()) {
        gpu_matches_reference::<f32>(seed, layout, opts)?;
    }

    #[test]
    fn gpu_f64_matches_reference(seed in any::<u64>(), layout in layout_strategy(), opts in opts_strategy()) {
        gpu_matches_reference::<f64>(seed, layout, opts)?;
    }
}

/// Any window: sizes 1 to 70 per axis (odd, even, larger than the image),
/// any valid origin, every mode.
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
            let origin = |n: usize, u: f64| -((n / 2) as i64) + (u * n as f64) as i64;
            UniformFilterOptions {
                size: [sy, sx],
                origin: [origin(sy, oy), origin(sx, ox)],
                mode: MODES[m],
                cval,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]
    #[test]
    fn gpu_any_window_f32_matches_reference(seed in any::<u64>(), layout in layout_strategy(), opts in uniform_strategy()) {
        gpu_matches_reference::<f32>(seed, layout, opts)?;
    }

    #[test]
    fn gpu_any_window_f64_matches_reference(seed in any::<u64>(), layout in layout_strategy(), opts in uniform_strategy()) {
        gpu_matches_reference::<f64>(seed, layout, opts)?;
    }
}

/// The sizes the brief names, per axis and square, on images smaller and
/// larger than the window, every mode, with origins at both ends of SciPy's
/// range; 200 x 200 on a 150-row image and a window as wide as the widest
/// the GPU takes (the wide kernel).
#[test]
fn gpu_named_sizes_and_small_images() {
    if gpu_or_skip("gpu_named_sizes_and_small_images").is_none() {
        return;
    }
    let sizes = [1usize, 2, 4, 33, 34, 63, 64, 200];
    let mut seed = 500;
    for (i, &sy) in sizes.iter().enumerate() {
        let sx = sizes[(i + 3) % sizes.len()];
        for (rows, cols) in [(3, 5), (40, 37), (150, 700)] {
            for (k, mode) in MODES.into_iter().enumerate() {
                let n = |s: usize| s as i64;
                let origin = match k % 3 {
                    0 => [0, 0],
                    1 => [-(n(sy) / 2), (n(sx) - 1) / 2],
                    _ => [(n(sy) - 1) / 2, -(n(sx) / 2)],
                };
                let layout = ImageLayout {
                    rows,
                    cols,
                    in_pitch: cols + 1,
                    out_pitch: cols + 2,
                };
                for size in [[sy, sx], [sy, sy]] {
                    let origin = if size[0] == size[1] {
                        [origin[0]; 2]
                    } else {
                        origin
                    };
                    let opts = UniformFilterOptions {
                        size,
                        origin,
                        mode,
                        cval: -0.75,
                    };
                    seed += 1;
                    gpu_matches_reference::<f32>(seed, layout, opts).unwrap();
                    gpu_matches_reference::<f64>(seed, layout, opts).unwrap();
                }
            }
        }
    }
    let wide = UniformFilterOptions {
        size: [5, kernpack::MAX_GPU_WINDOW_COLS],
        origin: [1, -3],
        ..Default::default()
    };
    gpu_matches_reference::<f32>(9, ImageLayout::contiguous(130, 2100), wide).unwrap();
}

/// A window wider than the GPU's widest: host calls run it on the CPU
/// backend (same result), device calls refuse it naming the size.
#[test]
fn gpu_wider_windows_than_the_kernels_hold() {
    let Some(gpu) = gpu_or_skip("gpu_wider_windows_than_the_kernels_hold") else {
        return;
    };
    let opts = UniformFilterOptions {
        size: [3, kernpack::MAX_GPU_WINDOW_COLS + 1],
        ..Default::default()
    };
    gpu_matches_reference::<f64>(11, ImageLayout::contiguous(20, 30), opts).unwrap();
    let stream = gpu.stream();
    let (input, mut output) = (
        stream.alloc_zeros::<f32>(600).unwrap(),
        stream.alloc_zeros::<f32>(600).unwrap(),
    );
    let layout = ImageLayout::contiguous(20, 30);
    let call = BoxFilterOnDevice::buffers(stream, &input, &mut output, &layout, opts).unwrap();
    let err = gpu.enqueue_buffers(call).unwrap_err();
    assert!(err.to_string().contains("along the columns"), "{err}");
}

/// Windows of up to 2^31 - 1 rows (a hostile size whose seeds once summed
/// the whole window) and as wide as the GPU takes, on small images and every
/// mode: the GPU's running sums agree with the CPU backend's (both count the
/// points outside that read an edge or cval, and sum whole periods once).
#[test]
fn gpu_huge_windows_match_the_cpu_backend() {
    let Some(gpu) = gpu_or_skip("gpu_huge_windows_match_the_cpu_backend") else {
        return;
    };
    let (gpu, cpu) = (Kernpack::from(gpu), Kernpack::new(Backend::Cpu).unwrap());
    let huge = i32::MAX as usize;
    let mut rng = Rng(0x6a11);
    for (rows, cols) in [(5, 7), (40, 300)] {
        let layout = ImageLayout::contiguous(rows, cols);
        let input: Vec<f64> = (0..rows * cols).map(|_| rng.range(-2.0, 3.0)).collect();
        for mode in MODES {
            for size in [
                [huge, kernpack::MAX_GPU_WINDOW_COLS],
                [huge - 1, 7],
                [1 << 30, 1],
                [3, kernpack::MAX_GPU_WINDOW_COLS - 1],
            ] {
                let opts = UniformFilterOptions {
                    size,
                    origin: [0, 0],
                    mode,
                    cval: 0.75,
                };
                let (mut got, mut want) =
                    (vec![f64::NAN; rows * cols], vec![f64::NAN; rows * cols]);
                gpu.uniform_filter_into(&input, &mut got, &layout, &opts)
                    .unwrap();
                cpu.uniform_filter_into(&input, &mut want, &layout, &opts)
                    .unwrap();
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-9,
                        "{rows}x{cols} {mode:?} {size:?} ({}, {}): gpu {g} cpu {w}",
                        i / cols,
                        i % cols
                    );
                }
            }
        }
    }
}

#[test]
fn gpu_large_image_every_mode() {
    for (i, mode) in MODES.into_iter().enumerate() {
        let layout = ImageLayout::contiguous(1031, 2050);
        let opts = BoxFilterOptions {
            size: [3, 5, 9, 11, 31, 33][i],
            mode,
            cval: 0.25,
        };
        gpu_matches_reference::<f32>(100 + i as u64, layout, opts).unwrap();
        gpu_matches_reference::<f64>(200 + i as u64, layout, opts).unwrap();
    }
}

#[test]
fn bad_input_is_an_error_and_changes_nothing() {
    for backend in [Backend::Cpu, Backend::Auto] {
        let kp = Kernpack::new(backend).unwrap();
        let input = vec![1.0f32; 20];
        let ok = ImageLayout::contiguous(4, 5);
        let cases: Vec<(ImageLayout, BoxFilterOptions, usize, &str)> = vec![
            (
                ok,
                BoxFilterOptions {
                    size: 0,
                    ..Default::default()
                },
                20,
                "size 0 along the rows",
            ),
            (
                ImageLayout { in_pitch: 4, ..ok },
                BoxFilterOptions::default(),
                20,
                "pitches",
            ),
            (
                ImageLayout { out_pitch: 6, ..ok },
                BoxFilterOptions::default(),
                20,
                "output holds",
            ),
            (ok, BoxFilterOptions::default(), 19, "output holds"),
        ];
        for (layout, opts, out_len, message) in cases {
            let mut out = vec![-7.0f32; out_len];
            let err = kp
                .box_filter_into(&input, &mut out, &layout, &opts)
                .unwrap_err();
            assert!(
                matches!(&err, Error::InvalidInput(m) if m.contains(message)),
                "{layout:?} {opts:?}: {err}"
            );
            assert!(out.iter().all(|v| *v == -7.0), "output changed on error");
        }
        let err = kp.box_filter(&input[..19], 4, 5, &BoxFilterOptions::default());
        assert!(matches!(err, Err(Error::InvalidInput(_))));
        assert!(BoundaryMode::from_code(6).is_err());
        assert!(BoundaryMode::from_str("periodic").is_err());
        // Empty images of any shape are fine and write nothing (as SciPy).
        assert_eq!(
            kp.box_filter::<f64>(&[], 0, 7, &BoxFilterOptions::default())
                .unwrap(),
            Vec::<f64>::new()
        );
        assert_eq!(
            kp.box_filter::<f32>(&[], 9, 0, &BoxFilterOptions::default())
                .unwrap(),
            Vec::<f32>::new()
        );
        for (rows, cols, in_pitch, out_pitch) in [(9, 0, 0, 0), (9, 0, 3, 2), (0, 4, 4, 4)] {
            let layout = ImageLayout {
                rows,
                cols,
                in_pitch,
                out_pitch,
            };
            let input = vec![1.5f32; layout.input_len()];
            let mut out = vec![-7.0f32; layout.output_len() + 3];
            kp.box_filter_into(&input, &mut out, &layout, &BoxFilterOptions::default())
                .unwrap();
            assert!(out.iter().all(|v| *v == -7.0), "{layout:?} wrote");
        }
    }
}

/// Same value, or both NaN: how non-finite outputs are compared.
fn same_class(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// A non-finite `cval` pads the image in constant mode (every window that
/// reaches past the edge takes it into its mean) and is ignored by the other
/// modes; a non-finite value inside the image spoils only the windows that
/// hold it. The reference computes each window's mean directly; the GPU
/// kernels (windows 3-9 sum directly; the others run on running sums, which
/// pad with 0 and add a non-finite cval at the end, and fall back to direct
/// sums once a running sum is not finite) must agree value for value.
#[test]
fn non_finite_values_stay_in_their_windows() {
    let mut backends = vec![Kernpack::new(Backend::Cpu).unwrap()];
    if gpu_or_skip("non_finite_values_stay_in_their_windows").is_some() {
        backends.push(Kernpack::new(Backend::Gpu).unwrap());
    }
    let (rows, cols) = (70, 90);
    let mut rng = Rng(0x5eed_cafe);
    let clean: Vec<f64> = (0..rows * cols).map(|_| rng.range(-2.0, 2.0)).collect();
    let mut spiked = clean.clone();
    spiked[35 * cols + 40] = f64::NAN;
    spiked[10 * cols + 70] = f64::INFINITY;
    let layout = ImageLayout::contiguous(rows, cols);
    for size in [3, 9, 11, 33, 34, 63] {
        for (image, cval, mode) in [
            (&clean, f64::INFINITY, BoundaryMode::Constant),
            (&clean, f64::NEG_INFINITY, BoundaryMode::Constant),
            (&clean, f64::NAN, BoundaryMode::Constant),
            (&clean, f64::NAN, BoundaryMode::Reflect),
            (&spiked, 0.5, BoundaryMode::Wrap),
            (&spiked, f64::INFINITY, BoundaryMode::Constant),
        ] {
            let opts = BoxFilterOptions { size, mode, cval };
            let mut want = vec![0.0f64; image.len()];
            stencil::box_filter(image, &mut want, &layout, &opts);
            // The reference itself: windows that reach the padding take cval.
            // An even window reaches size / 2 before its point, size / 2 - 1 after.
            let (before, after) = (size / 2, (size - 1) / 2);
            if mode == BoundaryMode::Constant && std::ptr::eq(image, &clean) {
                for y in 0..rows {
                    for x in 0..cols {
                        let edge =
                            y < before || x < before || y + after >= rows || x + after >= cols;
                        let v = want[y * cols + x];
                        assert!(
                            if edge {
                                same_class(v, cval)
                            } else {
                                v.is_finite()
                            },
                            "reference ({y}, {x}) size {size} cval {cval}: {v}"
                        );
                    }
                }
            }
            for kp in &backends {
                let got = kp.box_filter(image, rows, cols, &opts).unwrap();
                let got32 = kp
                    .box_filter(
                        &image.iter().map(|v| *v as f32).collect::<Vec<_>>(),
                        rows,
                        cols,
                        &opts,
                    )
                    .unwrap();
                for i in 0..want.len() {
                    let (w, g, g32) = (want[i], got[i], got32[i] as f64);
                    if w.is_finite() {
                        assert!(
                            (g - w).abs() < 1e-9 && (g32 - w).abs() < 1e-4,
                            "{} size {size} {mode:?} cval {cval}, ({}, {}): {g} / {g32}, want {w}",
                            kp.backend_name(),
                            i / cols,
                            i % cols
                        );
                    } else {
                        assert!(
                            same_class(g, w) && same_class(g32, w),
                            "{} size {size} {mode:?} cval {cval}, ({}, {}): {g} / {g32}, want {w}",
                            kp.backend_name(),
                            i / cols,
                            i % cols
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn gpu_rejects_overlapping_device_buffers() {
    let Some(gpu) = gpu_or_skip("gpu_rejects_overlapping_device_buffers") else {
        return;
    };
    let stream = gpu.stream();
    let buf = stream.alloc_zeros::<f32>(200).unwrap();
    let layout = ImageLayout::contiguous(10, 10);
    let (ptr, _guard) = cudarc::driver::DevicePtr::device_ptr(&buf, stream);
    // SAFETY: both ranges lie inside the 200-element buffer.
    let err = unsafe {
        let op = BoxFilterOnDevice::<f32> {
            input: ptr,
            output: ptr + 40,
            layout,
            opts: BoxFilterOptions::default().into(),
            dtype: std::marker::PhantomData,
        };
        gpu.enqueue(stream, &op)
    }
    .unwrap_err();
    assert!(err.to_string().contains("overlap"), "{err}");
}
