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
from dataclasses import dataclass
from pathlib import Path

from oomrec.core.records import last_part
from oomrec.core.regular import NotRead, read_regular
from oomrec.core.schema import split_row

# A harness cell CSV is a header and one row, well under 4 KiB.
CELL_CSV_CAP = 1024 * 1024
_LENGTH_COLUMN = "prompt_target_len"


@dataclass(frozen=True, slots=True)
class CellCsv:
    """The header line and the cell's own data rows (without endings), the rows of other cells
    that were dropped, and why the file was not read at all (None when it was, or is absent)."""

    header: str | None
    rows: tuple[str, ...]
    dropped: tuple[str, ...] = ()
    problem: str | None = None


def read_cell_csv(path: Path, model: str, length: int) -> CellCsv:
    """The cell CSV as written, keeping only the rows of `model` at `length`."""
    try:
        data = _read_regular(path)
    except FileNotFoundError:
        return CellCsv(None, ())
    except _NotRead as exc:
        return CellCsv(None, (), problem=str(exc))
    text = data.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    lines = [line for line in lines if line.strip()]
    if not lines:
        return CellCsv(None, ())
    header, rows = lines[0], lines[1:]
    kept, dropped = _own_rows(header, rows, model, length)
    return CellCsv(header, tuple(kept), tuple(dropped))


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


def _own_rows(header: str, rows: list[str], model: str, length: int) -> tuple[list[str], list[str]]:
    """Rows of `model` at `length`; the others.

    The model is the `model` column (else the first), as the cell names it or its basename. The
    length is the `prompt_target_len` column, or one of the row's last three raw fields, where
    the harness puts it: a CSV parser misreads a harness row whose prompt holds unescaped
    quotes. A row of the model whose length is empty or has no column cannot be told apart from
    the cell's own: the first such row is kept, since dropping a runner's own SKIP:oom would
    miss an OOM, the worse error.
    """
    names = [name.strip() for name in split_row(header)]
    model_at = names.index("model") if "model" in names else 0
    length_at = names.index(_LENGTH_COLUMN) if _LENGTH_COLUMN in names else None
    want = str(length)
    # The harness writes a model's directory basename, also for a nested `org/model`.
    models = {model, last_part(model)}
    kept: list[str] = []
    dropped: list[str] = []
    unverified_kept = False
    for row in rows:
        fields = split_row(row)
        if len(fields) <= model_at or fields[model_at].strip() not in models:
            dropped.append(row)
            continue
        at = fields[length_at].strip() if length_at is not None and len(fields) > length_at else ""
        if length_at is not None and (
            at == want or want in (field.strip() for field in row.rsplit(",", 3)[1:])
        ):
            own = True
        elif length_at is None or not at:
            own = not unverified_kept
            unverified_kept = True
        else:
            own = False
        (kept if own else dropped).append(row)
    return kept, dropped
