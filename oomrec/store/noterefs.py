"""Where the shared notes live (the refs), and whether a clone has any: apart from notes.py so
that `oomrec check` can ask without loading the notes' reader or GitPython."""

from __future__ import annotations

# Each host's own ref; every remote's fetched copies live under refs/notes/remotes/<remote>/oomrec/.
LOCAL_PREFIX = "refs/notes/oomrec/"


# Replacement refs (`git replace`, grafts made with it) change the history of a commit without
# changing its SHA: a history cached by SHA (staleness/eventcache.py) cannot vouch for it.
REPLACE_PREFIX = "refs/replace/"


def refs_present() -> tuple[bool, bool]:
    """(whether this clone may have oomrec notes refs, whether it may have replacement refs),
    from one plain `git for-each-ref`, without GitPython (`oomrec check` pays no more when
    nothing is shared): both True whenever git cannot tell (the full read then decides, and
    says what is wrong); outside a repository both False."""
    import subprocess

    from oomrec.staleness.fixlog import git_config_args

    try:
        out = subprocess.run(
            [
                "git",
                *git_config_args(),
                "for-each-ref",
                "--format=%(refname)",
                LOCAL_PREFIX,
                "refs/notes/remotes/",
                REPLACE_PREFIX,
            ],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except OSError:
        return True, True
    if out.returncode:
        outside = "not a git repository" in out.stderr
        return not outside, not outside
    refs = out.stdout.splitlines()
    notes = any(
        ref.startswith(LOCAL_PREFIX) or (ref.startswith("refs/notes/") and "/oomrec/" in ref)
        for ref in refs
    )
    return notes, any(ref.startswith(REPLACE_PREFIX) for ref in refs)
