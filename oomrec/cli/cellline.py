"""How one finished cell reads in a log: the sweep's per-cell lines and `oomrec run`'s verdict
line say the same things the same way."""

from typing import TYPE_CHECKING

from oomrec.core.units import MIB

if TYPE_CHECKING:
    from oomrec.sweep.grid import CellResult


def cell_details(result: "CellResult") -> list[str]:
    """Its time and peak when it ran, why (unless it succeeded), how an OOM is known, notes."""
    from oomrec.core.schema import Token

    details = []
    if result.launched and result.seconds is not None:
        details.append(f"{result.seconds:.1f} s")
    if result.peak_rss_bytes is not None:
        details.append(f"peak {result.peak_rss_bytes / MIB:.0f} MiB")
    elif result.launched:
        details.append("peak unknown")
    if result.token != Token.SUCCESS:
        reason = result.reason
        if result.record_line:
            reason += f": {result.record_line}"
        details.append(reason)
    if result.oom_evidence is not None:
        details.append(f"OOM evidence: {result.oom_evidence}")
    details.extend(result.notes)
    return details
