"""Flows that fail, and the hosts that wait on them.

A QP that runs out of transport retries (IBTA retry_cnt, `emu.roce.requester`) goes to
the error state: its messages fail at the sender, and nothing tells their receivers,
nor the flows that wait on them (`after`). A RoCE job would abort there; the run instead
lets every other flow finish and then ends, rather than wait out its budget on flows
that can no longer come: it tells every agent which flows are lost (in virtual time
directly, in real time by a line on its stdin), and the agents stop waiting for them.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .jsontypes import Row
from .metrics import FlowResult

if TYPE_CHECKING:
    from emu.roce.agent import Agent

    from .workloads import Workload


def share_failures(workload: Workload, agents: Mapping[str, Agent]) -> None:
    """Tell every agent which flows will never arrive (cheap while none has failed)."""
    failed = {fid for a in agents.values() for fid in a.failed_flows()}
    if failed:
        lost = workload.lost_flows(failed)
        for a in agents.values():
            a.mark_lost(lost)


def _strings(v: object) -> list[str]:
    return [str(x) for x in v] if isinstance(v, list) else []


def newly_lost(workload: Workload, progress: Mapping[str, Row], told: set[str]) -> list[str]:
    """Real time: the flows that can no longer arrive, as the agents' latest progress
    lines tell (`failed`) and the workload's dependencies extend, that the agents have
    not been told yet (`told`)."""
    failed = {fid for row in progress.values() for fid in _strings(row.get("failed"))}
    if not failed:
        return []
    return sorted(workload.lost_flows(failed) - told)


# A failed flow's status, as the flow table and the note say it.
FAILURES = {"retry_exc_err": "retries exhausted", "wr_flush_err": "flushed",
            "dependency_failed": "waited on a failed flow"}


def with_failures(workload: Workload, flows: Sequence[FlowResult]) -> list[FlowResult]:
    """`flows` with "dependency_failed" on those that never started because a flow they
    wait on failed (a real-time agent stopped while waiting cannot tell)."""
    failed = {f.id for f in flows if f.status in FAILURES}
    lost = workload.lost_flows(failed) - failed
    return [dataclasses.replace(f, status="dependency_failed")
            if f.id in lost and f.status is None else f for f in flows]


def failure_note(flows: Sequence[FlowResult], retry_cnt: int | None) -> list[str]:
    """One line on the flows that failed, or none."""
    by = Counter(f.status for f in flows if f.status in FAILURES)
    if not by:
        return []
    first = min((f for f in flows if f.status == "retry_exc_err"),
                key=lambda f: f.start_s or 0.0, default=None)
    what = ", ".join(f"{n} {FAILURES[s]}" for s, n in sorted(by.items()))
    where = f" (first {first.id}, {first.src}->{first.dst})" if first is not None else ""
    return [f"{sum(by.values())} flows failed: {what}{where}: a QP that times out "
            f"{'more than ' + str(retry_cnt) if retry_cnt is not None else 'too often'} "
            "times in a row goes to the error state (IBTA retry_cnt, --retry-cnt), "
            "as a RoCE NIC's does, and a job using it would abort"]
