"""kernpack.ode.lorenz05 with F, b and c per member: a run with per-member
arrays equals running each member alone with its values as the scalars
(bitwise on one backend), on host arrays (every backend), CuPy device arrays
(skipped without a GPU), and kernpack.dask blocks that split the per-member
arrays with the members."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import BACKENDS, need_gpu_module
from kernpack import ode

SMALL = dict(k=4, j=2)


def states(rng, members, n=40):
    return rng.uniform(-2.0, 8.0, (members, n))


def per_member(rng, members, dtype):
    return (rng.uniform(8, 18, members).astype(dtype), rng.uniform(5, 12, members).astype(dtype),
            rng.uniform(1, 4, members).astype(dtype))


def one_by_one(x0, steps, model, every=0, backend=None, **values):
    """Each member run alone, its per-member values as scalars; final states stacked."""
    finals, trajs = [], []
    for m in range(x0.shape[0]):
        alone = {k: (v[m].item() if np.ndim(v) else v) for k, v in values.items()}
        run = ode.lorenz05(x0[m:m + 1], steps, model=model, every=every, backend=backend, **SMALL, **alone)
        finals.append(run.final)
        if every:
            trajs.append(run.trajectory)
    return np.concatenate(finals), (np.concatenate(trajs, axis=1) if every else None)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("model", [2, 3])
def test_per_member_equals_each_member_alone(rng, backend, dtype, model):
    x0 = states(rng, 5).astype(dtype)
    f, b, c = per_member(rng, 5, dtype)
    for given in (dict(forcing=f, b=b, c=c), dict(forcing=f), dict(b=b, c=2.5), dict(c=c, forcing=14.0)):
        got = ode.lorenz05(x0, 25, model=model, every=5, backend=backend, **SMALL, **given)
        assert got.final.dtype == dtype and got.final.shape == x0.shape
        final, traj = one_by_one(x0, 25, model, every=5, backend=backend, **given)
        np.testing.assert_array_equal(got.final, final)
        np.testing.assert_array_equal(got.trajectory, traj)


def test_per_member_values_change_the_run(rng):
    x0 = np.repeat(states(rng, 1), 2, axis=0)
    got = ode.lorenz05(x0, 50, forcing=np.array([12.0, 16.0]), backend="cpu", **SMALL).final
    assert not np.array_equal(got[0], got[1])
    same = ode.lorenz05(x0, 50, forcing=np.array([15.0, 15.0]), backend="cpu", **SMALL).final
    np.testing.assert_array_equal(same, ode.lorenz05(x0, 50, forcing=15.0, backend="cpu", **SMALL).final)


def test_bad_per_member_values_are_refused(rng):
    x0 = states(rng, 3)
    with pytest.raises(ValueError, match="forcing must be one value or 3 values"):
        ode.lorenz05(x0, 1, forcing=np.ones(2), backend="cpu", **SMALL)
    with pytest.raises(ValueError, match=r"b\[1\]"):
        ode.lorenz05(x0, 1, b=np.array([10.0, np.nan, 10.0]), backend="cpu", **SMALL)
    with pytest.raises(ValueError, match=r"c\[2\]"):
        ode.lorenz05(x0, 1, c=np.array([3.0, 3.0, np.inf]), backend="cpu", **SMALL)
    # One state (N,) is one member.
    one = ode.lorenz05(x0[0], 3, forcing=np.array([12.0]), backend="cpu", **SMALL).final
    np.testing.assert_array_equal(one, ode.lorenz05(x0[:1], 3, forcing=12.0, backend="cpu", **SMALL).final)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cupy_per_member_matches_host(rng, dtype):
    cp = need_gpu_module("cupy")
    x0 = states(rng, 7, n=960).astype(dtype)
    f, b, c = per_member(rng, 7, dtype)
    got = ode.lorenz05(cp.asarray(x0), 20, forcing=cp.asarray(f), b=cp.asarray(b), c=3.0, every=10)
    assert isinstance(got.final, cp.ndarray) and got.final.dtype == dtype
    want = ode.lorenz05(x0, 20, forcing=f, b=b, c=3.0, every=10, backend="gpu")
    np.testing.assert_array_equal(cp.asnumpy(got.final), want.final)
    np.testing.assert_array_equal(cp.asnumpy(got.trajectory), want.trajectory)
    with pytest.raises(TypeError, match="forcing"):
        ode.lorenz05(cp.asarray(x0), 1, forcing=f)
    with pytest.raises(TypeError, match="b"):
        ode.lorenz05(x0, 1, b=cp.asarray(b), backend="gpu")
    with pytest.raises(ValueError, match="c must be one value or 7"):
        ode.lorenz05(cp.asarray(x0), 1, c=cp.asarray(c[:3]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_dask_splits_per_member_values_with_the_members(rng, backend):
    da = pytest.importorskip("dask.array")
    from kernpack import dask as kd

    x0 = states(rng, 11)
    f, b, _ = per_member(rng, 11, np.float64)
    one = ode.lorenz05(x0, 30, forcing=f, b=b, every=10, backend=backend, **SMALL)
    run = kd.lorenz05(da.from_array(x0, chunks=(4, 40)), 30, forcing=da.from_array(f, chunks=3), b=b, every=10,
                      backend=backend, **SMALL)
    final, traj = da.compute(run.final, run.trajectory)
    np.testing.assert_array_equal(final, one.final)
    np.testing.assert_array_equal(traj, one.trajectory)
    only_final = kd.lorenz05(da.from_array(x0, chunks=(5, 40)), 30, forcing=f, backend=backend, **SMALL).final
    np.testing.assert_array_equal(only_final.compute(), ode.lorenz05(x0, 30, forcing=f, backend=backend, **SMALL).final)
    with pytest.raises(ValueError, match="forcing must be one value or 11 values"):
        kd.lorenz05(da.from_array(x0, chunks=(4, 40)), 30, forcing=f[:5], **SMALL)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_per_member_with_save_at_is_the_every_step_run(rng, backend, dtype):
    """Per-member F, b, c with states at chosen steps: the frames those of the
    per-member run with a frame every step, the final states the same; the
    same through kernpack.dask with the values split with the members."""
    x0 = states(rng, 6).astype(dtype)
    f, b, c = per_member(rng, 6, dtype)
    every_step = ode.lorenz05(x0, 12, forcing=f, b=b, c=c, every=1, backend=backend, **SMALL)
    for save_at in ([0, 3, 12], [2, 7]):
        got = ode.lorenz05(x0, 12, forcing=f, b=b, c=c, save_at=save_at, backend=backend, **SMALL)
        np.testing.assert_array_equal(got.trajectory, every_step.trajectory[save_at])
        np.testing.assert_array_equal(got.final, every_step.final)
    da = pytest.importorskip("dask.array")
    from kernpack import dask as kd

    run = kd.lorenz05(da.from_array(x0, chunks=(4, 40)), 12, forcing=da.from_array(f, chunks=2), b=b, c=c,
                      save_at=[2, 7], backend=backend, **SMALL)
    final, traj = da.compute(run.final, run.trajectory)
    np.testing.assert_array_equal(traj, every_step.trajectory[[2, 7]])
    np.testing.assert_array_equal(final, every_step.final)
