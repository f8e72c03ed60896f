"""A Parquet survey read straight into NumPy, one task per range of ids,
every series whole in one task: no Dask DataFrame reader, no pandas
conversion, no shuffle.

The plan needs only the files' footers: every row group's minimum and
maximum id. Walking the row groups in id order, it cuts the ids into ranges
of about `target_rows` rows each, preferring cuts that no row group spans
(between files of whole series, say). A task reads every row group that
reaches into its range and keeps the rows of its range: a row group that a
cut goes through (a series written across a row-group boundary) is read by
both tasks. A dataset written sorted by id reads each row once, or a few
row groups twice; where every file spans every id each task would read
everything, and the plan gives up (None) so that the caller shuffles.

Used by :mod:`kernpack.dask` for paths; pyarrow only, so it imports without
Dask.
"""
from __future__ import annotations

import bisect
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

if TYPE_CHECKING:  # pyarrow is imported where it is used: this module imports without it
    import pyarrow.parquet as pq

# About 100 MB of float32 (t, y) and int64 ids per task: tens of thousands
# of survey curves, a batched call that fills a GPU, and a handful of tasks
# in flight per worker fit its memory.
TARGET_ROWS = 1 << 23

# Past this many rows read per row stored (row groups read by several
# tasks), the dataset is not sorted by id and a shuffle costs less.
_MOST_READS_PER_ROW = 1.5


@dataclass(frozen=True)
class RowGroup:
    path: str
    index: int
    rows: int
    lo: int
    hi: int


@dataclass(frozen=True)
class Task:
    """The rows with ids in [lo, end) (end None: no upper bound) of the row
    groups that reach into that range, in id order of the row groups."""

    row_groups: Tuple[RowGroup, ...]
    lo: int
    end: Optional[int]

    def holds_all_of(self, g: RowGroup) -> bool:
        return self.lo <= g.lo and (self.end is None or g.hi < self.end)


def local_files(data) -> Optional[List[str]]:
    """The Parquet files of a local path or list of paths (directories as
    pyarrow's dataset discovery lists them), absolute (the workers may run
    elsewhere) and each once however it is named; or None for anything
    else (remote URLs: Dask's reader takes those)."""
    import pyarrow.dataset as ds

    paths = [os.fspath(p) for p in (data if isinstance(data, (list, tuple)) else [data])]
    files: List[str] = []
    for p in paths:
        if "://" in p or not os.path.exists(p):
            return None
        p = os.path.abspath(p)
        files.extend(sorted(ds.dataset(p, format="parquet").files) if os.path.isdir(p) else [p])
    unique: Dict[str, str] = {}
    for f in files:
        unique.setdefault(os.path.realpath(f), f)
    return list(unique.values())


def _row_groups(path: str, id_col: str, columns: Sequence[str]) -> Optional[Tuple[List[RowGroup], tuple]]:
    """The file's row groups with their id ranges, and the columns' types; or
    None where the footer cannot vouch for them (no such columns, ids not
    integers, values not numbers, missing statistics, null ids)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    schema = meta.schema.to_arrow_schema()
    if any(schema.get_field_index(c) < 0 for c in [id_col, *columns]):
        return None
    if not pa.types.is_integer(schema.field(id_col).type):
        return None
    # Values the reader converts as numbers; any other type (dates) is left to
    # Dask's reader, whose frame gets kernpack's checks and errors.
    if not all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in (schema.field(c).type for c in columns)):
        return None
    # The leaf column of a flat schema has the field's position.
    column = [meta.schema.column(i).path for i in range(meta.num_columns)].index(id_col)
    groups = []
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        if rg.num_rows == 0:
            continue
        stats = rg.column(column).statistics
        if stats is None or not stats.has_min_max or not stats.has_null_count or stats.null_count:
            return None
        groups.append(RowGroup(path, i, rg.num_rows, int(stats.min), int(stats.max)))
    return groups, tuple(schema.field(c).type for c in [id_col, *columns])


@dataclass(frozen=True)
class Plan:
    tasks: List[Task]
    # Dask's divisions: each task's first id, then the highest id of all.
    divisions: Tuple[int, ...]
    id_dtype: np.dtype


def plan(files: Sequence[str], id_col: str, columns: Sequence[str],
         target_rows: Optional[int] = None) -> Optional[Plan]:
    """Tasks in id order; or None where the footers cannot vouch for the
    ids, the files disagree on the columns' types, or the tasks would read
    rows many times over (a dataset not sorted by id)."""
    target_rows = TARGET_ROWS if target_rows is None else target_rows
    if not files:
        return None
    with ThreadPoolExecutor(min(16, len(files))) as pool:
        per_file = list(pool.map(lambda f: _row_groups(f, id_col, columns), files))
    if any(f is None for f in per_file) or len({types for _, types in per_file}) != 1:
        return None
    groups = sorted((g for gs, _ in per_file for g in gs), key=lambda g: (g.lo, g.hi, g.path, g.index))
    if not groups:
        return None
    # Row groups that follow one another in id order (a dataset written in
    # id order, a series crossing from one row group into the next): a
    # range holds at least two of the largest, since each cut through a
    # series re-reads one row group, which is then at most half a range's
    # rows. (With the target below a row group, every row would be read
    # twice and the plan give way to Dask's shuffle, measured 20-30x slower
    # on 2 x 10^8 rows.)
    if all(b.lo >= a.hi for a, b in zip(groups, groups[1:])):
        target_rows = max(target_rows, 2 * max(g.rows for g in groups))
    cuts = _cuts(groups, target_rows)
    members: List[List[RowGroup]] = [[] for _ in cuts]
    begun = [0] * len(cuts)
    for g in groups:  # a row group belongs to every range from its lowest id's to its highest's
        first = bisect.bisect_right(cuts, g.lo) - 1
        begun[first] += g.rows
        for k in range(first, bisect.bisect_right(cuts, g.hi)):
            members[k].append(g)
    # Sorted by id, a range begins at most two targets' rows and one row
    # group more; more means ranges could not be cut (row groups that all
    # begin at the same ids).
    if max(begun) > 2 * target_rows + max(g.rows for g in groups):
        return None
    if sum(g.rows for m in members for g in m) > _MOST_READS_PER_ROW * sum(g.rows for g in groups):
        return None
    ends = cuts[1:] + [None]
    tasks = [Task(tuple(m), lo, end) for m, lo, end in zip(members, cuts, ends)]
    divisions = tuple(cuts) + (max(g.hi for g in groups),)
    return Plan(tasks, divisions, np.dtype(per_file[0][1][0].to_pandas_dtype()))


def _cuts(groups: List[RowGroup], target_rows: int) -> List[int]:
    """The first id of every range: the lowest id, then a cut where the row
    groups begun since the last cut hold `target_rows` rows, at a gap that no
    row group spans if one comes before twice that, else where it falls."""
    cuts = [groups[0].lo]
    rows, highest = 0, groups[0].hi
    for g in groups:
        if g.lo > cuts[-1] and (rows >= 2 * target_rows or (rows >= target_rows and highest < g.lo)):
            cuts.append(g.lo)
            rows = 0
        rows += g.rows
        highest = max(highest, g.hi)
    return cuts


def read(task: Task, columns: Sequence[str], id_col: str, use_threads: Optional[bool] = None,
         opened: Optional[Dict[str, "pq.ParquetFile"]] = None) -> Dict[str, np.ndarray]:
    """The task's rows as one NumPy array per column.

    `opened`: files already open, by path (and where the ones this call
    opens are kept), so that reading a file a row group at a time parses its
    footer once.

    `use_threads` None: decode on pyarrow's CPU pool when it has more than
    one thread, else on the calling thread. Dask's worker processes start
    with OMP_NUM_THREADS=1, which leaves pyarrow one pool thread for the
    whole process: the worker's threads would then take turns decoding
    (measured on an H100 host: 16 survey files through one worker of 8
    threads in 2.0-2.7 s, against 1.1-1.2 s decoding on each thread)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if use_threads is None:
        use_threads = pa.cpu_count() > 1

    by_file: Dict[str, List[RowGroup]] = {}
    for g in task.row_groups:
        by_file.setdefault(g.path, []).append(g)
    # One read per file (its row groups in file order, read in parallel by
    # pyarrow), then each row group a slice of it, put in the task's order,
    # cut to the task's range where it reaches past it.
    opened = {} if opened is None else opened
    where: Dict[Tuple[str, int], "pa.Table"] = {}
    for path, gs in by_file.items():
        gs = sorted(gs, key=lambda g: g.index)
        if path not in opened:
            opened[path] = pq.ParquetFile(path)
        table = opened[path].read_row_groups([g.index for g in gs], columns=list(columns), use_threads=use_threads)
        at = 0
        for g in gs:
            where[(path, g.index)] = table.slice(at, g.rows)
            at += g.rows
        if at != table.num_rows:
            raise ValueError(f"{path} changed since its footer was read ({table.num_rows} rows, expected {at})")
    pieces = []
    for g in task.row_groups:
        piece = where[(g.path, g.index)]
        if not task.holds_all_of(g):
            ids = piece.column(id_col)
            keep = pc.greater_equal(ids, task.lo)
            if task.end is not None:
                keep = pc.and_(keep, pc.less(ids, task.end))
            piece = piece.filter(keep)
        pieces.append(piece)
    # One chunk per column, in Arrow's memory pool (which keeps its pages:
    # NumPy's fresh allocations of this size fault every page in anew), then
    # NumPy views of it.
    table = (pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)).combine_chunks()
    return {c: table.column(c).to_numpy() for c in columns}


def pieces(task: Task, columns: Sequence[str], id_col: str,
           use_threads: Optional[bool] = None) -> Iterator[Dict[str, np.ndarray]]:
    """The task's rows in pieces that each hold whole series, no series in
    two pieces: a row group at a time where the task's row groups follow
    one another in id order (each one's lowest id at least the previous
    one's highest), so that a worker's first batched call waits for one row
    group rather than the whole task; else the whole task as one piece.

    A series that crosses from one row group into the next (its id is the
    earlier one's highest) is held back from both, joined from its parts,
    and all such series of the task come last, as one piece (so the pieces
    are in id order but for that last one). Joining only those series
    copies a few hundred rows each; joining the held rows to the whole next
    row group copied millions, most of a worker's reading time, and a piece
    per crossing series would be one more batched call per row group."""
    groups = task.row_groups
    if any(a.hi > b.lo for a, b in zip(groups, groups[1:])):
        yield read(task, columns, id_col, use_threads)
        return
    waiting: List[Dict[str, np.ndarray]] = []  # parts of the series crossing into this row group
    crossing: List[Dict[str, np.ndarray]] = []  # crossing series, joined
    opened: Dict[str, "pq.ParquetFile"] = {}
    for i, g in enumerate(groups):
        cols = read(Task((g,), task.lo, task.end), columns, id_col, use_threads, opened)
        ids = cols[id_col]
        # Sorted ids (the usual layout) are cut by binary search into views,
        # others by masks into copies; one pass decides, for both cuts.
        ordered = ids.size < 2 or bool(np.all(ids[1:] >= ids[:-1]))
        goes_on = i + 1 < len(groups) and groups[i + 1].lo <= g.hi
        if waiting:
            # Its id is the lowest here (row groups follow in id order).
            head, cols = _split(cols, id_col, waiting[0][id_col][0], "right", ordered)
            waiting.append(head)
            if cols[id_col].size or not goes_on:  # it ends in this row group
                crossing.append(_joined(waiting))
                waiting = []
        if goes_on and cols[id_col].size:
            # Rows of this row group's highest id go on in the next one.
            cols, tail = _split(cols, id_col, cols[id_col].max(), "left", ordered)
            waiting = [tail]
        if cols[id_col].size:
            yield cols
    if waiting:
        crossing.append(_joined(waiting))
    if crossing:  # every part holds rows: a tail is cut from rows at their highest id
        yield _joined(crossing)


def _joined(parts: List[Dict[str, np.ndarray]]) -> Dict[str, np.ndarray]:
    return {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}


def _split(cols: Dict[str, np.ndarray], id_col: str, at, side: str, ordered: bool):
    """(rows with id below `at`, the rest) for side "left"; (rows with id up
    to `at`, the rest) for side "right". Views when the ids are `ordered`
    (non-decreasing), else masked copies."""
    ids = cols[id_col]
    if ordered:
        cut = int(np.searchsorted(ids, at, side=side))
        return {c: v[:cut] for c, v in cols.items()}, {c: v[cut:] for c, v in cols.items()}
    first = ids < at if side == "left" else ids <= at
    return {c: v[first] for c, v in cols.items()}, {c: v[~first] for c, v in cols.items()}
