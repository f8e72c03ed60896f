"""kernpack.reduce (deterministic sums, normalisation in place) against
math.fsum, and kernpack.ode against small NumPy integrators written here."""
from __future__ import annotations

import math

import numpy as np
import pytest

from kernpack import ode, reduce

# --------------------------------------------------------------------------
# reduce.sum
# --------------------------------------------------------------------------

LENGTHS = [0, 1, 2, 7, 255, 4095, 4096, 4097, 10_000, 100_003]


def exact_sum(x) -> float:
    """The correctly rounded sum of the values (as float64)."""
    return math.fsum(np.asarray(x, dtype=np.float64).ravel().tolist())


def sum_tolerance(x) -> float:
    # kernpack accumulates in float64 (chunks of 4096 in order, chunk sums
    # pairwise): its error is at most ~4096 eps * sum|x| and in practice
    # ~sqrt(4096) eps * sum|x| ~ 1.4e-14 sum|x|. 1e-12 * sum|x| covers the
    # bound's order while a float32 accumulation (~1e-7) would fail. Relative
    # to sum|x| rather than |sum|: the values have both signs.
    return 1e-12 * math.fsum(np.abs(np.asarray(x, dtype=np.float64)).ravel().tolist())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", LENGTHS)
def test_sum_matches_fsum(backend, rng, n, dtype):
    x = (rng.uniform(-1.0, 2.0, n) * 10 ** rng.uniform(-3, 3)).astype(dtype)
    got = reduce.sum(x, backend=backend)
    assert isinstance(got, float)
    if n == 0:
        assert got == 0.0
    elif n == 1:
        assert got == float(x[0])  # one value: exact
    else:
        assert abs(got - exact_sum(x)) <= sum_tolerance(x), (got, exact_sum(x))


def test_sum_of_float32_is_accumulated_in_float64(backend, rng):
    # 1 followed by many values below half an ulp of 1 in float32: a float32
    # accumulation would stay at 1.0, a float64 one sees them all.
    n = 50_000
    x = np.full(n, 2.0 ** -26, dtype=np.float32)
    x[0] = 1.0
    got = reduce.sum(x, backend=backend)
    assert abs(got - exact_sum(x)) <= sum_tolerance(x)
    assert got > 1.0 + (n - 1) * 2.0 ** -26 * 0.99


def test_sum_is_deterministic(backend, rng):
    x = rng.normal(size=300_001) * 1e3
    first = reduce.sum(x, backend=backend)
    for _ in range(3):
        assert reduce.sum(x, backend=backend).hex() == first.hex()


def test_sum_other_inputs(backend, rng):
    x = rng.normal(size=(37, 29))
    expected = exact_sum(x)
    # 2-D, a non-contiguous view, big-endian, a list, an integer array.
    assert abs(reduce.sum(x, backend=backend) - expected) <= sum_tolerance(x)
    view = x[::2, 1::3]
    assert abs(reduce.sum(view, backend=backend) - exact_sum(view)) <= sum_tolerance(view)
    assert abs(reduce.sum(x.astype(">f8"), backend=backend) - expected) <= sum_tolerance(x)
    assert abs(reduce.sum(x.ravel().tolist(), backend=backend) - expected) <= sum_tolerance(x)
    ints = rng.integers(-1000, 1000, 5000)
    assert reduce.sum(ints, backend=backend) == float(ints.sum())  # integers below 2^53: exact


# --------------------------------------------------------------------------
# reduce.normalize
# --------------------------------------------------------------------------

# x / sum is rounded once to the array's dtype (kernpack multiplies by 1/sum
# in float64: two roundings in float64, then one to float32 for float32):
NORMALIZE_RTOL = {np.float64: 1e-12, np.float32: 1e-6}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 3, 1000, 4097, 70_001])
def test_normalize_in_place(backend, rng, n, dtype):
    x = rng.uniform(-0.5, 2.0, n).astype(dtype)
    x0 = x.copy()
    total = reduce.normalize(x, backend=backend)
    assert isinstance(total, float)
    assert abs(total - exact_sum(x0)) <= sum_tolerance(x0)
    np.testing.assert_allclose(x, x0.astype(np.float64) / exact_sum(x0), rtol=NORMALIZE_RTOL[dtype])
    assert x.dtype == dtype


def test_normalize_2d_and_big_endian(backend, rng):
    x = rng.uniform(0.1, 1.0, (13, 17))
    x0 = x.copy()
    total = reduce.normalize(x, backend=backend)
    np.testing.assert_allclose(x, x0 / exact_sum(x0), rtol=1e-12)
    assert abs(total - exact_sum(x0)) <= sum_tolerance(x0)
    be = x0.astype(">f8")
    reduce.normalize(be, backend=backend)
    assert be.dtype == np.dtype(">f8")
    np.testing.assert_allclose(be, x0 / exact_sum(x0), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_normalize_zero_sum_is_an_error_and_changes_nothing(backend, rng, dtype):
    # Integers (exact in float32 and float64, partial sums exact too) and
    # their negatives, shuffled: a zero sum whatever the summation order.
    v = rng.integers(1, 1000, 2500).astype(dtype)
    x = np.concatenate([v, -v])
    rng.shuffle(x)
    before = x.copy()
    with pytest.raises(ValueError, match="sum is 0"):
        reduce.normalize(x, backend=backend)
    assert x.tobytes() == before.tobytes()


def test_normalize_non_finite_sum_is_an_error_and_changes_nothing(backend, rng):
    x = rng.uniform(0.5, 1.0, 100)
    x[37] = np.nan
    before = x.copy()
    with pytest.raises(ValueError, match="finite"):
        reduce.normalize(x, backend=backend)
    assert x.tobytes() == before.tobytes()


def test_normalize_refuses_what_it_cannot_write(backend, rng):
    ro = rng.uniform(0.5, 1.0, 10)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        reduce.normalize(ro, backend=backend)
    with pytest.raises(TypeError, match="list"):
        reduce.normalize(rng.uniform(0.5, 1.0, 10).tolist(), backend=backend)
    with pytest.raises(TypeError, match="int64"):
        reduce.normalize(rng.integers(1, 5, 10), backend=backend)


def test_normalize_strided_view_touches_only_the_view(backend, rng):
    x = rng.uniform(0.1, 1.0, 1001)
    x0 = x.copy()
    view = x[::2]
    total = reduce.normalize(view, backend=backend)
    assert abs(total - exact_sum(x0[::2])) <= sum_tolerance(x0[::2])
    np.testing.assert_allclose(x[::2], x0[::2] / exact_sum(x0[::2]), rtol=1e-12)
    np.testing.assert_array_equal(x[1::2], x0[1::2])


# --------------------------------------------------------------------------
# reduce.normalize_batched
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_normalize_batched(backend, rng, dtype):
    narrays = 12
    lengths = rng.integers(1, 300, narrays)
    empty = sorted(rng.choice(narrays, 3, replace=False).tolist())
    lengths[empty] = 0
    zero_sum = int(rng.choice([a for a in range(narrays) if a not in empty]))
    lengths[zero_sum] = 2 * (lengths[zero_sum] // 2 + 1)
    parts = []
    for a, n in enumerate(lengths):
        if a == zero_sum:
            v = rng.integers(1, 1000, n // 2).astype(dtype)
            part = np.concatenate([v, -v])
            rng.shuffle(part)
        else:
            part = rng.uniform(-0.5, 2.0, n).astype(dtype)
        parts.append(part)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    x = np.concatenate(parts).astype(dtype)
    x0 = x.copy()
    result = reduce.normalize_batched(x, offsets, backend=backend)

    assert result.sums.shape == (narrays,) and result.sums.dtype == np.float64
    for a in range(narrays):
        part0 = x0[offsets[a]:offsets[a + 1]]
        assert abs(result.sums[a] - exact_sum(part0)) <= sum_tolerance(part0), a
    # Documented: "indices of the arrays left unchanged (zero or non-finite
    # sum)", and empty arrays are "left as they are": their sum is 0, so they
    # are listed with the zero-sum array.
    assert sorted(result.failed.tolist()) == sorted(empty + [zero_sum])
    for a in range(narrays):
        got, part0 = x[offsets[a]:offsets[a + 1]], x0[offsets[a]:offsets[a + 1]]
        if a in result.failed:
            assert got.tobytes() == part0.tobytes(), a
        else:
            np.testing.assert_allclose(got, part0.astype(np.float64) / exact_sum(part0), rtol=NORMALIZE_RTOL[dtype])


def test_normalize_batched_sums_equal_single_sums(backend, rng):
    # Each array's sum has the bits of reduce.sum of that array alone.
    lengths = rng.integers(1, 9000, 6)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    x = rng.uniform(0.0, 1.0, offsets[-1])
    singles = [reduce.sum(x[offsets[a]:offsets[a + 1]], backend=backend) for a in range(6)]
    result = reduce.normalize_batched(x, offsets, backend=backend)
    assert [s.hex() for s in result.sums.tolist()] == [s.hex() for s in singles]
    assert result.failed.size == 0


@pytest.mark.parametrize(
    "offsets",
    [[1, 5, 10], [0, 5, 9], [0, 6, 5, 10], [[0, 10]], [0.0, 10.0], []],
    ids=["start", "end", "decreasing", "2-D", "float", "empty"],
)
def test_normalize_batched_bad_offsets_change_nothing(backend, rng, offsets):
    x = rng.uniform(0.5, 1.0, 10)
    before = x.copy()
    with pytest.raises(ValueError, match="offsets"):
        reduce.normalize_batched(x, np.asarray(offsets), backend=backend)
    assert x.tobytes() == before.tobytes()


def test_normalize_batched_refuses_what_it_cannot_write(backend, rng):
    offsets = np.array([0, 4, 10])
    ro = rng.uniform(0.5, 1.0, 10)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        reduce.normalize_batched(ro, offsets, backend=backend)
    with pytest.raises(TypeError):
        reduce.normalize_batched(rng.uniform(0.5, 1.0, 10).tolist(), offsets, backend=backend)


def test_normalize_batched_strided_view(backend, rng):
    base = rng.uniform(0.1, 1.0, 40)
    before = base.copy()
    view = base[::2]
    offsets = np.array([0, 7, 20])
    result = reduce.normalize_batched(view, offsets, backend=backend)
    for a in range(2):
        part0 = before[::2][offsets[a]:offsets[a + 1]]
        np.testing.assert_allclose(view[offsets[a]:offsets[a + 1]], part0 / exact_sum(part0), rtol=1e-12)
        assert abs(result.sums[a] - exact_sum(part0)) <= sum_tolerance(part0)
    np.testing.assert_array_equal(base[1::2], before[1::2])


# --------------------------------------------------------------------------
# ode.lorenz96
# --------------------------------------------------------------------------


def l96_tendency(x, forcing):
    """dx_k/dt = (x_{k+1} - x_{k-2}) x_{k-1} - x_k + F, periodic, per row."""
    return (np.roll(x, -1, axis=1) - np.roll(x, 2, axis=1)) * np.roll(x, 1, axis=1) - x + forcing


def rk4(x, dt, f):
    k1 = f(x)
    k2 = f(x + 0.5 * dt * k1)
    k3 = f(x + 0.5 * dt * k2)
    k4 = f(x + dt * k3)
    return x + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def l96_numpy(x, steps, forcing=8.0, dt=0.05):
    states = [np.array(x, dtype=np.float64)]
    for _ in range(steps):
        states.append(rk4(states[-1], dt, lambda s: l96_tendency(s, forcing)))
    return states


def l96_initial(rng, members, n, forcing=8.0):
    return forcing + rng.normal(0, 1.0, (members, n))


def test_lorenz96_matches_numpy_rk4(backend, rng):
    # 50 steps of dt = 0.05 is 2.5 time units: the largest Lyapunov exponent
    # of L96 at F = 8 (~1.7) amplifies rounding differences by ~e^4 ~ 60, so
    # two float64 integrations agree to ~1e-14: rtol 1e-10 of the state size.
    members, n, steps = 3, 40, 50
    x0 = l96_initial(rng, members, n)
    before = x0.copy()
    run = ode.lorenz96(x0, steps, backend=backend)
    ref = l96_numpy(x0, steps)[-1]
    assert run.final.shape == (members, n) and run.final.dtype == np.float64
    assert run.trajectory is None
    assert np.max(np.abs(run.final - ref)) <= 1e-10 * np.max(np.abs(ref))
    np.testing.assert_array_equal(x0, before)  # the input is not modified


def test_lorenz96_forcing_and_dt(backend, rng):
    x0 = l96_initial(rng, 2, 36, forcing=5.0)
    forcing, dt = float(rng.uniform(4, 10)), float(rng.uniform(0.005, 0.03))
    run = ode.lorenz96(x0, 30, forcing=forcing, dt=dt, backend=backend)
    ref = l96_numpy(x0, 30, forcing, dt)[-1]
    assert np.max(np.abs(run.final - ref)) <= 1e-10 * np.max(np.abs(ref))


@pytest.mark.parametrize("every", [10, 7, 1, 50])
def test_lorenz96_trajectory(backend, rng, every):
    members, n, steps = 2, 40, 50
    x0 = l96_initial(rng, members, n)
    run = ode.lorenz96(x0, steps, every=every, backend=backend)
    frames = steps // every + 1
    assert run.trajectory.shape == (frames, members, n)
    np.testing.assert_array_equal(run.trajectory[0], x0)
    states = l96_numpy(x0, steps)
    for f in range(frames):
        ref = states[f * every]
        assert np.max(np.abs(run.trajectory[f] - ref)) <= 1e-10 * np.max(np.abs(ref)), f
    assert np.max(np.abs(run.final - states[steps])) <= 1e-10 * np.max(np.abs(states[steps]))


def test_lorenz96_float32(backend, rng):
    # float32 in, float32 out. 10 steps (0.5 time units: growth ~e^0.85) so
    # that float32 rounding (6e-8 per operation, ~10 steps) stays ~1e-6 of the
    # state: rtol 1e-5.
    x0 = l96_initial(rng, 4, 40).astype(np.float32)
    run = ode.lorenz96(x0, 10, every=5, backend=backend)
    assert run.final.dtype == np.float32 and run.trajectory.dtype == np.float32
    np.testing.assert_array_equal(run.trajectory[0], x0)
    ref = l96_numpy(x0.astype(np.float64), 10)[-1]
    assert np.max(np.abs(run.final - ref)) <= 1e-5 * np.max(np.abs(ref))


def test_lorenz96_forcing_in_state(backend, rng):
    # Per-member and per-site forcing carried after X: each member must match
    # its own NumPy run with that F, and F must come back unchanged.
    members, n, steps = 3, 40, 20
    x0 = l96_initial(rng, members, n)
    forcing = rng.uniform(4, 12, (members, n))
    run = ode.lorenz96(np.hstack([x0, forcing]), steps, forcing_in_state=True, every=10, backend=backend)
    assert run.final.shape == (members, 2 * n) and run.trajectory.shape == (3, members, 2 * n)
    np.testing.assert_array_equal(run.final[:, n:], forcing)
    np.testing.assert_array_equal(run.trajectory[:, :, n:], np.broadcast_to(forcing, (3, members, n)))
    ref = l96_numpy(x0, steps, forcing)[-1]
    assert np.max(np.abs(run.final[:, :n] - ref)) <= 1e-10 * np.max(np.abs(ref))
    with pytest.raises(ValueError, match="2N values"):
        ode.lorenz96(np.ones((2, 41)), 1, forcing_in_state=True, backend=backend)


def test_lorenz96_noise_is_reproducible_and_scaled(backend, rng):
    # From rest (x = 0, F = 0) the tendency is O(W^2): one step of dt adds
    # W = s sqrt(dt) N(0, 1) per site, so the std of the result is s sqrt(dt)
    # to sampling error (4000 values: 1.1% standard error; 5% allowed).
    x0 = np.zeros((100, 40))
    s, dt = 0.7, 1e-4
    a = ode.lorenz96(x0, 1, forcing=0.0, dt=dt, noise=s, seed=5, backend=backend).final
    b = ode.lorenz96(x0, 1, forcing=0.0, dt=dt, noise=s, seed=5, backend=backend).final
    c = ode.lorenz96(x0, 1, forcing=0.0, dt=dt, noise=s, seed=6, backend=backend).final
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert abs(a.std() / (s * math.sqrt(dt)) - 1) < 0.05
    assert abs(a.mean()) < 5 * s * math.sqrt(dt) / math.sqrt(a.size)
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="noise"):
            ode.lorenz96(x0, 1, noise=bad, backend=backend)
    with pytest.raises(ValueError, match="seed"):
        ode.lorenz96(x0, 1, noise=1.0, seed=-1, backend=backend)


def _save_at(rng, steps, count):
    """`count` sorted, unique steps of 0..steps, drawn from `rng`."""
    return sorted(int(s) for s in rng.choice(steps + 1, size=count, replace=False))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lorenz96_save_at_frames_are_the_states_at_those_steps(backend, rng, dtype):
    # A noisy run at chosen steps is cut into segments that draw the noise of
    # their steps in the whole run: its frames are bitwise the every-step
    # trajectory's at those steps, its final states the plain run's.
    members, n, steps = 5, 40, 30
    x0 = l96_initial(rng, members, n).astype(dtype)
    opts = dict(noise=0.6, seed=int(rng.integers(2**63)), member_offset=3, backend=backend)
    every = ode.lorenz96(x0, steps, every=1, **opts)
    for save_at in (_save_at(rng, steps, 4), [0], [steps], [2, steps - 1], np.array([1, 7], np.int64)):
        run = ode.lorenz96(x0, steps, save_at=save_at, **opts)
        assert run.trajectory.shape == (len(save_at), members, n) and run.trajectory.dtype == dtype
        np.testing.assert_array_equal(run.trajectory, every.trajectory[list(save_at)])
        np.testing.assert_array_equal(run.final, every.final)
    # Without noise, against NumPy's RK4 (float64).
    if dtype == np.float64:
        save_at = _save_at(rng, steps, 3)
        run = ode.lorenz96(x0, steps, save_at=save_at, backend=backend)
        states = l96_numpy(x0, steps)
        for k, s in enumerate(save_at):
            assert np.max(np.abs(run.trajectory[k] - states[s])) <= 1e-10 * np.max(np.abs(states[s])), s
    # One state: frames of one state; an empty list: no trajectory.
    one = ode.lorenz96(x0[0], steps, save_at=[0, 5], **opts)
    assert one.trajectory.shape == (2, 1, n)
    assert ode.lorenz96(x0, steps, save_at=[], **opts).trajectory is None


def test_lorenz96_save_at_with_the_forcing_in_the_state(backend, rng):
    members, n, steps = 3, 40, 12
    x0 = np.hstack([l96_initial(rng, members, n), rng.uniform(4, 12, (members, n))])
    opts = dict(forcing_in_state=True, noise=0.3, seed=9, backend=backend)
    every = ode.lorenz96(x0, steps, every=1, **opts)
    run = ode.lorenz96(x0, steps, save_at=[3, 12], **opts)
    np.testing.assert_array_equal(run.trajectory, every.trajectory[[3, 12]])
    np.testing.assert_array_equal(run.trajectory[:, :, n:], np.broadcast_to(x0[:, n:], (2, members, n)))


@pytest.mark.parametrize("model", [2, 3])
def test_lorenz05_save_at_frames_are_the_states_at_those_steps(backend, rng, model):
    x0 = rng.normal(size=(3, 240)) + 10
    opts = dict(model=model, k=8, j=6, backend=backend)
    every = ode.lorenz05(x0, 9, every=1, **opts)
    save_at = _save_at(rng, 9, 3)
    run = ode.lorenz05(x0, 9, save_at=save_at, **opts)
    np.testing.assert_array_equal(run.trajectory, every.trajectory[save_at])
    np.testing.assert_array_equal(run.final, every.final)


@pytest.mark.parametrize(
    "save_at, every, message",
    [
        ([3, 1], 0, "sorted and unique"),
        ([2, 2], 0, "sorted and unique"),
        ([11], 0, "past the last step"),
        ([-1, 2], 0, "negative"),
        ([[1, 2]], 0, "1-D"),
        ([0.5], 0, "1-D"),
        ([2], 5, "not both"),
    ],
)
def test_save_at_invalid(backend, save_at, every, message):
    with pytest.raises(ValueError, match=message):
        ode.lorenz96(np.ones((2, 40)), 10, every=every, save_at=save_at, backend=backend)
    with pytest.raises(ValueError, match=message):
        ode.lorenz05(np.ones((1, 240)), 10, k=8, j=6, every=every, save_at=save_at, backend=backend)


def l96_tangent_numpy(x, v, steps, forcing=8.0, dt=0.05):
    """RK4 of the joint system (x, v), dv/dt = J(x) v, per row of x and each of its K vectors."""

    def joint(z):
        x, v = z[:, :1], z[:, 1:]
        dx = l96_tendency(x[:, 0], forcing)[:, None]
        roll = lambda a, k: np.roll(a, k, axis=-1)  # noqa: E731
        dv = (roll(v, -1) - roll(v, 2)) * roll(x, 1) + (roll(x, -1) - roll(x, 2)) * roll(v, 1) - v
        return np.concatenate([dx, dv], axis=1)

    z = np.concatenate([x[:, None, :], v], axis=1)
    for _ in range(steps):
        k1 = joint(z)
        k2 = joint(z + 0.5 * dt * k1)
        k3 = joint(z + 0.5 * dt * k2)
        k4 = joint(z + dt * k3)
        z = z + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return z[:, 0], z[:, 1:]


def test_lorenz96_tangent(backend, rng):
    members, k, n, steps = 3, 4, 40, 15
    x0 = l96_initial(rng, members, n)
    v0 = rng.normal(size=(members, k, n))
    final, moved = ode.lorenz96_tangent(x0, v0, steps, backend=backend)
    want_x, want_v = l96_tangent_numpy(x0, v0, steps)
    assert final.shape == (members, n) and moved.shape == (members, k, n)
    assert np.max(np.abs(final - want_x)) <= 1e-10 * np.max(np.abs(want_x))
    assert np.max(np.abs(moved - want_v)) <= 1e-10 * np.max(np.abs(want_v))
    # Central differences along a perturbation approach it to O(eps^2): the
    # run's third derivative, grown over 15 steps, left 1.3e-6 relative at
    # eps = 1e-4 in trials; 1e-5 bounds it, while an error in the tangent of
    # one term's size would be ~1e-2.
    eps = 1e-4
    plus = ode.lorenz96(x0 + eps * v0[:, 0], steps, backend=backend).final
    minus = ode.lorenz96(x0 - eps * v0[:, 0], steps, backend=backend).final
    assert np.max(np.abs((plus - minus) / (2 * eps) - moved[:, 0])) <= 1e-5 * np.max(np.abs(moved[:, 0]))
    # One state and its Jacobian from identity perturbations.
    x1, jac = ode.lorenz96_tangent(x0[0], np.eye(n), 2, backend=backend)
    assert jac.shape == (1, n, n)
    with pytest.raises(ValueError, match="perturbations must be"):
        ode.lorenz96_tangent(x0, v0[:, :, :5], steps, backend=backend)


def test_noisy_dapper_step_draws_fresh_noise_each_call():
    step = ode.dapper_step(forcing=0.0, noise=1.0, seed=3, backend="cpu")
    x = np.zeros((4, 40))
    first, second = step(x, 0.0, 1e-4), step(x, 0.0, 1e-4)
    assert not np.array_equal(first, second)
    again = ode.dapper_step(forcing=0.0, noise=1.0, seed=3, backend="cpu")
    np.testing.assert_array_equal(again(x, 0.0, 1e-4), first)


def test_noisy_runs_continue_over_calls(backend, rng):
    # A noisy run in pieces (step_offset: the steps before each), or one
    # dapper_step call per step, is bitwise the run in one call.
    x0 = l96_initial(rng, 5, 40)
    seed = int(rng.integers(2**63))
    opts = dict(noise=0.7, seed=seed, dt=0.01, backend=backend)
    whole = ode.lorenz96(x0, 9, **opts).final
    head = ode.lorenz96(x0, 4, **opts).final
    tail = ode.lorenz96(head, 5, step_offset=4, **opts).final
    np.testing.assert_array_equal(tail, whole)
    assert not np.array_equal(ode.lorenz96(head, 5, **opts).final, whole)
    step = ode.dapper_step(noise=0.7, seed=seed, backend=backend)
    E = x0
    for _ in range(9):
        E = step(E, 0.0, 0.01)
    np.testing.assert_array_equal(E, whole)
    # The tangent model draws the same noise for its states (its own code
    # path: equal to rounding; the noise moves each step by ~0.07).
    final, _ = ode.lorenz96_tangent(head, np.ones((5, 1, 40)), 5, step_offset=4, **opts)
    np.testing.assert_allclose(final, whole, rtol=0, atol=1e-10 * np.max(np.abs(whole)))
    with pytest.raises(ValueError, match="step_offset"):
        ode.lorenz96(x0, 1, step_offset=-1, **opts)
    with pytest.raises(ValueError, match="step_offset"):
        ode.lorenz96(x0, 1, step_offset=2**62 + 1, **opts)


def test_lorenz96_one_state_and_lists(backend, rng):
    x0 = l96_initial(rng, 1, 20)[0]
    run = ode.lorenz96(x0.tolist(), 5, backend=backend)
    assert run.final.shape == (1, 20)
    ref = l96_numpy(x0[None, :], 5)[-1]
    assert np.max(np.abs(run.final - ref)) <= 1e-10 * np.max(np.abs(ref))


def test_lorenz96_zero_steps_returns_the_initial_state(backend, rng):
    x0 = l96_initial(rng, 2, 10)
    np.testing.assert_array_equal(ode.lorenz96(x0, 0, backend=backend).final, x0)


@pytest.mark.parametrize(
    "shape, steps, kwargs, error, message",
    [
        ((2, 3), 5, {}, ValueError, "N >= 4"),
        ((0, 40), 5, {}, ValueError, "members"),
        ((2, 40), -1, {}, ValueError, "steps"),
        ((2, 40), 5.0, {}, ValueError, "steps"),
        ((2, 40), 5, dict(every=-1), ValueError, "every"),
        ((2, 40), 5, dict(every=6), ValueError, "every"),
        ((2, 40), 5, dict(dt=0.0), ValueError, "dt"),
        ((2, 40), 5, dict(forcing=float("nan")), ValueError, "forcing"),
        ((2, 2, 40), 5, {}, ValueError, "members, N"),
    ],
)
def test_lorenz96_invalid(backend, rng, shape, steps, kwargs, error, message):
    with pytest.raises(error, match=message):
        ode.lorenz96(rng.normal(size=shape), steps, backend=backend, **kwargs)


# --------------------------------------------------------------------------
# ode.lorenz05
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("model", [2, 3])
def test_lorenz05_shapes_dtype_determinism(backend, rng, model, dtype):
    members, n = 3, 120
    z0 = (rng.normal(0, 2.0, (members, n)) + 5).astype(dtype)
    before = z0.copy()
    kwargs = dict(model=model, k=8, j=4, forcing=15.0, dt=0.001, every=4)
    first = ode.lorenz05(z0, 20, backend=backend, **kwargs)
    second = ode.lorenz05(z0, 20, backend=backend, **kwargs)
    assert first.final.shape == (members, n) and first.final.dtype == dtype
    assert first.trajectory.shape == (20 // 4 + 1, members, n) and first.trajectory.dtype == dtype
    np.testing.assert_array_equal(first.trajectory[0], z0)
    np.testing.assert_array_equal(first.trajectory[-1], first.final)  # 20 is a multiple of 4
    assert first.final.tobytes() == second.final.tobytes()
    assert first.trajectory.tobytes() == second.trajectory.tobytes()
    assert np.isfinite(first.final).all()
    assert np.max(np.abs(first.final.astype(np.float64) - z0)) > 0  # it moved
    np.testing.assert_array_equal(z0, before)
    # Model II and III differ (Model III smooths and adds the small scales).
    other = ode.lorenz05(z0, 20, backend=backend, **dict(kwargs, model=5 - model))
    assert np.max(np.abs(other.final.astype(np.float64) - first.final)) > 0


def test_lorenz05_members_are_independent(backend, rng):
    # Member m's run does not depend on the other members.
    z0 = rng.normal(0, 2.0, (3, 100)) + 5
    all3 = ode.lorenz05(z0, 10, model=3, k=8, j=4, backend=backend).final
    one = ode.lorenz05(z0[1:2], 10, model=3, k=8, j=4, backend=backend).final
    np.testing.assert_array_equal(all3[1:2], one)


def test_lorenz05_dart_defaults_run(backend, rng):
    z0 = rng.normal(0, 2.0, (1, 960)) + 5
    run = ode.lorenz05(z0, 2, backend=backend)
    assert run.final.shape == (1, 960) and np.isfinite(run.final).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(k=7), "K must be even"),
        (dict(k=31, model=2), "K must be even"),
        (dict(k=0), "K must be even"),
        (dict(k=60), "N must exceed 2K"),
        (dict(j=0), "J must be >= 1"),
        (dict(j=60), "N must exceed 2J"),
        (dict(model=4), "model must be 2"),
        (dict(dt=-0.001), "dt"),
    ],
)
def test_lorenz05_invalid(backend, rng, kwargs, message):
    args = dict(model=3, k=8, j=4)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        ode.lorenz05(rng.normal(size=(2, 100)), 3, backend=backend, **args)


# --------------------------------------------------------------------------
# ode.window_sum
# --------------------------------------------------------------------------


def window_sum_numpy(x, w):
    """out[r, i] = sum_m w[m] x[r, (i + J - m) mod N], len(w) = 2J + 1."""
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    n = x.shape[1]
    half = (len(w) - 1) // 2
    out = np.zeros_like(x)
    for m, wm in enumerate(np.asarray(w, dtype=np.float64)):
        out += wm * x[:, (np.arange(n) + half - m) % n]
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("rows, n, nw", [(3, 40, 5), (1, 7, 25), (5, 960, 25), (2, 1, 3), (4, 16, 1)])
def test_window_sum_matches_numpy(backend, rng, rows, n, nw, dtype):
    # Includes windows longer than the row (several wraps). Both sum 2J+1
    # products in float64 (kernpack in m order, this reference too):
    # f64 1e-13 * sum|w| max|x|; float32 rounds the result once: 1e-6.
    x = rng.normal(size=(rows, n)).astype(dtype)
    w = rng.normal(size=nw).astype(dtype)
    got = ode.window_sum(x, w, backend=backend)
    assert got.shape == x.shape and got.dtype == dtype
    ref = window_sum_numpy(x, w)
    scale = np.sum(np.abs(w.astype(np.float64))) * np.max(np.abs(x.astype(np.float64)))
    rtol = 1e-13 if dtype == np.float64 else 1e-6
    assert np.max(np.abs(got - ref)) <= rtol * scale


def test_window_sum_one_row(backend, rng):
    x = rng.normal(size=50)
    w = rng.normal(size=7)
    got = ode.window_sum(x, w, backend=backend)
    assert got.shape == (50,)
    assert np.max(np.abs(got - window_sum_numpy(x, w)[0])) <= 1e-13 * np.sum(np.abs(w)) * np.max(np.abs(x))


@pytest.mark.parametrize("nw", [0, 2, 4])
def test_window_sum_even_weights_is_an_error(backend, rng, nw):
    with pytest.raises(ValueError, match="odd number of weights"):
        ode.window_sum(rng.normal(size=(2, 10)), rng.normal(size=nw), backend=backend)


# --------------------------------------------------------------------------
# ode.fg_integrate
# --------------------------------------------------------------------------


def fg_numpy(f, g, delta0, dt, nsteps):
    """Classic RK4 of dF/dt = -2i F - i d (2G - 1), dG/dt = -i (conj(d) F -
    d conj(F)), with d held at the step's delta through the four stages (as
    src/reference/fg.rs does) and delta = sum(F) after every step."""
    f = np.array(f, dtype=np.complex128)
    g = np.array(g, dtype=np.complex128)

    def rhs(f, g, d):
        return -2j * f - 1j * d * (2 * g - 1), -1j * (np.conj(d) * f - d * np.conj(f))

    deltas = [complex(delta0)]
    d = complex(delta0)
    for _ in range(nsteps):
        k1 = rhs(f, g, d)
        k2 = rhs(f + 0.5 * dt * k1[0], g + 0.5 * dt * k1[1], d)
        k3 = rhs(f + 0.5 * dt * k2[0], g + 0.5 * dt * k2[1], d)
        k4 = rhs(f + dt * k3[0], g + dt * k3[1], d)
        f = f + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        g = g + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        d = complex(np.sum(f))
        deltas.append(d)
    return np.array(deltas), f, g


def fg_initial(rng, n):
    f = (0.3 / n) * (rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n)))
    g = rng.uniform(-0.5, 0.5, (n, n)) + 1j * rng.uniform(-0.5, 0.5, (n, n))
    return f, g, complex(rng.normal(0, 0.5), rng.normal(0, 0.5))


@pytest.mark.parametrize("n", [1, 8, 33])
def test_fg_integrate_matches_numpy_rk4(backend, rng, n):
    # 20 RK4 steps. delta = sum(F) feeds back with a rotation rate ~N^2 (the
    # -i delta (2G - 1) term summed over N^2 elements), so dt = 0.5 / N^2 (at
    # most 0.01) keeps every step well inside RK4's stability region. Both
    # integrate in float64, in other orders (kernpack per real component,
    # delta by a fixed tree): ~1e-15 per step, compared at rtol 1e-10.
    f0, g0, delta0 = fg_initial(rng, n)
    fb, gb = f0.copy(), g0.copy()
    dt, nsteps = min(0.01, 0.5 / n**2), 20
    run = ode.fg_integrate(f0, g0, delta0, dt, nsteps, backend=backend)
    d_ref, f_ref, g_ref = fg_numpy(f0, g0, delta0, dt, nsteps)
    assert run.delta.shape == (nsteps + 1,) and run.delta.dtype == np.complex128
    assert run.f.shape == run.g.shape == (n, n)
    assert run.delta[0] == delta0
    for got, ref in ((run.delta, d_ref), (run.f, f_ref), (run.g, g_ref)):
        assert np.max(np.abs(got - ref)) <= 1e-10 * np.max(np.abs(ref))
    # delta[k] is the sum of F after step k: the last one is sum(final F).
    assert abs(run.delta[-1] - np.sum(run.f)) <= 1e-12 * np.sum(np.abs(run.f))
    np.testing.assert_array_equal(f0, fb)
    np.testing.assert_array_equal(g0, gb)


def test_fg_integrate_complex64(backend, rng):
    f0, g0, delta0 = fg_initial(rng, 8)
    f32, g32 = f0.astype(np.complex64), g0.astype(np.complex64)
    run = ode.fg_integrate(f32, g32, delta0, 0.01, 10, backend=backend)
    assert run.delta.dtype == run.f.dtype == run.g.dtype == np.complex64
    # float32 arithmetic over 10 steps: ~1e-6 relative; rtol 1e-4.
    d_ref, f_ref, g_ref = fg_numpy(f32, g32, complex(np.complex64(delta0)), 0.01, 10)
    for got, ref in ((run.delta, d_ref), (run.f, f_ref), (run.g, g_ref)):
        assert np.max(np.abs(got - ref)) <= 1e-4 * np.max(np.abs(ref))


def test_fg_integrate_is_deterministic(backend, rng):
    f0, g0, delta0 = fg_initial(rng, 40)
    a = ode.fg_integrate(f0, g0, delta0, 0.01, 15, backend=backend)
    b = ode.fg_integrate(f0, g0, delta0, 0.01, 15, backend=backend)
    for x, y in zip(a, b):
        assert x.tobytes() == y.tobytes()


def test_fg_integrate_zero_steps(backend, rng):
    f0, g0, delta0 = fg_initial(rng, 4)
    run = ode.fg_integrate(f0, g0, delta0, 0.01, 0, backend=backend)
    np.testing.assert_array_equal(run.delta, [delta0])
    np.testing.assert_array_equal(run.f, f0)
    np.testing.assert_array_equal(run.g, g0)


@pytest.mark.parametrize(
    "change, error, message",
    [
        (dict(shape=(4, 8)), ValueError, r"\(N, N\)"),
        (dict(g_shape=(6, 6)), ValueError, r"\(N, N\)"),
        (dict(nsteps=-1), ValueError, "nsteps"),
        (dict(nsteps=2.0), ValueError, "nsteps"),
        (dict(path="foo"), ValueError, "path"),
        (dict(dt=float("nan")), ValueError, "dt"),
        (dict(shape=(0, 0)), ValueError, "N is 0"),
    ],
)
def test_fg_integrate_invalid(backend, rng, change, error, message):
    shape = change.get("shape", (8, 8))
    f = rng.normal(size=shape) + 0j
    g = rng.normal(size=change.get("g_shape", shape)) + 0j
    with pytest.raises(error, match=message):
        ode.fg_integrate(f, g, 0.5, change.get("dt", 0.01), change.get("nsteps", 3),
                         path=change.get("path", "auto"), backend=backend)
