"""oomrec's one error type and its named exit statuses (as pipx names its own)."""

EXIT_OK = 0
# `record stale --exit-code` when stale records exist.
EXIT_FOUND = 1
# Every usage error and every OomrecError.
EXIT_USAGE = 2
# Interrupted by SIGINT/SIGTERM, as a shell reports it.
EXIT_INTERRUPTED = 130


class OomrecError(Exception):
    """A problem the user can fix. Its message is one line: what, where, what to do."""
