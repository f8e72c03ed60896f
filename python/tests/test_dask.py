"""kernpack.dask on a local cluster of two worker processes (CPU workers here;
'gpu' too where the suite runs with one): every result equals the
single-process call on the same data and backend.

Exactness: on the CPU backend each series and each member is computed
independently of the others in its batch, and the rows of a partition are
put in (id, t, y) order before the call, so a partitioned run gives the
single call's numbers bitwise (compared exactly). On the GPU the powers are
compared to 1e-12 relative (a batch's launch shape may depend on its
series). The box filter is compared with ``scipy.ndimage.uniform_filter``
of the whole array to 1e-12 (float64; the sums run in another order), the
Gaussian filters with ``scipy.ndimage.gaussian_filter`` (``gaussian_filter1d``)
of the whole array to test_gaussian.py's per-pass bounds (1e-12 of each
pass's magnitude for float64, (taps + 2) eps32 for float32).
"""
from __future__ import annotations

import logging
import math

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")
da = pytest.importorskip("dask.array")

import dask  # noqa: E402
import pandas as pd  # noqa: E402
import scipy.ndimage  # noqa: E402

import kernpack  # noqa: E402
import kernpack.dask as kd  # noqa: E402
from kernpack.signal import lombscargle_batch  # noqa: E402
from conftest import REQUIRE_GPU, ref_peaks  # noqa: E402

TWO_PI = 2 * math.pi


@pytest.fixture(scope="module", autouse=True)
def client():
    """One cluster for the module: 2 worker processes, 1 thread each."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.ERROR
    ) as cluster, distributed.Client(cluster) as c:
        yield c


# --------------------------------------------------------------------------
# Survey tables
# --------------------------------------------------------------------------


def survey(rng, nseries=40, ids="str", weighted=False):
    """Rows (id, t, y[, w]) of ragged series (50-200 samples), shuffled, so
    that every series is spread over the input partitions."""
    frames = []
    for s in range(nseries):
        n = int(rng.integers(50, 201))
        t = np.sort(rng.uniform(0, rng.uniform(30, 300), n)) + 58000.0
        y = np.sin(t * rng.uniform(0.2, 5)) + rng.normal(0, 0.5, n)
        f = {"id": f"obj-{s * 7919 % 1000:04d}" if ids == "str" else int(s * 7919 % 1000) - 300, "t": t, "y": y}
        if weighted:
            f["w"] = rng.uniform(0.2, 2, n)
        frames.append(pd.DataFrame(f))
    rows = pd.concat(frames, ignore_index=True)
    return rows.iloc[rng.permutation(len(rows))].reset_index(drop=True)


def reference(rows, nf, fmin=None, fmax=None, oversample=None, full=False, weighted=False, **opts):
    """lombscargle_batch on the concatenated series in (id, t) order."""
    rows = rows.sort_values(["id", "t"], kind="mergesort")
    ids, counts = np.unique(rows["id"].to_numpy(), return_counts=True)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    t = rows["t"].to_numpy()
    if oversample is None:
        f0, df = fmin, (fmax - fmin) / (nf - 1)
    else:
        span = np.array([np.ptp(t[a:b]) for a, b in zip(offsets[:-1], offsets[1:])])
        df = TWO_PI / (oversample * span)
        f0 = df.copy()
    out = lombscargle_batch(
        t, rows["y"].to_numpy(), f0, df, nf, offsets=offsets,
        weights=rows["w"].to_numpy() if weighted else None, best=not full, **opts,
    )
    return ids, counts, f0, df, out


def assert_power(got, expected, backend):
    if backend == "cpu":
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def check_peaks(res, rows, backend, nf, **grid):
    weighted = "w" in rows.columns
    ids, counts, _, _, best = reference(rows, nf, weighted=weighted, backend=backend, **grid)
    np.testing.assert_array_equal(res.index.to_numpy(), ids)  # sorted by id
    assert res.index.name == "id"
    np.testing.assert_array_equal(res["n"].to_numpy(), counts)
    np.testing.assert_array_equal(res["frequency"].to_numpy(), best.frequency)
    np.testing.assert_array_equal(res["period"].to_numpy(), TWO_PI / best.frequency)
    assert_power(res["power"].to_numpy(), best.power, backend)


@pytest.mark.parametrize("ids", ["str", "int"])
@pytest.mark.parametrize("grid", ["shared", "per-series"])
def test_peaks_of_a_dataframe_equal_one_batch(backend, rng, ids, grid):
    rows = survey(rng, ids=ids, weighted=grid == "shared")
    ddf = dd.from_pandas(rows, npartitions=4, sort=False)
    args = dict(fmin=0.05, fmax=6.0) if grid == "shared" else dict(oversample=4.0)
    res = kd.lombscargle_peaks(
        ddf, 700, **args, w_col="w" if "w" in rows else None, floating_mean=True, backend=backend
    )
    assert list(res.columns) == ["n", "frequency", "period", "power"]
    assert res["n"].dtype == np.int64 and res["power"].dtype == np.float64
    check_peaks(res.compute(), rows, backend, 700, **args, floating_mean=True)


def test_partitions_on_several_threads_of_one_process_equal_one_batch(backend, rng):
    """As on a worker with several threads: partitions run side by side
    (their kernpack calls one at a time), with the same results."""
    rows = survey(rng, nseries=60, weighted=True)
    # Indexed by id with known divisions: no shuffle (which needs the cluster).
    ddf = dd.from_pandas(rows.set_index("id"), npartitions=8, sort=True)
    assert ddf.known_divisions and ddf.npartitions > 4
    res = kd.lombscargle_peaks(ddf, 600, 0.05, 6.0, w_col="w", normalize=True, backend=backend)
    check_peaks(res.compute(scheduler="threads", num_workers=4), rows, backend, 600, fmin=0.05, fmax=6.0,
                normalize=True)


def test_parquet_is_read_one_block_per_column_unless_the_caller_says_otherwise(monkeypatch, tmp_path, rng):
    rows = survey(rng, nseries=5)
    rows.to_parquet(tmp_path / "part-0.parquet", index=False)
    seen = []
    read = dd.read_parquet

    def spy(path, **kwargs):
        seen.append(kwargs)
        return read(path, **kwargs)

    monkeypatch.setattr(dd, "read_parquet", spy)
    kd.lombscargle_peaks(str(tmp_path), 50, 0.1, 4.0)
    kd.lombscargle_peaks(str(tmp_path), 50, 0.1, 4.0, read_parquet_kwargs={"arrow_to_pandas": {}, "columns": None})
    assert seen[0] == {"arrow_to_pandas": {"split_blocks": True}}
    assert seen[1] == {"arrow_to_pandas": {}, "columns": None}


@pytest.mark.parametrize("ids", ["str", "int"])
def test_peaks_of_a_parquet_dataset_equal_one_batch(backend, rng, tmp_path, ids):
    rows = survey(rng, ids=ids)
    path = tmp_path / "survey"
    path.mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(rows)), 5)):  # every series in several files
        rows.iloc[part].to_parquet(path / f"part-{i}.parquet", index=False)
    res = kd.lombscargle_peaks(str(path), 500, 0.1, 4.0, normalize=True, backend=backend)
    check_peaks(res.compute(), rows, backend, 500, fmin=0.1, fmax=4.0, normalize=True)


def write_sorted_survey(path, rows, cuts, row_group_size, sort=True):
    """`rows` sorted by (id, t), written as one file per slice between `cuts`
    (row numbers, so series straddle files), in row groups of
    `row_group_size` rows (so series straddle row groups)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir()
    if sort:
        rows = rows.sort_values(["id", "t"], kind="mergesort", ignore_index=True)
    for k, (a, b) in enumerate(zip([0, *cuts], [*cuts, len(rows)])):
        pq.write_table(pa.Table.from_pandas(rows.iloc[a:b], preserve_index=False), path / f"part-{k}.parquet",
                       row_group_size=row_group_size)
    return rows


def test_a_local_dataset_is_read_straight_from_its_row_groups(backend, rng, tmp_path, monkeypatch):
    """Integer ids with footer statistics: one task per group of row groups,
    no Dask DataFrame reader, every series whole though files and row groups
    cut through series, and the results of one batch."""
    rows = survey(rng, nseries=60, ids="int", weighted=True)
    rows = write_sorted_survey(tmp_path / "survey", rows, cuts=[len(rows) // 3, len(rows) // 2], row_group_size=250)
    # A fourth file, rows in no order, adds samples to two series of the
    # middle, reaching into two files' ranges (their row groups between join
    # one task).
    extra = survey(rng, nseries=2, ids="int", weighted=True)
    middle = rows["id"].iloc[[len(rows) // 3 - 400, len(rows) // 3 + 400]].to_numpy()
    extra["id"] = middle[extra["id"].rank(method="dense").astype(int) - 1]
    extra.to_parquet(tmp_path / "survey" / "part-9.parquet", index=False)
    rows = pd.concat([rows, extra], ignore_index=True)

    def no_dask_reader(*args, **kwargs):
        raise AssertionError("read with dd.read_parquet")

    monkeypatch.setattr(dd, "read_parquet", no_dask_reader)
    monkeypatch.setattr(kd._parquet_tasks, "TARGET_ROWS", 1000)
    plan = kd._parquet_plan(str(tmp_path / "survey"), "id", ["t", "y", "w"])
    assert len(plan.tasks) > 3 and plan.id_dtype == np.int64
    kw = dict(w_col="w", floating_mean=True, backend=backend)
    res = kd.lombscargle_peaks(str(tmp_path / "survey"), 400, 0.1, 4.0, **kw)
    assert res.npartitions == len(plan.tasks) and res.divisions == plan.divisions
    check_peaks(res.compute(), rows, backend, 400, fmin=0.1, fmax=4.0, floating_mean=True)
    pg = kd.lombscargle_periodograms(str(tmp_path / "survey"), 60, oversample=2.0, **kw).compute()
    ids, counts, f0, df, full = reference(rows, 60, oversample=2.0, full=True, weighted=True, floating_mean=True,
                                          backend=backend)
    np.testing.assert_array_equal(pg.index.to_numpy(), ids)
    np.testing.assert_array_equal(pg["n"].to_numpy(), counts)
    np.testing.assert_array_equal(pg["df"].to_numpy(), df)
    assert_power(np.stack(pg["periodogram"].to_numpy()), full, backend)


def check_pieces(task, whole):
    """The task's pieces hold its rows (`whole`), each id in one piece only;
    returns the pieces."""
    got = list(kd._parquet_tasks.pieces(task, ["id", "t", "y"], "id"))
    assert all(p["id"].size for p in got)
    ids = [np.unique(p["id"]) for p in got]
    assert np.unique(np.concatenate(ids)).size == sum(i.size for i in ids)  # no id in two pieces
    # In id order, but for the last piece: the series that cross row groups.
    assert all(a[-1] < b[0] for a, b in zip(ids[:-1], ids[1:-1]))
    key = lambda c: np.lexsort((c["t"], c["id"]))  # noqa: E731
    joined = {c: np.concatenate([p[c] for p in got]) for c in ("id", "t", "y")}
    for c in ("id", "t", "y"):
        np.testing.assert_array_equal(joined[c][key(joined)], whole[c][key(whole)])
    return got


def test_pieces_split_series_that_cross_row_groups(rng, tmp_path):
    """Series crossing row-group boundaries (also where one fills whole row
    groups, or ends the task) come last, as one piece; the other pieces
    are views of one row group each."""
    lengths = [30, 95, 40, 260, 10, 5, 120, 70]  # row groups of 100: series 1, 3 and 6 cross
    rows = pd.DataFrame({
        "id": np.repeat(np.arange(len(lengths)) * 3, lengths),
        "t": np.concatenate([np.sort(rng.uniform(0, 50, n)) for n in lengths]),
        "y": rng.normal(size=sum(lengths)),
    })
    write_sorted_survey(tmp_path / "s", rows, cuts=[], row_group_size=100)
    files = kd._parquet_tasks.local_files(str(tmp_path / "s"))
    (task,) = kd._parquet_tasks.plan(files, "id", ["t", "y"], target_rows=10**6).tasks
    got = check_pieces(task, kd._parquet_tasks.read(task, ["id", "t", "y"], "id"))
    assert [np.unique(p["id"]).tolist() for p in got] == [[0], [6], [12, 15], [3, 9, 18, 21]]
    # Unordered rows within each row group: the same pieces, cut by masks.
    shuffled = pd.concat([rows.iloc[a:a + 100].sample(frac=1.0, random_state=a) for a in range(0, len(rows), 100)])
    write_sorted_survey(tmp_path / "u", shuffled, cuts=[], row_group_size=100, sort=False)
    files = kd._parquet_tasks.local_files(str(tmp_path / "u"))
    (task,) = kd._parquet_tasks.plan(files, "id", ["t", "y"], target_rows=10**6).tasks
    got = check_pieces(task, kd._parquet_tasks.read(task, ["id", "t", "y"], "id"))
    assert [np.unique(p["id"]).tolist() for p in got] == [[0], [6], [12, 15], [3, 9, 18, 21]]


def test_the_row_group_plan(rng, tmp_path, monkeypatch):
    """Tasks cover the ids in order, each row in exactly one task's output,
    ranges near the target, cut between files of whole series where it can;
    the plan gives way (None) where the footers cannot vouch for it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    plan, read = kd._parquet_tasks.plan, kd._parquet_tasks.read
    rows = survey(rng, nseries=50, ids="int")
    sorted_rows = write_sorted_survey(tmp_path / "sorted", rows, cuts=[1234, 4000], row_group_size=300)
    files = kd._parquet_tasks.local_files(str(tmp_path / "sorted"))
    assert len(files) == 3
    for target in (700, 2500, 10**9):
        p = plan(files, "id", ["t", "y"], target_rows=target)
        assert p.id_dtype == np.int64 and len(p.divisions) == len(p.tasks) + 1
        got = [read(task, ["id", "t", "y"], "id") for task in p.tasks]
        np.testing.assert_array_equal(np.concatenate([g["id"] for g in got]), sorted_rows["id"].to_numpy())
        np.testing.assert_array_equal(np.concatenate([g["t"] for g in got]), sorted_rows["t"].to_numpy())
        for task, g, lo, hi in zip(p.tasks, got, p.divisions, p.divisions[1:]):
            assert task.lo == lo and g["id"].min() >= lo
            assert g["id"].max() < hi or (task.end is None and g["id"].max() == hi)
            assert len(g["id"]) <= 2 * target + 300  # two targets, plus the row group that crossed it
        assert len(rows) / (2 * target + 300) <= len(p.tasks) <= len(rows) / target + 1
        # Pieces: the task's rows, every series whole in one piece.
        for task, g in zip(p.tasks, got):
            assert len(check_pieces(task, g)) >= len(task.row_groups) // 2  # about a row group each
    # Rows in no order within each row group (ranges still in id order):
    # pieces cut by a mask.
    blocks = [sorted_rows.iloc[a:a + 300].sample(frac=1.0, random_state=a) for a in range(0, len(rows), 300)]
    write_sorted_survey(tmp_path / "blocks", pd.concat(blocks), cuts=[], row_group_size=300, sort=False)
    p = plan(kd._parquet_tasks.local_files(str(tmp_path / "blocks")), "id", ["t", "y"], target_rows=2000)
    for task in p.tasks:
        assert len(check_pieces(task, kd._parquet_tasks.read(task, ["id", "t", "y"], "id"))) > 1
    # Files of whole series: the cuts fall between files, every row group
    # read once.
    ids = sorted_rows["id"].to_numpy()
    first_rows = np.flatnonzero(np.diff(ids)) + 1
    cuts = [int(first_rows[np.searchsorted(first_rows, c)]) for c in (2500, 5000)]
    write_sorted_survey(tmp_path / "whole", rows, cuts=cuts, row_group_size=300)
    p = plan(kd._parquet_tasks.local_files(str(tmp_path / "whole")), "id", ["t", "y"], target_rows=1500)
    assert len(p.tasks) == 3
    assert all(len({g.path for g in task.row_groups}) == 1 for task in p.tasks)
    assert sum(len(task.row_groups) for task in p.tasks) == len({g for task in p.tasks for g in task.row_groups})
    # Row groups larger than the target, a series crossing every row-group
    # boundary: ranges of at least two row groups, so no row group is read
    # more than twice and the rows once and a half at most (a target below
    # the row groups would read every row twice and give way to Dask).
    p = plan(kd._parquet_tasks.local_files(str(tmp_path / "sorted")), "id", ["t", "y"], target_rows=100)
    assert p is not None and len(p.tasks) > 2
    reads = [g for task in p.tasks for g in task.row_groups]
    assert sum(g.rows for g in reads) <= 1.5 * len(rows)
    got = [read(task, ["id", "t", "y"], "id") for task in p.tasks]
    np.testing.assert_array_equal(np.concatenate([g["id"] for g in got]), sorted_rows["id"].to_numpy())
    for task, g in zip(p.tasks, got):
        check_pieces(task, g)
    # Every file spans every id: each task would read everything, so Dask
    # shuffles instead (unless one task holds it all).
    shuffled = tmp_path / "shuffled"
    shuffled.mkdir()
    for k, part in enumerate(np.array_split(np.arange(len(rows)), 4)):
        rows.iloc[part].to_parquet(shuffled / f"part-{k}.parquet", index=False)
    files = kd._parquet_tasks.local_files(str(shuffled))
    assert plan(files, "id", ["t", "y"], target_rows=len(rows) // 4) is None
    assert len(plan(files, "id", ["t", "y"], target_rows=len(rows)).tasks) == 1

    # What the footers cannot vouch for.
    def one_file(name, table, **kw):
        pq.write_table(table, tmp_path / name, **kw)
        return plan([str(tmp_path / name)], "id", ["t", "y"])

    table = pa.Table.from_pandas(sorted_rows, preserve_index=False)
    assert one_file("ok.parquet", table) is not None
    assert one_file("nostats.parquet", table, write_statistics=False) is None
    assert one_file("str.parquet", table.set_column(0, "id", pa.array(sorted_rows["id"].astype(str)))) is None
    null_ids = pa.array(sorted_rows["id"].to_numpy(), mask=np.arange(len(sorted_rows)) == 5)
    assert one_file("null.parquet", table.set_column(0, "id", null_ids)) is None
    assert plan([str(tmp_path / "ok.parquet")], "id", ["t", "y", "w"]) is None  # no such column
    t32 = table.set_column(1, "t", table.column("t").cast(pa.float32()))
    pq.write_table(t32, tmp_path / "t32.parquet")
    assert plan([str(tmp_path / "ok.parquet"), str(tmp_path / "t32.parquet")], "id", ["t", "y"]) is None
    # Paths: absolute in the tasks (workers may run in another directory),
    # every file once however the list names it.
    monkeypatch.chdir(tmp_path)
    files = kd._parquet_tasks.local_files(["sorted", "sorted/part-1.parquet", str(tmp_path / "sorted")])
    assert files == [str(tmp_path / "sorted" / f"part-{k}.parquet") for k in range(3)]
    assert kd._parquet_tasks.local_files("s3://bucket/survey") is None
    assert kd._parquet_tasks.local_files(str(tmp_path / "no-such-dir")) is None


@pytest.mark.parametrize("layout", ["touching", "every file every id"])
def test_dasks_reader_keeps_every_series_whole(backend, rng, tmp_path, layout):
    """Through Dask's reader and set_index: files whose id ranges touch (a
    series cut by a file boundary), or that each hold part of every series.
    Left to itself, Dask 2026.8 judged such files already sorted and put one
    id in two partitions; kernpack gives set_index its divisions."""
    rows = survey(rng, nseries=30, ids="int")
    path = tmp_path / layout.replace(" ", "-")
    if layout == "touching":
        ids = rows.sort_values(["id", "t"], kind="mergesort")["id"].to_numpy()
        cut = int(np.searchsorted(ids, ids[len(ids) // 2])) + 3  # 3 samples into a series (>= 50 each)
        write_sorted_survey(path, rows, cuts=[cut], row_group_size=10**6)
    else:
        path.mkdir()
        for k, part in enumerate(np.array_split(np.arange(len(rows)), 2)):
            rows.iloc[part].sort_values("id", kind="mergesort").to_parquet(path / f"part-{k}.parquet", index=False)
    res = kd.lombscargle_peaks(str(path), 200, 0.1, 4.0, backend=backend, read_parquet_kwargs={})
    check_peaks(res.compute(), rows, backend, 200, fmin=0.1, fmax=4.0)
    if layout == "touching":
        # Divisions from the files' statistics claim the boundary id for
        # one partition while both hold it: a clear error, not a split series.
        kw = dict(index="id", calculate_divisions=True)
        assert dd.read_parquet(str(path), **kw).known_divisions
        res = kd.lombscargle_peaks(str(path), 200, 0.1, 4.0, backend=backend, read_parquet_kwargs=kw)
        with pytest.raises(ValueError, match="outside its divisions"):
            res.compute()


@pytest.mark.parametrize("kind", ["int", "str"])
def test_shuffle_divisions_span_every_id(rng, kind):
    """Sampled divisions still start at the lowest id and end at the highest
    (partitions larger than the sample), strictly increasing."""
    ids = rng.permutation(np.repeat(np.arange(40_000), 5))
    ids[rng.integers(ids.size)] = -7  # one outlier below, one above, likely missed by a stride
    ids[rng.integers(ids.size)] = 10**6
    col = pd.Series(ids if kind == "int" else np.array([f"s{i:08d}" for i in ids], dtype=object), name="id")
    divisions = kd._id_divisions(dd.from_pandas(col, npartitions=2, sort=False), 5)
    assert divisions[0] == col.min() and divisions[-1] == col.max()
    assert all(a < b for a, b in zip(divisions, divisions[1:])) and len(divisions) == 6


def test_a_dataset_sorted_by_id_is_read_without_a_shuffle(backend, rng, tmp_path):
    rows = survey(rng, ids="int")
    path = str(tmp_path / "sorted")
    dd.from_pandas(rows, npartitions=3, sort=False).set_index("id").to_parquet(path)
    ddf = dd.read_parquet(path, index="id", calculate_divisions=True)
    assert ddf.known_divisions
    res = kd.lombscargle_peaks(
        path, 300, 0.1, 4.0, backend=backend, read_parquet_kwargs=dict(index="id", calculate_divisions=True)
    )
    assert res.divisions == ddf.divisions  # the input's partitions, not a shuffle's
    check_peaks(res.compute(), rows, backend, 300, fmin=0.1, fmax=4.0)
    # Without options kernpack's reader takes it (Dask wrote the id index as
    # a column with statistics).
    assert kd._parquet_plan(path, "id", ["t", "y"]) is not None
    check_peaks(kd.lombscargle_peaks(path, 300, 0.1, 4.0, backend=backend).compute(), rows, backend, 300,
                fmin=0.1, fmax=4.0)
    # An empty partition (all of its series filtered out) gives no rows.
    middle = ddf.partitions[1].index.unique().compute()
    filtered = ddf.map_partitions(lambda p: p[~p.index.isin(middle)])
    res = kd.lombscargle_peaks(filtered, 300, 0.1, 4.0, backend=backend)
    assert res.divisions == ddf.divisions
    check_peaks(res.compute(), rows[~rows["id"].isin(middle)], backend, 300, fmin=0.1, fmax=4.0)


def test_parts_of_a_result_are_its_rows(backend, rng):
    """Dask keeps only some partitions for tail, .partitions, get_partition
    and .loc, and numbers them anew: the division check must follow."""
    rows = survey(rng, nseries=30, ids="int")
    res = kd.lombscargle_peaks(dd.from_pandas(rows, npartitions=3, sort=False), 200, 0.1, 4.0, backend=backend)
    assert res.known_divisions and res.npartitions == 3
    whole = res.compute()
    some_id = whole.index[len(whole) // 2 + 1]
    parts = {
        "tail": res.tail(2),
        "head": res.head(2),
        "partitions[1]": res.partitions[1].compute(),
        "get_partition(2)": res.get_partition(2).compute(),
        "loc[id]": res.loc[some_id].compute(),
        "loc[a:b]": res.loc[whole.index[3]:whole.index[-4]].compute(),
    }
    for name, got in parts.items():
        assert len(got) > 0, name
        pd.testing.assert_frame_equal(got, whole.loc[got.index], obj=name)
    assert sum(len(res.get_partition(k).compute()) for k in range(res.npartitions)) == len(whole)


def test_a_sorted_dataset_with_unused_columns_is_read_by_its_divisions(backend, rng, tmp_path):
    """Reading only some of a dataset's columns, Dask joins adjacent
    partitions: the division check must take the joined bounds, and the
    result's parts stay reachable."""
    rows = survey(rng, ids="int", weighted=True)
    rows["flag"] = rng.integers(0, 3, len(rows))
    path = str(tmp_path / "sorted")
    dd.from_pandas(rows, npartitions=4, sort=False).set_index("id").to_parquet(path)
    kw = dict(index="id", calculate_divisions=True)
    res = kd.lombscargle_peaks(path, 300, 0.1, 4.0, backend=backend, read_parquet_kwargs=kw)
    assert res.divisions == dd.read_parquet(path, **kw).divisions
    check_peaks(res.compute(), rows[["id", "t", "y"]], backend, 300, fmin=0.1, fmax=4.0)
    whole = res.compute()
    got = res.partitions[2].compute()
    pd.testing.assert_frame_equal(got, whole.loc[got.index])


def test_assume_partitioned_skips_the_shuffle(backend, rng):
    rows = survey(rng, nseries=12).sort_values("id", kind="mergesort")
    ddf = dd.from_pandas(rows, npartitions=1, sort=False)
    res = kd.lombscargle_peaks(ddf, 200, 0.1, 4.0, backend=backend, assume_partitioned=True)
    assert res.npartitions == 1 and not res.known_divisions
    check_peaks(res.compute(), rows, backend, 200, fmin=0.1, fmax=4.0)


def local_maxima(magnitude, k):
    """The k highest local maxima of one row, by a plain loop."""
    m = list(magnitude)
    peaks = [
        (v, i) for i, v in enumerate(m)
        if (i == 0 or v > m[i - 1]) and (i == len(m) - 1 or v >= m[i + 1])
    ]
    peaks.sort(key=lambda p: (-p[0], p[1]))
    return peaks[:k]


@pytest.mark.parametrize("weighted", [False, True])
def test_partition_rows_are_ordered_as_a_full_sort_orders_them(rng, weighted):
    # Rows in (id, t) order with ties in t (a fast path sorts only the ties),
    # the same rows shuffled (the full sort), and string ids: each must give
    # exactly what pandas' stable sort on (id, t, y[, w]) gives.
    for case in range(6):
        n = int(rng.integers(2, 40))
        lens = rng.integers(1, 30, n)
        ids = np.repeat(np.sort(rng.choice(10 * n, n, replace=False)), lens)
        # Coarse times: many ties within a series; y and w break them.
        t = np.concatenate([np.sort(rng.integers(0, 8, k)).astype(np.float64) for k in lens])
        y = rng.integers(-3, 3, t.size).astype(np.float32)
        w = rng.uniform(0.5, 2, t.size) if weighted else None
        if case % 3 == 2:
            ids = np.array([f"star-{i:05d}" for i in ids], dtype=object)
        cols = {"id": ids, "t": t, "y": y}
        if weighted:
            cols["w"] = w
        frame = pd.DataFrame(cols)
        want = frame.sort_values(list(cols), kind="mergesort", ignore_index=True)
        w_col = "w" if weighted else None
        assert kd._ties_out_of_order(list(frame.to_numpy().T))[0] is not None, "rows in (id, t) order"
        for pdf in (frame, frame.sample(frac=1.0, random_state=case)):
            before = pdf.copy()
            piece = next(kd._series_pieces(pdf, "id", "t", "y", w_col))
            got_ids, offsets, got_t, got_y, got_w = kd._sorted_series(*piece, id_col="id")
            np.testing.assert_array_equal(got_t, want["t"].to_numpy())
            np.testing.assert_array_equal(got_y, want["y"].to_numpy())
            if weighted:
                np.testing.assert_array_equal(got_w, want["w"].to_numpy())
            np.testing.assert_array_equal(np.diff(offsets), want.groupby("id", sort=True).size().to_numpy())
            np.testing.assert_array_equal(got_ids, np.unique(ids))
            pd.testing.assert_frame_equal(pdf, before)  # the partition is not modified


@pytest.mark.parametrize("id_dtype", ["int32", "int64", "uint32", "uint64"])
@pytest.mark.parametrize("t_dtype", ["float32", "float64"])
def test_the_native_layout_pass_equals_numpys(rng, id_dtype, t_dtype):
    """Series starts and ties from one native pass equal NumPy's passes, on
    rows in order, with ties, with a time or an id out of order, NaN times,
    strided and byte-swapped arrays (NumPy takes those)."""
    for case in range(300):
        n = int(rng.integers(1, 40))
        ids = np.sort(rng.integers(0, 6, n)).astype(id_dtype)
        t = np.concatenate([np.sort(rng.integers(0, 5, k)) for k in np.unique(ids, return_counts=True)[1]])
        t = t.astype(t_dtype)
        if case % 5 == 1 and n > 1:  # a time out of order within a series, or an id out of order
            i = int(rng.integers(1, n))
            t[i], t[i - 1] = t[i] - 1, t[i - 1] + 1
        if case % 5 == 2 and n > 1:
            ids[[0, -1]] = ids[[-1, 0]]
        if case % 5 == 3:
            t[int(rng.integers(n))] = np.nan
        want = kd._layout_numpy(ids, t)
        for i, tt in ((ids, t), (ids.astype(ids.dtype.newbyteorder()), t.astype(t.dtype.newbyteorder())),
                      (np.repeat(ids, 2)[::2], np.repeat(t, 2)[::2])):
            got = kd._layout(i, tt)
            assert (got is None) == (want is None), (ids, t)
            if want is not None:
                np.testing.assert_array_equal(got[0], want[0])
                np.testing.assert_array_equal(got[1], want[1])
                assert got[0].dtype == np.intp and got[1].dtype == np.intp


@pytest.mark.parametrize("normalize", ["power", "amplitude"])
def test_top_k_peaks(backend, rng, normalize):
    rows = survey(rng, nseries=15)
    ddf = dd.from_pandas(rows, npartitions=3, sort=False)
    k = 4
    top = kd.lombscargle_peaks(ddf, 300, oversample=3.0, top_k=k, normalize=normalize, backend=backend).compute()
    one = kd.lombscargle_peaks(ddf, 300, oversample=3.0, normalize=normalize, backend=backend).compute()
    assert list(top.columns[:4]) == list(one.columns)
    np.testing.assert_array_equal(top["frequency"], one["frequency"])  # rank 1 is the maximum
    if normalize == "amplitude":  # the modulus: numpy's abs here, the kernel's with top_k=1 (1 ulp apart)
        np.testing.assert_allclose(top["power"], one["power"], rtol=1e-15)
    else:
        assert_power(top["power"].to_numpy(), one["power"].to_numpy(), backend)
    ids, _, f0, df, full = reference(rows, 300, oversample=3.0, full=True, normalize=normalize, backend=backend)
    for s in range(len(ids)):
        expected = local_maxima(np.abs(full[s]), k)
        for r, (value, index) in enumerate(expected, start=1):
            sfx = "" if r == 1 else f"_{r}"
            assert top[f"frequency{sfx}"].iloc[s] == f0[s] + df[s] * index
            assert top[f"power{sfx}"].iloc[s] == value
            assert top[f"period{sfx}"].iloc[s] == TWO_PI / (f0[s] + df[s] * index)
        for r in range(len(expected) + 1, k + 1):  # fewer local maxima than k: NaN
            assert np.isnan(top[f"power_{r}"].iloc[s]) and np.isnan(top[f"frequency_{r}"].iloc[s])
    # The table before the library's peaks (whole periodograms and
    # kd._top_peaks on the host, which 'amplitude' still takes): the same.
    index, power = kd._top_peaks(np.abs(full), k)
    freq = np.where(index >= 0, f0[:, None] + df[:, None] * index, np.nan)
    np.testing.assert_array_equal(top[["frequency"] + [f"frequency_{r}" for r in range(2, k + 1)]], freq)
    np.testing.assert_array_equal(top[["power"] + [f"power_{r}" for r in range(2, k + 1)]], power)


@pytest.mark.parametrize("apart", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("grid", ["shared", "per-series"])
def test_top_k_peaks_with_separation(backend, rng, dtype, grid, apart):
    """top_k > 1: the table of one lombscargle_batch(..., peaks=k,
    separation=) call on the series in (id, t) order, and the reference
    peaks of that order's periodograms; rank 1 the top_k=1 table's; without
    a separation, the host ranking of the whole periodograms'."""
    rows = survey(rng, nseries=25, ids="int")
    rows = rows.assign(t=rows["t"] - 58000.0).astype({"t": dtype, "y": dtype})
    constant = rows["id"].iloc[0]
    rows.loc[rows["id"] == constant, "y"] = 2.0  # its periodogram is 0: one peak, at the first frequency
    ddf = dd.from_pandas(rows, npartitions=4, sort=False)
    k, nf = 6, 400
    grid_kw = dict(fmin=0.05, fmax=6.0) if grid == "shared" else dict(oversample=4.0)
    separation = (0.2 if grid == "shared" else 0.05) if apart else 0.0
    top = kd.lombscargle_peaks(ddf, nf, top_k=k, separation=separation, floating_mean=True, backend=backend,
                               **grid_kw).compute()
    one = kd.lombscargle_peaks(ddf, nf, floating_mean=True, backend=backend, **grid_kw).compute()
    for c in ("frequency", "period", "power"):
        np.testing.assert_array_equal(top[c], one[c])
    rows = rows.sort_values(["id", "t"], kind="mergesort")
    ids, counts = np.unique(rows["id"].to_numpy(), return_counts=True)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    t, y = rows["t"].to_numpy(), rows["y"].to_numpy()
    if grid == "shared":
        f0, df = np.full(len(ids), 0.05), np.full(len(ids), (6.0 - 0.05) / (nf - 1))
    else:  # the spans of the times widened to float64
        span = np.array([np.ptp(t[a:b].astype(np.float64)) for a, b in zip(offsets[:-1], offsets[1:])])
        df = TWO_PI / (4.0 * span)
        f0 = df.copy()
    batch = dict(offsets=offsets, floating_mean=True, backend=backend)
    full = lombscargle_batch(t, y, f0, df, nf, **batch)
    want = lombscargle_batch(t, y, f0, df, nf, peaks=k, separation=separation, **batch)
    np.testing.assert_array_equal(top.index.to_numpy(), ids)
    sfx = [""] + [f"_{r}" for r in range(2, k + 1)]
    np.testing.assert_array_equal(top[[f"frequency{x}" for x in sfx]], want.frequency)
    np.testing.assert_array_equal(top[[f"power{x}" for x in sfx]], want.power)
    np.testing.assert_array_equal(top[[f"period{x}" for x in sfx]], TWO_PI / want.frequency)
    for s in range(len(ids)):
        axis = f0[s] + df[s] * np.arange(nf)
        peaks = ref_peaks(full[s], axis, k, separation, higher=True)
        np.testing.assert_array_equal(want.index[s], peaks + [-1] * (k - len(peaks)))
        assert len(peaks) < k or np.min(np.abs(np.diff(np.sort(axis[peaks])))) >= separation
    np.testing.assert_array_equal(want.index[np.searchsorted(ids, constant)], [0] + [-1] * (k - 1))
    if not apart:
        index, power = kd._top_peaks(full, k)
        np.testing.assert_array_equal(want.index, index)
        np.testing.assert_array_equal(want.power, power)


def test_whole_periodograms(backend, rng):
    rows = survey(rng, nseries=20, ids="int")
    ddf = dd.from_pandas(rows, npartitions=3, sort=False)
    pgrams = kd.lombscargle_periodograms(ddf, 250, 0.2, 5.0, floating_mean=True, backend=backend)
    assert list(pgrams.columns) == ["n", "f0", "df", "periodogram"]
    got = pgrams.compute()
    ids, counts, f0, df, full = reference(rows, 250, fmin=0.2, fmax=5.0, full=True, floating_mean=True,
                                          backend=backend)
    np.testing.assert_array_equal(got.index.to_numpy(), ids)
    np.testing.assert_array_equal(got["n"].to_numpy(), counts)
    assert (got["f0"] == f0).all() and (got["df"] == df).all()
    assert_power(np.stack(got["periodogram"].to_list()), full, backend)


def test_the_metadata_is_given_not_inferred(rng, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the kernel ran to infer metadata")

    monkeypatch.setattr(kernpack.signal, "lombscargle_batch", refuse)  # in this process only
    ddf = dd.from_pandas(survey(rng, nseries=5), npartitions=2, sort=False)
    res = kd.lombscargle_peaks(ddf, 100, 0.1, 2.0, top_k=2)
    assert list(res.columns) == ["n", "frequency", "period", "power", "frequency_2", "period_2", "power_2"]
    assert res.index.name == "id" and res.index.dtype == ddf["id"].dtype
    assert len(res._meta) == 0


def test_errors_name_the_series_id(backend, rng):
    rows = survey(rng, nseries=6)
    bad_id = rows["id"].iloc[10]
    rows.loc[rows.index[10], "y"] = np.nan
    res = kd.lombscargle_peaks(dd.from_pandas(rows, npartitions=2, sort=False), 100, 0.1, 2.0, backend=backend)
    with pytest.raises(ValueError, match=f"^series with id {bad_id!r}: y\\[\\d+\\] = NaN is not finite"):
        res.compute()
    ints = rows.assign(id=rows["id"].str[4:].astype(np.int64))  # a plain number, not np.int64(...)
    res = kd.lombscargle_peaks(dd.from_pandas(ints, npartitions=2, sort=False), 100, 0.1, 2.0, backend=backend)
    with pytest.raises(ValueError, match=f"^series with id {int(bad_id[4:])}: "):
        res.compute()


def test_invalid_arguments(rng):
    ddf = dd.from_pandas(survey(rng, nseries=3), npartitions=1)
    with pytest.raises(ValueError, match="not both"):
        kd.lombscargle_peaks(ddf, 10, 0.1, 1.0, oversample=2)
    with pytest.raises(ValueError, match="fmin and fmax"):
        kd.lombscargle_peaks(ddf, 10)
    with pytest.raises(KeyError, match="mag"):
        kd.lombscargle_peaks(ddf, 10, 0.1, 1.0, y_col="mag")
    with pytest.raises(ValueError, match="top_k"):
        kd.lombscargle_peaks(ddf, 10, 0.1, 1.0, top_k=0)
    with pytest.raises(ValueError, match="top_k = 257 is out of range"):
        kd.lombscargle_peaks(ddf, 10, 0.1, 1.0, top_k=257)
    for bad in (-0.1, np.nan, np.inf):
        with pytest.raises(ValueError, match="separation"):
            kd.lombscargle_peaks(ddf, 10, 0.1, 1.0, top_k=3, separation=bad)
    with pytest.raises(ValueError, match="separation ranks the peaks of real periodograms"):
        kd.lombscargle_peaks(ddf, 10, 0.1, 1.0, top_k=3, separation=0.1, normalize="amplitude")
    with pytest.raises(TypeError, match="from_pandas"):
        kd.lombscargle_peaks(ddf.compute(), 10, 0.1, 1.0)
    with pytest.raises(ValueError, match="Normalize"):
        kd.lombscargle_peaks(ddf, 10, 0.1, 1.0, normalize="bogus")
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="npartitions"):
            kd.lombscargle_peaks(ddf, 10, 0.1, 1.0, npartitions=bad)
    with pytest.raises(ValueError, match="different columns"):
        kd.lombscargle_peaks(ddf, 10, 0.1, 1.0, id_col="t")
    rows = survey(rng, nseries=3)
    with pytest.raises(TypeError, match="categorical"):
        kd.lombscargle_peaks(dd.from_pandas(rows.astype({"id": "category"}), npartitions=1), 10, 0.1, 1.0)


def test_dates_as_times_are_refused(rng, tmp_path):
    """A datetime column would pass as nanoseconds, making fmin/fmax
    radians per nanosecond: a TypeError, from a frame and from files."""
    rows = survey(rng, nseries=3, ids="int").sort_values(["id", "t"])
    rows["t"] = pd.to_datetime(rows["t"], unit="D")
    with pytest.raises(TypeError, match="datetime64"):
        kd.lombscargle_peaks(dd.from_pandas(rows, npartitions=1), 10, 0.1, 1.0)
    rows.to_parquet(tmp_path / "dates.parquet", index=False)
    with pytest.raises(TypeError, match="datetime64"):
        kd.lombscargle_peaks(str(tmp_path), 10, 0.1, 1.0)


# --------------------------------------------------------------------------
# Box filter
# --------------------------------------------------------------------------

MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]


CHUNKINGS = [  # (shape, chunks, size)
    ((40, 33), (7, 10), 5),  # chunks not multiples of the size
    ((17, 15), (2, 3), 9),  # chunks thinner than the depth (4): merged
    ((30, 50), (30, 50), 7),  # one chunk
    ((3, 50), (1, 16), 11),  # an axis shorter than the depth: one chunk along it
]


@pytest.mark.parametrize("mode", MODES)
def test_uniform_filter_equals_scipy_on_the_whole_array(backend, rng, mode):
    images = [rng.normal(size=shape) for shape, _, _ in CHUNKINGS]
    filtered = [
        kd.uniform_filter(da.from_array(image, chunks=chunks), size, mode=mode, cval=0.75, backend=backend)
        for image, (_, chunks, size) in zip(images, CHUNKINGS)
    ]
    for image, (shape, chunks, size), got in zip(images, CHUNKINGS, dask.compute(*filtered)):
        expected = scipy.ndimage.uniform_filter(image, size, mode=mode, cval=0.75)
        assert got.dtype == np.float64 and got.shape == shape
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12, err_msg=f"chunks {chunks}, size {size}")


def test_uniform_filter_float32_and_interior(backend, rng):
    image = rng.normal(size=(37, 29)).astype(np.float32)
    darr = da.from_array(image, chunks=(10, 8))
    got = kd.uniform_filter(darr, 3, mode="grid-wrap", backend=backend).compute()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, scipy.ndimage.uniform_filter(image, 3, mode="wrap"), rtol=0, atol=1e-5)
    got = kd.uniform_filter(darr, 5, mode="interior", backend=backend).compute()
    np.testing.assert_array_equal(got, kernpack.ndimage.uniform_filter(image, 5, mode="interior", backend=backend))


def test_uniform_filter_invalid_arguments():
    darr = da.zeros((10, 10), chunks=5)
    with pytest.raises(RuntimeError, match="boundary mode"):
        kd.uniform_filter(darr, 3, mode="bogus")
    with pytest.raises(RuntimeError, match="boundary mode"):
        kd.uniform_filter(da.zeros((10, 10), chunks=5, dtype=np.int32), 3, mode=None)  # SciPy's check
    with pytest.raises(TypeError):
        kd.uniform_filter(darr, 3, origin=0.5)
    with pytest.raises(ValueError, match="origin"):
        kd.uniform_filter(da.zeros((10, 10), chunks=5, dtype=np.int32), 3, origin=5)  # SciPy's check
    # What kernpack's kernels do not compute, where SciPy may not stand in:
    # kernpack's own mode, and the GPU backend asked for.
    with pytest.raises(NotImplementedError, match="3-D"):
        kd.uniform_filter(da.zeros((4, 4, 4), chunks=2), 4, mode="interior")
    with pytest.raises(NotImplementedError, match="float16") as raised:
        kd.uniform_filter(da.zeros((4, 4), dtype=np.float16), 3, backend="gpu")
    assert type(raised.value) is NotImplementedError  # not a private subclass
    with pytest.raises(NotImplementedError, match="cval"):
        kd.uniform_filter(da.zeros((4, 4), dtype=np.int32), 3, mode="constant", cval=0.5, backend="gpu")


@pytest.mark.parametrize("dtype, size, mode, origin, shape, chunks", [
    (np.int32, 3, "reflect", 0, (40, 37), 7),
    (np.uint8, 35, "reflect", 0, (80, 70), 16),
    (np.float64, 4, "wrap", 0, (40, 37), 6),
    (np.float32, (3, 5), "nearest", 0, (30, 31), 4),
    (np.float64, 5, ("wrap", "mirror"), (1, -1), (33, 29), 5),
    (np.float64, 3, "constant", 1, (20, 20), 3),
    (np.float64, 3, "reflect", 0, (12, 10, 9), 4),
    (np.float64, 5, "grid-wrap", -2, (25,), 4),
    (np.int64, 2, "mirror", 0, (3, 50), 2),
])
def test_uniform_filter_of_other_dtypes_ranks_and_modes_is_scipys(rng, dtype, size, mode, origin, shape, chunks):
    """Other dtypes, ranks, even and per-axis sizes, modes per axis and
    origins: kernpack's N-D filter on each block (SciPy's before it came
    in), with the overlap their windows need."""
    x = rng.uniform(0, 100, shape).astype(dtype)
    got = kd.uniform_filter(da.from_array(x, chunks=chunks), size, mode, 2.5, origin).compute()
    ref = scipy.ndimage.uniform_filter(x, size, mode=mode, cval=2.5, origin=origin)
    assert got.dtype == ref.dtype
    if np.issubdtype(dtype, np.integer):
        np.testing.assert_array_equal(got, ref)  # integer sums are exact in any order
    else:  # running sums started elsewhere: rounding only
        np.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=0)


def test_uniform_filter_beyond_kernpacks_kernels_where_kernpack_took_scipys_place(rng, monkeypatch):
    x = rng.uniform(0, 100, (30, 31))
    want = scipy.ndimage.uniform_filter(x, 4, mode="nearest")
    monkeypatch.setattr(scipy.ndimage, "uniform_filter", kernpack.ndimage.uniform_filter)
    got = kd.uniform_filter(da.from_array(x, chunks=7), 4, "nearest").compute(scheduler="threads")
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_uniform_filter_of_cupy_blocks(rng):
    """CuPy blocks stay on the GPU: kernpack's kernel where it computes the
    call, cupyx's filter on each block where it does not."""
    try:
        import cupy
    except ImportError:
        if REQUIRE_GPU:
            pytest.fail("KERNPACK_REQUIRE_GPU=1 but cupy is not importable")
        pytest.skip("cupy not installed")
    if kernpack.device_count() == 0:
        if REQUIRE_GPU:
            pytest.fail("KERNPACK_REQUIRE_GPU=1 but no GPU is visible")
        pytest.skip("no GPU")
    image = rng.normal(size=(40, 37))
    darr = da.from_array(cupy.asarray(image), chunks=(9, 10))
    for size, mode, origin in ((5, "reflect", 0), (4, "wrap", 0), (3, ("nearest", "mirror"), (1, -1))):
        got = kd.uniform_filter(darr, size, mode, 0.0, origin).compute()
        assert isinstance(got, cupy.ndarray), (size, mode)
        want = scipy.ndimage.uniform_filter(image, size, mode=mode, origin=origin)
        np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=0, atol=1e-12, err_msg=f"{size} {mode}")
    with pytest.raises(NotImplementedError, match="3-D"):
        kd.uniform_filter(da.zeros((4, 4, 4), chunks=2), 4, mode="interior")


# --------------------------------------------------------------------------
# Gaussian filters
# --------------------------------------------------------------------------

from test_gaussian import scipy_weights, tolerance  # noqa: E402  (the single-array tests' bounds)

GAUSSIAN_CASES = [  # (shape, chunks, sigma, other arguments)
    ((40, 33), (7, 10), 1.5, {}),  # chunks not multiples of the radius (6)
    ((17, 15), (2, 3), 2.0, {}),  # chunks thinner than the radius (8): merged
    ((30, 50), (30, 50), 3.0, {}),  # one chunk
    ((3, 50), (1, 16), (1.2, 2.5), {}),  # an axis shorter than its radius (5): one chunk along it
    ((21, 19, 11), (6, 5, 4), (0.8, 1.7, 1.1), {}),  # 3-D, a sigma per axis
    ((20, 26, 9), (5, 7, 3), (2.0, 0.0, 1.0), {"order": (1, 0, 2)}),  # an axis not filtered, derivatives
    ((24, 30, 10), (8, 6, 5), (1.3, 2.0), {"axes": (2, 0), "radius": (3, 5)}),  # some axes, in this order; radii
    ((32, 29), (9, 4), 2.0, {"truncate": 2.5}),  # radius int(2.5 * 2 + 0.5) = 5, chunks of 4 merged
]


def gaussian_bound(dtype, x, sigma, mode, cval, order=0, truncate=4.0, radius=None, axes=None):
    """test_gaussian.py's bound of ``gaussian_filter(x, sigma, ...)`` (the
    passes SciPy runs: the axes whose sigma is above 1e-15)."""
    filtered = list(range(x.ndim)) if axes is None else list(axes)

    def per_axis(value):
        return list(value) if isinstance(value, (list, tuple)) else [value] * len(filtered)

    weights, modes = [], []
    for s, o, m, r in zip(per_axis(sigma), per_axis(order), per_axis(mode), per_axis(radius)):
        if s > 1e-15:
            weights.append(scipy_weights(s, o, truncate, r))
            modes.append(m)
    return tolerance(dtype, weights, x, cval, modes)


def assert_within(got, want, bound, what):
    assert got.shape == want.shape and got.dtype == want.dtype, what
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    assert err <= bound, f"{what}: error {err:.3e} > {bound:.3e}"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mode", MODES)  # the 'grid-' aliases: below
def test_gaussian_filter_equals_scipy_on_the_whole_array(backend, rng, mode, dtype):
    images = [rng.normal(0, 3, shape).astype(dtype) for shape, _, _, _ in GAUSSIAN_CASES]
    filtered = [
        kd.gaussian_filter(da.from_array(image, chunks=chunks), sigma, mode=mode, cval=0.75, backend=backend, **kw)
        for image, (_, chunks, sigma, kw) in zip(images, GAUSSIAN_CASES)
    ]
    for image, (shape, chunks, sigma, kw), got in zip(images, GAUSSIAN_CASES, dask.compute(*filtered)):
        expected = scipy.ndimage.gaussian_filter(image, sigma, mode=mode, cval=0.75, **kw)
        assert_within(got, expected, gaussian_bound(dtype, image, sigma, mode, 0.75, **kw),
                      f"chunks {chunks}, sigma {sigma}, {kw}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gaussian_filter_with_a_mode_per_axis(backend, rng, dtype):
    """'wrap' on some axes (periodic overlap), the filter's own modes on the
    others' outer edges."""
    cases = [  # (shape, chunks, sigma, mode)
        ((23, 30, 12), (5, 8, 4), (1.0, 1.6, 0.9), ("wrap", "constant", "mirror")),
        ((31, 27), (6, 7), (2.2, 1.4), ("nearest", "grid-wrap")),
        ((18, 40), (4, 9), 1.8, ("grid-mirror", "wrap")),
        ((19, 16), (5, 4), 1.2, ("grid-constant", "reflect")),
    ]
    images = [rng.normal(0, 3, shape).astype(dtype) for shape, _, _, _ in cases]
    filtered = [
        kd.gaussian_filter(da.from_array(image, chunks=chunks), sigma, mode=mode, cval=-1.5, backend=backend)
        for image, (_, chunks, sigma, mode) in zip(images, cases)
    ]
    for image, (shape, _, sigma, mode), got in zip(images, cases, dask.compute(*filtered)):
        expected = scipy.ndimage.gaussian_filter(image, sigma, mode=mode, cval=-1.5)
        assert_within(got, expected, gaussian_bound(dtype, image, sigma, mode, -1.5), f"{shape} {mode}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gaussian_filter1d_equals_scipy_on_the_whole_array(backend, rng, dtype):
    image = rng.normal(0, 3, (22, 25, 11)).astype(dtype)
    darr = da.from_array(image, chunks=(6, 7, 4))
    calls = [  # (sigma, axis, order, mode, other arguments)
        (1.5, 0, 0, "reflect", {}),
        (2.5, 1, 1, "wrap", {}),
        (1.2, -1, 2, "constant", {}),
        (3.0, 1, 0, "mirror", {"radius": 4}),
        (0.7, 2, 3, "grid-wrap", {"truncate": 6.0}),
    ]
    if backend != "gpu":  # a negative sigma with a radius: SciPy on each block, unless the GPU is asked for
        calls.append((-1.0, 0, 0, "nearest", {"radius": 2}))
    else:
        with pytest.raises(NotImplementedError, match="positive sigmas"):
            kd.gaussian_filter1d(darr, -1.0, 0, 0, "nearest", 0.25, backend=backend, radius=2)
    filtered = [kd.gaussian_filter1d(darr, sigma, axis, order, mode, 0.25, backend=backend, **kw)
                for sigma, axis, order, mode, kw in calls]
    for (sigma, axis, order, mode, kw), got in zip(calls, dask.compute(*filtered)):
        expected = scipy.ndimage.gaussian_filter1d(image, sigma, axis, order, mode=mode, cval=0.25, **kw)
        bound = tolerance(dtype, [scipy_weights(sigma, order, kw.get("truncate", 4.0), kw.get("radius"))], image,
                          0.25, [mode])
        if sigma < 0:  # SciPy on both sides
            np.testing.assert_array_equal(got, expected)
        else:
            assert_within(got, expected, bound, f"sigma {sigma}, axis {axis}, order {order}, {mode}, {kw}")


def test_gaussian_filter_of_nothing_to_filter(rng):
    x = rng.normal(size=(12, 9))
    darr = da.from_array(x, chunks=4)
    np.testing.assert_array_equal(kd.gaussian_filter(darr, 0.0).compute(), x)  # every sigma <= 1e-15: a copy
    np.testing.assert_array_equal(kd.gaussian_filter(darr, (1e-16, 0)).compute(), x)
    empty = kd.gaussian_filter(da.zeros((0, 5), chunks=2), 1.0)
    assert empty.shape == (0, 5) and empty.compute().shape == (0, 5)


def test_gaussian_filter_invalid_arguments():
    """SciPy's errors, raised before anything is computed."""
    darr = da.zeros((10, 10), chunks=5)
    ints = da.zeros((10, 10), chunks=5, dtype=np.int32)
    for arr in (darr, ints):
        with pytest.raises(RuntimeError, match="boundary mode"):
            kd.gaussian_filter(arr, 1.0, mode="bogus")
        with pytest.raises(RuntimeError, match="sequence argument"):
            kd.gaussian_filter(arr, (1.0, 2.0, 3.0))
        with pytest.raises(ValueError, match="Radius"):
            kd.gaussian_filter(arr, 1.0, radius=-1)
        with pytest.raises(ValueError, match="unique"):
            kd.gaussian_filter(arr, 1.0, axes=(0, 0))
        with pytest.raises(ValueError, match="order"):
            kd.gaussian_filter(arr, 1.0, order=-1)
        with pytest.raises(ValueError):
            kd.gaussian_filter1d(arr, 1.0, axis=2)
        with pytest.raises(TypeError):
            kd.gaussian_filter1d(arr, 1.0, mode="constant", cval="x")
    # Where SciPy may not stand in: the GPU backend asked for.
    with pytest.raises(NotImplementedError, match="float32") as raised:
        kd.gaussian_filter(ints, 1.0, backend="gpu")
    assert type(raised.value) is NotImplementedError  # not a private subclass
    with pytest.raises(NotImplementedError, match="order"):
        kd.gaussian_filter1d(darr, 1.0, order=kernpack.ndimage.MAX_GAUSSIAN_ORDER + 1, backend="gpu")


@pytest.mark.parametrize("dtype, sigma, kw, shape, chunks", [
    (np.int32, 1.5, {}, (40, 37), 7),
    (np.uint8, 2.0, {"mode": "wrap"}, (30, 33), 6),
    (np.int64, (1.0, 0.8, 1.3), {"mode": ("nearest", "wrap", "mirror")}, (12, 10, 9), 4),
    (np.float64, 1.2, {"order": 11, "mode": "constant", "cval": 2.5}, (25, 21), 5),  # above MAX_GAUSSIAN_ORDER
    (np.complex128, 1.7, {"mode": "grid-wrap"}, (20, 22), 6),
])
def test_gaussian_filter_beyond_kernpacks_kernels_is_scipys(rng, dtype, sigma, kw, shape, chunks):
    """Other dtypes and orders: SciPy on each block, with the overlap its
    kernels need."""
    x = rng.uniform(0, 100, shape)
    x = (x + 1j * x[::-1] if dtype == np.complex128 else x).astype(dtype)
    got = kd.gaussian_filter(da.from_array(x, chunks=chunks), sigma, **kw).compute()
    ref = scipy.ndimage.gaussian_filter(x, sigma, **kw)
    assert got.dtype == ref.dtype
    if np.issubdtype(dtype, np.integer):
        np.testing.assert_array_equal(got, ref)  # SciPy's sums per point, as on the whole array
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12 * float(np.max(np.abs(ref))))


def test_gaussian_filter_of_cupy_blocks(rng):
    """CuPy blocks stay on the GPU: kernpack's kernels where they compute the
    call, cupyx's filter on each block where they do not."""
    try:
        import cupy
    except ImportError:
        if REQUIRE_GPU:
            pytest.fail("KERNPACK_REQUIRE_GPU=1 but cupy is not importable")
        pytest.skip("cupy not installed")
    if kernpack.device_count() == 0:
        if REQUIRE_GPU:
            pytest.fail("KERNPACK_REQUIRE_GPU=1 but no GPU is visible")
        pytest.skip("no GPU")
    for dtype in (np.float64, np.float32):
        image = rng.normal(0, 3, (40, 37, 6)).astype(dtype)
        darr = da.from_array(cupy.asarray(image), chunks=(9, 10, 3))
        for sigma, mode, kw in (
            (1.5, "reflect", {}),
            (2.0, "wrap", {}),
            ((1.0, 2.5, 0.9), ("nearest", "mirror", "wrap"), {"order": (0, 1, 0)}),
        ):
            got = kd.gaussian_filter(darr, sigma, mode=mode, **kw).compute()
            assert isinstance(got, cupy.ndarray), (sigma, mode)
            want = scipy.ndimage.gaussian_filter(image, sigma, mode=mode, **kw)
            assert_within(cupy.asnumpy(got), want, gaussian_bound(dtype, image, sigma, mode, 0.0, **kw),
                          f"{dtype.__name__} {sigma} {mode}")
    # cupyx on each block for what kernpack's kernels do not compute.
    x = rng.normal(size=(30, 31))
    got = kd.gaussian_filter(da.from_array(cupy.asarray(x), chunks=8), 1.3, order=11).compute()
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(got), scipy.ndimage.gaussian_filter(x, 1.3, order=11), rtol=1e-9,
                               atol=1e-12)


# --------------------------------------------------------------------------
# Ensembles
# --------------------------------------------------------------------------


def test_lorenz96_split_by_members_is_bitwise_the_one_call(backend, rng):
    initial = 8 + rng.normal(size=(11, 40))
    darr = da.from_array(initial, chunks=(3, 20))  # split along N too: undone
    run = kd.lorenz96(darr, 300, every=50, backend=backend)
    assert run.final.chunks == ((3, 3, 3, 2), (40,))
    final, trajectory = dask.compute(run.final, run.trajectory)
    one = kernpack.ode.lorenz96(initial, 300, every=50, backend=backend)
    np.testing.assert_array_equal(final, one.final)
    np.testing.assert_array_equal(trajectory, one.trajectory)
    only_final = kd.lorenz96(darr, 300, backend=backend)
    assert only_final.trajectory is None
    np.testing.assert_array_equal(only_final.final.compute(), one.final)


def test_stochastic_forced_lorenz96_split_by_members_is_bitwise_the_one_call(backend, rng):
    # Each block draws the noise of its members' indices in the whole ensemble.
    initial = np.hstack([8 + rng.normal(size=(11, 40)), rng.uniform(6, 10, (11, 40))])
    opts = dict(forcing_in_state=True, noise=0.4, seed=2024, backend=backend)
    run = kd.lorenz96(da.from_array(initial, chunks=(4, 80)), 100, every=25, **opts)
    final, trajectory = dask.compute(run.final, run.trajectory)
    one = kernpack.ode.lorenz96(initial, 100, every=25, **opts)
    np.testing.assert_array_equal(final, one.final)
    np.testing.assert_array_equal(trajectory, one.trajectory)
    # And the pieces run by hand, with their offsets, are the same run.
    tail = kernpack.ode.lorenz96(initial[4:], 100, member_offset=4, **opts).final
    np.testing.assert_array_equal(tail, one.final[4:])


def test_lorenz05_split_by_members_is_bitwise_the_one_call(backend, rng):
    initial = rng.normal(size=(5, 120)).astype(np.float32)
    darr = da.from_array(initial, chunks=(2, 120))
    opts = dict(model=3, k=8, j=4, dt=0.001, backend=backend)
    run = kd.lorenz05(darr, 40, every=15, **opts)  # 40 is not a multiple of 15: final is not a frame
    final, trajectory = dask.compute(run.final, run.trajectory)
    one = kernpack.ode.lorenz05(initial, 40, every=15, **opts)
    assert final.dtype == np.float32
    np.testing.assert_array_equal(final, one.final)
    np.testing.assert_array_equal(trajectory, one.trajectory)


def test_lorenz96_save_at_split_by_members_is_bitwise_the_one_call(backend, rng):
    # Noisy, with the forcing in the state: each block's segments draw the
    # noise of its members and of the steps in the whole run.
    initial = np.hstack([8 + rng.normal(size=(9, 40)), rng.uniform(6, 10, (9, 40))])
    opts = dict(forcing_in_state=True, noise=0.4, seed=77, backend=backend)
    save_at = [0, 13, 40, 99]
    run = kd.lorenz96(da.from_array(initial, chunks=(4, 80)), 99, save_at=save_at, **opts)
    final, trajectory = dask.compute(run.final, run.trajectory)
    one = kernpack.ode.lorenz96(initial, 99, save_at=save_at, **opts)
    assert trajectory.shape == (4, 9, 80)
    np.testing.assert_array_equal(final, one.final)
    np.testing.assert_array_equal(trajectory, one.trajectory)


def test_lorenz05_save_at_split_by_members_is_bitwise_the_one_call(backend, rng):
    initial = rng.normal(size=(5, 120)).astype(np.float32)
    opts = dict(model=2, k=8, dt=0.001, backend=backend)
    run = kd.lorenz05(da.from_array(initial, chunks=(2, 120)), 20, save_at=[5, 6], **opts)
    final, trajectory = dask.compute(run.final, run.trajectory)
    one = kernpack.ode.lorenz05(initial, 20, save_at=[5, 6], **opts)
    np.testing.assert_array_equal(final, one.final)
    np.testing.assert_array_equal(trajectory, one.trajectory)


def test_ensemble_save_at_is_checked_before_anything_runs():
    x = da.zeros((4, 40), chunks=2)
    with pytest.raises(ValueError, match="sorted and unique"):
        kd.lorenz96(x, 10, save_at=[4, 2])
    with pytest.raises(ValueError, match="past the last step"):
        kd.lorenz96(x, 10, save_at=[11])
    with pytest.raises(ValueError, match="not both"):
        kd.lorenz96(x, 10, every=2, save_at=[1])


def test_ensemble_parameters_are_checked_before_anything_runs(rng):
    with pytest.raises(ValueError, match="K = 5"):
        kd.lorenz05(da.zeros((4, 100), chunks=2), 10, k=5)
    with pytest.raises(ValueError, match="steps"):
        kd.lorenz96(da.zeros((4, 100), chunks=2), -1)


def test_lorenz63_split_by_members_is_bitwise_the_one_call(backend, rng):
    initial = rng.normal(0, 10, size=(11, 3))
    darr = da.from_array(initial, chunks=(3, 2))  # split along the 3 too: undone
    run = kd.lorenz63(darr, 300, save_at=[0, 120, 300], backend=backend)
    assert isinstance(run, kernpack.ode.Lorenz63Run)
    assert run.final.chunks == ((3, 3, 3, 2), (3,))
    assert run.saved.shape == (3, 11, 3) and run.saved.chunks[1] == (3, 3, 3, 2)
    final, saved = dask.compute(run.final, run.saved)
    one = kernpack.ode.lorenz63(initial, steps=300, save_at=[0, 120, 300], backend=backend)
    np.testing.assert_array_equal(final, one.final)
    np.testing.assert_array_equal(saved, one.saved)
    np.testing.assert_array_equal(saved[0], initial)
    assert "lorenz63" in kd.__all__ and ":func:`lorenz63`" in kd.__doc__
    only_final = kd.lorenz63(darr, 300, dt=0.005, backend=backend)
    assert only_final.saved is None
    np.testing.assert_array_equal(only_final.final.compute(),
                                  kernpack.ode.lorenz63(initial, steps=300, dt=0.005, backend=backend).final)


def test_lorenz63_per_member_parameters_are_chunked_with_the_members(backend, rng):
    members = 13
    initial = rng.normal(0, 10, size=(members, 3)).astype(np.float32)
    sigma = rng.uniform(8, 12, members).astype(np.float32)
    rho = rng.uniform(20, 35, members)  # float64 values of a float32 run: cast as in the one call
    one = kernpack.ode.lorenz63(initial, sigma, rho, 2.5, steps=200, save_at=[50], backend=backend)
    # sigma chunked unlike the members (rechunked to them), rho a NumPy array, beta shared.
    run = kd.lorenz63(da.from_array(initial, chunks=(4, 3)), 200, sigma=da.from_array(sigma, chunks=5), rho=rho,
                      beta=2.5, save_at=[50], backend=backend)
    final, saved = dask.compute(run.final, run.saved)
    assert final.dtype == np.float32 and saved.dtype == np.float32
    np.testing.assert_array_equal(final, one.final)
    np.testing.assert_array_equal(saved, one.saved)
    # Each block took its own members' values: reversing them changes every block.
    flipped = kd.lorenz63(da.from_array(initial, chunks=(4, 3)), 200, sigma=sigma[::-1], rho=rho, beta=2.5,
                          backend=backend).final.compute()
    assert not np.array_equal(flipped[:4], one.final[:4])
    # One state, as the single-process call shapes it.
    lone = kd.lorenz63(da.from_array(initial[0]), 200, sigma=sigma[:1], save_at=[0, 50], backend=backend)
    want = kernpack.ode.lorenz63(initial[0], sigma[:1], steps=200, save_at=[0, 50], backend=backend)
    assert lone.final.shape == (3,) and lone.saved.shape == (2, 3)
    np.testing.assert_array_equal(lone.final.compute(), want.final)
    np.testing.assert_array_equal(lone.saved.compute(), want.saved)


def test_lorenz63_arguments_are_checked_before_anything_runs():
    x = da.zeros((4, 3), chunks=2)
    for call, error, match in (
        (lambda: kd.lorenz63(x, -1), ValueError, "steps"),
        (lambda: kd.lorenz63(x, 10, save_at=[5, 3]), ValueError, "sorted and unique"),
        (lambda: kd.lorenz63(x, 10, save_at=[11]), ValueError, "past the last step"),
        (lambda: kd.lorenz63(x, 10, save_at=[-1]), ValueError, "negative"),
        (lambda: kd.lorenz63(x, 10, dt=0.0), ValueError, "dt"),
        (lambda: kd.lorenz63(x, 10, rho=float("nan")), ValueError, "rho must be finite"),
        (lambda: kd.lorenz63(x, 10, sigma=np.ones(5)), ValueError, "sigma must be one value or 4 values"),
        (lambda: kd.lorenz63(da.zeros((4, 2), chunks=2), 10), ValueError, "initial must be"),
    ):
        with pytest.raises(error, match=match):
            call()


def _same_bits(got, want):
    """Equal bit for bit (NaN at the same places with the same bits)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))


def _adaptive_equal(run, one):
    """A kd.lorenz63_adaptive result, computed at once, equals the one call's bitwise."""
    got = dask.compute(run.final, run.saved, run.accepted, run.rejected, run.status, run.success)
    for field, value in zip(("final", "saved", "accepted", "rejected", "status", "success"), got):
        want = getattr(one, field)
        if want is None:
            assert value is None, field
        else:
            _same_bits(value, want)


def test_lorenz63_adaptive_split_by_members_is_bitwise_the_one_call(backend, rng):
    initial = rng.normal(0, 10, size=(11, 3))
    darr = da.from_array(initial, chunks=(3, 2))  # split along the 3 too: undone
    kwargs = dict(t_span=(0.5, 2.0), t_eval=[0.5, 1.2, 2.0], rtol=1e-7, atol=1e-9, backend=backend)
    run = kd.lorenz63_adaptive(darr, **kwargs)
    assert isinstance(run, kernpack.ode.Lorenz63AdaptiveRun)
    assert run.final.chunks == ((3, 3, 3, 2), (3,))
    assert run.saved.shape == (3, 11, 3) and run.saved.chunks[1] == (3, 3, 3, 2)
    for stat in (run.accepted, run.rejected, run.status):
        assert stat.shape == (11,) and stat.dtype == np.int32 and stat.chunks == ((3, 3, 3, 2),)
    one = kernpack.ode.lorenz63_adaptive(initial, **kwargs)
    assert one.success.all() and (one.accepted > 10).all()
    _adaptive_equal(run, one)
    assert "lorenz63_adaptive" in kd.__all__ and ":func:`lorenz63_adaptive`" in kd.__doc__
    # Without t_eval, a given first step and a largest one.
    kwargs = dict(t_span=(0.0, 1.0), first_step=1e-3, max_step=0.05, backend=backend)
    only_final = kd.lorenz63_adaptive(darr, **kwargs)
    assert only_final.saved is None
    _adaptive_equal(only_final, kernpack.ode.lorenz63_adaptive(initial, **kwargs))


def test_lorenz63_adaptive_per_member_parameters_are_chunked_with_the_members(backend, rng):
    members = 13
    initial = rng.normal(0, 10, size=(members, 3)).astype(np.float32)
    sigma = rng.uniform(8, 12, members).astype(np.float32)
    rho = rng.uniform(20, 35, members)  # float64 values of a float32 run: cast as in the one call
    kwargs = dict(t_span=(0, 1.5), t_eval=[0.25, 1.5], rtol=1e-5, atol=1e-6, backend=backend)
    one = kernpack.ode.lorenz63_adaptive(initial, sigma, rho, 2.5, **kwargs)
    # sigma chunked unlike the members (rechunked to them), rho a NumPy array, beta shared.
    run = kd.lorenz63_adaptive(da.from_array(initial, chunks=(4, 3)), sigma=da.from_array(sigma, chunks=5), rho=rho,
                               beta=2.5, **kwargs)
    assert run.final.dtype == np.float32 and run.saved.dtype == np.float32
    _adaptive_equal(run, one)
    # Each block took its own members' values: reversing them changes every block.
    flipped = kd.lorenz63_adaptive(da.from_array(initial, chunks=(4, 3)), sigma=sigma[::-1], rho=rho, beta=2.5,
                                   **kwargs).final.compute()
    assert not np.array_equal(flipped[:4], one.final[:4])
    # One state, as the single-process call shapes it.
    lone = kd.lorenz63_adaptive(da.from_array(initial[0]), sigma=sigma[:1], **kwargs)
    want = kernpack.ode.lorenz63_adaptive(initial[0], sigma[:1], **kwargs)
    assert lone.final.shape == (3,) and lone.saved.shape == (2, 3) and lone.status.shape == ()
    _adaptive_equal(lone, want)


def test_lorenz63_adaptive_members_that_stop_early_keep_their_own_status(backend, rng):
    initial = rng.normal(0, 10, size=(17, 3))
    initial[6] = [1e300, -1e300, 1e300]  # overflows: stops with the step size too small
    kwargs = dict(t_span=(0, 2), t_eval=[0.1, 1.0, 2.0], rtol=1e-6, atol=1e-8, backend=backend)
    full = kernpack.ode.lorenz63_adaptive(initial, **kwargs)
    # As many attempts as the median member takes: about half stop at max_steps.
    kwargs["max_steps"] = int(np.median((full.accepted + full.rejected)[full.success]))
    one = kernpack.ode.lorenz63_adaptive(initial, **kwargs)
    assert set(one.status.tolist()) == {0, 1, 2}
    run = kd.lorenz63_adaptive(da.from_array(initial, chunks=4), **kwargs)
    status = run.status.compute()
    # Statuses differ across blocks (and within some); the stopped members' later saved states are NaN.
    blocks = [tuple(status[i:i + 4].tolist()) for i in range(0, 17, 4)]
    assert len(set(blocks)) > 1 and any(len(set(b)) > 1 for b in blocks), blocks
    assert np.isnan(one.saved[-1][~one.success]).all()
    _adaptive_equal(run, one)


def test_lorenz63_adaptive_runs_each_block_once(monkeypatch, rng):
    calls = []
    solo = kernpack.ode.lorenz63_adaptive

    def counted(x0, *args, **kwargs):
        calls.append(len(x0))
        return solo(x0, *args, **kwargs)

    # In this process (the synchronous scheduler), where the patch holds.
    monkeypatch.setattr(kd._ode, "lorenz63_adaptive", counted)
    initial = rng.normal(0, 10, size=(10, 3))
    run = kd.lorenz63_adaptive(da.from_array(initial, chunks=4), t_eval=[0.5], max_steps=30, backend="cpu")
    got = dask.compute(run.final, run.saved, run.accepted, run.rejected, run.status, run.success, scheduler="sync")
    assert sorted(calls) == [2, 4, 4]
    calls.clear()
    np.testing.assert_array_equal(run.final[:3].compute(scheduler="sync"), got[0][:3])
    assert calls == [4]  # only the block of these members


def test_lorenz63_adaptive_arguments_are_checked_before_anything_runs():
    x = da.zeros((4, 3), chunks=2)
    for kwargs, error, match in (
        (dict(t_span=(1.0, 0.0)), ValueError, "t_end >= t0"),
        (dict(t_eval=[0.5, 0.2]), ValueError, "sorted and unique"),
        (dict(t_eval=[2.0]), ValueError, "outside the time span"),
        (dict(t_eval=[[0.5]]), ValueError, "t_eval must be a 1-D"),
        (dict(rtol=-1.0), ValueError, "rtol"),
        (dict(rtol=0.0, atol=0.0), ValueError, "both be 0"),
        (dict(first_step=2.0), ValueError, "first_step"),
        (dict(first_step=0.0), ValueError, "first_step"),
        (dict(max_step=0.0), ValueError, "max_step"),
        (dict(max_steps=0), ValueError, "max_steps"),
        (dict(max_steps=2**31), ValueError, "max_steps"),
        (dict(rho=float("nan")), ValueError, "rho must be finite"),
        (dict(sigma=np.ones(5)), ValueError, "sigma must be one value or 4 values"),
    ):
        with pytest.raises(error, match=match):
            kd.lorenz63_adaptive(x, **kwargs)
    with pytest.raises(ValueError, match="initial must be"):
        kd.lorenz63_adaptive(da.zeros((4, 2), chunks=2))


def test_calls_at_a_time_per_worker(backend):
    """GPU peaks: two calls at a time per process (one packs while the
    other's kernels run); a whole-periodogram GPU call alone; CPU calls one
    at a time."""
    import threading

    if backend == "cpu":
        assert kd._calls(backend, best=True) is kd._ONE_CALL
        assert kd._calls(backend, best=False) is kd._ONE_CALL
        return
    peaks = kd._calls(backend, best=True)
    assert peaks is kd._GPU_CALLS
    with peaks:  # a second peaks call gets in while one runs ...
        assert peaks.acquire(blocking=False)
        try:  # ... a third does not
            assert not peaks.acquire(blocking=False)
        finally:
            peaks.release()
        # A whole call waits for the peaks call to end, and peaks calls wait for it.
        entered, leave = threading.Event(), threading.Event()

        def whole():
            with kd._calls(backend, best=False):
                entered.set()
                leave.wait(10)

        waiter = threading.Thread(target=whole)
        waiter.start()
        assert not entered.wait(0.2)
    assert entered.wait(10)
    assert not peaks.acquire(blocking=False)
    leave.set()
    waiter.join(10)
    assert peaks.acquire(blocking=False) and peaks.acquire(blocking=False)
    peaks.release()
    peaks.release()
