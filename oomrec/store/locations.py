"""Where things are: the repository root, `[tool.oomrec]` settings, the record file (opened).

The repository root is found by walking up to a `.git` entry rather than by asking git: it is
needed by commands (and `--help`-speed paths) that must not pay GitPython's import cost.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oomrec.core.errors import OomrecError
from oomrec.core.settings import check_tool_keys
from oomrec.store.owners import admin_hosts

if TYPE_CHECKING:
    # Imported where a record is opened: the hooks' fast path reads settings and no record.
    from oomrec.core.confine import Confinement
    from oomrec.core.records import RecordFile

DEFAULT_RECORD = Path("benchmarks") / ".oom-record"
# The names of the CSVs oomrec itself writes: a sweep's `{backend}_{hw}_longprompt_{date}.csv`
# (the harness's naming) and `oomrec run`'s `{backend}_{hw}_{date}_oomrec-run.csv`. Outputs,
# never code: the staleness verdict's work tree check leaves them out (and no other CSV).
SWEEP_CSV_TAG = "longprompt"
RUN_LOG_TAG = "oomrec-run"
RECORD_ENV = "OOMREC_RECORD"


def find_repo_root(start: Path | None = None) -> Path | None:
    """The nearest directory at or above `start` holding `.git` (a dir, or a file for worktrees).

    With `$GIT_DIR` set (and no `start`), the worktree git itself would use: `$GIT_WORK_TREE`,
    else what `git rev-parse --show-toplevel` says (None for a bare repository)."""
    if start is None and os.environ.get("GIT_DIR"):
        return _env_worktree()
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


@dataclass(frozen=True)
class Settings:
    """The `[tool.oomrec]` table of the repository's pyproject.toml, and where it was found."""

    repo_root: Path | None
    tool: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None

    @property
    def base(self) -> Path:
        """What relative paths in settings are relative to: the repo root, else the cwd."""
        return self.repo_root or Path.cwd()

    def get(self, key: str, default: Any = None) -> Any:
        return self.tool.get(key, default)


def _env_worktree() -> Path | None:
    # Here: every command's start-up reads this module, and only $GIT_DIR users run git here.
    from oomrec.core import gitrun

    tree = os.environ.get("GIT_WORK_TREE")
    if tree:
        return Path(tree).resolve()
    try:
        done = gitrun.run(["rev-parse", "--show-toplevel"], capture_output=True, text=True)
    except OSError:
        return None
    top = done.stdout.strip()
    return Path(top) if done.returncode == 0 and top else None


# Where the record of a bare repository's linked worktrees lives, inside its git dir: the
# folder stands in for the main worktree such a repository does not have.
BARE_HOME = "oomrec"


def main_worktree_root(root: Path) -> Path:
    """The main worktree of the repository whose (possibly linked) worktree is `root`: where its
    one record lives.

    A linked worktree (`git worktree add`) has a `.git` file naming its git dir, whose
    `commondir` names the main repository's. For a worktree of a bare repository (no main
    worktree), it is `<bare repository>/oomrec`: every worktree shares it, and git never tracks
    or shows it. Read from files, not asked of git, for the same reason as find_repo_root.
    """
    dot_git = root / ".git"
    if not dot_git.is_file():
        return root
    try:
        text = dot_git.read_text(encoding="utf-8").strip()
        gitdir = (root / text.removeprefix("gitdir:").strip()).resolve()
        common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except (OSError, UnicodeDecodeError):
        return root
    if common.name == ".git":
        return common.parent
    return common / BARE_HOME if _is_bare(common) else root


def _is_bare(git_dir: Path) -> bool:
    """Whether the repository at `git_dir` says `bare = true` in its config (a plain read: the
    line git writes, `\tbare = true`, under [core])."""
    try:
        text = (git_dir / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]").strip().lower()
        elif section == "core" and line.replace(" ", "").lower() in ("bare=true", "bare"):
            return True
    return False


def load_settings(start: Path | None = None) -> Settings:
    root = find_repo_root(start)
    pyproject = (root or (start or Path.cwd())) / "pyproject.toml"
    if not pyproject.is_file():
        return Settings(repo_root=root)
    import tomllib  # here: most runs have no pyproject.toml to read (~3 ms of `oomrec check`)

    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    # RecursionError: a deeply nested table or array; MemoryError: a huge one. Any of them is
    # the file's fault, said in one line.
    except (
        OSError,
        UnicodeDecodeError,
        tomllib.TOMLDecodeError,
        RecursionError,
        MemoryError,
        ValueError,
    ) as exc:
        raise OomrecError(
            f"{pyproject}: cannot read [tool.oomrec] ({_first_line(exc)}); fix the file's TOML"
        ) from None
    tools = data.get("tool", {})
    tool = tools.get("oomrec", {}) if isinstance(tools, dict) else None
    if not isinstance(tool, dict):
        raise OomrecError(f"{pyproject}: [tool.oomrec] must be a table; fix the file")
    check_tool_keys(tool, str(pyproject))
    # Checked where the file is read, whether or not a command reads the notes it governs.
    admin_hosts(tool, pyproject)
    return Settings(repo_root=root, tool=tool, source=pyproject)


def record_path(cli_value: Path | None, settings: Settings) -> Path:
    """The record file, by precedence: --record, $OOMREC_RECORD, [tool.oomrec] record, default.

    The default is `benchmarks/.oom-record` under the git top level (of the main worktree,
    from a linked one: one record per repository), else under the cwd.
    """
    if cli_value is not None:
        return cli_value
    env = os.environ.get(RECORD_ENV)
    if env:
        return Path(env)
    configured = settings.get("record")
    if configured is not None:
        if not isinstance(configured, str) or not configured:
            raise OomrecError(
                f"{settings.source}: [tool.oomrec] record must be a non-empty path string"
            )
        return _record_base(settings) / configured
    return _record_base(settings) / DEFAULT_RECORD


def open_record(
    record: Path | None,
    *,
    writing: bool = False,
    on_notice: Callable[[str], None] | None = None,
) -> tuple[RecordFile, Settings]:
    """The record file a verb works on: `record`, else the configured one (see record_path).

    A path someone chose must be in a folder that exists (a typo must not create folders; only
    the default location's is created). With `writing`, the first write into a git worktree
    adds the record to the repository's info/exclude (see guest.py) and passes what it did to
    `on_notice`.
    """
    from oomrec.core.records import RecordFile

    settings = load_settings()
    path = record_path(record, settings)
    if not path.name:
        # `--record ''` or `/`: no file name to write, lock or archive beside.
        raise OomrecError(
            f"{record if record is not None else path}: is a directory, not a regular file; "
            "point --record at a file"
        )
    if record is not None:
        _check_folder(path, "--record")
    elif path != default_record_path(settings):
        _check_folder(path, record_source(settings))
    # A path the user typed is shown as typed; a derived one relative to where they stand.
    shown = str(record) if record is not None else display_path(path)
    record_file = RecordFile(path, shown_as=shown)
    record_file.confinement = _confinement(settings, named_by_user=record is not None)
    if writing:
        # Refused before anything is read or said: not only when there is something to write.
        record_file.check_confined()
        record_file.before_first_write = lambda: _exclude_from_git(path, on_notice)
    return record_file, settings


def _confinement(settings: Settings, *, named_by_user: bool) -> Confinement:
    """Where the record's writes may go (core.confine): inside the repository (the cwd outside
    git), unless the user named the path: `--record`, or `$OOMREC_RECORD` (the user's own
    environment; `[tool.oomrec] record` is the repository's text, as a clone brings it)."""
    from oomrec.core.confine import Confinement

    base = _record_base(settings)
    repos = tuple(dict.fromkeys(p for p in (settings.repo_root, base) if p is not None))
    return Confinement(
        root=base,
        repos=repos if settings.repo_root is not None else (),
        named_by_user=named_by_user or bool(os.environ.get(RECORD_ENV)),
        flag="--record",
    )


def check_output(path: Path, settings: Settings, *, named_by_user: bool) -> None:
    """OomrecError (one line) unless a sweep's CSV may go to `path`, checked before anything is
    written (its lock included): never git's or oomrec's own file (core.confine.reserved_target),
    and inside the repository unless the user named it (`--output`), with the files beside it."""
    from oomrec.core.confine import Confinement, check_writes, reserved_target
    from oomrec.core.provenance import journal_path, sidecar_path

    reserved = reserved_target(path, "--output", "the sweep's CSV")
    if reserved is not None:
        raise OomrecError(reserved)
    confinement = Confinement(
        root=settings.base,
        repos=(settings.repo_root,) if settings.repo_root is not None else (),
        named_by_user=named_by_user,
        flag="--output",
    )
    beside = [sidecar_path(path), journal_path(path), path.with_name(path.name + ".oomrec.lock")]
    check_writes(str(path), path, beside, confinement)


def _exclude_from_git(path: Path, on_notice: Callable[[str], None] | None) -> None:
    from oomrec.store.exclude import exclude_record

    said = exclude_record(path)
    if said is not None and on_notice is not None:
        on_notice(said)


def _check_folder(path: Path, source: str) -> None:
    # A symlink is written through to its target: the target's folder must exist too (a
    # dangling link's target folder would be created by the first write).
    for folder in dict.fromkeys((path.parent, Path(os.path.realpath(path)).parent)):
        if folder.is_dir():
            continue
        what = "is not a folder" if folder.exists() else "does not exist"
        raise OomrecError(f"{source} {path}: {folder} {what}; create the folder or fix the path")


def default_record_path(settings: Settings) -> Path:
    """Where the record is when nothing names it: the only place whose folder oomrec creates."""
    return _record_base(settings) / DEFAULT_RECORD


def record_source(settings: Settings) -> str:
    """What named the record when no --record did: `$OOMREC_RECORD` or the pyproject key."""
    if os.environ.get(RECORD_ENV):
        return f"${RECORD_ENV}"
    return f"{settings.source} [tool.oomrec] record"


def _record_base(settings: Settings) -> Path:
    return main_worktree_root(settings.repo_root) if settings.repo_root else settings.base


def display_path(path: Path) -> str:
    """A path as the user would like to read it: relative to the cwd when it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def configured_models_dir(settings: Settings) -> tuple[Path, str]:
    """The models dir as the sweep reads it when no --models-dir is given (`models_dir` in
    `[tool.oomrec]`, else ./models under the repository), and as a user would type it."""
    value = settings.tool.get("models_dir")
    path = settings.base / (value if isinstance(value, str) and value else "models")
    shown = display_path(path)
    return path, shown if Path(shown).is_absolute() else f"./{shown}"
