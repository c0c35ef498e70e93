"""What a runner wrote to its cell CSV, read as untrusted input.

The runner may leave anything at `{cell_csv}`: a FIFO (a blocking open would hang the sweep past
any timeout), a symlink to `/dev/zero` (a read would never end), to `/etc/passwd`, or rows of
other cells. So the file is opened non-blocking, read only when it is a regular file (after
symlinks), at most CELL_CSV_CAP bytes, and only rows of the cell's own model and length are kept:
a runner's extra rows copied into the aggregate would become records at the next import.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from oomrec.core.modelnames import last_part
from oomrec.core.regular import NotRead, read_regular
from oomrec.core.schema import Token, line_token, split_row

# A harness cell CSV is a header and one row, well under 4 KiB.
CELL_CSV_CAP = 1024 * 1024
_LENGTH_COLUMN = "prompt_target_len"


@dataclass(frozen=True, slots=True)
class CellCsv:
    """The header line and the cell's own data rows, each as written without its `\\n` (a
    `\\r` or a trailing blank kept, so the aggregate gets the runner's bytes), the rows of other
    cells that were dropped, and why the file was not read at all (None when it was, or is
    absent). `harness_row`: the file's second line, the one the harness classifies (None when
    there is none). `named`: the model the kept row names when that is not the cell's.
    `repeated`: further rows of the cell itself, left out (a cell has one row; see `_one_row`)."""

    header: str | None
    rows: tuple[str, ...]
    dropped: tuple[str, ...] = ()
    problem: str | None = None
    harness_row: str | None = field(default=None, compare=False)
    named: str | None = None
    repeated: tuple[str, ...] = ()


def read_cell_csv(path: Path, model: str, length: int) -> CellCsv:
    """The cell CSV as written, keeping only the rows of the cell (`model` at `length`)."""
    try:
        data = _read_regular(path)
    except FileNotFoundError:
        return CellCsv(None, ())
    except _NotRead as exc:
        return CellCsv(None, (), problem=str(exc))
    text = data.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")
    raw = text.split("\n")
    if raw and raw[-1] == "":
        raw.pop()
    # bench_longprompt.sh classifies `tail -n +2 | head -n 1`: the second line, blank or not.
    harness_row = raw[1] if len(raw) > 1 else None
    lines = [line for line in raw if line.strip()]
    if not lines:
        return CellCsv(None, (), harness_row=harness_row)
    header, rows = lines[0], lines[1:]
    kept, dropped, named = _own_rows(header, rows, model, length)
    row, repeated = _one_row(kept)
    return CellCsv(header, row, tuple(dropped), None, harness_row, named, repeated)


def _one_row(kept: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The cell's one row and the rest. A runner that writes its row twice would put two rows
    of one cell into the aggregate (the harness copies both), and two rows that disagree would
    count twice in every reader. The first true OOM is kept when there is one, the safe side:
    the row the aggregate keeps is the one the verdict and the record come from."""
    if len(kept) <= 1:
        return tuple(kept), ()
    chosen = next((row for row in kept if line_token(row) == Token.TRUE_OOM), kept[0])
    rest = list(kept)
    rest.remove(chosen)
    return (chosen,), tuple(rest)


def remove(path: Path) -> None:
    """Remove whatever the runner left at `path` (a file, a FIFO, a symlink, a directory)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


class _NotRead(Exception):
    """The cell CSV exists but is not read; the message says why."""


def _read_regular(path: Path) -> bytes:
    try:
        data, _ = read_regular(path, CELL_CSV_CAP)
    except NotRead as why:
        if why.kind:
            raise _NotRead(f"the cell CSV is {why.kind}, not a regular file; not read") from None
        if why.size:
            raise _NotRead(
                f"the cell CSV is {why.size} bytes, over the {CELL_CSV_CAP} bytes a cell CSV "
                "may have; not read"
            ) from None
        raise _NotRead(f"cannot {why.stage} the cell CSV ({why.error}); not read") from None
    return data


def _own_rows(
    header: str, rows: list[str], model: str, length: int
) -> tuple[list[str], list[str], str | None]:
    """Rows of the cell; the others; the model the kept rows name when not the cell's.

    The model is the `model` column (else the first), as the cell names it or its basename. The
    length is the `prompt_target_len` column, or one of the row's last three raw fields, where
    the harness puts it: a CSV parser misreads a harness row whose prompt holds unescaped
    quotes. A row of the model whose length is empty or has no column cannot be told apart from
    the cell's own: the first such row is kept, since dropping a runner's own SKIP:oom would
    miss an OOM, the worse error.

    The cell's CSV belongs to the cell: when no row names its model (a runner that writes the
    name of a symlink's target), the rows at the cell's length are its rows whatever model they
    name, since dropping the runner's SKIP:oom would launch the longer cells.
    """
    names = [name.strip() for name in split_row(header)]
    model_at = names.index("model") if "model" in names else 0
    length_at = names.index(_LENGTH_COLUMN) if _LENGTH_COLUMN in names else None
    want = str(length)
    # The harness writes a model's directory basename, also for a nested `org/model`.
    models = {model, last_part(model)}
    kept: list[str] = []
    dropped: list[str] = []
    at_length: list[tuple[str, str]] = []
    unverified_kept = False
    for row in rows:
        fields = split_row(row)
        at = fields[length_at].strip() if length_at is not None and len(fields) > length_at else ""
        verified = length_at is not None and (
            at == want or want in (field.strip() for field in row.rsplit(",", 3)[1:])
        )
        if len(fields) <= model_at or fields[model_at].strip() not in models:
            if verified and len(fields) > model_at:
                at_length.append((row, fields[model_at].strip()))
            dropped.append(row)
            continue
        if verified:
            own = True
        elif length_at is None or not at:
            own = not unverified_kept
            unverified_kept = True
        else:
            own = False
        (kept if own else dropped).append(row)
    if kept or not at_length:
        return kept, dropped, None
    others = {row for row, _ in at_length}
    return [row for row, _ in at_length], [r for r in dropped if r not in others], at_length[0][1]
