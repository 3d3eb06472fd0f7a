"""What a run with link-level credits (`--flow-control credit`, docs/credit.md) reports:
per port, the credit updates sent and received, how often and how long a lossless
queue waited for credit (the counterpart of a PFC port's paused time), frames that
overran the credit granted, and drops per class.

Counters come from the switches' SwitchCreditControl.counters() (virtual runs read
them in process; Mininet runs through the daemon's admin `stats` -> "credit") and the
host agents' summary rows ("credit": their HostCreditMac's). Times are the wire's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .figures import fmt_s
from .pfc import (
    Counters,
    PfcSeries,
    drops_table,
    final_counters,
    lossless_drops,
    per_priority,
    port_rows,
    priority_text,
)

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["credit_summary", "credit_tables"]


def _port_row(node: str, port: int, e: Counters, span_ns: float) -> Counters:
    waited = max((int(x) for x in e.get("blocked_ns") or [0]), default=0)
    return {"node": node, "port": port,
            "updates_tx": per_priority(e.get("updates_tx")),
            "updates_rx": per_priority(e.get("updates_rx")),
            "waits": per_priority(e.get("blocked")),
            "waited_ns": waited, "waited_pct": 100.0 * waited / span_ns,
            "overrun": sum(e.get("overrun") or []),
            "malformed": dict(e.get("malformed") or {}),
            "pause_rx": int(e.get("pause_rx") or 0)}


def credit_summary(series: PfcSeries, rows_by_host: Mapping[str, Sequence[Mapping[str, Any]]],
                   span_s: float) -> Counters | None:
    """The run's credit figures from the last switch counters and the agents' rows; None
    when no switch or host ran credits. `waited_pct` is of `span_s`, the traffic window."""
    last, hosts = final_counters(series, rows_by_host, "credit")
    if not last and not hosts:
        return None
    ports, host_rows, drops = port_rows(last, hosts, _port_row, max(1.0, span_s * 1e9))
    every = [*ports, *host_rows]
    total = {"updates_tx": sum(sum(p["updates_tx"].values()) for p in every),
             "updates_rx": sum(sum(p["updates_rx"].values()) for p in every),
             "waits": sum(sum(p["waits"].values()) for p in every),
             "overrun": sum(p["overrun"] for p in every),
             "lossless_drops": lossless_drops(drops)}
    return {"ports": ports, "hosts": host_rows, "drops": drops, "total": total}


def credit_tables(credit: Counters, dilation: float = 1.0, max_rows: int = 16
                  ) -> list[Table | str]:
    """rich renderables for the run summary: the ports that waited for credit, longest
    first (waited times in wire time and modelled, wire / dilation), and drops."""
    from rich.table import Table

    every = [*credit["ports"], *credit["hosts"]]
    waited = sorted((p for p in every if p["waits"]), key=lambda p: -p["waited_ns"])
    out: list[Table | str] = []
    tot = credit["total"]
    if not waited:
        out.append(f"Credit: no port waited for credit ({tot['updates_tx']} updates sent, "
                   f"{tot['updates_rx']} received)")
    else:
        t = Table(title=f"Credit: ports that waited for credit, per priority, and for how "
                        f"long ({len(waited)} of {len(every)} ports; all in summary.json)",
                  title_justify="left")
        for col in ("port", "waits", "waited", "waited nominal", "waited %",
                    "updates sent", "updates received"):
            t.add_column(col)
        for p in waited[:max_rows]:
            t.add_row(f"{p['node']}:{p['port']}", priority_text(p["waits"]),
                      f"{p['waited_ns'] / 1e6:.2f} ms",
                      fmt_s(p["waited_ns"] / 1e9 / dilation), f"{p['waited_pct']:.1f}",
                      priority_text(p["updates_tx"]), priority_text(p["updates_rx"]))
        out.append(t)
    overrun = [p for p in every if p["overrun"]]
    if overrun:
        out.append("Frames beyond the credit granted (dropped): " +
                   ", ".join(f"{p['node']}:{p['port']} {p['overrun']}" for p in overrun))
    if credit["drops"]:
        out.append(drops_table(credit["drops"], max_rows))
    return out
