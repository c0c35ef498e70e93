"""Model names as the harness takes them and as people type them: a directory under the models
dir (`org/model` nested or not), `./models/x/` read as `x`, near names for a typo.

`model_name` is the one decision of a model's identity: every path that compares two model
names (the sweep's cells and backstop, fake-OOM keys, record lines as they are read, `check` and
`run`, the report's rows) compares what it returns; `check_model_name` is the one check of a
name that may be recorded."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from oomrec.core.errors import OomrecError
from oomrec.core.shown import shorten


def check_model_path(name: str) -> str:
    """A model as the harness takes it: a directory under the models dir, nested (`org/model`)
    or not; never absolute and never a `..` part (`a..b` is a name like any other). Its rows and
    records name it so (`model_name`)."""
    if name.startswith("/"):
        raise OomrecError(
            f"model {shorten(name)} is an absolute path; name it under the models dir"
        )
    parts = name.rstrip("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise OomrecError(
            f"model {shorten(name)} has an empty, '.' or '..' part; name its directory"
        )
    for part in parts:
        check_model_name(part)
    check_model_name(name.rstrip("/"))
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


def resolve_model(typed: str, models_dir: Path, models_dir_shown: str) -> tuple[str, str | None]:
    """The model a hand-typed name (`check`, `run`) is: a directory under the models dir, by
    its identity (`model_name`); else, when exactly one nested model has it as its last part
    (the runner's name for `org/moe-30b` is `moe-30b`), that model, and a note saying so.
    OomrecError (one line) for a name that is no model there: a typo or another host's name
    would be checked against no record, so it is refused, with the nearest names."""
    name = model_name(check_model_path(typed))
    shown = models_dir_shown.rstrip("/") or "."
    if (models_dir / name).is_dir():
        return name, None
    nested = _nested(name, models_dir) if "/" not in name else []
    if len(nested) == 1:
        return nested[0], (
            f"note: model {typed!r} read as {nested[0]!r} (the one model under {shown} whose "
            "last part it is)"
        )
    if nested:
        raise OomrecError(
            f"model {typed!r} is the last part of {' and '.join(nested)} under {shown}; "
            "name one of them"
        )
    if not models_dir.is_dir():
        raise OomrecError(
            f"model {typed!r}: models dir {shown} does not exist; run from the repository "
            "whose ./models holds it (or set models_dir in [tool.oomrec])"
        )
    near = near_models(name, models_dir)
    hint = f"did you mean {' or '.join(near)}?" if near else "give its directory's name there"
    raise OomrecError(f"model {typed!r} is not a model under {shown}; {hint}")


def _nested(part: str, models_dir: Path) -> list[str]:
    """Models two or three levels down whose last part is `part`, sorted."""
    found: list[str] = []
    for pattern in (f"*/{part}", f"*/*/{part}"):
        try:
            hits = list(models_dir.glob(pattern))
        except (OSError, ValueError):
            continue
        found += [p.relative_to(models_dir).as_posix() for p in hits if p.is_dir()]
    return sorted(n for n in found if not any(x.startswith(".") for x in n.split("/")))


def _model_dirs(models_dir: Path) -> list[str]:
    """Directory names under the models dir and one level further down (`org/model`)."""
    names: list[str] = []
    try:
        top = sorted(p for p in models_dir.iterdir() if p.is_dir() and p.name[:1] != ".")
    except OSError:
        return []
    for folder in top:
        names.append(folder.name)
        try:
            names += sorted(
                f"{folder.name}/{p.name}"
                for p in folder.iterdir()
                if p.is_dir() and p.name[:1] != "."
            )
        except OSError:
            continue
    return names


def near_models(missing: str, models_dir: Path) -> list[str]:
    """Model directories named like `missing` (a typo): up to three, closest first; nested
    models (`org/model`) by their whole name or their last part."""
    import difflib

    names = _model_dirs(models_dir)
    near = difflib.get_close_matches(missing, names, n=3, cutoff=0.6)
    if near:
        return near
    by_part: dict[str, list[str]] = {}
    for name in names:
        by_part.setdefault(name.rsplit("/", 1)[-1], []).append(name)
    parts = difflib.get_close_matches(missing.rsplit("/", 1)[-1], list(by_part), n=3, cutoff=0.6)
    return [name for part in parts for name in by_part[part]][:3]


def check_model_name(model: str) -> str:
    """A model name safe to record: its directory under the models dir, nested (`org/model`)
    or not, as the harness names it; OomrecError otherwise."""
    if not model.strip():
        raise OomrecError("model name is empty; give the model's directory name")
    bad = [what for what, hit in _MODEL_FORBIDDEN if hit(model)]
    if bad:
        raise OomrecError(
            f"model name {shorten(model)} contains {bad[0]}; give the model's directory under "
            "the models dir (e.g. llama-3.1-8b-4bit or org/moe-30b)"
        )
    return model


def last_part(model: str) -> str:
    """The last part of a nested model's name (`org/moe-30b` -> `moe-30b`): what records of
    earlier oomrec versions, and the harness's runner rows, name it by."""
    return model.rsplit("/", 1)[-1]


_MODEL_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_MODEL_SHELL = re.compile(r"[;|&$`<>()\\]")
_NAME_MAX, _PATH_MAX = 255, 4095
_MODEL_FORBIDDEN: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("a leading '/'", lambda m: m.startswith("/")),
    ("an empty or '.' path part", lambda m: any(p in ("", ".") for p in m.split("/"))),
    ("','", lambda m: "," in m),
    # Only a `..` part climbs out of the models dir: `a..b` is a folder's name like any other.
    ("a '..' path part", lambda m: ".." in m.split("/")),
    # C0, DEL and C1 (an 8-bit CSI is a terminal's escape too), and the Unicode line breaks.
    ("a line break or control character", lambda m: bool(_MODEL_CONTROL.search(m))),
    ("a quote", lambda m: '"' in m or "'" in m),
    # A name is pasted into shell lines (the runner's command, `oomrec check "$MODEL"` in a
    # script, a record line a shell may read): none of the shell's own characters.
    ("a shell metacharacter", lambda m: bool(_MODEL_SHELL.search(m))),
    ("whitespace", lambda m: any(c.isspace() for c in m)),
    # No directory can be named so (NAME_MAX, PATH_MAX): refused before anything is written,
    # not after a record line of 10 kB went in.
    (
        f"a path part over {_NAME_MAX} bytes",
        lambda m: any(len(p.encode(errors="surrogateescape")) > _NAME_MAX for p in m.split("/")),
    ),
    (f"more than {_PATH_MAX} bytes", lambda m: len(m.encode(errors="surrogateescape")) > _PATH_MAX),
)
