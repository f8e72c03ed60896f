"""ODE integration kept on the device: Lorenz 63, Lorenz 96 and Lorenz 2005
ensembles, whole RK4 runs in one call, the periodic window sum they use, and the coupled
F/G system with its per-step reduction."""
from __future__ import annotations

import itertools
from typing import Any, Callable, NamedTuple, Optional, Tuple

import numpy as np

from . import _native
from ._arrays import (
    as_result,
    copy,
    current_stream,
    device_array,
    empty,
    host_array,
    host_float_dtype,
    pointer,
    require_device_float,
)
from ._context import context, device_context, device_float_context

__all__ = [
    "lorenz63", "lorenz63_adaptive", "lorenz96", "lorenz96_tangent", "lorenz05", "dapper_step", "window_sum",
    "fg_integrate", "Ensemble", "FgRun", "Lorenz63Run", "Lorenz63AdaptiveRun",
]


class Ensemble(NamedTuple):
    """The result of an ensemble run."""

    final: Any
    """Member states after the last step, ``(members, N)``."""
    trajectory: Optional[Any]
    """With ``every > 0``: ``(frames, members, N)``, frame ``f`` after ``f * every``
    steps (frame 0 is the initial state); with `save_at`: ``(len(save_at), members, N)``,
    frame ``k`` after ``save_at[k]`` steps; else None."""


def _state_shape(shape) -> Tuple[int, int]:
    """(members, N) of initial states shaped `shape`: (members, N), or one state of N."""
    shape = tuple(shape)
    if len(shape) == 1:
        shape = (1, shape[0])
    if len(shape) != 2 or shape[0] == 0:
        raise ValueError(f"initial must be (members, N) states (or one state of N), got shape {shape}")
    return shape


_EACH = ("forcing", "b", "c")


def _run(initial, steps, every, save_at, backend, device, model_number, params, each=None):
    """`each`: per-member values by name (Lorenz 2005's forcing, b, c; arrays
    of one value per member, on the side of `initial`)."""
    steps, every = _counts(steps=steps, every=every)
    save = _save_steps(save_at, steps)
    if every and save:
        raise ValueError(f"give either every (= {every}) or save_at, not both")
    model = dict(params, model=model_number)
    each = each or {}
    src = device_array(initial)
    if src is None:
        dtype = host_float_dtype(initial)
        states = host_array(initial, dtype)
        members, n = _state_shape(states.shape)
        arrays = tuple(_host_each(name, each.get(name), members, dtype) for name in _EACH)
        ctx = context(backend, device)
        return Ensemble(*_native.ensemble(ctx, model, states.reshape(members, n), steps, every, save, arrays))
    require_device_float("initial", src)
    members, n = _state_shape(src.shape)
    views = {name: _device_each(name, v, members, src.dtype) for name, v in each.items() if v is not None}
    frames = len(save) if save else _native.frame_count(steps, every)
    ctx = device_context({"initial": src, **views}, backend, device)
    final = empty(src, (members, n), src.dtype)
    traj = empty(src, (frames, members, n), src.dtype) if frames else None
    _native.ensemble_device(
        ctx, src.dtype.name, model, src.ptr, (members, n), steps, every, save, pointer(final),
        None if traj is None else pointer(traj), current_stream(src),
        tuple(views[name].ptr if name in views else None for name in _EACH),
    )
    return Ensemble(as_result(src, final), None if traj is None else as_result(src, traj))


def _host_each(name: str, values: Any, members: int, dtype) -> Any:
    """A per-member parameter of a host run: None, or `members` values in `dtype`."""
    if values is None:
        return None
    if device_array(values) is not None:
        raise TypeError(f"{name} is a device array but initial is host data: pass both on one side")
    a = host_array(values, dtype)
    if a.shape != (members,):
        raise ValueError(f"{name} must be one value or {members} values (one per member), got shape {a.shape}")
    return a


def _device_each(name: str, values: Any, members: int, dtype) -> Any:
    """A per-member parameter of a device run: a device array of `members` values of `dtype`."""
    view = device_array(values)
    if view is None:
        raise TypeError(f"{name} is host data but initial is a device array: pass both on one side")
    require_device_float(name, view, dtype)
    if tuple(view.shape) != (members,):
        raise ValueError(f"{name} must be one value or {members} values (one per member), got shape "
                         f"{tuple(view.shape)}")
    return view


def _split_each(**values: Any) -> Tuple[dict, dict]:
    """(scalars, per-member arrays) of the named values: a Python or NumPy
    scalar (0-d) is one value for every member, anything else per member."""
    scalars = {k: float(v) for k, v in values.items() if device_array(v) is None and np.ndim(v) == 0}
    return scalars, {k: v for k, v in values.items() if k not in scalars}


def _counts(**counts: Any):
    """The counts as ints; anything but a non-negative integer is a ValueError."""
    for name, v in counts.items():
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    return tuple(int(v) for v in counts.values())


def lorenz96(
    initial: Any,
    steps: int,
    *,
    forcing: float = 8.0,
    dt: float = 0.05,
    every: int = 0,
    forcing_in_state: bool = False,
    noise: float = 0.0,
    seed: int = 0,
    member_offset: int = 0,
    step_offset: int = 0,
    save_at: Any = None,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Ensemble:
    """Integrates an ensemble of Lorenz 96 systems with RK4, the whole run in
    one call: ``dx_k/dt = (x_{k+1} - x_{k-2}) x_{k-1} - x_k + F`` (periodic).

    Parameters
    ----------
    initial : array_like or device array
        ``(members, N)`` initial states (N >= 4), float32 or float64; with
        `forcing_in_state`, ``(members, 2N)``.
    steps : int
        RK4 steps of `dt`.
    forcing, dt : float, optional
        F and the time step (defaults as NCAR DART: 8, 0.05).
    forcing_in_state : bool, optional
        Each member's state holds its forcing after X (``x_0..x_{N-1},
        F_0..F_{N-1}``; F_k forces site k and does not change), as DART's
        forced Lorenz 96 for parameter estimation: per-member or per-member
        and per-site forcing. `forcing` is then unused.
    noise : float, optional
        Standard deviation s of an additive noise (default 0: none): each
        step draws ``W = s sqrt(dt) N(0, 1)`` per member and site and adds it
        to every RK4 stage's increment (DAPPER's ``rk4(..., s=s)``).
    seed : int, optional
        The noise's seed, 0 to 2**64 - 1: draws are keyed by (seed, member,
        step, site), so a seed gives the same noise on every backend, thread
        count and GPU count.
    member_offset : int, optional
        The noise's member index of ``initial``'s first member (default 0):
        pieces of one ensemble run by separate calls draw the noise of the
        whole run when each passes the index of its first member.
    step_offset : int, optional
        The noise's step index of this call's first step (default 0, at most
        2**62): a run continued over several calls (one per forecast of a
        data-assimilation cycle) draws the noise of one whole run when each
        passes the steps run before it, so the states equal the one run's.
    every : int, optional
        Store the trajectory every `every` steps (0: final states only).
    save_at : sequence of int, optional
        Instead of `every`: the steps whose states are the trajectory's
        frames (observation times), sorted, unique, each in ``0..steps``
        inclusive (0: the initial states), as :func:`lorenz63`'s. The run is
        cut into segments at those steps; the noise is drawn for each step's
        index in the whole run, so ``final`` is bitwise that of the run
        without `save_at`.
    backend : {'auto', 'gpu', 'cpu'}, optional
        Where host arrays run.
    device : int or list of int, optional
        The GPU that host arrays run on (default: :func:`kernpack.get_device`),
        or a list of GPUs to split their work over (see :func:`kernpack.set_device`);
        device arrays run on their own.

    Returns
    -------
    Ensemble
        Final states and the optional trajectory (of `every` or `save_at`),
        in the input's dtype and library.
    """
    seed, member_offset, step_offset = _counts(seed=seed, member_offset=member_offset, step_offset=step_offset)
    params = dict(forcing=float(forcing), dt=float(dt), k=0, j=0, b=0.0, c=0.0,
                  forcing_in_state=bool(forcing_in_state), noise=float(noise), seed=seed,
                  member_offset=member_offset, step_offset=step_offset)
    return _run(initial, steps, every, save_at, backend, device, 96, params)


def lorenz96_tangent(
    initial: Any,
    perturbations: Any,
    steps: int,
    *,
    forcing: float = 8.0,
    dt: float = 0.05,
    noise: float = 0.0,
    seed: int = 0,
    step_offset: int = 0,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Tuple[Any, Any]:
    """Lorenz 96's tangent linear model: the derivative of an RK4 run applied
    to perturbations (what ExtKF and 4D-Var propagate).

    Integrates `initial` for `steps` RK4 steps as :func:`lorenz96` and
    propagates each perturbation by the exact derivative of those steps (the
    RK4 step of x joined with ``dv/dt = J(x) v``). Identity perturbations
    (``np.eye(N)`` per member) give each member's Jacobian of the run, row
    ``j`` the image of unit vector ``j``, i.e. the Jacobian transposed.

    Parameters
    ----------
    initial : array_like
        ``(members, N)`` states (or one state of N), float32 or float64.
    perturbations : array_like
        ``(members, K, N)`` vectors (or ``(K, N)`` for one state), the dtype of `initial`.
    steps : int
        RK4 steps of `dt`.
    forcing, dt, noise, seed, step_offset, backend, device
        As in :func:`lorenz96` (noise moves the states only: its derivative is 0).
        On a GPU, N must be a power of two (up to 32) times 2..10, 12 or 16.

    Returns
    -------
    (final, perturbations)
        ``(members, N)`` states and ``(members, K, N)`` propagated perturbations.
    """
    (steps, seed, step_offset) = _counts(steps=steps, seed=seed, step_offset=step_offset)
    dtype = host_float_dtype(initial, perturbations)
    states = host_array(initial, dtype)
    members, n = _state_shape(states.shape)
    vectors = host_array(perturbations, dtype)
    if vectors.ndim == 2 and states.ndim == 1:
        vectors = vectors[None]
    if vectors.ndim != 3 or vectors.shape[0] != members or vectors.shape[2] != n or vectors.shape[1] == 0:
        raise ValueError(
            f"perturbations must be (members, K, N) = ({members}, K >= 1, {n}), got shape {vectors.shape}"
        )
    params = dict(forcing=float(forcing), dt=float(dt), k=0, j=0, b=0.0, c=0.0,
                  forcing_in_state=False, noise=float(noise), seed=seed, member_offset=0,
                  step_offset=step_offset, model=96)
    final, moved = _native.lorenz96_tangent(
        context(backend, device), params, states.reshape(members, n), vectors, steps
    )
    return final, moved


def lorenz05(
    initial: Any,
    steps: int,
    *,
    model: int = 3,
    forcing: Any = 15.0,
    k: int = 32,
    j: int = 12,
    b: Any = 10.0,
    c: Any = 3.0,
    dt: float = 0.001,
    every: int = 0,
    save_at: Any = None,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Ensemble:
    """Integrates an ensemble of Lorenz (2005) Model II or III systems with RK4.

    Parameters
    ----------
    initial : array_like or device array
        ``(members, N)`` initial states, float32 or float64 (N > 2K, and
        N > 2J for Model III).
    model : {2, 3}, optional
        Model II (single scale) or Model III (large and small scales).
    forcing, k, j, b, c, dt : optional
        F, K (even), J (Model III smoothing half-width), b, c and the time step;
        defaults as NCAR DART (N = 960: 15, 32, 12, 10, 3, 0.001).
        `forcing`, `b` and `c` are one value for every member or one per
        member (``(members,)``, in the states' dtype, on the side of
        `initial`: device arrays for a device `initial`); member m then runs
        as it would alone with its values.
    steps, every, save_at, backend, device
        As in :func:`lorenz96`.

    Returns
    -------
    Ensemble
        Final states and the optional trajectory, as :func:`lorenz96`.
    """
    scalars, each = _split_each(forcing=forcing, b=b, c=c)
    # A per-member parameter's scalar is unused (0).
    shared = {name: scalars.get(name, 0.0) for name in _EACH}
    params = dict(shared, dt=float(dt), k=int(k), j=int(j), forcing_in_state=False, noise=0.0, seed=0,
                  member_offset=0, step_offset=0)
    return _run(initial, steps, every, save_at, backend, device, int(model), params, each)


def dapper_step(
    model: str = "lorenz96",
    *,
    backend: Optional[str] = None,
    device: Optional[int] = None,
    **params: Any,
) -> Callable[[Any, float, float], Any]:
    """A model step with the interface of DAPPER's models (and of most
    data-assimilation codes): ``step(E, t, dt)`` advances the states ``E`` by
    one RK4 step of ``dt`` and returns them.

    ``E`` is an ensemble ``(members, N)`` or one state ``(N,)``; the result has
    its shape, dtype and library. Given CuPy or PyTorch arrays, the step runs
    on their GPU and the states stay there between calls. The models are
    autonomous, so ``t`` is not used.

    Parameters
    ----------
    model : {'lorenz96', 'lorenz05', 'lorenz05_model2'}
        The model: :func:`lorenz96`, or :func:`lorenz05` Model III or II.
    backend, device
        As in :func:`lorenz96`, for host arrays.
    **params
        The model's parameters, as the keywords of :func:`lorenz96`
        (``forcing``) or :func:`lorenz05` (``forcing``, ``k``, ``j``, ``b``,
        ``c``; Model II has no ``j``); ``dt`` comes with each call. Values are
        checked at the first step, with the state's N. With Lorenz 96's
        ``noise``, call k (from 0) draws the noise of step ``step_offset + k``
        of one run under ``seed``: a fresh noise per step, reproducible from
        the seed, and k calls give bitwise the states of one k-step
        :func:`lorenz96` run with the same ``seed`` and ``step_offset``.

    Examples
    --------
    In a DAPPER hidden Markov model, ``Dyn = {"M": 40, "model":
    kernpack.ode.dapper_step(forcing=8.0), "noise": 0}``.
    """
    runs = {
        "lorenz96": (lorenz96, {}, {"forcing", "forcing_in_state", "noise", "seed", "member_offset",
                                    "step_offset"}),
        "lorenz05": (lorenz05, {"model": 3}, {"forcing", "k", "j", "b", "c"}),
        "lorenz05_model2": (lorenz05, {"model": 2}, {"forcing", "k", "b", "c"}),
    }
    if model not in runs:
        raise ValueError(f"model must be one of {sorted(runs)}, got {model!r}")
    run, fixed, known = runs[model]
    unknown = sorted(set(params) - known)
    if unknown:
        raise TypeError(f"dapper_step({model!r}) takes the parameters {sorted(known)}, not {unknown}")
    params = dict(params, **fixed)
    calls = itertools.count()

    def step(E: Any, t: float, dt: float) -> Any:
        call = dict(params)
        if call.get("noise"):
            # Call k is step k of one noisy run: the calls continue its noise.
            call["step_offset"] = call.get("step_offset", 0) + next(calls)
        final = run(E, 1, dt=dt, backend=backend, device=device, **call).final
        return final.reshape(E.shape)

    step.__name__ = step.__qualname__ = f"kernpack_{model}_step"
    return step


def window_sum(x: Any, w: Any, *, backend: Optional[str] = None, device: Optional[int] = None) -> Any:
    """Periodic weighted window sums of each row:
    ``out[r, i] = sum_m w[m] x[r, (i + J - m) mod N]`` with ``len(w) = 2J + 1``.

    Parameters
    ----------
    x : array_like or device array
        ``(rows, N)`` (or ``(N,)``) values, float32 or float64.
    w : array_like or device array
        An odd number of weights, on the same side as `x`.
    backend, device
        As in :func:`lorenz96` (one GPU).

    Returns
    -------
    ndarray or device array
        Shaped and typed as `x`.
    """
    dx, dw = device_array(x), device_array(w)
    if (dx is None) != (dw is None):
        raise TypeError("x and w must both be host arrays or both device arrays")
    if dx is None:
        dtype = host_float_dtype(x)
        dx, dw = host_array(x, dtype), host_array(w, dtype)
    if dx.ndim not in (1, 2) or dw.ndim != 1:
        raise ValueError("x must be (rows, N) or (N,), w 1-D")
    rows, n = (1, dx.shape[0]) if dx.ndim == 1 else dx.shape
    if isinstance(dx, np.ndarray):
        return _native.window_sum(context(backend, device), dx.reshape(rows, n), dw).reshape(dx.shape)
    ctx = device_float_context({"x": dx, "w": dw}, backend, device)
    out = empty(dx, dx.shape, dx.dtype)
    _native.window_sum_device(ctx, dx.dtype.name, dx.ptr, dw.ptr, dw.size, rows, n, pointer(out), current_stream(dx))
    return as_result(dx, out)


class FgRun(NamedTuple):
    """The result of :func:`fg_integrate`."""

    delta: Any
    """``delta[0..nsteps]``: the sum of F after every step (``delta[0]`` = delta0)."""
    f: Any
    """F after the last step, ``(N, N)``."""
    g: Any
    """G after the last step, ``(N, N)``."""


def fg_integrate(
    f: Any,
    g: Any,
    delta0: complex,
    dt: float,
    nsteps: int,
    *,
    path: str = "auto",
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> FgRun:
    """Integrates the coupled F/G system with RK4 for `nsteps` steps:
    ``dF/dt = -2i F - i delta (2G - 1)``, ``dG/dt = -i (conj(delta) F - delta conj(F))``,
    with ``delta = sum(F)`` recomputed after every step (in a fixed float64
    order: runs are bitwise reproducible).

    Parameters
    ----------
    f, g : array_like or device array
        ``(N, N)`` complex64 or complex128 initial states (host input of other
        dtypes is converted to complex128). Device inputs are not modified.
    delta0 : complex
        The initial coupling.
    dt : float
        Time step.
    nsteps : int
        Steps.
    path : {'auto', 'cooperative', 'launches'}, optional
        GPU only: one cooperative launch for the whole run, or a launch pair
        per step.
    backend, device
        As in :func:`lorenz96` (one GPU).

    Returns
    -------
    FgRun
        delta over time and the final F and G, in the input's dtype and library.
    """
    (nsteps,) = _counts(nsteps=nsteps)
    delta0 = complex(delta0)
    df, dg = device_array(f), device_array(g)
    if (df is None) != (dg is None):
        raise TypeError("f and g must both be host arrays or both device arrays")
    if df is None:
        fa, ga = np.asarray(f), np.asarray(g)
        dtype = np.dtype(np.complex64 if fa.dtype == np.complex64 and ga.dtype == np.complex64 else np.complex128)
        df, dg = host_array(fa, dtype), host_array(ga, dtype)
    if df.ndim != 2 or df.shape[0] != df.shape[1] or dg.shape != df.shape:
        raise ValueError(f"f and g must be (N, N) arrays, got {df.shape} and {dg.shape}")
    # Complex values cross as re and im interleaved in their float dtype.
    real = np.dtype(np.float32 if df.dtype == np.complex64 else np.float64)
    if isinstance(df, np.ndarray):
        got = _native.fg_integrate(context(backend, device), df.view(real), dg.view(real), delta0, float(dt), nsteps,
                                   path)
        f_out, g_out, delta = (a.view(df.dtype) for a in got)
        return FgRun(delta, f_out.reshape(df.shape), g_out.reshape(dg.shape))
    for name, a in (("f", df), ("g", dg)):
        if a.dtype not in (np.dtype(np.complex64), np.dtype(np.complex128)) or not a.is_c_contiguous():
            raise TypeError(f"{name} must be a contiguous complex64 or complex128 device array")
    if dg.dtype != df.dtype:
        raise ValueError("f and g must be (N, N) arrays of one complex dtype")
    ctx = device_context({"f": df, "g": dg}, backend, device)
    f_out, g_out = copy(df), copy(dg)
    delta = empty(df, (nsteps + 1,), df.dtype)
    _native.fg_integrate_device(
        ctx, real.name, df.shape[0], pointer(f_out), pointer(g_out), (delta0.real, delta0.imag), float(dt), nsteps,
        path, pointer(delta), current_stream(df),
    )
    return FgRun(as_result(df, delta), as_result(df, f_out), as_result(df, g_out))


class Lorenz63Run(NamedTuple):
    """The result of :func:`lorenz63`."""

    final: Any
    """Member states after the last step, ``(members, 3)`` (``(3,)`` for one state)."""
    saved: Optional[Any]
    """With `save_at`: ``(len(save_at), members, 3)`` (``(len(save_at), 3)`` for one
    state), entry ``k`` the states after ``save_at[k]`` steps; else None."""


def _save_steps(save_at: Any, steps: int) -> list:
    """`save_at` as a list of step indices (None: none); the native layer
    checks that they are sorted, unique and at most `steps`."""
    if save_at is None:
        return []
    values = np.asarray(save_at)
    if values.ndim != 1 or not (values.size == 0 or np.issubdtype(values.dtype, np.integer)):
        raise ValueError(f"save_at must be a 1-D sequence of step indices, got {save_at!r}")
    if values.size and values.min() < 0:
        raise ValueError(f"save_at holds a negative step {int(values.min())}: steps are 0..={steps}")
    return [int(v) for v in values]


def lorenz63(
    x0: Any,
    sigma: Any = 10.0,
    rho: Any = 28.0,
    beta: Any = 8.0 / 3.0,
    *,
    dt: float = 0.01,
    steps: int,
    save_at: Any = None,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Lorenz63Run:
    """Integrates an ensemble of Lorenz 63 systems with classical fixed-step
    RK4, the whole run in one call (one member per GPU thread):
    ``dx/dt = sigma (y - x)``, ``dy/dt = x (rho - z) - y``, ``dz/dt = x y - beta z``.

    Parameters
    ----------
    x0 : array_like or device array
        ``(members, 3)`` initial states (x, y, z), or one state ``(3,)``;
        float32 or float64.
    sigma, rho, beta : float or array_like, optional
        One value for every member, or one per member (``(members,)``, on the
        same side as `x0`: device arrays for a device `x0`). Defaults 10, 28, 8/3.
    dt : float, optional
        Time step (default 0.01).
    steps : int
        RK4 steps.
    save_at : sequence of int, optional
        Steps whose states are also returned: sorted, unique, each in
        ``0..steps`` inclusive (0: the initial states).
    backend, device
        As in :func:`lorenz96`: host arrays on a list of GPUs split their
        members (with their per-member parameters) over them, bitwise as on one.

    Returns
    -------
    Lorenz63Run
        Final states and the optional saved states, in the input's dtype and
        library.
    """
    (steps,) = _counts(steps=steps)
    save = _save_steps(save_at, steps)
    inputs = _Lorenz63Inputs(x0, sigma, rho, beta)
    p = inputs.params()
    if inputs.host is not None:
        final, saved = _native.lorenz63(
            context(backend, device), inputs.host, inputs.shared, *p, float(dt), steps, save,
        )
        return Lorenz63Run(inputs.shaped(final), None if saved is None else inputs.shaped(saved, len(save)))
    src = inputs.src
    ctx = device_context({"x0": src, **inputs.views}, backend, device)
    final = empty(src, src.shape, src.dtype)
    saved = empty(src, (len(save),) + tuple(src.shape), src.dtype) if save else None
    _native.lorenz63_device(
        ctx, src.dtype.name, src.ptr, inputs.members, inputs.shared, *p, float(dt), steps, save, pointer(final),
        None if saved is None else pointer(saved), current_stream(src),
    )
    return Lorenz63Run(as_result(src, final), None if saved is None else as_result(src, saved))


class _Lorenz63Inputs:
    """A Lorenz 63 call's states and sigma, rho, beta, checked: on the host
    (`host`: (members, 3) in one float dtype, per-member arrays in it) or on
    the device (`src` and `views`); `shared` the one-for-all values (0 where
    per member)."""

    NAMES = ("sigma", "rho", "beta")

    def __init__(self, x0: Any, sigma: Any, rho: Any, beta: Any):
        params = dict(zip(self.NAMES, (sigma, rho, beta)))
        shared = {k: v for k, v in params.items() if device_array(v) is None and np.ndim(v) == 0}
        arrays = {k: v for k, v in params.items() if k not in shared}
        self.shared = tuple(float(shared.get(k, 0.0)) for k in self.NAMES)
        self.src = device_array(x0)
        self.host = None
        self.one_state = False
        self.each = {}
        self.views = {}
        if self.src is None:
            for name, a in arrays.items():
                if device_array(a) is not None:
                    raise TypeError(f"{name} is a device array but x0 is host data: pass both on one side")
            dtype = host_float_dtype(x0)
            states = host_array(x0, dtype)
            if states.shape[-1:] != (3,) or states.ndim not in (1, 2):
                raise ValueError(f"x0 must be (members, 3) states (or one state of 3), got shape {states.shape}")
            self.one_state = states.ndim == 1
            self.members = states.size // 3
            self.host = states.reshape(self.members, 3)
            for name, a in arrays.items():
                self.each[name] = host_array(a, dtype)
                if self.each[name].shape != (self.members,):
                    raise ValueError(f"{name} must be one value or {self.members} values (one per member), got "
                                     f"shape {self.each[name].shape}")
            return
        src = self.src
        require_device_float("x0", src)
        if src.ndim not in (1, 2) or src.shape[-1] != 3:
            raise ValueError(f"x0 must be (members, 3) states (or one state of 3), got shape {tuple(src.shape)}")
        self.members = src.size // 3
        for name, a in arrays.items():
            view = device_array(a)
            if view is None:
                raise TypeError(f"{name} is host data but x0 is a device array: pass both on one side")
            require_device_float(name, view, src.dtype)
            if tuple(view.shape) != (self.members,):
                raise ValueError(f"{name} must be one value or {self.members} values (one per member), got shape "
                                 f"{tuple(view.shape)}")
            self.views[name] = view

    def params(self) -> tuple:
        """The per-member sigma, rho, beta for the native call: host arrays,
        device addresses, or None for the shared value."""
        if self.host is not None:
            return tuple(self.each.get(k) for k in self.NAMES)
        return tuple(self.views[k].ptr if k in self.views else None for k in self.NAMES)

    def shaped(self, states: Any, frames: Optional[int] = None) -> Any:
        """Host states (members, 3) (or frames of them) back to one state's
        shape where `x0` was one state."""
        if not self.one_state:
            return states
        return states.reshape(3) if frames is None else states.reshape(frames, 3)


class Lorenz63AdaptiveRun(NamedTuple):
    """The result of :func:`lorenz63_adaptive`."""

    final: Any
    """Member states at ``t_span[1]``, ``(members, 3)`` (``(3,)`` for one
    state); a member that stopped early: its last state."""
    saved: Optional[Any]
    """With `t_eval`: ``(len(t_eval), members, 3)`` (``(len(t_eval), 3)`` for
    one state), entry ``k`` the states at ``t_eval[k]`` (NaN for a member that
    stopped before it); else None."""
    accepted: Any
    """Accepted steps per member (int32)."""
    rejected: Any
    """Rejected step attempts per member (int32)."""
    status: Any
    """Per member: 0 reached ``t_span[1]``, 1 stopped after `max_steps`
    attempts, 2 stopped where the step size fell below the spacing of the
    numbers at t (SciPy's "required step size is less than spacing between
    numbers"; a state that overflows ends so too)."""

    @property
    def success(self) -> Any:
        """Per member: whether it reached ``t_span[1]`` (``status == 0``)."""
        return self.status == 0


def _adaptive_args(t_span: Any, t_eval: Any, rtol: Any, atol: Any, first_step: Any, max_step: Any,
                   max_steps: Any) -> Tuple[Tuple[float, float], list, tuple]:
    """:func:`lorenz63_adaptive`'s time span, save times and step control as
    the native calls take them (``(t0, t_end)``, a list of times, ``(rtol,
    atol, first_step, max_step, max_steps)``), after the checks of their
    types; the run (or ``check_lorenz63_adaptive``) checks the values."""
    t0, t_end = (float(v) for v in t_span)
    times = [] if t_eval is None else np.asarray(t_eval, dtype=np.float64)
    if np.ndim(times) != 1:
        raise ValueError(f"t_eval must be a 1-D sequence of times, got {t_eval!r}")
    times = [float(v) for v in times]
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or not (
            1 <= max_steps <= 2**31 - 1):
        raise ValueError(f"max_steps must be an integer in 1..2**31-1, got {max_steps!r}")
    if first_step is not None:
        first_step = float(first_step)
        if not first_step > 0:
            raise ValueError(f"first_step must be > 0 (None: chosen per member), got {first_step}")
    return (t0, t_end), times, (float(rtol), float(atol), first_step, float(max_step), int(max_steps))


def lorenz63_adaptive(
    x0: Any,
    sigma: Any = 10.0,
    rho: Any = 28.0,
    beta: Any = 8.0 / 3.0,
    *,
    t_span: Tuple[float, float] = (0.0, 1.0),
    t_eval: Any = None,
    rtol: float = 1e-3,
    atol: float = 1e-6,
    first_step: Optional[float] = None,
    max_step: float = np.inf,
    max_steps: int = 100_000,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Lorenz63AdaptiveRun:
    """Integrates an ensemble of Lorenz 63 systems with adaptive steps, each
    member as ``scipy.integrate.solve_ivp(method='RK45')`` would: the
    Dormand-Prince 5(4) pair, SciPy's step-size control per member (so each
    member takes its own steps), states at `t_eval` from the fourth-order
    dense output; the whole run in one call (one member per GPU thread).

    Parameters
    ----------
    x0 : array_like or device array
        ``(members, 3)`` initial states (x, y, z) at ``t_span[0]``, or one
        state ``(3,)``; float32 or float64.
    sigma, rho, beta : float or array_like, optional
        One value for every member, or one per member (on the same side as
        `x0`). Defaults 10, 28, 8/3.
    t_span : (float, float), optional
        ``(t0, t_end)``, ``t_end >= t0`` (default ``(0, 1)``).
    t_eval : sequence of float, optional
        Times whose states are also returned: sorted, unique, within `t_span`.
    rtol, atol : float, optional
        SciPy's tolerances (defaults 1e-3 and 1e-6; rtol below 100 float64
        epsilons runs as that, as SciPy's does). float32 states cannot follow
        tolerances much below 1e-6: their steps then shrink without gaining
        accuracy.
    first_step : float, optional
        The first step (default: chosen per member, as SciPy chooses it).
    max_step : float, optional
        The largest step (default: none).
    max_steps : int, optional
        Steps attempted per member before it stops with status 1 (default
        100,000; at most 2**31 - 1).
    backend, device
        As in :func:`lorenz96`: host arrays on a list of GPUs split their
        members (with their per-member parameters) over them, bitwise as on
        one (the steps and statuses too).

    Returns
    -------
    Lorenz63AdaptiveRun
        States at ``t_end`` and at `t_eval`, accepted and rejected steps and
        status per member, in the input's library.
    """
    (t0, t_end), times, control = _adaptive_args(t_span, t_eval, rtol, atol, first_step, max_step, max_steps)
    inputs = _Lorenz63Inputs(x0, sigma, rho, beta)
    p = inputs.params()
    if inputs.host is not None:
        final, saved, stats = _native.lorenz63_adaptive(
            context(backend, device), inputs.host, inputs.shared, *p, (t0, t_end), control, times,
        )
        saved = None if saved is None else inputs.shaped(saved, len(times))
        stats = stats.reshape(3) if inputs.one_state else stats
        return Lorenz63AdaptiveRun(inputs.shaped(final), saved, stats[..., 0], stats[..., 1], stats[..., 2])
    src = inputs.src
    ctx = device_context({"x0": src, **inputs.views}, backend, device)
    final = empty(src, src.shape, src.dtype)
    saved = empty(src, (len(times),) + tuple(src.shape), src.dtype) if times else None
    stats = empty(src, tuple(src.shape), np.int32)
    _native.lorenz63_adaptive_device(
        ctx, src.dtype.name, src.ptr, inputs.members, inputs.shared, *p, (t0, t_end), control, times,
        pointer(final), None if saved is None else pointer(saved), pointer(stats), current_stream(src),
    )
    final = as_result(src, final)
    saved = None if saved is None else as_result(src, saved)
    stats = as_result(src, stats)
    return Lorenz63AdaptiveRun(final, saved, stats[..., 0], stats[..., 1], stats[..., 2])
