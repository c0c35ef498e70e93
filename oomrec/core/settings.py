"""Every setting oomrec reads, declared once: the `[tool.oomrec]` keys of pyproject.toml and the
environment variables, each with its type, default and help.

The modules that use a setting still parse its value where it is used (they know what a bad one
means); this table is what an unknown key is checked against, what the tables of
docs/configuration.md are generated from, which of flag, key, variable and default gives a
setting its value (choose), and how a boolean environment variable is read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from oomrec.core.errors import OomrecError

# The defaults the code uses, here once: the sweep uses them, its help and the tables below show
# them.
DEFAULT_LENGTHS = (512, 2048, 8192, 32768)
DEFAULT_TIMEOUT_S = 1800.0
DEFAULT_REFINE_STEP = 256


@dataclass(frozen=True)
class Setting:
    name: str
    type: str
    # As docs/configuration.md shows it.
    default: str
    help: str
    # The default as choose() gives it to the code (None: the code that reads it decides).
    value: object = None
    # An environment variable's: the `[tool.oomrec]` key (or flag-only option) it stands in for
    # when neither the flag nor the key gives one (choose).
    option: str | None = None


TOOL_KEYS: tuple[Setting, ...] = (
    Setting(
        "runner",
        "string",
        "scripts/bench_decode.sh with the harness's arguments, when it exists",
        "The sweep's command for one cell, as --runner.",
    ),
    Setting(
        "models",
        "string or list of strings",
        "none (a sweep needs models)",
        'The models to sweep: "a b" or ["a", "b"], as --models.',
    ),
    Setting(
        "lengths",
        "string or list of integers",
        str(list(DEFAULT_LENGTHS)),
        "The prompt lengths to sweep, as --lengths.",
        DEFAULT_LENGTHS,
    ),
    Setting(
        "models_dir", "path", "models", "Where model directories are, as --models-dir.", "models"
    ),
    Setting(
        "output",
        "path",
        "benchmarks/{backend}_{hw}_longprompt_{date}.csv",
        "The sweep's aggregate CSV, as --output.",
    ),
    Setting("record", "path", "benchmarks/.oom-record", "The OOM record file, as --record."),
    Setting(
        "timeout",
        "number (seconds)",
        f"{DEFAULT_TIMEOUT_S:g}",
        "Seconds before a cell's process group is killed, as --timeout.",
        DEFAULT_TIMEOUT_S,
    ),
    Setting(
        "refine_step",
        "token count (256, 1k)",
        str(DEFAULT_REFINE_STEP),
        "What sweep --refine rounds each probe's length to a multiple of, as --refine-step.",
        DEFAULT_REFINE_STEP,
    ),
    Setting(
        "fix_trailer",
        "string",
        "OOM-Fix",
        "The trailer key that marks a memory fix commit (its id trailer adds -Id).",
    ),
    Setting(
        "commit_columns",
        "list of strings",
        '["mlxcel_commit", "commit"]',
        "The CSV columns import-csv reads a row's commit from, first match wins.",
    ),
    Setting(
        "max_cell_memory",
        "size, N% or off",
        "off",
        "Memory guard: stop a cell whose process tree's RSS passes it, as --max-cell-memory.",
    ),
    Setting(
        "min_available",
        "size, N% or off",
        "off",
        "Memory guard: stop a cell when the available memory that binds (the host's, or an "
        "enclosing cgroup's) falls under it, as --min-available.",
    ),
    Setting(
        "max_cell_gpu_memory",
        "size, N% or off",
        "off",
        "Memory guard on each NVIDIA GPU (NVML): as --max-cell-gpu-memory.",
    ),
    Setting(
        "min_gpu_available",
        "size, N% or off",
        "off",
        "Memory guard on each NVIDIA GPU (NVML): as --min-gpu-available.",
    ),
    Setting(
        "admin_hosts",
        "list of host ids",
        "[] (none)",
        "Shared records: hosts whose retractions and restores apply to every host's records "
        '(e.g. ["gb10-lead"]); any other host takes back only its own.',
    ),
)

ENV_VARS: tuple[Setting, ...] = (
    Setting(
        "OOMREC_RECORD",
        "path",
        "unset",
        "The record file (after --record, before [tool.oomrec] record).",
    ),
    Setting("OOMREC_HARDWARE", "tag", "detected", "This host's hardware tag (gb10, m1ultra, ...)."),
    Setting(
        "OOMREC_BACKEND",
        "cuda, rocm, metal or cpu",
        "detected",
        "This host's compute backend: which memory a probe must watch (a discrete GPU's too).",
    ),
    Setting(
        "OOMREC_MEM_BYTES",
        "size or unknown",
        "detected",
        "The memory this host's accelerator can address: bytes or e.g. 96GiB; unknown for none.",
    ),
    Setting(
        "OOMREC_HOST",
        "string",
        "TAG-hostname",
        "This host's id in shared records (git notes), after its hardware tag: `lead` on a "
        "gb10 is gb10-lead.",
    ),
    Setting(
        "OOMREC_IGNORE_RECORD",
        "boolean",
        "false",
        "As sweep --ignore-record: launch the cells the record would pre-skip.",
    ),
    Setting(
        "MLXCEL_BENCH_IGNORE_OOM_RECORD",
        "boolean",
        "false",
        "The harness's name for OOMREC_IGNORE_RECORD.",
    ),
    Setting(
        "MLXCEL_BENCH_FAKE_OOM",
        "model:len[,...]",
        "unset",
        "As sweep --fake-oom (the flag wins); the harness's name.",
        option="fake_oom",
    ),
    Setting(
        "OOMREC_CELL_SCOPE",
        "cgroup or tree",
        "cgroup",
        "tree: judge each cell by its process tree and the kernel log even where a memory "
        "cgroup per cell can be made.",
    ),
    Setting("NO_COLOR", "any non-empty value", "unset", "No colour, unless --color always."),
)


@dataclass(frozen=True)
class Chosen:
    """A setting's value and where it came from."""

    # None: no flag, key or variable gave one, and the setting declares no default value.
    value: Any
    # What an error about the value names: the flag, `FILE [tool.oomrec] key`, the variable.
    named: str
    source: Literal["flag", "tool", "env", "default"]


_BY_KEY = {s.name: s for s in TOOL_KEYS}
_BY_OPTION = {s.option: s for s in ENV_VARS if s.option is not None}


def shown_default(name: str) -> str:
    """The default of the `[tool.oomrec]` key `name` as the docs show it (and the help)."""
    return _BY_KEY[name].default


def choose(
    name: str, flag: object, tool: Mapping[str, Any], where: str, *, flag_name: str | None = None
) -> Chosen:
    """The value of the setting `name` by oomrec's one precedence: the flag (`flag`, None when
    not given; named `flag_name`, else --name), then the key `name` of `[tool.oomrec]` (`tool`,
    read from `where`), then the environment variable that stands in for it, then its declared
    default. `name` is a `[tool.oomrec]` key or an option a variable stands in for.

    (The record file is found by store/locations.py, with $OOMREC_RECORD before the key.)"""
    key, env = _BY_KEY.get(name), _BY_OPTION.get(name)
    if key is None and env is None:
        raise KeyError(f"{name!r} is declared in neither TOOL_KEYS nor ENV_VARS")
    if flag is not None:
        return Chosen(flag, flag_name or "--" + name.replace("_", "-"), "flag")
    if key is not None and name in tool:
        return Chosen(tool[name], f"{where} {name}", "tool")
    if env is not None and env.name in os.environ:
        return Chosen(os.environ[env.name], env.name, "env")
    return Chosen(None if key is None else key.value, "the default", "default")


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def check_tool_keys(tool: Mapping[str, Any], where: str) -> None:
    """OomrecError naming the first key of `[tool.oomrec]` oomrec does not know, with the
    nearest known one: a misspelt key (`lenghts`) must not be silently ignored."""
    known = [s.name for s in TOOL_KEYS]
    for key in tool:
        if key in known:
            continue
        import difflib

        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
        raise OomrecError(f"{where}: unknown key {str(key)[:60]!r} in [tool.oomrec]; {hint}")


def parse_bool(text: str, where: str) -> bool:
    """1/0, true/false, yes/no, on/off, in any case; empty is false; else one-line OomrecError."""
    folded = text.strip().lower()
    if folded in _TRUE:
        return True
    if folded in _FALSE:
        return False
    raise OomrecError(
        f"{where}={text[:40]!r} is not a boolean; use 1/0, true/false, yes/no or on/off"
    )


# The harness's switch, and oomrec's: launch cells the record would pre-skip.
IGNORE_RECORD_ENVS = ("MLXCEL_BENCH_IGNORE_OOM_RECORD", "OOMREC_IGNORE_RECORD")


def env_flag(names: Iterable[str]) -> str | None:
    """The first of the environment variables `names` set to a true value, or None."""
    for name in names:
        if parse_bool(os.environ.get(name, ""), name):
            return name
    return None


def markdown_tables() -> str:
    """docs/configuration.md's tables of settings, generated from the declarations above."""
    lines = ["| `[tool.oomrec]` key | type | default | meaning |", "|---|---|---|---|"]
    lines += [f"| `{s.name}` | {s.type} | {s.default} | {s.help} |" for s in TOOL_KEYS]
    lines += ["", "| environment variable | type | default | meaning |", "|---|---|---|---|"]
    lines += [f"| `{s.name}` | {s.type} | {s.default} | {s.help} |" for s in ENV_VARS]
    return "\n".join(lines) + "\n"
