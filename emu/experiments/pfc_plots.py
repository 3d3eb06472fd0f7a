"""Plots of the lossless-fabric scenarios (emu.experiments.pfc_scenarios): one PNG per
scenario, `pfc_<name>.png` (the README's figures come from here)."""

from __future__ import annotations

from pathlib import Path

from .pfc_results import DcqcnResult, DeadlockResult, StormResult, VictimResult
from .plots import new_figure, save

__all__ = ["scenario_figure"]


def _series(ax: object, series: dict[str, list[tuple[float, float]]], smooth: int = 1,
            styles: dict[str, dict[str, object]] | None = None) -> None:
    for label, pts in series.items():
        xs = [t for t, _ in pts]
        ys = [v for _, v in pts]
        if smooth > 1:  # a moving average: completions come in whole messages
            ys = [sum(ys[max(0, i - smooth + 1):i + 1]) / len(ys[max(0, i - smooth + 1):i + 1])
                  for i in range(len(ys))]
        ax.plot(xs, ys, label=label, **(styles or {}).get(label, {}))  # type: ignore[attr-defined]


def victim_figure(r: VictimResult) -> object:
    fig = new_figure((8, 3.6), fitted=False)
    ax = fig.subplots()
    _series(ax, r.series, smooth=5, styles={"alone": {"ls": "--", "lw": 2.5, "zorder": 3}})
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("victim goodput (Gb/s, 1 ms average)")
    ax.set_title(f"Victim flow h8->h10 beside a 7:1 incast: alone {r.alone_bps / 1e9:.1f}, "
                 f"PFC {r.pfc_bps / 1e9:.1f}, PFC+DCQCN {r.dcqcn_bps / 1e9:.1f} Gb/s",
                 fontsize="medium")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return fig


def dcqcn_figure(r: DcqcnResult) -> object:
    fig = new_figure((5, 3.4), fitted=False)
    ax = fig.subplots()
    bars = ax.bar(["PFC, no CC", "PFC + DCQCN"], [r.pauses_off, r.pauses_on],
                  color=["tab:red", "tab:green"])
    ax.bar_label(bars)
    ax.set_ylabel("PAUSE frames sent")
    ax.set_title(f"8:1 incast: {r.reduction:.0f}x fewer PAUSE frames with DCQCN",
                 fontsize="medium")
    return fig


def storm_figure(r: StormResult) -> object:
    fig = new_figure((8, 3.6), fitted=False)
    ax = fig.subplots()
    _series(ax, r.series, smooth=4)
    ax.axvspan(r.storm_start_ns / 1e6, r.storm_end_ns / 1e6, color="tab:red", alpha=0.08,
               label="h3 sends PAUSE")
    if r.detected_ns:
        ax.axvline(r.detected_ns / 1e6, color="tab:red", ls="--", label="watchdog: storm")
    if r.restored_ns:
        ax.axvline(r.restored_ns / 1e6, color="tab:green", ls="--", label="watchdog: restored")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("probe h8->h4 goodput (Gb/s)")
    ax.set_title("Pause storm from a host NIC; leaf watchdog (drop) detection "
                 f"{r.detection_ns / 1e6:g} ms", fontsize="medium")
    ax.legend(fontsize="small", loc="upper right")
    ax.grid(alpha=0.3)
    return fig


def deadlock_figure(r: DeadlockResult) -> object:
    fig = new_figure((8, 3.6), fitted=False)
    ax = fig.subplots()
    _series(ax, r.series, styles={"PFC": {"lw": 3, "zorder": 3, "color": "black"}})
    if r.deadlocked_at_ns:
        ax.axvline(r.deadlocked_at_ns / 1e6, color="tab:red", ls="--",
                   label=f"no progress for {r.stall_ns / 1e6:g} ms: deadlock")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("data packets received")
    ax.set_title("5-switch ring, each flow two hops clockwise: PFC deadlock",
                 fontsize="medium")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return fig


FIGURES = {"victim": victim_figure, "dcqcn": dcqcn_figure, "storm": storm_figure,
           "deadlock": deadlock_figure}


def scenario_figure(name: str, result: object, directory: Path) -> Path:
    """Write pfc_<name>.png into `directory` (`result`: that scenario's); its path.
    By name, not by type: run as `python -m`, the scenario module is __main__ and its
    classes are not the ones imported here."""
    directory.mkdir(parents=True, exist_ok=True)
    return save(FIGURES[name](result), directory / f"pfc_{name}.png")  # type: ignore[operator]
