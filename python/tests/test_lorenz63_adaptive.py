"""kernpack.ode.lorenz63_adaptive against scipy.integrate.solve_ivp(method='RK45')
member by member: the same method and step control, so in float64 the same
steps (accepted and rejected counts) and states to rounding; float32 within
its precision. Host arrays on every backend, CuPy / PyTorch device arrays
where there is a GPU."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from conftest import need_gpu_module
from kernpack import ode


def states(rng, members):
    return np.column_stack([rng.uniform(-20, 20, members), rng.uniform(-20, 20, members), rng.uniform(0, 50, members)])


def scipy_member(y0, sigma, rho, beta, t_span, t_eval, **control):
    """One member by SciPy: states at t_end and at t_eval, accepted steps,
    rejected steps (from the evaluations: 1 for f(y0), 1 more for the chosen
    first step, 6 per attempted step)."""

    def f(t, z):
        x, y, w = z
        return [sigma * (y - x), x * (rho - w) - y, x * y - beta * w]

    full = solve_ivp(f, t_span, y0, method="RK45", **control)
    assert full.success
    attempts = (full.nfev - (1 if control.get("first_step") else 2)) // 6
    accepted = len(full.t) - 1
    at = solve_ivp(f, t_span, y0, method="RK45", t_eval=t_eval, **control).y.T if len(t_eval) else None
    return full.y[:, -1], at, accepted, attempts - accepted


def random_case(rng, members, tol_range):
    sigma = rng.uniform(8, 12, members)
    rho = rng.uniform(10, 35, members)
    beta = rng.uniform(2, 3, members)
    t0 = rng.uniform(-1, 1)
    t_span = (t0, t0 + rng.uniform(0.2, 1.5))
    rtol = 10 ** rng.uniform(*np.log10(tol_range))
    control = dict(rtol=rtol, atol=rtol * rng.uniform(0.01, 1))
    if rng.random() < 0.4:
        control["first_step"] = (t_span[1] - t_span[0]) * rng.uniform(1e-4, 1e-2)
    t_eval = np.unique(np.concatenate([rng.uniform(*t_span, 5), [t_span[1]]]))
    return states(rng, members), sigma, rho, beta, t_span, t_eval, control


@pytest.mark.parametrize("trial", range(3))
def test_float64_takes_scipys_steps(backend, rng, trial):
    members = 25
    x0, sigma, rho, beta, t_span, t_eval, control = random_case(rng, members, (1e-10, 1e-4))
    got = ode.lorenz63_adaptive(x0, sigma, rho, beta, t_span=t_span, t_eval=t_eval, backend=backend, **control)
    assert got.success.all() and got.final.shape == (members, 3) and got.saved.shape == (len(t_eval), members, 3)
    same_steps = 0
    for m in range(members):
        final, at, accepted, rejected = scipy_member(x0[m], sigma[m], rho[m], beta[m], t_span, t_eval, **control)
        # Where the counts agree the steps are SciPy's: the states agree to
        # rounding grown over the run; where one accept/reject tips on a
        # rounding (SciPy sums its stages in another order), each run is
        # within its own error control: about the tolerance, grown.
        if (got.accepted[m], got.rejected[m]) == (accepted, rejected):
            same_steps += 1
            tol = 1e-9
        else:
            assert abs(int(got.accepted[m]) - accepted) <= 2 and abs(int(got.rejected[m]) - rejected) <= 2
            tol = 200 * control["rtol"] + 1e-9
        scale = np.abs(final).max()
        assert np.abs(got.final[m] - final).max() <= tol * scale, (m, got.final[m], final)
        assert np.abs(got.saved[:, m] - at).max() <= tol * np.abs(at).max(), m
    # Tipped decisions are rare (none in most draws).
    assert same_steps >= members - 2, same_steps


def test_float32_follows_scipy(backend, rng):
    members = 40
    x0, sigma, rho, beta, t_span, t_eval, control = random_case(rng, members, (1e-6, 1e-3))
    f32 = [v.astype(np.float32) for v in (x0, sigma, rho, beta)]
    got = ode.lorenz63_adaptive(*f32, t_span=t_span, t_eval=t_eval, backend=backend, **control)
    assert got.final.dtype == np.float32 and got.success.all()
    for m in range(members):
        wide = [v[m].astype(np.float64) for v in f32]
        final, at, accepted, _ = scipy_member(*wide, t_span, t_eval, **control)
        # float32 rounding (~1e-7 a step) and the tolerance, grown over at
        # most 1.5 time units.
        tol = 2e-4 + 500 * control["rtol"]
        assert np.abs(got.final[m] - final).max() <= tol * np.abs(final).max(), m
        assert np.abs(got.saved[:, m] - at).max() <= tol * np.abs(at).max(), m
        assert abs(int(got.accepted[m]) - accepted) <= 2 + accepted // 4, (m, got.accepted[m], accepted)


def test_one_state_and_defaults(backend):
    got = ode.lorenz63_adaptive([1.0, 1.0, 1.0], backend=backend)
    assert got.final.shape == (3,) and got.saved is None and int(got.status) == 0
    sol = solve_ivp(lambda t, z: [10 * (z[1] - z[0]), z[0] * (28 - z[2]) - z[1], z[0] * z[1] - 8 / 3 * z[2]],
                    (0, 1), [1.0, 1.0, 1.0], method="RK45")
    assert int(got.accepted) == len(sol.t) - 1
    np.testing.assert_allclose(got.final, sol.y[:, -1], rtol=1e-9)
    none = ode.lorenz63_adaptive([1.0, 2.0, 3.0], t_span=(2.0, 2.0), t_eval=[2.0], backend=backend)
    np.testing.assert_array_equal(none.saved, [[1.0, 2.0, 3.0]])
    assert int(none.accepted) == 0 and bool(none.success)


def test_stopped_members_are_reported(backend, rng):
    x0 = states(rng, 6)
    x0[2] = [1e30, -1e30, 1e30]
    got = ode.lorenz63_adaptive(x0.astype(np.float32), t_eval=[0.5], rtol=1e-6, atol=1e-6, max_steps=8,
                                backend=backend)
    assert list(got.status) == [1, 1, 2, 1, 1, 1]
    assert not got.success.any()
    assert np.isnan(got.saved).all()
    assert (got.accepted + got.rejected)[[0, 1, 3, 4, 5]].tolist() == [8] * 5
    assert np.isfinite(got.final[[0, 1, 3, 4, 5]]).all()


def test_bad_arguments_name_themselves(backend):
    x0 = np.ones((4, 3))
    cases = [
        (dict(t_span=(1.0, 0.0)), "t_end >= t0"),
        (dict(t_eval=[0.5, 0.2]), "sorted and unique"),
        (dict(t_eval=[2.0]), "outside the time span"),
        (dict(rtol=-1.0), "rtol"),
        (dict(rtol=0.0, atol=0.0), "both be 0"),
        (dict(first_step=2.0), "first_step"),
        (dict(first_step=0.0), "first_step"),
        (dict(max_step=0.0), "max_step"),
        (dict(max_steps=0), "max_steps"),
        (dict(max_steps=2**31), "max_steps"),
        (dict(rho=np.ones(3)), "rho"),
        (dict(sigma=np.array([10.0, np.nan, 10.0, 10.0])), "sigma"),
    ]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=match):
            ode.lorenz63_adaptive(x0, backend=backend, **kwargs)
    with pytest.raises(ValueError, match="x0"):
        ode.lorenz63_adaptive(np.ones((4, 2)), backend=backend)
    with pytest.raises(ValueError, match="members"):
        ode.lorenz63_adaptive(np.zeros((0, 3)), backend=backend)


# --------------------------------------------------------------------------
# Device arrays.
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cupy_matches_host(rng, dtype):
    cp = need_gpu_module("cupy")
    x0 = states(rng, 1000).astype(dtype)
    rho = rng.uniform(10, 35, 1000).astype(dtype)
    kwargs = dict(t_span=(0.0, 1.0), t_eval=[0.0, 0.3, 1.0], rtol=1e-5, atol=1e-6)
    got = ode.lorenz63_adaptive(cp.asarray(x0), 10.0, cp.asarray(rho), **kwargs)
    assert isinstance(got.final, cp.ndarray) and got.final.dtype == dtype
    want = ode.lorenz63_adaptive(x0, 10.0, rho, backend="gpu", **kwargs)
    np.testing.assert_array_equal(cp.asnumpy(got.final), want.final)
    np.testing.assert_array_equal(cp.asnumpy(got.saved), want.saved)
    for name in ("accepted", "rejected", "status"):
        np.testing.assert_array_equal(cp.asnumpy(getattr(got, name)), getattr(want, name))
    with pytest.raises(TypeError, match="rho"):
        ode.lorenz63_adaptive(cp.asarray(x0), rho=rho)


def test_torch_in_torch_out(rng):
    torch = need_gpu_module("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    x0 = states(rng, 300)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        got = ode.lorenz63_adaptive(torch.as_tensor(x0, device="cuda"), rtol=1e-8, atol=1e-8)
    stream.synchronize()
    assert isinstance(got.final, torch.Tensor) and got.final.is_cuda and got.saved is None
    assert bool(got.success.all())
    want = ode.lorenz63_adaptive(x0, rtol=1e-8, atol=1e-8, backend="cpu")
    np.testing.assert_allclose(got.final.cpu().numpy(), want.final, rtol=1e-6, atol=1e-6)
