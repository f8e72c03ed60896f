//! The C ABI of the box filter of any window (kp_uniform_filter_*): the
//! error paths (each a typed status and a message naming the argument and
//! its value, nothing written), the defaults, and results as the reference's;
//! kp_box_filter_* now takes any size (the old 33 limit and odd-only rule are gone).
mod common;

use std::ptr::null;

use common::{gpu_or_skip, last_error, Ctx};
use kernpack::ffi::kp_status::*;
use kernpack::ffi::stencil::{
    kp_box_filter_f32, kp_box_filter_options_default, kp_uniform_filter_f32, kp_uniform_filter_f64,
    kp_uniform_filter_options, kp_uniform_filter_options_default, KP_BOX_CONSTANT, KP_BOX_WRAP,
};
use kernpack::ffi::{KP_BACKEND_CPU, KP_BACKEND_GPU};
use kernpack::reference::stencil;
use kernpack::{ImageLayout, UniformFilterOptions};

const POISON: f32 = -4242.0;

fn image(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 37 % 101) as f32) * 0.01 - 0.4)
        .collect()
}

#[test]
fn uniform_filter_errors_name_the_argument_and_write_nothing() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    let (rows, cols) = (6usize, 7usize);
    let input = image(rows * cols);
    let d = kp_uniform_filter_options_default();
    assert_eq!(
        (d.size_rows, d.size_cols, d.origin_rows, d.origin_cols),
        (3, 3, 0, 0)
    );
    let bad = [
        (
            kp_uniform_filter_options { size_rows: 0, ..d },
            "size 0 along the rows",
        ),
        (
            kp_uniform_filter_options { size_cols: 0, ..d },
            "size 0 along the columns",
        ),
        (
            kp_uniform_filter_options {
                size_rows: 4,
                origin_rows: 2,
                ..d
            },
            "origin 2 along the rows",
        ),
        (
            kp_uniform_filter_options {
                size_cols: 5,
                origin_cols: -3,
                ..d
            },
            "origin -3 along the columns",
        ),
        (
            kp_uniform_filter_options { mode: 9, ..d },
            "boundary mode 9",
        ),
    ];
    for (opts, message) in bad {
        let mut out = vec![POISON; rows * cols];
        let s = unsafe {
            kp_uniform_filter_f32(
                cpu.0,
                input.as_ptr(),
                cols,
                out.as_mut_ptr(),
                cols,
                rows,
                cols,
                &opts,
            )
        };
        let msg = last_error();
        assert_eq!(s, KP_ERROR_INVALID_ARGUMENT, "{opts:?}: {msg}");
        assert!(msg.contains(message), "{opts:?}: {msg}");
        assert!(out.iter().all(|v| *v == POISON), "{opts:?} wrote");
    }
    // A NULL output with a non-empty image.
    let s = unsafe {
        kp_uniform_filter_f32(
            cpu.0,
            input.as_ptr(),
            cols,
            std::ptr::null_mut(),
            cols,
            rows,
            cols,
            null(),
        )
    };
    assert_eq!(s, KP_ERROR_NULL_POINTER, "{}", last_error());
}

#[test]
fn uniform_filter_matches_the_reference_on_each_backend() {
    let mut backends = vec![Ctx::new(KP_BACKEND_CPU)];
    if gpu_or_skip("uniform_filter_matches_the_reference_on_each_backend").is_some() {
        backends.push(Ctx::new(KP_BACKEND_GPU));
    }
    let (rows, cols) = (23usize, 41usize);
    let input: Vec<f64> = image(rows * cols).iter().map(|v| *v as f64).collect();
    let layout = ImageLayout::contiguous(rows, cols);
    for (size, origin, mode) in [
        ([4usize, 1usize], [-2i64, 0i64], KP_BOX_WRAP),
        ([64, 34], [31, -17], KP_BOX_CONSTANT),
        ([2, 50], [0, 10], 0),
    ] {
        let opts = kp_uniform_filter_options {
            size_rows: size[0],
            size_cols: size[1],
            origin_rows: origin[0],
            origin_cols: origin[1],
            cval: 0.5,
            mode,
        };
        let mut want = vec![0.0f64; rows * cols];
        let api = UniformFilterOptions {
            size,
            origin,
            mode: kernpack::BoundaryMode::from_code(mode).unwrap(),
            cval: 0.5,
        };
        stencil::uniform_filter(&input, &mut want, &layout, &api);
        for ctx in &backends {
            let mut out = vec![f64::NAN; rows * cols];
            let s = unsafe {
                kp_uniform_filter_f64(
                    ctx.0,
                    input.as_ptr(),
                    cols,
                    out.as_mut_ptr(),
                    cols,
                    rows,
                    cols,
                    &opts,
                )
            };
            assert_eq!(s, KP_OK, "{}", last_error());
            for (g, w) in out.iter().zip(&want) {
                assert!((g - w).abs() < 1e-11, "{opts:?}: {g} want {w}");
            }
        }
    }
}

#[test]
fn box_filter_takes_any_size_now() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    let (rows, cols) = (5usize, 6usize);
    let input = image(rows * cols);
    for size in [4u32, 35, 64] {
        let opts = kernpack::ffi::stencil::kp_box_filter_options {
            size,
            ..kp_box_filter_options_default()
        };
        let mut out = vec![POISON; rows * cols];
        let s = unsafe {
            kp_box_filter_f32(
                cpu.0,
                input.as_ptr(),
                cols,
                out.as_mut_ptr(),
                cols,
                rows,
                cols,
                &opts,
            )
        };
        assert_eq!(s, KP_OK, "size {size}: {}", last_error());
        assert!(out.iter().all(|v| v.is_finite() && *v != POISON));
    }
    let opts = kernpack::ffi::stencil::kp_box_filter_options {
        size: 0,
        ..kp_box_filter_options_default()
    };
    let mut out = vec![POISON; rows * cols];
    let s = unsafe {
        kp_box_filter_f32(
            cpu.0,
            input.as_ptr(),
            cols,
            out.as_mut_ptr(),
            cols,
            rows,
            cols,
            &opts,
        )
    };
    assert_eq!(s, KP_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("size 0"), "{}", last_error());
    assert!(out.iter().all(|v| *v == POISON));
}
