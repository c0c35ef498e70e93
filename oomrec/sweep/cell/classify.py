"""What a finished cell was: the runner's own verdict when it wrote a row, else its exit and output.

Only `SKIP:oom` and `SKIP:oom_guard` (the memory guard's stop) feed the backstop and the record.
Evidence must be true, but a missed OOM is the worse error (it launches a cell that can wedge a
machine), so: a timeout is never OOM; an allocator message in the output (anywhere in it) is; a
SIGKILL is OOM when the cell's own cgroup (cellscope.py) counted an OOM kill, or the kernel log
names one of the cell's processes as killed by the OOM killer; an unconfirmed OOM when a kill
may have been the cell's (no cell cgroup: a pid oomrec never saw, in its own cgroup; or, with no
kernel log either, a counter grew or none can be read); `FAIL:killed` otherwise (no OOM kill,
or only other cgroups'). See oomkill.py.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from enum import StrEnum

from oomrec.core.schema import Token, harness_token, line_token
from oomrec.sweep.cell.guard import GuardStop
from oomrec.sweep.cell.oomkill import KillEvidence
from oomrec.sweep.cell.signatures import SignatureHit

# `timeout(1)` exits 124 when it expires.
TIMEOUT_STATUS = 124
# A shell reports a child killed by SIGKILL as 128 + 9.
SHELL_SIGKILL_STATUS = 128 + signal.SIGKILL
SHELL_SIGSEGV_STATUS = 128 + signal.SIGSEGV
# A SIGSEGV of a process sampled at this share of its RLIMIT_AS or more ran out of address
# space: an allocation failed and the runner crashed on it (MLX's CPU build does, silently).
ADDRESS_SPACE_SHARE = 0.9


class HowKnown(StrEnum):
    """How a SKIP:oom (or SKIP:oom_guard) verdict is known, as the log and the sweep's JSON
    (`oom_evidence`) say it."""

    CGROUP = "cell cgroup"
    KERNEL = "kernel log"
    SIGNATURE = "signature"
    ROW = "runner row"
    UNCONFIRMED = "unconfirmed"
    FAKE = "faked"
    ADDRESS_SPACE = "address-space limit"
    GUARD = "memory guard"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A cell's classification: its token (`ok` for success), why in a few words, and for a
    true OOM how it is known."""

    token: str
    reason: str
    evidence: HowKnown | None = None

    @property
    def is_true_oom(self) -> bool:
        return self.token == Token.TRUE_OOM


def verdict_from_row(row: str, harness_row: str | None = None) -> tuple[Verdict, str | None]:
    """The runner's own verdict: its row's trailing token, or success when the row has none;
    and, where bench_longprompt.sh would read the cell CSV otherwise (its second line, the token
    compared as written), one line saying so. Where only one of the two readings is a true OOM,
    the verdict is SKIP:oom: nothing above an OOM either tool saw is launched."""
    token = line_token(row)
    ours = token or Token.SUCCESS
    theirs = harness_token(harness_row) if harness_row is not None else token
    note: str | None
    if theirs == Token.TRUE_OOM and ours != Token.TRUE_OOM:
        note = (
            f"the harness would read SKIP:oom in the cell CSV's second line where oomrec reads "
            f"{ours}: taken as SKIP:oom, the safe side"
        )
        return Verdict(Token.TRUE_OOM, "token written by the runner", HowKnown.ROW), note
    note = None
    if (theirs or Token.SUCCESS) != ours:
        shown = "success" if theirs is None else repr(theirs)
        side = ": taken as SKIP:oom, the safe side" if ours == Token.TRUE_OOM else ""
        note = f"the harness would read this cell as {shown}, oomrec reads {ours}{side}"
    if token is None:
        return Verdict(Token.SUCCESS, "row written by the runner"), note
    evidence = HowKnown.ROW if token == Token.TRUE_OOM else None
    return Verdict(token, "token written by the runner", evidence), note


def verdict_from_guard(stop: GuardStop) -> Verdict:
    """A cell the memory guard stopped while it ran: whatever it did or wrote after the guard's
    signal was its reaction to it, so the guard's verdict stands."""
    return Verdict(Token.OOM_GUARD, f"stopped by the memory guard: {stop.reason}", HowKnown.GUARD)


def verdict_from_exit(
    returncode: int,
    signature: SignatureHit | None,
    kills: KillEvidence,
    *,
    timed_out: bool = False,
    address_space: tuple[int, int] | None = None,
) -> Verdict:
    """The verdict for a cell that wrote no row, from how it ended and what it printed.

    `returncode` is as `subprocess` reports it (negative: killed by that signal); `signature` is
    the allocator message found in its whole output; `kills` compares the OOM-kill counters read
    before and after the cell; `timed_out` means oomrec killed it; `address_space` is the
    (virtual size, RLIMIT_AS) of the process that came closest to its limit.
    """
    if timed_out:
        return Verdict(Token.FAIL_TIMEOUT, "killed by oomrec after --timeout")
    if returncode == TIMEOUT_STATUS:
        return Verdict(Token.FAIL_TIMEOUT, f"exit {TIMEOUT_STATUS} (timeout)")
    if returncode == 0:
        return Verdict(Token.FAIL_NO_OUTPUT, "exit 0 without a result row")
    how = _describe_status(returncode)
    sigkill = returncode in (-signal.SIGKILL, SHELL_SIGKILL_STATUS)
    if sigkill and kills.confirmed:
        known = HowKnown.CGROUP if kills.by_cgroup and kills.cell_kills else HowKnown.KERNEL
        return Verdict(Token.TRUE_OOM, f"{how}: {kills.describe()}", known)
    if signature is not None:
        return Verdict(
            Token.TRUE_OOM, f"{how}, output has {signature.describe()}", HowKnown.SIGNATURE
        )
    segv = returncode in (-signal.SIGSEGV, SHELL_SIGSEGV_STATUS)
    if segv and address_space is not None:
        vms, limit = address_space
        if vms >= ADDRESS_SPACE_SHARE * limit:
            return Verdict(
                Token.TRUE_OOM,
                f"{how} with its address space at {vms / limit:.0%} of its RLIMIT_AS "
                f"({vms >> 20} of {limit >> 20} MiB): an allocation failed",
                HowKnown.ADDRESS_SPACE,
            )
    if not sigkill:
        # Not evidence enough alone, but worth a look.
        seen = f"; {kills.describe()}" if kills.confirmed or kills.unconfirmed else ""
        return Verdict(Token.FAIL_BENCH, f"{how}, no out-of-memory message in its output{seen}")
    if kills.unconfirmed or kills.unreadable:
        return Verdict(
            Token.TRUE_OOM,
            f"{how}, not by oomrec; {kills.describe()}: taken as OOM, the safe side",
            HowKnown.UNCONFIRMED,
        )
    return Verdict(
        Token.FAIL_KILLED, f"{how}, not by oomrec and not by the OOM killer: {kills.describe()}"
    )


def _describe_status(returncode: int) -> str:
    if returncode == SHELL_SIGKILL_STATUS:
        return f"exit {returncode} (SIGKILL)"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit {returncode}"
