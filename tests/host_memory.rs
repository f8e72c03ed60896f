//! A valid call whose result this host cannot hold is Error::OutOfMemory
//! before any work, never an abort when the result is allocated. The sizes
//! are within kernpack's 2^56-byte array cap but past the 2^47-byte user
//! address space of x86-64 (and of 48-bit arm64), so no overcommit setting
//! lets the reservation succeed. The CPU backend and, where there is one,
//! the GPU's host-slice paths.
mod common;

use common::gpu_or_skip;
use kernpack::api::lombscargle::batch::{Batch, BatchGrid};
use kernpack::api::lombscargle::UniformGrid;
use kernpack::{
    Backend, Complex, Error, FgOptions, Kernpack, LombScargleOptions, Lorenz96Params, Series,
};

/// 2^46 f32 values: 256 TiB.
const HUGE_NF: usize = 1 << 46;

fn expect_out_of_memory<T: std::fmt::Debug>(what: &str, result: kernpack::Result<T>) {
    match result {
        Err(Error::OutOfMemory(msg)) => assert!(!msg.is_empty(), "{what}: empty message"),
        other => panic!("{what}: expected OutOfMemory, got {other:?}"),
    }
}

fn huge_results(kp: &Kernpack) {
    let t: Vec<f32> = (0..64).map(|i| i as f32 * 0.37).collect();
    let y: Vec<f32> = t.iter().map(|v| v.sin()).collect();
    let series = Series {
        t: &t,
        y: &y,
        weights: None,
    };
    let opts = LombScargleOptions::default();
    expect_out_of_memory(
        "uniform periodogram",
        kp.lombscargle_uniform(&series, &UniformGrid::new(0.1, 1e-6, HUGE_NF), &opts),
    );
    let offsets = [0, 32, 64];
    let batch = Batch {
        t: &t,
        y: &y,
        weights: None,
        offsets: &offsets,
    };
    expect_out_of_memory(
        "batch of periodograms",
        kp.lombscargle_batch(
            &batch,
            &BatchGrid::Shared(UniformGrid::new(0.1, 1e-6, HUGE_NF / 2)),
            &opts,
        ),
    );
    // A trajectory of 2^43 frames of 40 f64 sites: 2.5 PiB.
    let p = Lorenz96Params::default();
    let initial: Vec<f64> = (0..p.n).map(|i| (i as f64 * 0.7).sin() + 8.0).collect();
    expect_out_of_memory(
        "Lorenz 96 trajectory",
        kp.lorenz96(&p, &initial, 1 << 43, 1),
    );
    // 2^46 complex f64 values of delta: 1 PiB.
    let f = vec![Complex { re: 0.5, im: 0.1 }; 4];
    expect_out_of_memory(
        "F/G delta",
        kp.fg_integrate(
            2,
            &f,
            &f,
            Complex { re: 1.0, im: 0.0 },
            1e-3,
            HUGE_NF,
            &FgOptions::default(),
        ),
    );
    // The handle still works.
    let freqs = [0.5f32, 1.0, 2.0];
    let ok = kp.lombscargle(&series, &freqs, &opts).unwrap();
    assert_eq!(ok.len(), 3);
}

#[test]
fn cpu_results_the_host_cannot_hold_are_out_of_memory() {
    huge_results(&Kernpack::new(Backend::Cpu).unwrap());
}

#[test]
fn gpu_host_results_the_host_cannot_hold_are_out_of_memory() {
    if let Some(gpu) = gpu_or_skip("gpu_host_results_the_host_cannot_hold_are_out_of_memory") {
        huge_results(&Kernpack::with_gpu(gpu.ordinal()).unwrap());
    }
}

/// `len` f64 zeros that take no memory: an anonymous mapping without swap
/// reservation, whose pages are never touched. None where the host refuses
/// the mapping (then there is nothing to test).
fn untouched_zeros(len: usize) -> Option<&'static [f64]> {
    // SAFETY: a fresh private anonymous mapping, zero-filled by the kernel,
    // read only through the returned slice and never unmapped (the test
    // process ends).
    unsafe {
        let ptr = libc::mmap(
            std::ptr::null_mut(),
            len * 8,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        );
        (ptr != libc::MAP_FAILED).then(|| std::slice::from_raw_parts(ptr.cast::<f64>(), len))
    }
}

#[test]
fn an_ensemble_whose_final_states_the_host_cannot_hold_is_out_of_memory() {
    // 2^43 values of initial states (64 TiB, mapped, never touched) and no
    // trajectory: the final states alone need 64 TiB more, past what the
    // 128 TiB address space has left, under any overcommit setting. The
    // probe comes before the initial values are read, so this returns at
    // once (reading them first would take hours).
    let p = Lorenz96Params {
        n: 8192,
        ..Lorenz96Params::default()
    };
    let Some(initial) = untouched_zeros(1 << 43) else {
        eprintln!(
            "a 64 TiB MAP_NORESERVE mapping was refused (strict overcommit): nothing to test"
        );
        return;
    };
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    match kp.lorenz96(&p, initial, 1, 0) {
        Err(Error::OutOfMemory(msg)) => assert!(msg.contains("the final states"), "{msg}"),
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
}
