"""Model names as the harness takes them and as people type them: a directory under the models
dir (`org/model` nested or not), `./models/x/` read as `x`, near names for a typo.

`model_name` is the one decision of a model's identity: every path that compares two model
names (the sweep's cells and backstop, fake-OOM keys, record lines as they are read, `check` and
`run`, the report's rows) compares what it returns."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from oomrec.core.errors import OomrecError


def check_model_path(name: str) -> str:
    """A model as the harness takes it: a directory under the models dir, nested (`org/model`)
    or not; never absolute and never a `..` part (`a..b` is a name like any other). Its rows and
    records name it so (`model_name`)."""
    from oomrec.core.records import check_model_name

    if name.startswith("/"):
        raise OomrecError(f"model {name!r} is an absolute path; name it under the models dir")
    parts = name.rstrip("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise OomrecError(f"model {name!r} has an empty, '.' or '..' part; name its directory")
    for part in parts:
        check_model_name(part)
    return name


def model_name(name: str) -> str:
    """A model's identity in rows, records, the backstop and fake-OOM keys: its directory as
    given under the models dir (`org/moe-30b`), as the harness names it, without a trailing
    slash. The harness keys a cell by the `--models` word as typed, so `plain-8b/` writes
    records `plain-8b/,...`; read and written through this function both are `plain-8b`, and
    the harness's own records apply to the model whichever way it was typed."""
    return name.rstrip("/") or name


def normalize_models(
    models: Sequence[str], models_dir: Path, models_dir_shown: str
) -> tuple[list[str], list[str]]:
    """Models as people type them: `./models/x/` or `models/x` (the harness's `model_path`
    form, tab-completed) is model `x` when `<models dir>/x` exists and no nested `models/x`
    does. Returns the names and a note for each one read so."""
    shown = models_dir_shown.removeprefix("./").rstrip("/")
    prefixes = [
        p for p in dict.fromkeys((shown, str(models_dir).rstrip("/"), models_dir.name)) if p
    ]
    out: list[str] = []
    notes: list[str] = []
    for name in models:
        bare = name.rstrip("/").removeprefix("./")
        chosen = name
        for prefix in prefixes:
            if bare.startswith(prefix + "/"):
                tail = bare[len(prefix) + 1 :]
                if tail and (models_dir / tail).is_dir() and not (models_dir / bare).is_dir():
                    chosen = tail
                    notes.append(
                        f"note: model {name!r} read as {tail!r} (under {models_dir_shown})"
                    )
                break
        out.append(chosen)
    return out, notes


def near_models(missing: str, models_dir: Path) -> list[str]:
    """Model directories named like `missing` (a typo): up to three, closest first."""
    import difflib

    try:
        names = [p.name for p in models_dir.iterdir() if p.is_dir()]
    except OSError:
        return []
    return difflib.get_close_matches(missing.rsplit("/", 1)[-1], names, n=3, cutoff=0.6)
