"""The live view while a workload runs (rich): elapsed time, bytes moved, flows done,
ECN marks, CNPs, retransmissions, drops, fidelity lags, and the fullest queue right now.
CNPs and host counters come from the agents' periodic `progress` lines.

`ProgressState` is plain data the orchestrator fills from samples; `render` turns it
into a table, so the view is testable without a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .figures import fmt_bytes, fmt_rate

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from rich.table import Table


@dataclass
class ProgressState:
    phase: str = "starting"
    elapsed_s: float = 0.0
    bytes_total: int = 0  # the workload's bytes
    bytes_moved: int = 0  # delivered to hosts by their leaves (wire bytes, headers included)
    rate_bps: float = 0.0  # host-bound throughput over the last interval (wire)
    dilation: float = 1.0  # the run's: the rate is shown as the modelled network's
    hosts_done: int = 0
    hosts: int = 0
    ecn_marks: int = 0
    cnps: int | None = None  # CNPs the hosts sent (agents' periodic reports; None: none yet)
    ecn_marked_rcvd: int = 0  # marked packets the hosts received
    retx_pkts: int = 0
    timeouts: int = 0
    tm_lag_max_ms: float | None = None  # switches' traffic-manager lag so far (None: n/a)
    tx_lag_max_ms: float = 0.0  # hosts' transmit turns behind schedule so far
    drops: int = 0
    kernel_drops: int = 0
    hottest: str = "-"  # "leaf2:3 12 pkts"
    note: str = ""


def render(s: ProgressState) -> Table:
    from rich.table import Table

    t = Table.grid(padding=(0, 2))
    for _ in range(4):
        t.add_column()
    frac = min(1.0, s.bytes_moved / s.bytes_total) if s.bytes_total else 0.0
    bar_w = 24
    bar = "#" * int(frac * bar_w) + "." * (bar_w - int(frac * bar_w))
    t.add_row(f"[bold]{s.phase}[/bold]", f"{s.elapsed_s:6.1f} s", f"[{bar}] {frac * 100:3.0f}%",
              f"hosts done {s.hosts_done}/{s.hosts}")
    t.add_row("moved", f"{fmt_bytes(s.bytes_moved)} of {fmt_bytes(s.bytes_total)}",
              f"now {fmt_rate(s.rate_bps * s.dilation)} modelled", f"hottest queue {s.hottest}")
    t.add_row("ECN marks", f"{s.ecn_marks} (hosts saw {s.ecn_marked_rcvd})",
              "CNPs " + ("-" if s.cnps is None else str(s.cnps)),
              f"drops {s.drops}  kernel {s.kernel_drops}")
    tm = "n/a" if s.tm_lag_max_ms is None else f"{s.tm_lag_max_ms:.1f} ms"
    t.add_row("retx", f"{s.retx_pkts} pkts, {s.timeouts} timeouts",
              f"lag: switches {tm}", f"senders {s.tx_lag_max_ms:.1f} ms")
    if s.note:
        t.add_row("note", s.note, "", "")
    return t


class LiveView:
    """A rich Live display, or nothing when disabled (not a terminal, tests)."""

    def __init__(self, enabled: bool, console: Console | None = None) -> None:
        self.enabled = enabled
        self.console = console
        self._live: Live | None = None

    def __enter__(self) -> LiveView:
        if self.enabled:
            from rich.live import Live

            self._live = Live(render(ProgressState()), console=self.console,
                              refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def update(self, state: ProgressState) -> None:
        if self._live is not None:
            self._live.update(render(state))

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None
