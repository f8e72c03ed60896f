//! Timings of the CPU backend's Lorenz and F/G paths (ignored by default):
//! `cargo test --release --test cpu_lorenz_timing -- --ignored --nocapture`.
//! Sizes from the environment: L96_MEMBERS (100000), L96_STEPS (1000),
//! REPEATS (5). The Numba peer: benches/peers/lorenz96_numba.py.
use std::time::Instant;

use kernpack::reference::lorenz as reference;
use kernpack::{Backend, Kernpack, Lorenz05Params, Lorenz96Params};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Median and minimum seconds of `repeats` calls.
fn time(repeats: usize, mut f: impl FnMut()) -> (f64, f64) {
    let mut t: Vec<f64> = (0..repeats)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[t.len() / 2], t[0])
}

fn initial(n: usize, members: usize, forcing: f64) -> Vec<f64> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    (0..n * members)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            forcing + ((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2.0
        })
        .collect()
}

#[test]
#[ignore]
fn time_lorenz96() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let (members, steps, repeats) = (
        env("L96_MEMBERS", 100_000),
        env("L96_STEPS", 1000) as u64,
        env("REPEATS", 5),
    );
    let p = Lorenz96Params::default();
    let z = initial(p.n, members, p.forcing);
    let (med, min) = time(repeats, || {
        kp.lorenz96(&p, &z, steps, 0).unwrap();
    });
    println!(
        "kernpack cpu lorenz96 f64 N={} members={members} steps={steps} threads={}: median {med:.3} s, min {min:.3} s",
        p.n,
        kp.cpu_threads()
    );
    let z32: Vec<f32> = z.iter().map(|&v| v as f32).collect();
    let (med, min) = time(repeats, || {
        kp.lorenz96(&p, &z32, steps, 0).unwrap();
    });
    println!("kernpack cpu lorenz96 f32: median {med:.3} s, min {min:.3} s");
}

#[test]
#[ignore]
fn time_lorenz05_against_the_reference() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let repeats = env("REPEATS", 5);
    let (members, steps) = (env("L05_MEMBERS", 40), env("L05_STEPS", 100) as u64);
    let p = Lorenz05Params::default();
    let z = initial(p.n, members, p.forcing);
    let (med, min) = time(repeats, || {
        kp.lorenz05(&p, &z, steps, 0).unwrap();
    });
    println!(
        "kernpack cpu lorenz05 III f64 N={} members={members} steps={steps}: median {med:.4} s, min {min:.4} s",
        p.n
    );
    let (med, min) = time(repeats.min(3), || {
        reference::lorenz05(&p, &z, steps, 0, None);
    });
    println!("reference lorenz05 III f64: median {med:.4} s, min {min:.4} s");
}
