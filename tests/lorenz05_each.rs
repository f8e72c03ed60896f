//! Lorenz 2005 with F, b and c per member (issue 33, item 1): a run with
//! per-member values equals running each member alone with its values as
//! the scalars (CPU bitwise, the GPU bitwise against its own member-alone
//! runs and within the Lorenz 2005 tolerances of the reference), outputs
//! poisoned before device runs, fresh random inputs per case, and the
//! refusals (lengths, non-finite values, Lorenz 96).
mod common;

use common::{gpu_or_skip, scaled_max_error, Rng};
use cudarc::driver::CudaSlice;
use kernpack::api::lorenz::frame_count;
use kernpack::reference::lorenz as reference;
use kernpack::{
    Backend, Float, Gpu, Kernpack, Lorenz05Model, Lorenz05OnDevice, Lorenz05Params, Lorenz96Params,
    MemberParams,
};

/// Random states of `members` members around the attractor's range.
fn states(p: &Lorenz05Params, members: usize, rng: &mut Rng) -> Vec<f64> {
    (0..members * p.n).map(|_| rng.range(-2.0, 8.0)).collect()
}

fn cast<T: Float>(v: &[f64]) -> Vec<T> {
    v.iter().map(|x| T::from_f64(*x)).collect()
}

fn f64s<T: Float>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

/// Per-member F, b, c drawn around DART's values (`members` each), in T.
struct Drawn<T> {
    forcing: Vec<T>,
    b: Vec<T>,
    c: Vec<T>,
}

impl<T: Float> Drawn<T> {
    fn new(members: usize, rng: &mut Rng) -> Self {
        let mut draw = |lo: f64, hi: f64| -> Vec<T> {
            (0..members)
                .map(|_| T::from_f64(rng.range(lo, hi)))
                .collect()
        };
        Drawn {
            forcing: draw(8.0, 18.0),
            b: draw(5.0, 12.0),
            c: draw(1.0, 4.0),
        }
    }

    /// The values given per member by the bits of `mask` (1: F, 2: b, 4: c).
    fn each(&self, mask: u32) -> MemberParams<&[T]> {
        let pick = |bit: u32| mask & bit != 0;
        MemberParams {
            forcing: pick(1).then_some(self.forcing.as_slice()),
            b: pick(2).then_some(self.b.as_slice()),
            c: pick(4).then_some(self.c.as_slice()),
        }
    }
}

/// Each member of `initial` run alone with its parameters as the scalars,
/// the runs' final states and frames put together as one ensemble's.
fn one_by_one<T: Float>(
    kp: &Kernpack,
    p: &Lorenz05Params,
    each: &MemberParams<&[T]>,
    initial: &[T],
    steps: u64,
    every: u64,
) -> (Vec<T>, Option<Vec<T>>) {
    let (n, members) = (p.n, initial.len() / p.n);
    let frames = frame_count(steps, every);
    let mut last = Vec::with_capacity(initial.len());
    let mut traj = vec![T::default(); frames * initial.len()];
    for m in 0..members {
        let alone = p.member(each, m);
        let run = kp
            .lorenz05(&alone, &initial[m * n..(m + 1) * n], steps, every)
            .unwrap();
        last.extend_from_slice(&run.final_state);
        if let Some(t) = run.trajectory {
            for f in 0..frames {
                let at = (f * members + m) * n;
                traj[at..at + n].copy_from_slice(&t[f * n..(f + 1) * n]);
            }
        }
    }
    (last, (every > 0).then_some(traj))
}

fn small(model: Lorenz05Model, rng: &mut Rng) -> Lorenz05Params {
    let k = 2 * (1 + rng.below(6) as usize); // 2..12
    let j = 1 + rng.below(6) as usize; // 1..6
    Lorenz05Params {
        n: 2 * k.max(j) + 1 + rng.below(60) as usize,
        k,
        j,
        model,
        ..Default::default()
    }
}

/// The CPU backend: per member bitwise as each member alone, every subset
/// of F, b, c given, Models II and III, f32 and f64; f64 also bitwise the
/// reference's per-member run.
fn cpu_case<T: Float>(seed: u64) {
    let cpu = Kernpack::new(Backend::Cpu).unwrap();
    let mut rng = Rng(seed);
    for model in [Lorenz05Model::II, Lorenz05Model::III] {
        let p = small(model, &mut rng);
        let members = 1 + rng.below(9) as usize;
        let z = states(&p, members, &mut rng);
        let initial = cast::<T>(&z);
        let drawn = Drawn::<T>::new(members, &mut rng);
        for mask in 0..8 {
            let each = drawn.each(mask);
            let (steps, every) = (1 + rng.below(12), rng.below(4));
            let every = every.min(steps);
            let got = cpu
                .lorenz05_each(&p, &each, &initial, steps, every)
                .unwrap();
            let (last, traj) = one_by_one(&cpu, &p, &each, &initial, steps, every);
            let what = format!("{} {p:?} mask {mask} seed {seed}", T::NAME);
            assert_eq!(got.final_state, last, "{what}: final states");
            assert_eq!(got.trajectory, traj, "{what}: trajectory");
            if T::NAME == "f64" {
                let each64 = MemberParams {
                    forcing: each.forcing.map(f64s),
                    b: each.b.map(f64s),
                    c: each.c.map(f64s),
                };
                let each64 = each64.as_ref().map(|v| v.as_slice());
                let want = reference::lorenz05_each(&p, &each64, &z, steps, every, None);
                assert_eq!(
                    f64s(&got.final_state),
                    want.final_state,
                    "{what}: reference"
                );
            }
        }
    }
}

#[test]
fn cpu_per_member_equals_each_member_alone() {
    for seed in 1..=4 {
        cpu_case::<f64>(seed);
        cpu_case::<f32>(100 + seed);
    }
}

#[test]
fn per_member_values_are_checked() {
    let cpu = Kernpack::new(Backend::Cpu).unwrap();
    let p = Lorenz05Params {
        n: 40,
        k: 4,
        j: 2,
        ..Default::default()
    };
    let initial = vec![1.0f64; 3 * p.n];
    let short = [15.0, 15.0];
    let each = MemberParams {
        b: Some(&short[..]),
        ..Default::default()
    };
    let err = cpu.lorenz05_each(&p, &each, &initial, 1, 0).unwrap_err();
    assert!(
        err.to_string().contains("b per member holds 2 values"),
        "{err}"
    );
    for bad in [f64::NAN, f64::INFINITY] {
        let values = [3.0, bad, 3.0];
        let each = MemberParams {
            c: Some(&values[..]),
            ..Default::default()
        };
        let err = cpu.lorenz05_each(&p, &each, &initial, 1, 0).unwrap_err();
        assert!(err.to_string().contains("c[1] (per member) is"), "{err}");
    }
    // Lorenz 96 takes no per-member parameters: its forcing per member is the
    // forcing held in the state.
    let l96 = Lorenz96Params::default();
    let z = vec![1.0f64; 2 * l96.n];
    let forcing = [8.0, 9.0];
    let run = kernpack::api::lorenz::EnsembleRun {
        params: &l96,
        each: MemberParams {
            forcing: Some(&forcing[..]),
            ..Default::default()
        },
        initial: &z,
        steps: 1,
        every: 0,
        save_at: &[],
    };
    let err = cpu.run(run).unwrap_err();
    assert!(err.to_string().contains("forcing_in_state"), "{err}");
}

/// f64: ~1e-16 per operation grown by a few steps of chaos; f32 (fast
/// math against the f64 reference): as tests/lorenz.rs's L05 tolerances.
fn tolerance<T: Float>() -> f64 {
    if T::NAME == "f64" {
        1e-12
    } else {
        2e-5
    }
}

fn poisoned<T: Float>(gpu: &Gpu, len: usize) -> CudaSlice<T> {
    gpu.stream()
        .clone_htod(&vec![T::from_f64(f64::NAN); len.max(1)])
        .unwrap()
}

/// One device run of `p` with the per-member values of `mask` on
/// NaN-poisoned outputs, on the kernel `sites_per_thread` picks, against
/// the reference and the GPU's own member-alone runs.
fn gpu_case<T: Float>(
    gpu: &std::sync::Arc<Gpu>,
    p: &Lorenz05Params,
    sites: Option<usize>,
    seed: u64,
) {
    let kp = Kernpack::with_gpu(gpu.ordinal()).unwrap();
    let stream = gpu.stream();
    let mut rng = Rng(seed);
    let members = 1 + rng.below(6) as usize;
    let z = states(p, members, &mut rng);
    let initial = cast::<T>(&z);
    let drawn = Drawn::<T>::new(members, &mut rng);
    for mask in [7, 1, 2, 4, 0] {
        let each = drawn.each(mask);
        let (steps, every) = (1 + rng.below(8), 1 + rng.below(3));
        let every = every.min(steps);
        let d_in = stream.clone_htod(&initial).unwrap();
        let d_each = each.map(|v| stream.clone_htod(v).unwrap());
        let mut out = poisoned::<T>(gpu, initial.len());
        let mut traj = poisoned::<T>(gpu, frame_count(steps, every) * initial.len());
        let call = Lorenz05OnDevice {
            sites_per_thread: sites,
            each: d_each.as_ref().map(|v| {
                use cudarc::driver::DevicePtr;
                v.device_ptr(stream).0
            }),
            ..Lorenz05OnDevice::new(*p, steps, every)
        };
        let op =
            Lorenz05OnDevice::buffers(stream, &call, &d_in, &mut out, Some(&mut traj)).unwrap();
        gpu.enqueue_buffers(op).unwrap();
        let got = stream.clone_dtoh(&out).unwrap();
        let got_traj = stream.clone_dtoh(&traj).unwrap();
        let what = format!("{} {p:?} sites {sites:?} mask {mask} seed {seed}", T::NAME);
        // The reference, in f64 with the values as given (in T).
        let each64 = MemberParams {
            forcing: each.forcing.map(f64s),
            b: each.b.map(f64s),
            c: each.c.map(f64s),
        };
        let each64 = each64.as_ref().map(|v| v.as_slice());
        let want = reference::lorenz05_each(p, &each64, &z, steps, every, None);
        let err = scaled_max_error(&f64s(&got), &want.final_state);
        assert!(err <= tolerance::<T>(), "{what}: final error {err}");
        let err = scaled_max_error(&f64s(&got_traj), want.trajectory.as_ref().unwrap());
        assert!(err <= tolerance::<T>(), "{what}: trajectory error {err}");
        // The host API (the kernel it picks) against each member alone on the
        // same GPU: the same kernel with the same values, bitwise.
        if sites.is_none() {
            let run = kp.lorenz05_each(p, &each, &initial, steps, every).unwrap();
            assert_eq!(
                run.final_state, got,
                "{what}: host API vs device description"
            );
            let (last, frames) = one_by_one(&kp, p, &each, &initial, steps, every);
            assert_eq!(last, got, "{what}: per member vs each member alone");
            assert_eq!(
                frames.unwrap(),
                got_traj,
                "{what}: trajectory vs each member alone"
            );
        }
    }
}

#[test]
fn gpu_per_member_equals_each_member_alone() {
    let Some(gpu) = gpu_or_skip("gpu_per_member_equals_each_member_alone") else {
        return;
    };
    let mut rng = Rng(2005);
    for seed in 0..6u64 {
        // The generic kernel (small random K, J, N; Models II and III) ...
        let model = [Lorenz05Model::II, Lorenz05Model::III][seed as usize % 2];
        let p = small(model, &mut rng);
        gpu_case::<f64>(&gpu, &p, None, seed);
        gpu_case::<f32>(&gpu, &p, None, 50 + seed);
    }
    // ... and DART's K, J on the specialised kernels (and the generic one forced).
    for (n, sites) in [(960, None), (301, Some(2)), (999, Some(4)), (960, Some(1))] {
        let p = Lorenz05Params {
            n,
            ..Default::default()
        };
        gpu_case::<f64>(&gpu, &p, sites, n as u64);
        gpu_case::<f32>(&gpu, &p, sites, 7 + n as u64);
    }
}

#[test]
fn gpu_per_member_buffers_are_checked() {
    let Some(gpu) = gpu_or_skip("gpu_per_member_buffers_are_checked") else {
        return;
    };
    use cudarc::driver::DevicePtr;
    let stream = gpu.stream();
    let p = Lorenz05Params::default();
    let members = 3;
    let d_in = stream.clone_htod(&vec![1.0f64; members * p.n]).unwrap();
    let mut out = poisoned::<f64>(&gpu, members * p.n);
    // Two values where three members need three.
    let short = stream.clone_htod(&[15.0f64, 16.0]).unwrap();
    let call = Lorenz05OnDevice {
        each: MemberParams {
            forcing: Some(short.device_ptr(stream).0),
            ..Default::default()
        },
        ..Lorenz05OnDevice::<f64>::new(p, 2, 0)
    };
    let op = Lorenz05OnDevice::buffers(stream, &call, &d_in, &mut out, None).unwrap();
    let err = gpu.enqueue_buffers(op).unwrap_err();
    assert!(err.to_string().contains("forcing"), "{err}");
    assert!(
        stream.clone_dtoh(&out).unwrap().iter().all(|v| v.is_nan()),
        "output written on failure"
    );
}

/// F, b, c per member with the states at chosen steps (the run in segments,
/// every segment with the members' values): frames and final states bitwise
/// those of the per-member run with a frame every step, also for a list
/// ending before the last step; on the CPU in f64 also bitwise the
/// reference's. With a GPU, `gpu` also checks the device description
/// (per-member addresses and `save_at`) against the host API.
fn each_save_at_is_the_run_in_pieces<T: Float>(
    kp: &Kernpack,
    gpu: Option<&std::sync::Arc<Gpu>>,
    seed: u64,
) {
    let mut rng = Rng(seed);
    let dart = Lorenz05Params {
        n: 480,
        ..Default::default()
    };
    for p in [
        small(Lorenz05Model::II, &mut rng),
        small(Lorenz05Model::III, &mut rng),
        dart,
    ] {
        let members = 1 + rng.below(6) as usize;
        let z = states(&p, members, &mut rng);
        let initial = cast::<T>(&z);
        let drawn = Drawn::<T>::new(members, &mut rng);
        let steps = 9;
        let whole_frames = frame_count(steps, 1);
        for (mask, save_at) in [(7, &[0, 2, 5, 9][..]), (2, &[1, 4]), (5, &[9])] {
            let each = drawn.each(mask);
            let what = format!("{} {p:?} mask {mask} save_at {save_at:?}", T::NAME);
            let whole = kp.lorenz05_each(&p, &each, &initial, steps, 1).unwrap();
            let listed = kp
                .lorenz05_each_save_at(&p, &each, &initial, steps, save_at)
                .unwrap();
            assert_eq!(listed.save_at, save_at, "{what}");
            assert_eq!(listed.final_state, whole.final_state, "{what}: final");
            let (frames, every) = (listed.trajectory.unwrap(), whole.trajectory.unwrap());
            let len = initial.len();
            assert_eq!(frames.len(), save_at.len() * len, "{what}");
            assert_eq!(every.len(), whole_frames * len, "{what}");
            for (k, &s) in save_at.iter().enumerate() {
                let s = s as usize;
                assert_eq!(
                    frames[k * len..][..len],
                    every[s * len..][..len],
                    "{what}: frame {k}"
                );
            }
            if T::NAME == "f64" && gpu.is_none() {
                let wide = each.map(f64s);
                let each64 = wide.as_ref().map(|v| v.as_slice());
                let want = reference::lorenz05_each_save_at(&p, &each64, &z, steps, save_at);
                assert_eq!(f64s(&frames), want.trajectory.unwrap(), "{what}: reference");
            }
            if let Some(gpu) = gpu {
                use cudarc::driver::DevicePtr;
                let stream = gpu.stream();
                let d_in = stream.clone_htod(&initial).unwrap();
                let d_each = each.map(|v| stream.clone_htod(v).unwrap());
                let mut out = poisoned::<T>(gpu, len);
                let mut saved = poisoned::<T>(gpu, save_at.len() * len);
                let call = Lorenz05OnDevice {
                    each: d_each.as_ref().map(|v| v.device_ptr(stream).0),
                    ..Lorenz05OnDevice::new_save_at(p, steps, save_at)
                };
                let op =
                    Lorenz05OnDevice::buffers(stream, &call, &d_in, &mut out, Some(&mut saved))
                        .unwrap();
                gpu.enqueue_buffers(op).unwrap();
                let got = stream.clone_dtoh(&out).unwrap();
                let got_saved = stream.clone_dtoh(&saved).unwrap();
                assert_eq!(got, listed.final_state, "{what}: device final");
                assert_eq!(got_saved, frames, "{what}: device frames");
            }
        }
    }
}

#[test]
fn cpu_per_member_save_at_is_the_run_in_pieces() {
    let cpu = Kernpack::new(Backend::Cpu).unwrap();
    each_save_at_is_the_run_in_pieces::<f64>(&cpu, None, 71);
    each_save_at_is_the_run_in_pieces::<f32>(&cpu, None, 72);
}

#[test]
fn gpu_per_member_save_at_is_the_run_in_pieces() {
    let Some(gpu) = gpu_or_skip("gpu_per_member_save_at_is_the_run_in_pieces") else {
        return;
    };
    let kp = Kernpack::with_gpu(gpu.ordinal()).unwrap();
    each_save_at_is_the_run_in_pieces::<f64>(&kp, Some(&gpu), 73);
    each_save_at_is_the_run_in_pieces::<f32>(&kp, Some(&gpu), 74);
}
