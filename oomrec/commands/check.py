"""`oomrec check`: may this cell launch here and now? The sweep's own decision before a launch
(sweep/planner.py), for one cell, on this host's hardware and memory, with the record, its
archive and the shared notes judged at HEAD: what a sweep would do with the cell, without the
sweep (no runner, guard or psutil is loaded; it sits in front of every hand run).

The backstop is a sweep's own (earlier cells of the same sweep), so it has no part here; the
fake-OOM hook is the sweep's testing hook and has none either.
"""

from __future__ import annotations

import itertools
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oomrec.commands import Result
from oomrec.commands.common import record_warnings
from oomrec.core import amounts
from oomrec.core.hardware import detect, detect_memory
from oomrec.core.modelnames import last_part, normalize_models, resolve_model
from oomrec.core.records import Loaded, OomRecord, RecordFile, read_commit
from oomrec.core.settings import IGNORE_RECORD_ENVS, env_flag
from oomrec.store import archive, noterefs
from oomrec.store.archive import ArchivedLine
from oomrec.store.locations import Settings, configured_models_dir, open_record
from oomrec.sweep.planner import Action, Cell, Decision, JudgedLine, Planner, gather_evidence


@dataclass(kw_only=True)
class CheckResult(Result):
    model: str
    length: int
    hardware: str
    host_mem: int | None
    record: str
    # Action.RUN, Action.PROBE (a lift no run has verified yet), or Action.RECORD (the token a
    # sweep's row would get: SKIP:oom_record).
    verdict: str
    reason: str
    # `path:lineno: line` of the record that applies (or, to run, that a fix lifted).
    record_line: str | None
    # The env var that turned the record off, as the sweep honours it.
    ignored_by: str | None = None

    @property
    def may_launch(self) -> bool:
        """May the cell launch unguarded (a probe may not: it runs under `oomrec run`)."""
        return self.verdict == Action.RUN

    @property
    def decision(self) -> str:
        """`launch`, `probe` or `skip`: what a script does next."""
        if self.verdict == Action.RUN:
            return "launch"
        return "probe" if self.verdict == Action.PROBE else "skip"

    @property
    def verify_command(self) -> str | None:
        """For a probe: the command that runs the cell under the guard and decides."""
        if self.verdict != Action.PROBE:
            return None
        return (
            f"oomrec run {shlex.quote(self.model)} {self.length} -- <the cell's command, "
            "e.g. scripts/bench_decode.sh {model_path} --prompt-tokens {length}>"
        )

    def json_body(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "length": self.length,
            "hardware": self.hardware,
            "host_mem_bytes": self.host_mem,
            "record": self.record,
            "may_launch": self.may_launch,
            "decision": self.decision,
            "verify_command": self.verify_command,
            "verdict": self.verdict,
            "reason": self.reason,
            "record_line": self.record_line,
            "record_ignored_by": self.ignored_by,
        }

    def line(self) -> str:
        """The one line a script's log shows: the verdict, the cell, why."""
        cell = f"{self.model} @ {self.length} on {self.hardware}"
        if self.ignored_by:
            return f"run: {cell}: the record is ignored (${self.ignored_by} is set)"
        if self.record_line is None:
            return f"run: {cell}: no OOM record applies ({self.record})"
        if self.may_launch:
            return f"run: {cell}: {self.reason} ({self.record_line})"
        if self.verdict == Action.PROBE:
            return (
                f"probe: {cell}: {self.reason} ({self.record_line}); verify it with: "
                f"{self.verify_command}"
            )
        return f"{self.verdict}: {cell}: {self.reason} ({self.record_line})"


def check(*, model: str, length: str | int, record: Path | None = None) -> CheckResult:
    """Whether the cell (`model`, `length`) may launch on this host now, and why."""
    prompt_length = amounts.one_length(length)
    record_file, settings = open_record(record)
    typed = model
    models_dir, models_dir_shown = configured_models_dir(settings)
    # As the sweep reads --models: `./models/x/` (a hand run's model path) is model `x`.
    (model,), read_as = normalize_models([model], models_dir, models_dir_shown)
    # A name that is no model there is refused (a typo would match no record); the runner's
    # name for a nested model (its last part) is that model.
    name, resolved = resolve_model(model, models_dir, models_dir_shown)
    if resolved is not None:
        read_as.append(resolved)
    hardware = detect()
    host_mem = detect_memory()
    ignored_by = env_flag(IGNORE_RECORD_ENVS)
    warnings: list[str] = []
    if ignored_by:
        decision = Decision(Action.RUN, "record ignored")
    else:
        decision = _decide(
            record_file, settings, Cell(name, prompt_length, typed), hardware, host_mem, warnings
        )
    return CheckResult(
        warnings=warnings,
        notices=read_as,
        model=name,
        length=prompt_length,
        hardware=hardware,
        host_mem=host_mem,
        record=record_file.shown_as,
        verdict=str(decision.action),
        reason=decision.reason,
        record_line=decision.record_line,
        ignored_by=ignored_by,
    )


def _decide(
    record_file: RecordFile,
    settings: Settings,
    cell: Cell,
    hardware: str,
    host_mem: int | None,
    warnings: list[str],
) -> Decision:
    """The planner's decision for `cell` over the evidence of its model; the record's and the
    notes' warnings go to `warnings`."""
    loaded = record_file.load()
    parked, said = record_warnings(loaded, record_file)
    warnings.extend(said)
    # The cell's own lines, and for a nested model those under its last part (the sweep reads
    # both: planner._first_hit).
    wanted = {cell.model, last_part(cell.model)}
    evidence: list[JudgedLine] = []
    lines = _lines_of(wanted, loaded, parked)
    shared, replaced = noterefs.refs_present()
    if lines or shared:
        # Only then is there anything to judge at HEAD (GitPython and the history: ~90 ms),
        # unless the history is known to hold no fix at all (then every record applies).
        from oomrec.staleness.fixlog import trailer_key

        key = trailer_key(settings)
        proven = not shared and not replaced and _no_fix_can_apply(key, lines)
        evidence = gather_evidence(
            record_file,
            loaded,
            key,
            hardware,
            judge=not proven,
            parked=parked,
            warnings=warnings,
            models=wanted,
        )
    planner = Planner(evidence, hardware, host_mem=host_mem, probe_problem=None)
    decision = planner.decide(cell)
    if decision.action == Action.PROBE:
        # Only now the guard's modules (psutil, NVML): can this host watch a probe at all?
        from oomrec.sweep.cell.probeguard import watch_problem

        problem = watch_problem(hardware)
        if problem is not None:
            planner.probe_problem = problem
            decision = planner.decide(cell)
    return decision


def _no_fix_can_apply(key: str, records: Sequence[OomRecord]) -> bool:
    """Whether it is proven, without GitPython, that no fix is in effect at HEAD for these
    records: the repository's event cache (staleness/eventcache.py, written by every full
    judgement) scanned HEAD and each record's commit and found no fix, pick or revert commit.
    Anything it cannot prove (a shallow clone or grafts, an abbreviated or unknown commit, no
    cache, a new HEAD) is False: the full judgement runs, as it always may.

    git is asked from the cwd, as the full judgement opens the repository (GIT_DIR relative to
    it, a bare repository the cwd is in), never from the record's top level: the two must be
    the same repository."""
    import subprocess  # here, for start-up time: its DEVNULL

    from oomrec.core import gitrun
    from oomrec.staleness.eventcache import proves_no_event

    try:
        out = gitrun.run(
            [
                "rev-parse",
                "--is-shallow-repository",
                "--git-common-dir",
                "--verify",
                "-q",
                "HEAD",
            ],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
    except OSError:
        return False
    said = out.stdout.splitlines()
    if out.returncode or len(said) != 3 or said[0] != "false":
        return False
    common = Path(said[1]).absolute()
    if (common / "info" / "grafts").exists():
        return False
    commits = [read_commit(r.commit) for r in records]
    # Full SHAs only, as tips are cached (an abbreviation or a dirty tree: the full judgement).
    if any(c.hex is None or c.dirty or len(c.hex) not in (40, 64) for c in commits):
        return False
    return proves_no_event(common, key, {said[2], *(c.hex for c in commits if c.hex)})


def _lines_of(models: set[str], loaded: Loaded, parked: Sequence[ArchivedLine]) -> list[OomRecord]:
    """The records of the record file and of its archive (the lines still in play) that name
    one of `models`."""
    live = [line.record for line in loaded.lines if line.record is not None]
    kept = [line.record for line in archive.in_play(parked) if line.record is not None]
    return [record for record in itertools.chain(live, kept) if record.model in models]
