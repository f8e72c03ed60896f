"""kernpack.ode.lorenz63 against a NumPy RK4 written here (the same scheme:
agreement to rounding) and against scipy.integrate.solve_ivp (RK45 at tight
tolerances: agreement to RK4's truncation error), on host arrays (every
backend) and on CuPy / PyTorch device arrays (skipped without a GPU)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from conftest import need_gpu_module
from kernpack import ode


def numpy_rk4(x0, sigma, rho, beta, dt, steps, save_at=()):
    """Classical RK4 in float64, all members at once: k = dt f(z),
    z += k1/6 + k2/3 + k3/3 + k4/6. Returns the final and saved states."""
    z = np.array(x0, dtype=np.float64).reshape(-1, 3)
    s, r, b = (np.broadcast_to(np.asarray(v, dtype=np.float64), z.shape[:1]) for v in (sigma, rho, beta))

    def f(z):
        x, y, w = z[:, 0], z[:, 1], z[:, 2]
        return dt * np.stack([s * (y - x), x * (r - w) - y, x * y - b * w], axis=1)

    saved = []
    for step in range(steps + 1):
        if step in save_at:
            saved.append(z.copy())
        if step == steps:
            break
        k1 = f(z)
        k2 = f(z + 0.5 * k1)
        k3 = f(z + 0.5 * k2)
        k4 = f(z + k3)
        z = z + (k1 / 6 + k2 / 3 + k3 / 3 + k4 / 6)
    return z, np.array(saved)


def states(rng, members):
    return np.column_stack([rng.uniform(-20, 20, members), rng.uniform(-20, 20, members), rng.uniform(0, 50, members)])


def scaled_error(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return np.max(np.abs(got - want)) / np.max(np.abs(want))


# Over one time unit (100 steps of 0.01) the backends differ from the NumPy
# RK4 by rounding only, amplified by the flow's finite-time stretching
# (leading Lyapunov exponent 0.9; from some starts more over one unit). The
# Rust suite measured <= 5e-14 (float64) and <= 9e-5 (float32) on 300
# random cases; these bounds leave ~10x.
TOLERANCE = {np.float64: 1e-12, np.float32: 1e-3}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("per_member", [False, True])
def test_matches_numpy_rk4(backend, rng, dtype, per_member):
    members = 257
    x0 = states(rng, members).astype(dtype)
    if per_member:
        sigma, rho, beta = (rng.uniform(lo, hi, members).astype(dtype) for lo, hi in ((8, 12), (20, 35), (2, 3)))
    else:
        sigma, rho, beta = 10.0, 28.0, 8.0 / 3.0
    save_at = [0, 1, 50, 99]
    got = ode.lorenz63(x0, sigma, rho, beta, dt=0.01, steps=100, save_at=save_at, backend=backend)
    assert got.final.dtype == dtype and got.final.shape == (members, 3)
    assert got.saved.dtype == dtype and got.saved.shape == (4, members, 3)
    # The reference from the same (rounded) inputs.
    want, want_saved = numpy_rk4(x0, np.asarray(sigma, dtype), np.asarray(rho, dtype), np.asarray(beta, dtype),
                                 0.01, 100, save_at)
    assert scaled_error(got.final, want) <= TOLERANCE[dtype]
    assert scaled_error(got.saved, want_saved) <= TOLERANCE[dtype]
    np.testing.assert_array_equal(got.saved[0], x0)


def test_one_state_and_no_saved_steps(backend):
    got = ode.lorenz63([1.0, 1.0, 1.0], dt=0.01, steps=10, backend=backend)
    assert got.final.shape == (3,) and got.saved is None
    got = ode.lorenz63([1.0, 1.0, 1.0], dt=0.01, steps=10, save_at=[5, 10], backend=backend)
    assert got.saved.shape == (2, 3)
    np.testing.assert_array_equal(got.saved[1], got.final)


def test_matches_solve_ivp(backend, rng):
    """Against an independent integrator at tight tolerances. The horizon is
    one time unit: errors grow like exp(0.9 t) on average (the leading
    Lyapunov exponent), so the RK45 and RK4 trajectories, which differ by
    ~1e-10 per unit of time here, stay close for a few units only and
    decorrelate entirely by t ~ 30; one unit keeps the comparison about the
    integrators rather than the chaos. dt = 0.001: RK4's global error is
    ~C dt^4 with C ~ 1e3 for Lorenz 63's derivative sizes, ~1e-9 of the
    state's scale."""
    members = 5
    x0 = states(rng, members)
    rho = rng.uniform(20, 35, members)
    dt, steps = 0.001, 1000
    save_at = [250, 500, 750]
    got = ode.lorenz63(x0, 10.0, rho, 8.0 / 3.0, dt=dt, steps=steps, save_at=save_at, backend=backend)
    for m in range(members):

        def f(t, z, r=rho[m]):
            x, y, w = z
            return [10.0 * (y - x), x * (r - w) - y, x * y - 8.0 / 3.0 * w]

        times = [s * dt for s in save_at] + [steps * dt]
        sol = solve_ivp(f, (0.0, steps * dt), x0[m], method="RK45", rtol=1e-12, atol=1e-12, t_eval=times)
        assert sol.success
        want = sol.y.T
        ours = np.vstack([got.saved[:, m, :], got.final[m]])
        assert scaled_error(ours, want) <= 1e-7, m


def test_bad_arguments_name_themselves(backend):
    x0 = np.ones((4, 3))
    with pytest.raises(ValueError, match="x0"):
        ode.lorenz63(np.ones((4, 2)), steps=1, backend=backend)
    with pytest.raises(ValueError, match="rho"):
        ode.lorenz63(x0, rho=np.ones(3), steps=1, backend=backend)
    with pytest.raises(ValueError, match="dt"):
        ode.lorenz63(x0, dt=0.0, steps=1, backend=backend)
    with pytest.raises(ValueError, match="steps"):
        ode.lorenz63(x0, steps=-1, backend=backend)
    with pytest.raises(ValueError, match="sorted and unique"):
        ode.lorenz63(x0, steps=10, save_at=[5, 2], backend=backend)
    with pytest.raises(ValueError, match="save_at"):
        ode.lorenz63(x0, steps=10, save_at=[11], backend=backend)
    with pytest.raises(ValueError, match="negative"):
        ode.lorenz63(x0, steps=10, save_at=[-1], backend=backend)
    with pytest.raises(ValueError, match="sigma"):
        ode.lorenz63(x0, sigma=np.array([10.0, np.nan, 10.0, 10.0]), steps=1, backend=backend)
    with pytest.raises(ValueError, match="initial"):
        ode.lorenz63(np.zeros((0, 3)), steps=1, backend=backend)


# --------------------------------------------------------------------------
# Device arrays.
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cupy_matches_host(rng, dtype):
    cp = need_gpu_module("cupy")
    x0 = states(rng, 1000).astype(dtype)
    rho = rng.uniform(20, 35, 1000).astype(dtype)
    got = ode.lorenz63(cp.asarray(x0), 10.0, cp.asarray(rho), dt=0.01, steps=100, save_at=[0, 30])
    assert isinstance(got.final, cp.ndarray) and got.final.dtype == dtype
    want = ode.lorenz63(x0, 10.0, rho, dt=0.01, steps=100, save_at=[0, 30], backend="gpu")
    np.testing.assert_array_equal(cp.asnumpy(got.final), want.final)
    np.testing.assert_array_equal(cp.asnumpy(got.saved), want.saved)
    with pytest.raises(TypeError, match="rho"):
        ode.lorenz63(cp.asarray(x0), rho=rho, steps=1)


def test_torch_in_torch_out(rng):
    torch = need_gpu_module("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    x0 = states(rng, 300)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        got = ode.lorenz63(torch.as_tensor(x0, device="cuda"), dt=0.01, steps=50)
    stream.synchronize()
    assert isinstance(got.final, torch.Tensor) and got.final.is_cuda and got.saved is None
    want = numpy_rk4(x0, 10.0, 28.0, 8.0 / 3.0, 0.01, 50)[0]
    assert scaled_error(got.final.cpu().numpy(), want) <= 1e-12
