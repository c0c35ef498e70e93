"""Every data row of the benchmark CSVs, folded into cells: what the report (and `record stale`)
knows from the CSVs.

The rows come from the one reader (csvread.rows) and mean what they mean to the import: each
fact (outcome, model, length, date, machine, commit) is rowfacts' or core.machine's decision,
made once per distinct cell value and joined back, and a row without a commit of its own gets the
one the import would give it (csvread.commits: the sweep's provenance, else git). Rows are folded
in polars into one entry per (model, machine class, length, outcome): its first and its latest
row by date; thousands of files repeat a few hundred cells, and only the cells are kept.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from oomrec.core import rowfacts
from oomrec.core.errors import OomrecError
from oomrec.core.gcpause import no_cycle_collection
from oomrec.core.machine import MachineClass, file_class, file_host
from oomrec.core.modelnames import last_part, model_name
from oomrec.core.provenance import SidecarFinder, measured_on
from oomrec.core.records import UNKNOWN_COMMIT, source_field, source_path
from oomrec.core.rowfacts import Outcome, outcome_of
from oomrec.core.schema import DEFAULT_COMMIT_COLUMNS, FAKE_OOM_PROMPT, Token, is_faked
from oomrec.csvread import files as csvscan
from oomrec.csvread import rows as rowread
from oomrec.csvread.commits import Wanted, git_commits, row_date
from oomrec.report import scancache, scanparts
from oomrec.report.folded import CellKey, CellRows, FileAt, Machine, Scan, Seen, mem_of, row_machine

if TYPE_CHECKING:
    import polars as pl


_FAKE = FAKE_OOM_PROMPT.encode()
# The roles the scan reads of a row.
_ROLES = ("model", "hardware", "date", "target", "tokens", "prompt", "commit")
# Internal columns of the fold.
_MODEL, _MACH, _LEN, _OUT, _DATE, _COMMIT, _AIMED, _ORDER = (
    "m",
    "mach",
    "len",
    "out",
    "day",
    "sha",
    "aimed",
    "order",
)


@no_cycle_collection()
def scan_csvs(
    paths: Sequence[Path],
    root: Path,
    commit_columns: Sequence[str] = DEFAULT_COMMIT_COLUMNS,
    *,
    in_git: bool = False,
    engine: str = rowread.POLARS,
    keep_in: Path | None = None,
) -> Scan:
    """Every data row of every CSV under `paths` (files and folders, recursive `*.csv`), folded.

    Files are found and skipped as `record import-csv` finds and skips them. Rows that are no
    row of their header are counted (`unreadable_rows`), rows without a length (that ran) and
    faked OOMs say nothing. `in_git`: `root` is a git work tree, asked for the commit (and date)
    of each OOM a row shows without one, as the import asks. `engine`: the row reader's.
    `keep_in`: the folder the last scan is kept in: only the files that changed since are
    read, and folded into the parts kept of the others (report/scanparts.py). The result is the
    same scan either way. Git is asked afresh every time: what it answers depends on more than
    any key could name (HEAD, the index, replace refs, grafts, a shallow cut, config, the
    attributes, the time zone), and asking costs little, a few rows per cell.
    """
    files, refused = csvscan.find_csv_files(paths)
    if keep_in is None:
        out, at = _read_fold(files, root, commit_columns, engine)
        return _finish(out, at, refused, root, in_git)
    # Git's answers an earlier version kept there: never read again.
    with contextlib.suppress(OSError):
        os.unlink(keep_in / "report-git")
    asked = (str(root.resolve()), tuple(commit_columns), engine)
    out, at = scanparts.scan(
        keep_in / "report-parts",
        asked,
        files,
        scancache.sign(files),
        lambda todo: _read_fold(todo, root, commit_columns, engine),
    )
    return _finish(out, at, refused, root, in_git)


def _finish(
    out: Scan, at: dict[str, FileAt], refused: list[csvscan.ScannedFile], root: Path, in_git: bool
) -> Scan:
    """The scan of the files read, with the refused files counted and, `in_git`, the commits git
    gives the OOM rows; each reason a file is skipped in order, as any part would give them."""
    for bad in refused:
        out.files_skipped[bad.skipped or ""] = out.files_skipped.get(bad.skipped or "", 0) + 1
    out.files_skipped = dict(sorted(out.files_skipped.items()))
    out.files_at = at
    if in_git:
        _commits_from_git(out, at, root)
    return out


def resolve_commits(scan: Scan, keys: Iterable[CellKey], root: Path) -> None:
    """The commits (and dates) git gives the run and guard rows of the cells `keys`, where the
    rows hold none: the rows a memory regression is judged by (report/regressions.py). The
    scan asks them for the cells a CSV row shows stopped; this, after it, for the few cells
    only a record shows stopped (every row's would cost a blame of every changed file)."""
    cells = [scan.cells[k] for k in keys if k in scan.cells]
    if cells:
        _commits_from_git(scan, scan.files_at, root, cells, (Outcome.RAN, Outcome.GUARD))


def _read_fold(
    files: list[str], root: Path, commit_columns: Sequence[str], engine: str
) -> tuple[Scan, dict[str, FileAt]]:
    """The rows of `files` folded, before git is asked anything, and each read file by its
    source field."""
    import polars as pl

    scanned = csvscan.scan_files(files, keep_body=True)
    out = Scan()
    for bad in scanned:
        if bad.skipped is not None:
            out.files_skipped[bad.skipped] = out.files_skipped.get(bad.skipped, 0) + 1
    read = [f for f in scanned if f.skipped is None]
    out.files_read = len(read)
    root_str = str(root.resolve())
    # Each file's path as a record names it (relative to the root), worked out once.
    relative = [source_path(f.path, root_str, resolved=True) for f in read]
    sources = [source_field(r) for r in relative]
    at = {
        source: FileAt(f.path, rel, f.git_lines)
        for source, rel, f in zip(sources, relative, read, strict=True)
    }
    parts = []
    faked = False
    for i, f in enumerate(read):
        faked = faked or _FAKE in f.body
        parts.append(rowread.Lines(i, f.header, f.body, f.body_line))
        f.body = b""  # held marked in `parts` now: the plain copy goes
    if not parts:
        return out, at
    # The prompt is read only to tell a faked OOM, and only a file that holds one needs it.
    roles = _ROLES if faked else tuple(r for r in _ROLES if r != "prompt")
    frame = rowread.read(parts, commit_columns, engine, roles, ordered=False)
    del parts
    out.rows = frame.height
    problem = pl.col(rowread.PROBLEM)
    out.unreadable_rows = frame.select(problem.is_not_null().sum()).item()
    if out.unreadable_rows == out.rows:
        return out, at
    rows, codes, out.oom_rows_left_out = _facts(frame, read)
    del frame
    if rows.height == 0:
        return out, at
    _fold(rows, sources, codes, out)
    return out, at


def _coded(
    frame: pl.DataFrame, column: str, decide: Callable[[Any], Any]
) -> tuple[pl.Expr, list[Any]]:
    """`decide` of each value of `column` (called once per distinct value), as an index into
    the sorted list of decided values also returned (None decided: null): the fold groups and
    compares small integers, not strings, and a code sorts as its value."""
    import polars as pl

    values = frame.get_column(column).unique().to_list()
    facts = [decide(v) for v in values]
    decided = sorted({f for f in facts if f is not None})
    index = {fact: i for i, fact in enumerate(decided)}
    codes = [index[f] if f is not None else None for f in facts]
    keyed = [(v, c) for v, c in zip(values, codes, strict=True) if v is not None]
    expr = pl.col(column).replace_strict(
        [v for v, _ in keyed], [c for _, c in keyed], default=None, return_dtype=pl.UInt32
    )
    if None in values:
        null_code = codes[values.index(None)]
        expr = expr.fill_null(null_code) if null_code is not None else expr
    return expr, decided


def _mapped(frame: pl.DataFrame, column: str, decide: Callable[[str], Any], dtype: Any) -> pl.Expr:
    """`decide` of each value of `column`, called once per distinct value."""
    import polars as pl

    values = frame.get_column(column).drop_nulls().unique().to_list()
    decided = [decide(v) for v in values]
    return pl.col(column).replace_strict(values, decided, default=None, return_dtype=dtype)


def _facts(frame: pl.DataFrame, read: list[csvscan.ScannedFile]) -> tuple[pl.DataFrame, Codes, int]:
    """The rows of their header with their facts, in file and line order: model, machine class (an
    index into the list also returned), length, outcome, date, commit (None: the row names
    none), whether the length is a target; rows that say nothing left out, and how many of
    them are OOMs (no model or no length).

    Each fact is decided once per distinct cell value (a corpus repeats a few), in Python by
    rowfacts and core.machine, and mapped onto the rows in one lazy polars query, which reads
    each column once and materialises only the columns the fold keeps."""
    import polars as pl

    target, tokens, token = pl.col("target"), pl.col("tokens"), pl.col(rowread.TOKEN)
    outcome, outcomes = _coded(frame, rowread.TOKEN, outcome_of)
    models_of, models = _coded(frame, "model", _model)
    days_of, days = _coded(frame, "date", rowfacts.date_of)
    oom = token.eq_missing(Token.TRUE_OOM.value)
    # rowfacts.length_of reads prompt_target_len, else prompt_tokens: each column's values are
    # decided alone, and the row takes the first it states.
    length = (
        pl.when(target != "")
        .then(_mapped(frame, "target", lambda t: rowfacts.length_of(t, "").value, pl.UInt64))
        .otherwise(_mapped(frame, "tokens", lambda n: rowfacts.length_of("", n).value, pl.UInt64))
    )
    hosts = [file_host(f.path) for f in read]
    machine, machines = _machine_ids(frame, hosts)
    faked: list[str] = []
    if "prompt" in frame.columns:
        prompts = frame.filter(token == Token.TRUE_OOM).get_column("prompt").unique()
        faked = [p for p in prompts.to_list() if is_faked(p)]
    # MLXCEL_BENCH_FAKE_OOM / sweep --fake-oom: a cell never launched, no evidence.
    fake = (oom & pl.col("prompt").is_in(faked)) if faked else pl.lit(False)
    # The OOM rows alone (a few in a hundred) asked which say nothing a cell can hold.
    left_out = (
        frame.lazy()
        .filter(pl.col(rowread.PROBLEM).is_null() & oom)
        .select(((models_of.is_null() | length.is_null()) & ~fake).sum())
        .collect()
        .item()
    )
    query = (
        frame.lazy()
        .filter(pl.col(rowread.PROBLEM).is_null())
        .select(
            rowread.FILE,
            rowread.LINE,
            models_of.alias(_MODEL),
            machine.alias(_MACH),
            length.alias(_LEN),
            outcome.alias(_OUT),
            # A day's code sorts as the day: the days are decided in date order.
            days_of.alias(_DATE),
            _commits(frame).alias(_COMMIT),
            ((target != "") & length.is_not_null()).alias(_AIMED),
            # A row that ran states its length; an OOM without one stands at the shortest prompt.
            ((target != "") | (tokens != "") | oom).alias("_stated"),
            fake.alias("_faked"),
        )
    )
    query = query.filter(
        pl.col(_MODEL).is_not_null()
        & pl.col(_LEN).is_not_null()
        & pl.col("_stated")
        & ~pl.col("_faked")
    ).drop("_stated", "_faked")
    query = _with_provenance(query, frame, read, machines, models)
    # After the provenance (keyed by the row's own model field): one row per model.
    query = _fold_last_parts(query, frame, read, models)
    # In file and line order: the fold keeps the first of equal rows.
    rows = query.sort(rowread.FILE, maintain_order=True).with_row_index(_ORDER).collect()
    return rows, Codes(machines, models, outcomes, days), left_out


class Codes(NamedTuple):
    """What the fold's integer columns stand for: index -> machine, model, outcome, day."""

    machines: list[Machine]
    models: list[str]
    outcomes: list[Outcome]
    days: list[str]


def _machine_ids(frame: pl.DataFrame, hosts: list[str | None]) -> tuple[pl.Expr, list[Machine]]:
    """Each row's machine class as an index into the list returned: decided once per (file
    host, file class, hardware) by core.machine, a row that names no hardware taking the one
    class its file's other rows name (core.machine.file_class), as the import does."""
    import polars as pl

    hardware = frame.get_column("hardware").unique().to_list()
    width = len(hardware)
    hardware_of = pl.col("hardware").replace_strict(
        hardware, list(range(width)), return_dtype=pl.UInt32
    )
    # Per file, the hardware values its rows of the header name: one integer per pair.
    pairs = (
        frame.lazy()
        .filter(pl.col(rowread.PROBLEM).is_null())
        .select((pl.col(rowread.FILE).cast(pl.UInt64) * width + hardware_of).unique())
        .collect()
        .to_series()
        .to_list()
    )
    named: dict[int, list[str]] = {}
    for pair in pairs:
        value = hardware[pair % width]
        if value:
            named.setdefault(pair // width, []).append(value)
    # A file's context: its host and the class of its rows that name no hardware (few).
    per_file = [(host, file_class(host, named.get(i, ()))) for i, host in enumerate(hosts)]
    contexts: list[tuple[str | None, MachineClass]] = list(dict.fromkeys(per_file))
    context_index = {context: i for i, context in enumerate(contexts)}
    of_file = [context_index[context] for context in per_file]
    context_of = pl.lit(pl.Series(of_file, dtype=pl.UInt32)).gather(pl.col(rowread.FILE))
    # One integer per (context, hardware): the pairs present are few, each decided once.
    key = context_of.cast(pl.UInt64) * width + hardware_of
    keys = frame.select(key.unique()).to_series().to_list()
    machines: list[Machine] = []
    index: dict[Machine, int] = {}
    codes = []
    for pair in keys:
        (host, unnamed), value = contexts[pair // width], hardware[pair % width]
        machine = row_machine(value, host, unnamed)
        codes.append(index.setdefault(machine, len(machines)))
        if codes[-1] == len(machines):
            machines.append(machine)
    return key.replace_strict(keys, codes, return_dtype=pl.UInt32), machines


def _commits(frame: pl.DataFrame) -> pl.Expr:
    """Each row's commit as rowfacts.commit_of reads its cell: a cell it keeps as written
    (short, no control character: nearly every one) is not asked about, one by one."""
    import polars as pl

    commit = pl.col("commit")
    odd = (commit.str.len_chars() > rowfacts.MAX_COMMIT_CHARS) | commit.str.contains(
        rf"[\x00-\x1f\x7f{re.escape(rowfacts.COMMIT_REFUSED)}]"
    )
    values = frame.filter(odd).get_column("commit").unique().to_list()
    kept = pl.when(commit != "").then(commit)
    if not values:
        return kept
    decided = [rowfacts.commit_of(v)[0] for v in values]
    return (
        pl.when(commit.is_in(values))
        .then(commit.replace_strict(values, decided, default=None, return_dtype=pl.String))
        .otherwise(kept)
    )


def _model(cell: str) -> str | None:
    model = rowfacts.model_of(cell)
    return None if rowfacts.model_problem(model) else model


def _fold_last_parts(
    query: pl.LazyFrame, frame: pl.DataFrame, read: list[csvscan.ScannedFile], models: list[str]
) -> pl.LazyFrame:
    """One row per model: a row whose model is the last part of exactly one nested model of the
    same file (its other rows, or its sweep's provenance) is that model's. The harness's runner
    names `org/moe-30b` by its folder's name, `moe-30b`, and its skip rows by the name as given;
    both are one model. A last part that two nested models of the file share stays as it is."""
    import polars as pl

    # Only a file with a nested name, in its rows or its sweep's provenance, can fold one: the
    # others (nearly every file) are not asked (a model name holds a `/` only if its cell does).
    sidecars = SidecarFinder()
    swept = {i: _swept(f.path) for i, f in enumerate(read) if sidecars.has_one(f.path)}
    rows = frame.filter(pl.col(rowread.PROBLEM).is_null())
    cells = [v for v in frame.get_column("model").unique().to_list() if v and "/" in v]
    asked = {i for i, m in swept.items() if m}
    if cells:
        nested_in = rows.filter(pl.col("model").is_in(cells)).get_column(rowread.FILE)
        asked |= set(nested_in.unique().to_list())
    if not asked:
        return query
    names: dict[int, set[str]] = {}
    decided: dict[str, str | None] = {}
    pairs = rows.filter(pl.col(rowread.FILE).is_in(sorted(asked))).select(rowread.FILE, "model")
    for file, value in pairs.unique().iter_rows():
        if value is None:
            continue
        if value not in decided:
            decided[value] = _model(value)
        name = decided[value]
        if name is not None:
            names.setdefault(file, set()).add(name)
    code = {name: i for i, name in enumerate(models)}
    entries = []
    for file, seen in names.items():
        if not any("/" not in n for n in seen):
            continue
        nested: dict[str, list[str]] = {}
        for name in seen | swept.get(file, set()):
            if "/" in name:
                nested.setdefault(last_part(name), []).append(name)
        for name in seen:
            into = nested.get(name, [])
            if "/" in name or len(into) != 1:
                continue
            if into[0] not in code:
                code[into[0]] = len(models)
                models.append(into[0])
            entries.append((file, code[name], code[into[0]]))
    if not entries:
        return query
    table = pl.DataFrame(
        entries, schema={rowread.FILE: pl.UInt32, _MODEL: pl.UInt32, "_to": pl.UInt32}, orient="row"
    )
    return (
        query.join(table.lazy(), on=[rowread.FILE, _MODEL], how="left", maintain_order="left")
        .with_columns(pl.coalesce("_to", _MODEL).alias(_MODEL))
        .drop("_to")
    )


def _swept(csv_path: str) -> set[str]:
    """The models of the sweep that wrote this CSV, from its provenance file (none without)."""
    from oomrec.core.provenance import read_entry_list, sidecar_path

    sidecar = sidecar_path(Path(csv_path))
    try:
        return {model_name(entry.model) for entry in read_entry_list(sidecar)}
    except OomrecError:
        return set()


def _with_provenance(
    query: pl.LazyFrame,
    frame: pl.DataFrame,
    read: list[csvscan.ScannedFile],
    machines: list[Machine],
    models: list[str],
) -> pl.LazyFrame:
    """A sweep's own rows without a commit take the commit (and machine) their cell ran with,
    from the sweep's provenance file, as the import gives them."""
    import polars as pl

    entries: list[tuple[int, int, int, str, int | None]] = []
    sidecars = SidecarFinder()
    for i in frame.get_column(rowread.FILE).unique().to_list():
        if not sidecars.has_one(read[i].path):
            continue
        for (model, length), where in measured_on(Path(read[i].path)).items():
            if model not in models:
                continue
            mach = None
            if where.hardware is not None:
                machine = Machine(where.hardware, mem_of(where.mem_bytes))
                if machine not in machines:
                    machines.append(machine)
                mach = machines.index(machine)
            entries.append((i, models.index(model), length, where.commit, mach))
    if not entries:
        return query
    table = pl.DataFrame(
        entries,
        schema={
            rowread.FILE: pl.UInt32,
            _MODEL: pl.UInt32,
            _LEN: pl.UInt64,
            "_pcommit": pl.String,
            "_pmach": pl.UInt32,
        },
        orient="row",
    ).unique([rowread.FILE, _MODEL, _LEN], keep="first")
    lacks = pl.col(_COMMIT).is_null() & pl.col("_pcommit").is_not_null()
    return (
        query.join(table.lazy(), on=[rowread.FILE, _MODEL, _LEN], how="left", maintain_order="left")
        .with_columns(
            pl.when(lacks).then(pl.col("_pcommit")).otherwise(pl.col(_COMMIT)).alias(_COMMIT),
            pl.when(lacks & pl.col("_pmach").is_not_null())
            .then(pl.col("_pmach"))
            .otherwise(pl.col(_MACH))
            .alias(_MACH),
        )
        .drop("_pcommit", "_pmach")
    )


# Row orders are below this (a row index is 32 bits): (rank, order) packs into one integer.
_SPAN = 1 << 32


def _fold(rows: pl.DataFrame, sources: list[str], codes: Codes, out: Scan) -> None:
    """The rows into cells (first and latest per outcome), the fits and the targets; `sources`:
    each file's source field, by file index."""
    import polars as pl

    # The first row (smallest order) of the greatest date and of the smallest; undated rows
    # compare as none, and a cell of undated rows only takes its first row. Each is the smallest
    # of one integer per row, (undated, date or its inverse, order), so the fold is a plain min.
    undated = pl.col(_DATE).is_null()
    order = pl.col(_ORDER).cast(pl.UInt64)
    day = pl.col(_DATE).cast(pl.UInt64)
    top = pl.lit(_SPAN << 30, pl.UInt64)
    latest_key = (
        pl.when(undated).then(top + order).otherwise((len(codes.days) - day) * _SPAN + order)
    )
    first_key = pl.when(undated).then(top + order).otherwise(day * _SPAN + order)
    cells = rows.group_by([_MODEL, _MACH, _LEN, _OUT], maintain_order=True).agg(
        (latest_key.min() % _SPAN).alias("latest"),
        (first_key.min() % _SPAN).alias("earliest"),
    )
    days = codes.days
    # The rows a Seen is made of, fetched at once.
    at = pl.concat([cells.get_column("latest"), cells.get_column("earliest")]).unique()
    picked = rows.select(pl.col(_ORDER, rowread.FILE, rowread.LINE, _DATE, _COMMIT).gather(at))
    seen_at = {
        i: Seen(
            f"{sources[file]}:{line}",
            days[day] if day is not None else None,
            commit or UNKNOWN_COMMIT,
        )
        for i, file, line, day, commit in picked.iter_rows()
    }
    models, machines, outcomes = codes.models, codes.machines, codes.outcomes
    for model, mach, length, outcome, latest, earliest in cells.iter_rows():
        key = (models[model], machines[mach], length)
        cell = out.cells.get(key)
        if cell is None:
            cell = out.cells[key] = CellRows()
        kind = outcomes[outcome]
        cell.latest[kind] = seen_at[latest]
        cell.first[kind] = seen_at[earliest]
    # No row ran: no fits (a code no row has).
    ran_code = outcomes.index(Outcome.RAN) if Outcome.RAN in outcomes else len(outcomes)
    ran = rows.filter((pl.col(_OUT) == ran_code) & pl.col(_DATE).is_not_null())
    # The first row of the longest length that ran, per point: the smallest (rank of the length
    # from the longest, order).
    lengths = sorted(ran.get_column(_LEN).unique().to_list(), reverse=True)
    rank = pl.col(_LEN).replace_strict(lengths, list(range(len(lengths))), return_dtype=pl.UInt64)
    best = ran.group_by([_MODEL, _MACH, _DATE], maintain_order=True).agg(
        ((rank * _SPAN + order).min() % _SPAN).alias("at")
    )
    # In the groups' order (each point's first row in file order), as the rows came.
    at_rows = best.select(pl.col("at").cast(pl.UInt32).alias(_ORDER), _MODEL, _MACH, _DATE).join(
        ran.select(_ORDER, _LEN, _COMMIT, rowread.FILE, rowread.LINE),
        on=_ORDER,
        how="left",
        maintain_order="left",
    )
    fits = at_rows.select(
        _MODEL, _MACH, _DATE, pl.col(_LEN), pl.col(_COMMIT), rowread.FILE, rowread.LINE
    )
    out.fits = {
        (models[model], machines[mach], days[day]): (
            n,
            commit or UNKNOWN_COMMIT,
            f"{sources[file]}:{line}",
        )
        for model, mach, day, n, commit, file, line in fits.iter_rows()
    }
    aimed = rows.filter(pl.col(_AIMED)).select(_MACH, _LEN).unique()
    for mach, length in aimed.iter_rows():
        out.targets.setdefault(machines[mach], set()).add(length)


_STOPPED_CELL = (Outcome.OOM, Outcome.RAN, Outcome.GUARD)


def _commits_from_git(
    out: Scan,
    at: dict[str, FileAt],
    root: Path,
    cells: Sequence[CellRows] | None = None,
    outcomes: Sequence[Outcome] = (Outcome.OOM,),
) -> None:
    """The commit (and date) git gives each OOM a CSV row shows without one, as the import
    gives it to the record it makes: the OOM is judged by the commit it was measured at.
    `at`: each read file by its source field; `cells` (default: all) and `outcomes`: the
    sightings asked about."""
    # Each row git is asked about, with its file's path.
    wanted: dict[Seen, tuple[Wanted, str]] = {}
    for cell in out.cells.values() if cells is None else cells:
        asked = outcomes
        if cells is None and (Outcome.OOM in cell.latest or Outcome.GUARD in cell.latest):
            # A cell that ran and stopped: its runs' and stops' commits are what a memory
            # regression is judged by (report/regressions.py), asked in the same git call.
            asked = _STOPPED_CELL
        for seen in (s for o in asked for s in (cell.latest.get(o), cell.first.get(o))):
            if seen is None or (seen.commit != UNKNOWN_COMMIT and seen.date):
                continue
            source, _, line = seen.where.rpartition(":")
            file = at.get(source)
            if file is None:
                continue
            lineno = int(line)
            git_line = lineno if file.git_lines is None else file.git_lines[lineno - 1]
            row = Wanted(file.relative, git_line, seen.commit == UNKNOWN_COMMIT)
            wanted[seen] = (row, file.path)
    if not wanted:
        return
    commits = git_commits([row for row, _ in wanted.values()], root, in_git=True)
    resolved: dict[Seen, Seen] = {}
    for seen, (row, path) in wanted.items():
        added = commits.of(row)
        commit = seen.commit if not row.lacks_commit else (added.sha if added else seen.commit)
        resolved[seen] = Seen(seen.where, row_date(seen.date, added, path), commit)
    for cell in out.cells.values() if cells is None else cells:
        for rows in (cell.latest, cell.first):
            for outcome in _STOPPED_CELL if cells is None else outcomes:
                seen = rows.get(outcome)
                if seen is not None and seen in resolved:
                    rows[outcome] = resolved[seen]


def oom_commits(scan: Scan) -> set[str]:
    """The commit of each cell's latest OOM row (the Seen csv_evidence judges)."""
    return {c.latest[Outcome.OOM].commit for c in scan.cells.values() if Outcome.OOM in c.latest}
