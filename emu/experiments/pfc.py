"""Flow control in a run: the settings a RunConfig implies (switch PFC, host MACs,
lossless QoS) and what the run reports about it (PAUSE frames per port and priority,
paused time, watchdog events, drops per class, headroom) with a plot of paused time.

Counters come from the switches' SwitchFlowControl.counters() (virtual runs read them
in process; Mininet runs through the daemon's admin `stats` -> "pfc") and the host
agents' summary rows ("pfc": their HostMac's counters). Times are those of the wire.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from emu.control import QosSettings
from emu.core.flowmode import FlowControlMode
from emu.core.pfc import FlowControl, WatchdogSettings

from .config import RunConfig
from .figures import fmt_s
from .plan import CREDIT, RunPlan

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from rich.table import Table

    from emu.roce.pfc import HostPfcParams
    from emu.sim.fabric import SimFabric

    from .plots import TimeAxis

__all__ = ["PfcSeries", "flow_control", "host_pfc_json", "paused_figure", "pfc_summary",
           "pfc_tables", "priority_queues", "qos"]

LOSSLESS_PRIORITY = 3  # QosSettings.lossless: data (DSCP 26) on priority 3
PFC_QUEUES = 8  # one queue per 802.1p priority, as PFC switches have
REALTIME_REACTION_NS = 40_000_000  # wire time (FlowControl takes it modelled); see flow_control()

# One switch's SwitchFlowControl.counters() (plus "headroom"), or a host MAC's, as JSON
# (the daemon's admin `stats` -> "pfc", an agent's summary row -> "pfc"); the summary
# built from them has the same shape (JSON of known keys).
Counters = dict[str, Any]
# (t_s, switch -> its Counters), cumulative counters over the run
PfcSeries = list[tuple[float, dict[str, Counters]]]


def flow_control_stats(stats: Mapping[str, Any]) -> Counters | None:
    """A switch's flow-control counters from its admin `stats`: under "pfc", or under
    "credit" in credit mode (whose counters say "mode": "credit"); None without."""
    counters = stats.get("pfc") or stats.get("credit")
    return counters if isinstance(counters, dict) and counters else None


def priority_queues(cfg: RunConfig) -> int:
    return PFC_QUEUES if cfg.flow_control.lossless else cfg.priority_queues


def qos(cfg: RunConfig) -> QosSettings:
    """Lossless runs put the data in the lossless priority; else the RoCE default."""
    if cfg.flow_control.lossless:
        return QosSettings.lossless(PFC_QUEUES)
    return QosSettings.roce(cfg.priority_queues)


def flow_control(plan: RunPlan) -> FlowControl | None:
    """The switches' flow control, PFC or credits (None: none). The watchdog's times
    are modelled; the switches run on the wire's clock, so they are stretched by the
    dilation as every other timer."""
    cfg = plan.config
    if cfg.flow_control is FlowControlMode.CREDIT:
        return FlowControl(mode="credit", lossless=frozenset({LOSSLESS_PRIORITY}),
                           credit=CREDIT)
    if cfg.flow_control is not FlowControlMode.PFC:
        return None
    wd_ns = plan.dilation.wire_ns(cfg.pfc_watchdog_ms * 1e6)
    action = cfg.pfc_watchdog if cfg.pfc_watchdog != "off" else "drop"
    watchdog = WatchdogSettings(enabled=cfg.pfc_watchdog != "off", detection_ns=wd_ns,
                                restoration_ns=wd_ns, action=action)  # type: ignore[arg-type]
    # Real time: a daemon or agent behind schedule reads frames late (measured up to
    # ~16 ms of traffic-manager lag on a loaded 2-core machine); the headroom covers
    # what the link carries meanwhile. Virtual time has no such lag.
    # The headroom is computed on the modelled links: the lag in modelled time.
    reaction = 0 if cfg.virtual else math.ceil(plan.dilation.modelled_ns(REALTIME_REACTION_NS))
    return FlowControl(mode="pfc", lossless=frozenset({LOSSLESS_PRIORITY}), watchdog=watchdog,
                       reaction_ns=reaction)


def host_pfc_json(cfg: RunConfig) -> Counters | None:
    """The host agents' --pfc settings (None: their NIC sends straight on the port)."""
    if not cfg.flow_control.lossless:
        return None
    return {"mode": cfg.flow_control.value, "lossless": [LOSSLESS_PRIORITY],
            "dscp_priority": {str(d): p for d, p in qos(cfg).dscp_priority.items()}}


# --------------------------------------------------------------------------- summary


def per_priority(counts: Sequence[int] | None) -> dict[int, int]:
    """A per-priority counter list as {priority: count}, the non-zero ones."""
    return {p: int(n) for p, n in enumerate(counts or []) if n}


def _paused_ns(counters: Counters) -> int:
    """The port's paused time: its most paused priority (a port is paused for a class)."""
    return max((int(x) for x in counters.get("paused_ns") or [0]), default=0)


_FRAME_COUNTS = ("pause_tx", "resume_tx", "pause_rx", "resume_rx")


def _port_row(node: str, port: int, e: Counters, span_ns: float) -> Counters:
    """One port's figures: PAUSE (non-zero quanta) and resume frames sent and received
    per priority, counted alike at both ends of a link, and its paused time."""
    ns = _paused_ns(e)
    return {"node": node, "port": port,
            **{k: per_priority(e.get(k)) for k in _FRAME_COUNTS},
            "paused_ns": ns, "paused_pct": 100.0 * ns / span_ns,
            "malformed": dict(e.get("malformed") or {})}


def class_drops(switch: str, c: Counters) -> list[Counters]:
    """A switch's flow-control drops ("port:priority:reason" -> packets) as rows."""
    out = []
    for key, n in sorted(c.get("drops", {}).items()):
        port, prio, reason = key.split(":", 2)
        out.append({"node": switch, "port": int(port), "priority": int(prio),
                    "reason": reason, "count": n})
    return out


def lossless_drops(drops: Sequence[Counters]) -> int:
    return sum(d["count"] for d in drops if d["priority"] == LOSSLESS_PRIORITY)


def final_counters(series: PfcSeries, rows_by_host: Mapping[str, Sequence[Mapping[str, Any]]],
                   mode: str) -> tuple[dict[str, Counters], dict[str, Counters]]:
    """The switches' last flow-control counters of `mode` ("pfc", "credit") and each
    host MAC's, from its agent's summary row."""
    last = {sw: c for sw, c in (series[-1][1] if series else {}).items()
            if c.get("mode", "pfc") == mode}
    hosts = {h: r[mode] for h, rows in rows_by_host.items() for r in rows
             if r.get("type") == "summary" and r.get(mode)}
    return last, hosts


PortRow = Callable[[str, int, Counters, float], Counters]


def port_rows(last: Mapping[str, Counters], hosts: Mapping[str, Counters], row: PortRow,
              span_ns: float) -> tuple[list[Counters], list[Counters], list[Counters]]:
    """Every switch port's and host MAC's row (`row(node, port, counters, span_ns)`),
    and the switches' drops per class."""
    ports: list[Counters] = []
    drops: list[Counters] = []
    for sw in sorted(last):
        for port, e in sorted(last[sw].get("ports", {}).items(), key=lambda kv: int(kv[0])):
            ports.append(row(sw, int(port), e, span_ns))
        drops.extend(class_drops(sw, last[sw]))
    return ports, [row(h, 0, hosts[h], span_ns) for h in sorted(hosts)], drops


def pfc_summary(series: PfcSeries, rows_by_host: Mapping[str, Sequence[Mapping[str, Any]]],
                span_s: float) -> Counters | None:
    """The run's PFC figures from the last switch counters and the agents' rows; None
    when nothing had flow control. `paused_pct` is of `span_s`, the traffic window
    (first flow start to last arrival): the agents' start-up and exit, which differ
    between real and virtual time, would dilute it."""
    last, hosts = final_counters(series, rows_by_host, "pfc")
    if not last and not hosts:
        return None
    span_ns = max(1.0, span_s * 1e9)
    ports, host_rows, drops = port_rows(last, hosts, _port_row, span_ns)
    watchdog: list[Counters] = []
    headroom: list[Counters] = []
    for sw in sorted(last):
        c = last[sw]
        for key, w in sorted(c.get("watchdog", {}).items()):
            port, prio = key.split(":")
            watchdog.append({"node": sw, "port": int(port), "priority": int(prio),
                             "detected": w["detected"], "restored": w["restored"],
                             "dropped": w["dropped"]})
        for port, h in sorted((c.get("headroom") or {}).items(), key=lambda kv: int(kv[0])):
            headroom.append({"node": sw, "port": int(port), **h})
    total = {**{k: sum(sum(p[k].values()) for p in [*ports, *host_rows])
                for k in _FRAME_COUNTS},
             "watchdog_detected": sum(w["detected"] for w in watchdog),
             "lossless_drops": lossless_drops(drops)}
    return {"ports": ports, "hosts": host_rows, "watchdog": watchdog, "drops": drops,
            "headroom": headroom, "total": total}


def priority_text(counts: Mapping[int, int]) -> str:
    """{3: 2, 7: 1} as "p3:2 p7:1" ("-" when empty)."""
    return " ".join(f"p{p}:{n}" for p, n in sorted(counts.items(), key=lambda kv: int(kv[0]))) \
        or "-"


def _pfc_rows(active: Sequence[Counters], max_rows: int) -> list[Counters]:
    """The rows shown: the ports that sent most PAUSE frames (where back-pressure starts)
    and the most paused ones (how far it spread), taken in turn, senders listed first.
    Ranked by paused time alone, the senders, rarely paused themselves, fell off the
    table; ranked by frames sent, the paused hosts did."""
    def sent(p: Counters) -> int:
        return sum(p["pause_tx"].values())

    by_sent = sorted((p for p in active if sent(p)), key=lambda p: -sent(p))
    by_paused = sorted((p for p in active if p["paused_ns"]), key=lambda p: -p["paused_ns"])
    chosen: dict[int, Counters] = {}
    for pair in itertools.zip_longest(by_sent, by_paused):
        for p in pair:
            if p is not None and len(chosen) < max_rows:
                chosen.setdefault(id(p), p)
    rest = [p for p in active if id(p) not in chosen]  # received PAUSE, never paused
    rows = [*chosen.values(), *rest[:max_rows - len(chosen)]]
    return sorted(rows, key=lambda p: (-sent(p), -p["paused_ns"]))


def pfc_tables(pfc: Counters, dilation: float = 1.0, max_rows: int = 16
               ) -> list[Table | str]:
    """rich renderables for the run summary (ports that sent, received or were paused);
    paused times in wire time and modelled (wire / dilation)."""
    from rich.table import Table

    out: list[Table | str] = []
    active = [p for p in [*pfc["ports"], *pfc["hosts"]]
              if p["pause_tx"] or p["pause_rx"] or p["paused_ns"]]
    t = Table(title=f"PFC: PAUSE frames per port and priority, paused time "
                    f"({len(active)} ports active; all in summary.json)", title_justify="left")
    for col in ("port", "PAUSE sent", "PAUSE received", "paused", "paused nominal",
                "paused %"):
        t.add_column(col)
    for p in _pfc_rows(active, max_rows):
        t.add_row(f"{p['node']}:{p['port']}", priority_text(p["pause_tx"]),
                  priority_text(p["pause_rx"]),
                  f"{p['paused_ns'] / 1e6:.2f} ms", fmt_s(p["paused_ns"] / 1e9 / dilation),
                  f"{p['paused_pct']:.1f}")
    out.append(t)
    if pfc["watchdog"]:
        w = Table(title="PFC watchdog", title_justify="left")
        for col in ("port", "priority", "storms detected", "restored", "dropped"):
            w.add_column(col)
        for e in pfc["watchdog"]:
            w.add_row(f"{e['node']}:{e['port']}", str(e["priority"]), str(e["detected"]),
                      str(e["restored"]), str(e["dropped"]))
        out.append(w)
    if pfc["drops"]:
        out.append(drops_table(pfc["drops"], max_rows))
    short = [h for h in pfc["headroom"] if not h.get("ok", True)]
    if short:
        out.append("PFC headroom below what the link needs (lossless drops possible): " +
                   ", ".join(f"{h['node']}:{h['port']} {h['configured']} < {h['needed']} B"
                             for h in short))
    return out


def drops_table(drops: Sequence[Counters], max_rows: int) -> Table:
    from rich.table import Table

    d = Table(title="Drops per class (port, priority, reason)", title_justify="left")
    for col in ("port", "priority", "reason", "packets"):
        d.add_column(col)
    for e in drops[:max_rows]:
        d.add_row(f"{e['node']}:{e['port']}", str(e["priority"]), e["reason"],
                  str(e["count"]))
    return d


# ---------------------------------------------------------------------------- plot


def paused_series(series: PfcSeries) -> dict[str, list[tuple[float, int]]]:
    """'switch:port' -> (t_s, cumulative paused ns) over the run."""
    out: dict[str, list[tuple[float, int]]] = {}
    for t, by_switch in series:
        for sw, c in by_switch.items():
            for port, e in c.get("ports", {}).items():
                out.setdefault(f"{sw}:{port}", []).append((t, _paused_ns(e)))
    return out


def paused_figure(series: PfcSeries, axis: TimeAxis | None = None, top: int = 8,
                  window_s: float | None = None) -> Figure | None:
    """Paused time per port over time: the fraction of each window the port's most
    paused priority was paused, for the `top` most paused ports (None: none paused).
    `window_s` is on the series' timeline (the wire's); x is `axis`'s modelled time."""
    per_port = paused_series(series)
    totals = {k: v[-1][1] for k, v in per_port.items() if v and v[-1][1] > 0}
    if not totals:
        return None
    from .plots import TITLE_Y, TimeAxis, new_figure

    fig = new_figure((9, 4))
    ax = fig.subplots()
    times = sorted({t for t, _ in series})
    axis = axis or TimeAxis.spanning(times[0], times[-1])
    span = times[-1] - times[0] if len(times) > 1 else 1.0
    win = window_s or max(span / 50, 1e-9)
    for key in sorted(totals, key=lambda k: -totals[k])[:top]:
        pts = per_port[key]
        xs, ys = [], []
        j = 0
        for i in range(1, len(pts)):
            # from the last point at least one window back: a steady fraction, not steps
            while j < i - 1 and pts[i][0] - pts[j + 1][0] >= win:
                j += 1
            dt = pts[i][0] - pts[j][0]
            if dt <= 0:
                continue
            xs.append(axis.x(pts[i][0]))
            ys.append(min(100.0, 100.0 * (pts[i][1] - pts[j][1]) / (dt * 1e9)))
        ax.plot(xs, ys, label=key, drawstyle="default")
    ax.set_xlabel(axis.label)
    ax.set_ylabel("paused (% of time)")
    ax.set_ylim(-2, 102)
    ax.set_title("PFC: paused time per port", y=TITLE_Y)
    ax.legend(fontsize="small", loc="upper right")
    ax.grid(alpha=0.3)
    return fig




class VirtualPfc:
    """Flow control of a virtual run: the agents' host MAC settings (None without flow
    control: the NIC sends straight on its port) and the switches' counters over time."""

    def __init__(self, sim: SimFabric) -> None:
        self.sim = sim
        self.on = sim.flow_control is not None and sim.flow_control.enabled
        self.series: PfcSeries = []
        self.sample()  # before any traffic

    def host_params(self, host: str) -> HostPfcParams | None:
        return self.sim.host_mac_params(host) if self.on else None

    def sample(self) -> None:
        if self.on:
            self.series.append((self.sim.clock.now_ns() / 1e9, switch_counters(self.sim)))


def switch_counters(sim: SimFabric) -> dict[str, Counters]:
    """An in-process fabric's (emu.sim.SimFabric) switch counters, as the daemon's
    admin `stats` -> "pfc" (or "credit") gives them."""
    out: dict[str, Counters] = {}
    for name, sw in sim.switches.items():
        fc = sw.flow_control
        if fc is None:
            continue
        out[name] = fc.counters()  # credit mode's say "mode": "credit"
        if fc.cfg.mode == "pfc":
            out[name]["headroom"] = fc.headroom_report()
    return out
