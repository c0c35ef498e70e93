"""Where the shared notes live (the refs), and whether a clone has any: apart from notes.py so
that `oomrec check` can ask without loading the notes' reader or GitPython."""

from __future__ import annotations

from oomrec.core import gitrun

# Each host's own ref; every remote's fetched copies live under refs/notes/remotes/<remote>/oomrec/.
LOCAL_PREFIX = "refs/notes/oomrec/"
REMOTES_PREFIX = "refs/notes/remotes/"
# Old tips of tracking refs whose rewrite dropped lines: refs/notes/kept/<remote>/<sha>/oomrec/.
KEPT_PREFIX = "refs/notes/kept/"
_HOST_PART = "/oomrec/"


def host_of(ref: str) -> str | None:
    """The host whose notes `ref` is, read from its exact name: `refs/notes/oomrec/<host>`,
    `refs/notes/remotes/<remote>/oomrec/<host>` or `refs/notes/kept/<remote>/<sha>/oomrec/<host>`,
    the host one name (no `/`); None for any other ref.

    The remote's part ends at the first `/oomrec/`: everything after it came from the remote
    (the fetch refspec maps `refs/notes/oomrec/*` there, `*` spanning slashes), so a ref pushed
    as `refs/notes/oomrec/x/oomrec/gb10-honest` is no ref of host gb10-honest."""
    if ref.startswith(LOCAL_PREFIX):
        host = ref[len(LOCAL_PREFIX) :]
    elif ref.startswith((REMOTES_PREFIX, KEPT_PREFIX)):
        prefix = REMOTES_PREFIX if ref.startswith(REMOTES_PREFIX) else KEPT_PREFIX
        # A remote's name is one name or more: searched from its first character on.
        at = ref.find(_HOST_PART, len(prefix))
        if at < 0:
            return None
        host = ref[at + len(_HOST_PART) :]
    else:
        return None
    return host if host and "/" not in host else None


def in_namespace(ref: str) -> bool:
    """Whether `ref` is under a namespace oomrec's notes refs live in (a host's ref or not)."""
    if ref.startswith(LOCAL_PREFIX):
        return True
    return ref.startswith((REMOTES_PREFIX, KEPT_PREFIX)) and _HOST_PART in ref


# Replacement refs (`git replace`, grafts made with it) change the history of a commit without
# changing its SHA: a history cached by SHA (staleness/eventcache.py) cannot vouch for it.
REPLACE_PREFIX = "refs/replace/"


def refs_present() -> tuple[bool, bool]:
    """(whether this clone may have oomrec notes refs, whether it may have replacement refs),
    from one plain `git for-each-ref`, without GitPython (`oomrec check` pays no more when
    nothing is shared): both True whenever git cannot tell (the full read then decides, and
    says what is wrong); outside a repository both False."""
    import subprocess  # here, for start-up time: its DEVNULL

    try:
        out = gitrun.run(
            [
                "for-each-ref",
                "--format=%(refname)",
                LOCAL_PREFIX,
                REMOTES_PREFIX,
                KEPT_PREFIX,
                REPLACE_PREFIX,
            ],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
    except OSError:
        return True, True
    if out.returncode:
        outside = "not a git repository" in out.stderr
        return not outside, not outside
    refs = out.stdout.splitlines()
    notes = any(in_namespace(ref) for ref in refs)
    return notes, any(ref.startswith(REPLACE_PREFIX) for ref in refs)
