"""The results folder of one run: results/<time>-<topo>-<lb>-<cc>/.

    config.json        the resolved RunConfig, the topology, bring-up timings
    agents/<h>.json    each host agent's configuration; agents/<h>.jsonl its raw results
    flows.jsonl        one line per flow (FlowResult)
    ports.csv          per switch port: counter deltas over the workload
    port_samples.csv   cumulative counters per port, sampled over time (t_s on the wire's
                       timeline, t_nominal_us in modelled time)
    queues.csv         sampled egress queue depth per port (times as port_samples.csv)
    summary.json       the RunSummary; summary.txt the tables as shown
    plots/*.png        flow_throughput, queue_depth, uplink_utilization (modelled time and
                       rates; the CSV files and flows.jsonl keep the wire's, with
                       *_nominal fields for the modelled)
    pcap/              per-port captures (on request; stamps in modelled time, in
                       nanoseconds), logs/ switch logs
"""

from __future__ import annotations

import csv
import json
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .jsontypes import JsonValue
from .metrics import FIELDS, FlowResult, PortCount, PortKey

if TYPE_CHECKING:
    from .summary import RunSummary


def run_dir_name(topo: str, lb: str, cc: str, now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"{stamp}-{Path(topo).stem}-{lb}-{cc}"


class ResultsError(RuntimeError):
    """The results folder cannot be made; the message is one line for the user."""


def make_run_dir(root: Path, topo: str, lb: str, cc: str) -> Path:
    """A fresh folder (a suffix keeps two runs in the same second apart)."""
    base = run_dir_name(topo, lb, cc)
    if root.exists() and not root.is_dir():
        raise ResultsError(f"cannot make a run folder under {root}: not a folder")
    try:
        root.mkdir(parents=True, exist_ok=True)
        for i in range(100):
            d = root / (base if i == 0 else f"{base}-{i}")
            try:
                d.mkdir()
                return d
            except FileExistsError:
                continue
    except OSError as exc:  # not a folder, no permission, read-only, full
        raise ResultsError(f"cannot make a run folder under {root}: "
                           f"{exc.strerror or exc}") from None
    raise ResultsError(f"cannot make a fresh run folder under {root}")


def pcaps_to_modelled(pcap_dir: Path, origin_ns: int, dilation: float) -> list[str]:
    """Rewrite a real run's captures (wall-clock stamps, from the switch daemons or BMv2)
    into modelled time from `origin_ns` (the START instant): what they show is then the
    modelled fabric's timing, as a virtual run's captures and every other figure are.
    Problems (a file that cannot be read or rewritten) come back as notes; that file
    stays as it was."""
    from emu.switch.pcap import PcapFormatError, rescale_to_modelled

    failed: list[str] = []
    why = ""
    for path in sorted(pcap_dir.glob("*.pcap")) if pcap_dir.is_dir() else []:
        try:
            rescale_to_modelled(str(path), origin_ns, dilation)
        except (OSError, PcapFormatError) as exc:
            failed.append(path.name)
            why = str(exc.strerror or exc) if isinstance(exc, OSError) else str(exc)
    if not failed:
        return []
    return [f"{len(failed)} capture(s) left in wall-clock time, not modelled "
            f"({', '.join(failed[:3])}{', ...' if len(failed) > 3 else ''}): {why}"]


def discard_unused_run_dir(run_dir: Path, setup_outputs: Iterable[str]) -> None:
    """Remove a run folder that holds only set-up output (`setup_outputs`: the compiler's
    build/, empty captures): a run stopped before its workload measured nothing, and an
    empty folder would read as a run that left no results."""
    try:
        if {p.name for p in run_dir.iterdir()} <= set(setup_outputs):
            shutil.rmtree(run_dir, ignore_errors=True)
    except OSError:
        pass


def write_json(path: Path, data: JsonValue) -> Path:
    return write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True, default=str)
                             + "\n")


def write_text_atomic(path: Path, text: str) -> Path:
    """`text` as the file `path` (its folder made), whole or not at all: written beside
    it, then renamed over it; a write that fails (disk full) leaves nothing behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a half-written file is no result
        raise
    return path


def write_flows(path: Path, flows: Sequence[FlowResult]) -> Path:
    with path.open("w") as fh:
        for f in flows:
            fh.write(json.dumps(f.to_dict(), sort_keys=True) + "\n")
    return path


def write_ports(path: Path, deltas: Mapping[PortKey, PortCount],
                info: Mapping[PortKey, Mapping[str, JsonValue]] | None = None) -> Path:
    """Counter deltas per port; `info` adds columns (peer, rate_bps, uplink)."""
    extra = sorted({k for v in (info or {}).values() for k in v})
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["switch", "port", *extra, *FIELDS])
        for (sw, port), c in sorted(deltas.items()):
            meta = (info or {}).get((sw, port), {})
            w.writerow([sw, port, *(meta.get(k, "") for k in extra), *c.as_tuple()])
    return path


def write_port_samples(path: Path,
                       samples: Iterable[tuple[float, Mapping[PortKey, PortCount]]],
                       dilation: float = 1.0) -> Path:
    """Cumulative counters per port over time: `t_s` on the run's (wire) timeline and
    `t_nominal_us` the same moment in the modelled network (t_s / dilation), last so
    that columns read by position keep their place."""
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t_s", "switch", "port", *FIELDS, "t_nominal_us"])
        for t, ports in samples:
            nominal = f"{t / dilation * 1e6:.3f}"
            for (sw, port), c in sorted(ports.items()):
                w.writerow([f"{t:.3f}", sw, port, *c.as_tuple(), nominal])
    return path


def write_queue_samples(path: Path, samples: Iterable[tuple[float, str, int, float]],
                        dilation: float = 1.0) -> Path:
    """Queue depth samples; times as in `write_port_samples`."""
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t_s", "switch", "port", "depth_pkts", "t_nominal_us"])
        for t, sw, port, depth in samples:
            w.writerow([f"{t:.3f}", sw, port, f"{depth:g}", f"{t / dilation * 1e6:.3f}"])
    return path


def read_queue_samples(path: Path) -> list[tuple[float, str, int, float]]:
    with path.open() as fh:
        r = csv.DictReader(fh)
        return [(float(x["t_s"]), x["switch"], int(x["port"]), float(x["depth_pkts"]))
                for x in r]


def print_results_path(run_dir: Path, summary: RunSummary) -> None:
    """The run's last line: where its results are (after a long summary, the first thing
    a user looks for); `summary` is the run's RunSummary."""
    partial = " (partial: the run was interrupted)" if summary.run.get("interrupted") else ""
    print(f"emu run: results in {run_dir}{partial}", flush=True)
