"""Where the shared notes live (the refs), and whether a clone has any: apart from notes.py so
that `oomrec check` can ask without loading the notes' reader or GitPython."""

from __future__ import annotations

# Each host's own ref; every remote's fetched copies live under refs/notes/remotes/<remote>/oomrec/.
LOCAL_PREFIX = "refs/notes/oomrec/"


def maybe_any_refs() -> bool:
    """False only when git says this clone has no oomrec notes ref, or that the cwd is in no
    repository: one plain `git for-each-ref`, without GitPython (`oomrec check` pays no more
    when nothing is shared). True when there are refs, and whenever git cannot tell (the full
    read then decides, and says what is wrong)."""
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
            ],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except OSError:
        return True
    if out.returncode:
        return "not a git repository" not in out.stderr
    return any(ref.startswith(LOCAL_PREFIX) or "/oomrec/" in ref for ref in out.stdout.splitlines())
