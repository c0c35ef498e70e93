"""A sweep's configuration: command-line flags first, then `[tool.oomrec]`, then the
environment, then defaults (core/settings.choose decides, for every setting alike).

Everything a sweep needs to know before it plans a cell is resolved and checked here, so a bad
value is a one-line usage error before anything launches.
"""

from __future__ import annotations

import hashlib
import math
import shlex
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from oomrec.core import amounts
from oomrec.core.confine import reserved_target
from oomrec.core.errors import OomrecError
from oomrec.core.memscope import host_total
from oomrec.core.modelnames import (
    check_model_path,
    last_part,
    model_name,
    normalize_models,
    resolve_model,
)
from oomrec.core.pathkind import kind as file_kind
from oomrec.core.records import RecordFile, bounded_int
from oomrec.core.settings import (
    DEFAULT_REFINE_STEP,
    DEFAULT_TIMEOUT_S,
    IGNORE_RECORD_ENVS,
    choose,
    env_flag,
)
from oomrec.core.shown import shorten
from oomrec.store.locations import Settings, display_path
from oomrec.sweep import demo
from oomrec.sweep.cell.defaults import DEFAULT_MAX_TOKENS, DEFAULT_WARMUP_TOKENS
from oomrec.sweep.cell.guard import GpuLimit, GuardLimits, parse_gpu_limit, parse_limit
from oomrec.sweep.cell.runner import RunnerTemplate
from oomrec.sweep.resume import Mode

MAX_COOLDOWN_S = 86400.0
_Options = TypeVar("_Options")
# The default CSV of `oomrec run` is named `{backend}_{hw}_{date}_oomrec-run.csv`.
RUN_LOG = "oomrec-run"
MAX_REFINE = 64

# The harness's own cell runner and how bench_longprompt.sh calls it.
DEFAULT_RUNNER_SCRIPT = Path("scripts") / "bench_decode.sh"
# The cooldowns go to the runner, as the harness passes them; oomrec then does not also sleep.
DEFAULT_RUNNER_ARGS = (
    "{model_path} --prompt-tokens {length} --max-tokens {max_tokens} "
    "--warmup-tokens {warmup_tokens} --cooldown {cooldown} --big-cooldown {big_cooldown} "
    "--output {cell_csv}"
)


@dataclass(frozen=True)
class SweepConfig:
    models: tuple[str, ...]
    lengths: tuple[int, ...]
    models_dir: Path
    # How the models dir is written into `model_path` (as the user gave it, e.g. `./models`).
    models_dir_shown: str
    runner: RunnerTemplate
    output: Path
    record: RecordFile
    hardware: str
    date: str
    timeout: float | None = DEFAULT_TIMEOUT_S
    cooldown: float = 0.0
    # Extra seconds after a cell of a model whose weights pass BIG_MODEL_BYTES (the harness's).
    big_cooldown: float = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS
    warmup_tokens: int = DEFAULT_WARMUP_TOKENS
    ignore_record: bool = False
    ignore_guard_records: bool = False
    # `--probe-undecided`: records a fix may have lifted (git cannot prove it) are probed too.
    probe_undecided: bool = False
    fake_oom: frozenset[tuple[str, int]] = frozenset()
    # Models that count as present without a directory yet (the demo creates them before running).
    provided_models: frozenset[str] = frozenset()
    # Where records name the aggregate CSV from, and where HEAD is read.
    repo_root: Path | None = None
    # The memory this host's accelerator can address (None: unknown); new records carry it.
    host_mem: int | None = None
    # `--shard I/N`: this sweep runs shard I of N (1-based), and how many models there were.
    shard: tuple[int, int] | None = None
    all_models: int = 0
    # `--resume` / `--resume-keep` and `--rerun-failed`: continue the CSV, not replace it.
    resume: Mode | None = None
    rerun_failed: bool = False
    # The memory guard's limits (both off by default).
    guard: GuardLimits = field(default_factory=GuardLimits)
    # Append to the CSV (`oomrec run`'s log of hand runs) instead of replacing it.
    append: bool = False
    # `--refine N`: up to N bisection probes per model between its frontier's two ladder points,
    # at multiples of `refine_step`.
    refine: int = 0
    refine_step: int = DEFAULT_REFINE_STEP


def parse_models(value: str | Sequence[Any], where: str) -> tuple[str, ...]:
    """Model names from a space-separated string or a list; OomrecError when none or bad."""
    if isinstance(value, str):
        names = value.split()
    elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        names = list(value)
    else:
        raise OomrecError(f"{where}: models must be a space-separated string or a list of names")
    if not names:
        raise OomrecError(f"{where}: no models; give at least one model directory name")
    for name in names:
        try:
            check_model_path(name)
        except OomrecError as exc:
            raise OomrecError(f"{where}: {exc}") from None
    return tuple(names)


def _one_per_model(models: Sequence[str]) -> tuple[tuple[str, ...], list[str]]:
    """Each model once, by its identity (modelnames.model_name: `plain-8b/` is `plain-8b`), the
    first spelling kept; a note for each repeat."""
    kept: dict[str, str] = {}
    said = []
    for name in models:
        first = kept.setdefault(model_name(name), name)
        if first is not name:
            said.append(f"note: model {name!r} is {first!r}, given before: its cells run once")
    return tuple(kept.values()), said


def parse_lengths(value: str | Sequence[Any], where: str) -> tuple[int, ...]:
    """Prompt lengths as core.amounts reads them (`512 2048`, `512,2k`); a repeat runs once."""
    return amounts.parse_lengths(value, where)[0]


def parse_fake_oom(
    value: str, where: str, models: Sequence[str] = ()
) -> tuple[frozenset[tuple[str, int]], list[str]]:
    """`model:len[,model:len...]` as the harness reads it: exact (model, length) pairs, and a
    warning for each entry it would never match (ignored, as the harness ignores it).

    The harness splits on commas alone (`IFS=, read`: no blank is stripped), skips an empty
    entry, and fakes a cell when the text `model:len` is an entry, `model` the `--models` word
    and `len` the `--lengths` word. So an entry with a blank, without `:`, or whose length is
    not a ladder word as written (`2k`, `0512`) fakes nothing; the model is compared by
    modelnames.model_name, never by its last part. `models`: the sweep's, to say when an entry
    names only the last part of a nested one (earlier oomrec versions faked those too)."""
    pairs = set()
    warnings: list[str] = []
    names = [model_name(m) for m in models]
    for entry in value.split(","):
        if not entry:
            continue
        why = _fake_entry_problem(entry)
        if why is not None:
            warnings.append(
                f"warning: {where}: entry {shorten(entry)} ignored ({why}), as the harness "
                "ignores it; write e.g. gemma-4-31b-it-4bit:32768"
            )
            continue
        model, _, text = entry.rpartition(":")
        name = model_name(model)
        pairs.add((name, int(text)))
        nested = sorted(m for m in names if "/" in m and last_part(m) == name)
        if name not in names and nested:
            warnings.append(
                f"warning: {where}: entry {shorten(entry)} fakes no cell: {name!r} is only the "
                f"last part of {' and '.join(nested)}; a fake names the model as --models "
                f"does (e.g. {nested[0]}:{text})"
            )
    return frozenset(pairs), warnings


def _fake_entry_problem(entry: str) -> str | None:
    """Why the harness would never match this fake-OOM entry, or None."""
    if any(ch.isspace() for ch in entry):
        return "it holds a blank, and no model or length does"
    model, sep, text = entry.rpartition(":")
    if not sep or not model:
        return "not model:length"
    if not (text.isascii() and text.isdigit()) or bounded_int(text) is None:
        return f"length {shorten(text)} is not a token count in digits"
    if text != str(int(text)):
        return f"the harness compares the text, and {shorten(text)} is no ladder length as written"
    try:
        check_model_path(model)
    except OomrecError as exc:
        return str(exc).split(";")[0]
    return None


def ignore_record_from_env() -> str | None:
    """The environment variable that disables the record pre-skip, if one is set true (1, true,
    yes, on)."""
    return env_flag(IGNORE_RECORD_ENVS)


@dataclass(frozen=True, kw_only=True)
class SweepOptions:
    """What to sweep, as asked (flags, or a library caller); None means "not given":
    `[tool.oomrec]`, then the defaults, decide."""

    # Repeated flags accumulate: each item may itself hold several space-separated names.
    models: Sequence[str] | None = None
    lengths: Sequence[int | str] | None = None
    # A template run without a shell, with {model} {model_path} {length} ... placeholders.
    runner: str | None = None
    # As typed, so rows carry `./models/x` exactly as the harness writes it.
    models_dir: str | None = None
    output: Path | None = None
    record: Path | None = None
    # Seconds, or a duration as typed (`30m`, `1h30m`).
    timeout: float | str | None = None
    cooldown: float | str = 0.0
    big_cooldown: float | str = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS
    warmup_tokens: int = DEFAULT_WARMUP_TOKENS
    # `MODEL:LEN[,...]`: cells treated as true OOMs without a launch (testing the layers).
    fake_oom: str | None = None
    ignore_record: bool = False
    ignore_guard_records: bool = False
    probe_undecided: bool = False
    # `I/N`: only the models of shard I of N.
    shard: str | None = None
    # Continue the aggregate CSV: "rerun" runs rows of another commit or runner again, "keep"
    # keeps them; None replaces the CSV.
    resume: str | None = None
    rerun_failed: bool = False
    # As typed: `110G`, `85%`, `off`.
    max_cell_memory: str | None = None
    min_available: str | None = None
    max_cell_gpu_memory: str | None = None
    min_gpu_available: str | None = None
    # Zero runnable cells (every model missing, an empty shard) is an error unless allowed.
    allow_empty: bool = False
    # The built-in synthetic models under a real memory limit, in ./oomrec-demo/.
    demo: bool = False
    # False: `oomrec run`'s one model, resolved as `check` resolves it (modelnames.resolve_model:
    # a directory under the models dir, or the one nested model of that last part).
    models_need_dirs: bool = True
    # `oomrec run`: the CSV is a log of hand runs, appended to, never replaced.
    append: bool = False
    # What the user calls the runner, for its errors (`oomrec run`: its COMMAND).
    runner_named: str = "--runner"
    refine: int = 0
    refine_step: int | str | None = None


def from_given(cls: type[_Options], given: Mapping[str, Any], **more: Any) -> _Options:
    """Options of the dataclass `cls` from what a command was given (its parameters, each named
    as the field it fills: `locals()` of the command), and `more`: the fields the command's
    parameters do not give as they are (they win). Parameters that are no field are left."""
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    taken = {name: value for name, value in given.items() if name in names and name not in more}
    return cls(**taken, **more)


def configure(
    opts: SweepOptions,
    settings: Settings,
    record: RecordFile,
    *,
    hardware: str,
    day: str,
    host_mem: int | None = None,
    demo_dirs: demo.DemoLayout | None = None,
    warnings: list[str] | None = None,
) -> SweepConfig:
    """The sweep's configuration: flags first, then `[tool.oomrec]`, then defaults. What the
    user should hear about how their input was read (a length given twice, `./models/x/` read
    as `x`) goes to `warnings`.

    `--demo` (`demo_dirs`: where it reads and writes) ignores `[tool.oomrec]` and defaults
    everything to the demo under ./oomrec-demo/.
    """
    where = f"{settings.source} [tool.oomrec]"
    tool: dict[str, Any] = {} if demo_dirs else settings.tool

    given = choose("runner", opts.runner, tool, where, flag_name=opts.runner_named)
    if demo_dirs is not None:
        if given.source == "flag":
            raise OomrecError("--demo runs the built-in demo runner; drop --runner or --demo")
        runner = RunnerTemplate.parse(demo.runner_template(hardware), "the demo runner")
    elif given.source == "flag":
        runner = RunnerTemplate.parse(given.value, given.named)
        runner.check_executable(given.named)
    elif given.source == "tool":
        runner = _configured_runner(given.value, given.named, settings.base)
    elif (settings.base / DEFAULT_RUNNER_SCRIPT).is_file():
        text = f"{shlex.quote(str(DEFAULT_RUNNER_SCRIPT))} {DEFAULT_RUNNER_ARGS}"
        runner = _configured_runner(text, str(DEFAULT_RUNNER_SCRIPT), settings.base)
    else:
        raise OomrecError(
            f"no runner: pass --runner TEMPLATE, set runner in [tool.oomrec], or add "
            f"{DEFAULT_RUNNER_SCRIPT}; or try the demo: oomrec sweep --demo"
        )

    given = choose("models_dir", opts.models_dir, tool, where)
    if given.source == "flag":
        models_dir, models_dir_shown = Path(given.value), given.value
    else:
        if demo_dirs is not None:
            models_dir = demo_dirs.models_dir
        else:
            models_dir = settings.base / _path_setting(given.value, given.named)
        models_dir_shown = _as_typed(models_dir)

    given = choose("models", opts.models, tool, where)
    if given.source == "flag":
        typed = " ".join(given.value).split()
        names, notes = normalize_models(typed, models_dir, models_dir_shown)
        if warnings is not None:
            warnings.extend(notes)
        models = parse_models(names, given.named)
    elif demo_dirs is not None:
        models = tuple(m.name for m in demo.MODELS)
    elif given.source == "tool":
        models = parse_models(given.value, given.named)
    else:
        raise OomrecError('no models: pass --models "A B C" or set models in [tool.oomrec]')

    if not opts.models_need_dirs:
        # A hand run (`oomrec run`): its one model resolved as `check` resolves it; a name that
        # is no model under the models dir is refused, never launched unchecked.
        resolved = []
        for name in models:
            model, note = resolve_model(name, models_dir, models_dir_shown)
            resolved.append(model)
            if note is not None and warnings is not None:
                warnings.append(note)
        models = tuple(resolved)
    models, repeated = _one_per_model(models)
    if warnings is not None:
        warnings.extend(repeated)
    all_models = len(models)
    shard = parse_shard(opts.shard) if opts.shard is not None else None
    if shard is not None:
        models = tuple(m for m in models if shard_of(m, shard[1]) == shard[0])

    given = choose("lengths", opts.lengths, tool, where)
    # Repeated flags accumulate, each of them a list as typed.
    value = " ".join(map(str, given.value)) if given.source == "flag" else given.value
    lengths, said = amounts.parse_lengths(value, given.named)
    if warnings is not None:
        warnings.extend(said)

    given = choose("output", opts.output, tool, where)
    if given.source == "flag":
        output = given.value
    elif demo_dirs is not None:
        output = demo_dirs.output
    elif opts.append:
        from oomrec.core.hardware import detect_backend

        # Hand runs have a log of their own, one per host and day: a sweep's CSV (which a sweep
        # replaces) never holds them, and they never replace one.
        output = settings.base / "benchmarks" / f"{detect_backend()}_{hardware}_{day}_{RUN_LOG}.csv"
    elif given.source == "tool":
        output = settings.base / _path_setting(given.value, given.named)
    else:
        from oomrec.core.hardware import harness_file_parts

        # Named as the harness names it (its GPU's name, not oomrec's short tag), so both tools
        # on one host and day write one file. A shard writes its own CSV: shards of one sweep may
        # share a filesystem.
        part = f"_shard{shard[0]}of{shard[1]}" if shard is not None else ""
        backend, hw = harness_file_parts()
        name = f"{backend}_{hw}_longprompt_{day}{part}.csv"
        output = settings.base / "benchmarks" / name

    given = choose("timeout", opts.timeout, tool, where)
    timeout = amounts.parse_duration(given.value, given.named)

    given = choose("fake_oom", opts.fake_oom, tool, where)
    fake, said = parse_fake_oom(given.value or "", given.named, models)
    if warnings is not None:
        warnings.extend(said)

    guard = _guard_limits(opts, tool, where)
    if opts.refine_step is not None and not opts.refine and warnings is not None:
        warnings.append("warning: --refine-step does nothing without --refine N")

    return SweepConfig(
        models=models,
        lengths=lengths,
        models_dir=models_dir,
        models_dir_shown=models_dir_shown,
        runner=runner,
        output=output,
        record=record,
        hardware=hardware,
        date=day,
        timeout=timeout,
        cooldown=_cooldown(amounts.parse_duration(opts.cooldown, "--cooldown", allow_zero=True)),
        big_cooldown=_cooldown(
            amounts.parse_duration(opts.big_cooldown, "--big-cooldown", allow_zero=True),
            "--big-cooldown",
        ),
        max_tokens=opts.max_tokens,
        warmup_tokens=opts.warmup_tokens,
        ignore_record=opts.ignore_record or ignore_record_from_env() is not None,
        ignore_guard_records=opts.ignore_guard_records,
        probe_undecided=opts.probe_undecided,
        fake_oom=fake,
        provided_models=frozenset(demo.BY_NAME)
        if demo_dirs is not None
        else frozenset(() if opts.models_need_dirs else models),
        repo_root=settings.repo_root,
        host_mem=host_mem,
        shard=shard,
        all_models=all_models,
        resume=_resume_mode(opts.resume),
        rerun_failed=opts.rerun_failed,
        guard=guard,
        append=opts.append,
        refine=_refine(opts.refine),
        refine_step=_refine_step(opts.refine_step, tool, where),
    )


def _refine(value: int) -> int:
    if not 0 <= value <= MAX_REFINE:
        raise OomrecError(
            f"--refine {value}: give 0 to {MAX_REFINE} probes per model (each halves the "
            "bracket; 4 narrow it to a sixteenth)"
        )
    return value


def _refine_step(value: int | str | None, tool: dict[str, Any], where: str) -> int:
    """The grain of refined lengths: a positive token count (`256`, `1k`)."""
    given = choose("refine_step", value, tool, where)
    step = amounts.parse_length(str(given.value).strip())
    if step is None or step < 1:
        raise OomrecError(
            f"{given.named} {shorten(str(given.value))}: give a positive token count, e.g. 256 "
            "or 1k"
        )
    return step


def _resume_mode(value: str | None) -> Mode | None:
    if value is None:
        return None
    try:
        return Mode(value)
    except ValueError:
        raise OomrecError(
            f"resume mode {value[:40]!r}: give --resume (re-run rows of another commit or "
            "runner) or --resume-keep (keep them)"
        ) from None


def _guard_limits(opts: SweepOptions, tool: dict[str, Any], where: str) -> GuardLimits:
    """Each limit from its flag, else `[tool.oomrec]`, else off."""
    total = host_total()
    limits: list[int | None] = []
    for key, value in (
        ("max_cell_memory", opts.max_cell_memory),
        ("min_available", opts.min_available),
    ):
        given = choose(key, value, tool, where)
        limits.append(None if given.value is None else parse_limit(given.value, given.named, total))
    gpu: list[GpuLimit | None] = []
    for key, value in (
        ("max_cell_gpu_memory", opts.max_cell_gpu_memory),
        ("min_gpu_available", opts.min_gpu_available),
    ):
        given = choose(key, value, tool, where)
        gpu.append(None if given.value is None else parse_gpu_limit(given.value, given.named))
    return GuardLimits(limits[0], limits[1], gpu[0], gpu[1])


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` (1 <= I <= N <= 4096) as (I, N); OomrecError otherwise."""
    i_text, sep, n_text = text.strip().partition("/")
    if (
        sep
        and i_text.isdigit()
        and n_text.isdigit()
        and len(i_text) <= 4
        and len(n_text) <= 4
        and 1 <= int(i_text) <= int(n_text) <= 4096
    ):
        return int(i_text), int(n_text)
    raise OomrecError(f"--shard {text[:40]!r} is not I/N with 1 <= I <= N; e.g. --shard 2/4")


def shard_of(model: str, shards: int) -> int:
    """The shard (1-based) a model belongs to among `shards`: by a hash of its name, so a model
    stays in its shard however the list changes, and all its lengths run in one sweep (the
    backstop needs them together)."""
    digest = hashlib.sha256(model.encode("utf-8", errors="surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % shards + 1


def no_models_dir(config: SweepConfig) -> OomrecError:
    """The error of a sweep whose models dir does not exist (its run and its dry run alike)."""
    return OomrecError(
        f"models dir {config.models_dir_shown} does not exist: no model can run; pass "
        "--models-dir or set models_dir in [tool.oomrec]"
    )


def check_before_launch(
    config: SweepConfig, models_dir_missing: bool, launches: bool = True
) -> None:
    """OomrecError unless a sweep can keep what it learns: checked before any cell runs.

    A cell that runs out of memory is only worth running if its OOM reaches the record (so,
    when cells are to run, the disk room for its line is reserved now: RecordFile.reserve),
    and a CSV written over the record (or a file beside it) would wipe the evidence.
    """
    if models_dir_missing:
        raise no_models_dir(config)
    problem = output_problem(config)
    if problem is not None:
        raise OomrecError(problem)
    if launches:
        config.record.reserve()
    else:
        config.record.check_writable()


def output_problem(config: SweepConfig) -> str | None:
    """Why the sweep's CSV cannot go to --output, found without writing anything (so a dry run
    says what the real run would refuse): the record or a file beside it, which the CSV would
    wipe; a FIFO, which would block the sweep in open() until someone reads it; a device."""
    if config.record.owns(config.output):
        return (
            f"--output {config.output} is the OOM record {config.record.shown_as} or a file "
            "beside it; writing the sweep's CSV there would wipe it; pass another --output"
        )
    reserved = reserved_target(config.output, "--output", "the sweep's CSV")
    if reserved is not None:
        return reserved
    try:
        mode = config.output.stat().st_mode
    except OSError:
        return None  # not there yet (or a dangling link): created at the first row
    if not stat.S_ISREG(mode):
        kind = file_kind(mode)
        return f"{config.output}: is {kind}, not a regular file; pass --output PATH of a CSV"
    if config.append and not _starts_as_a_harness_csv(config.output):
        return (
            f"{config.output}: is not a CSV of the harness's layout (its first line is not a "
            "header starting model,); oomrec run appends its row to one: pass another --output"
        )
    return None


def _starts_as_a_harness_csv(path: Path) -> bool:
    """Whether the file is empty or its first line is a harness header (`model,...`)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return True  # what cannot be read is said by the write itself
    return not head or head.lstrip(b"\xef\xbb\xbf").startswith(b"model,")


def _configured_runner(value: object, where: str, base: Path) -> RunnerTemplate:
    if not isinstance(value, str):
        raise OomrecError(f"{where} must be a string (a command line with placeholders)")
    runner = RunnerTemplate.parse(value, where).anchored(base)
    runner.check_executable(where)
    return runner


def _path_setting(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise OomrecError(f"{where} must be a non-empty path string")
    return value


def _cooldown(value: float, where: str = "--cooldown") -> float:
    # time.sleep overflows past ~292 years; a day between cells is already more than anyone means.
    if not math.isfinite(value) or not 0 <= value <= MAX_COOLDOWN_S:
        raise OomrecError(
            f"{where} must be a number of seconds from 0 to {MAX_COOLDOWN_S:.0f}, not {value!r}"
        )
    return value


def _as_typed(path: Path) -> str:
    """A directory as a user would type it: `./models` below the cwd, else the path itself."""
    shown = display_path(path)
    return shown if Path(shown).is_absolute() else f"./{shown}"
