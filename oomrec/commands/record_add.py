"""`record add`: append one record by hand, unless the same evidence is already there."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from oomrec.commands import Result
from oomrec.core.errors import OomrecError
from oomrec.core.hardware import detect, detect_memory, option_tag, parse_size
from oomrec.core.modelnames import check_model_name, model_name
from oomrec.core.records import UNKNOWN_COMMIT, OomRecord, check_length, evidence_key, format_line
from oomrec.store.locations import open_record


@dataclass(kw_only=True)
class AddResult(Result):
    record: str
    entry: OomRecord
    # False: the same evidence was already in the record, and nothing was written.
    added: bool

    @property
    def line(self) -> str:
        """The record's line, as written (or as it would have been)."""
        return format_line(self.entry)

    def json_body(self) -> dict[str, Any]:
        return {
            "record": self.record,
            "added": self.added,
            "already_recorded": not self.added,
            "line": self.line,
            "entry": self.entry.to_dict(),
        }


def record_add(
    *,
    model: str,
    length: str | int,
    record: Path | None = None,
    commit: str | None = None,
    hardware: str | None = None,
    any_hardware: bool = False,
    source: str = "manual",
    mem: str | None = None,
) -> AddResult:
    """Append the record `model` OOMed at `length` tokens, dated today.

    `commit`: a revision (default HEAD, `unknown` outside git); `hardware`: a tag (default this
    host's), or `any_hardware` for none (the record applies to every host); `mem`: the memory
    the accelerator could address, e.g. `96GiB` (default this host's when the hardware is).
    """
    # One identity (`plain-8b/` is `plain-8b`), as the record's lines are read.
    model = check_model_name(model_name(model))
    prompt_target_len = check_length(str(length))
    if hardware is not None and any_hardware:
        raise OomrecError("--hardware and --any-hardware exclude each other; pick one")
    tag = None if any_hardware else (option_tag(hardware) or detect())
    mem_bytes = _mem_bytes(mem, this_host=tag == detect())
    notices: list[str] = []
    record_file, settings = open_record(record, writing=True, on_notice=notices.append)
    new = OomRecord(
        model=model,
        prompt_target_len=prompt_target_len,
        date=date.today().isoformat(),
        commit=_commit_sha(commit),
        peak_bytes=None,
        source_csv=source,
        hardware=tag,
        mem_bytes=mem_bytes,
    )
    added = record_file.append_new([new], unless_present=evidence_key)
    return AddResult(
        warnings=[f"warning: {notice}" for notice in record_file.notices]
        + _unknown_model(model, settings.base / "models"),
        notices=notices,
        record=record_file.shown_as,
        entry=new,
        added=bool(added),
    )


def _unknown_model(model: str, models_dir: Path) -> list[str]:
    """A warning when the models dir exists and holds no such model (a typo hides no cell:
    the sweep matches names exactly), with the names it looks like."""
    if not models_dir.is_dir() or (models_dir / model).is_dir():
        return []
    from oomrec.core.modelnames import near_models

    near = near_models(model, models_dir)
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    return [
        f"warning: no model {model!r} under {models_dir}: the record applies to that name "
        f"only{hint}"
    ]


def _mem_bytes(given: str | None, this_host: bool) -> int | None:
    if given is None:
        # Another machine's memory is not this one's: unknown unless said.
        return detect_memory() if this_host else None
    size = parse_size(given)
    if size is None:
        raise OomrecError(f"--mem {given[:40]!r} is not a memory size; give e.g. 96GiB or bytes")
    return size


def _commit_sha(rev: str | None) -> str:
    from oomrec.store import gitrepo as gitutil

    if rev is not None and rev.strip().lower() == UNKNOWN_COMMIT:
        # The record format's own word for "not known" (an OOM seen outside git, or long ago):
        # such a record applies until proof takes it out of play, which needs no repository.
        return UNKNOWN_COMMIT
    repo = gitutil.open_repo()
    if rev is None:
        return gitutil.head_sha(repo) or UNKNOWN_COMMIT
    return gitutil.resolve_commit(repo, rev)
