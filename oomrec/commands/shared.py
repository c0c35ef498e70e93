"""`remote setup`, `record push` and `record pull`: this host's records to and from git notes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oomrec.commands import Result
from oomrec.core.errors import OomrecError
from oomrec.store.locations import open_record

if TYPE_CHECKING:
    import git


@dataclass(kw_only=True)
class SetupResult(Result):
    remote: str
    refspec: str
    added: bool

    def json_body(self) -> dict[str, Any]:
        return {"remote": self.remote, "refspec": self.refspec, "added": self.added}


@dataclass(kw_only=True)
class PushResult(Result):
    remote: str
    host: str
    ref: str
    dry_run: bool
    # Record lines the plan publishes, lines new in this host's ref, whether the remote moved.
    publish: int
    new: int = 0
    pushed: bool = False
    # Records that stay local: (record line, why).
    kept_back: list[tuple[str, str]] = field(default_factory=list)

    def json_body(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "host": self.host,
            "ref": self.ref,
            "dry_run": self.dry_run,
            "publish": self.publish,
            "new": self.new,
            "pushed": self.pushed,
            "kept_back": [{"line": text, "why": why} for text, why in self.kept_back],
        }


@dataclass(kw_only=True)
class PullResult(Result):
    remote: str
    refs: list[str]
    # Record lines per host that its refs carry as its own (this host's own ref included).
    by_host: dict[str, int]

    def json_body(self) -> dict[str, Any]:
        return {"remote": self.remote, "refs": self.refs, "by_host": self.by_host}


def _repo() -> git.Repo:
    from oomrec.store import gitrepo

    repo = gitrepo.open_repo()
    if repo is None:
        raise OomrecError("shared records live in git notes: run this inside the repository")
    return repo


def remote_setup(remote: str = "origin") -> SetupResult:
    """Make `git fetch REMOTE` bring every host's OOM records (never a push refspec)."""
    from oomrec.store import notes

    added = notes.setup(_repo(), remote)
    return SetupResult(remote=remote, refspec=notes.refspec(remote), added=added)


def record_push(
    remote: str = "origin", *, dry_run: bool = False, record: Path | None = None
) -> PushResult:
    """Publish this host's records that another machine can judge to REMOTE, in its own ref."""
    from oomrec.core.hardware import detect, detect_memory
    from oomrec.store import notes

    repo = _repo()
    record_file, _ = open_record(record)
    hardware = detect()
    host = notes.host_id(hardware)
    plan = notes.plan_push(repo, record_file, host, remote, hardware, detect_memory())
    result = PushResult(
        remote=remote,
        host=host,
        ref=notes.local_ref(host),
        dry_run=dry_run,
        publish=plan.count,
        kept_back=list(plan.kept_back),
    )
    if not dry_run:
        with notes.writing(repo):
            result.new = notes.write_notes(repo, plan)
            result.pushed, _ = notes.push(repo, plan, result.warnings)
    return result


def record_pull(remote: str = "origin") -> PullResult:
    """Fetch every host's records from REMOTE into refs/notes/remotes/REMOTE/oomrec/."""
    from oomrec.core.hardware import detect
    from oomrec.store import notes

    repo = _repo()
    warnings: list[str] = []
    refs = notes.pull(repo, remote, warnings)
    # What applies of each host's: the lines its refs carry as its own (store/owners.py).
    counts = notes.read_owned(repo, detect(), warnings, skip_own=False).by_host
    return PullResult(
        warnings=warnings, remote=remote, refs=refs, by_host=dict(sorted(counts.items()))
    )
