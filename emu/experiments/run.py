"""`emu run`: fabric up, switches programmed, reachability verified, workload, results.

    summary = run_experiment(RunConfig(topo="clos4", lb=LbMode.SPRAY, recovery="sr"))

Order: plan (pure) -> results folder -> compile fabric.p4 once -> EmuNet (hosts,
links, switch processes; torn down on any exit) -> controller programs every switch
-> every host pair pings -> one agent per host, all READY -> sample counters while
the agents run (live view; optional link failure) -> agents exit -> summary, results
folder, plots. With `cli`, the Mininet CLI opens on the programmed fabric instead of
the automatic workload (the `workload` command runs one from there).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from emu.control.params import LbMode
from emu.core.runstate import StateError
from emu.core.signals import StopRequest, interrupt_name, stop_requests
from emu.roce.agent import LOST, START

from . import pfc
from .config import RunConfig, RunConfigError
from .failures import newly_lost
from .jsontypes import Row, count, num
from .pfc import Counters
from .plan import RunPlan, plan_run
from .progress import LiveView, ProgressState
from .report import (
    RunRecords,
    build_summary,
    hottest,
    snapshots_bytes_to_hosts,
    write_and_show,
)
from .results import (
    ResultsError,
    discard_unused_run_dir,
    make_run_dir,
    pcaps_to_modelled,
    print_results_path,
)
from .sampler import FabricSampler, Snapshot
from .summary import RunSummary

if TYPE_CHECKING:
    from mininet.net import Mininet
    from rich.console import Console

    from emu.control import FabricController
    from emu.net import EmuNet
    from emu.targets.base import CompiledPipeline, SwitchTarget
    from emu.topo import Fabric

REPO = Path(__file__).resolve().parents[2]
FABRIC_P4 = REPO / "p4src" / "fabric.p4"
# fabric.p4 counters (ECN marks, pipeline drops) during the workload at most this often:
# one read is 4 P4Runtime calls per switch (one per counter array), still work for the
# switches (~0.1 s for all of clos4 on 2 cores), while the targets' own stats (rx/tx,
# queues, drops, TM lag) take ~5 ms.
P4_SAMPLE_S = 1.0


class RunError(RuntimeError):
    """A run that cannot go on; the message is one line for the user."""


# What stops a run before it measures anything, told in one line: the run cannot go on,
# its results cannot be written, another run holds the lock.
USER_ERRORS: tuple[type[Exception], ...] = (RunError, RunConfigError, ResultsError,
                                               StateError)


def user_message(exc: Exception, command: str) -> str:
    """One of USER_ERRORS as its line, prefixed `emu COMMAND: ` unless it names one."""
    return str(exc) if str(exc).startswith("emu") else f"emu {command}: {exc}"


Log = Callable[[str], None]


@dataclass
class AgentProc:
    host: str
    popen: subprocess.Popen[str]
    results_path: Path
    log_path: Path
    ready_s: float | None = None  # on the run timeline
    epoch_s: float | None = None  # the START instant its times count from, on the timeline
    done_s: float | None = None
    lines: list[str] = field(default_factory=list)
    progress: Row = field(default_factory=dict)  # the agent's latest counters
    progress_rows: list[str] = field(default_factory=list)  # every `progress` line, as sent
    # Its results, sent on stdout where its results file could not be written, and why.
    sent_rows: list[Row] | None = None
    write_error: str | None = None
    _reader: threading.Thread | None = None

    def start_reader(self, t0: float) -> None:
        def read() -> None:
            assert self.popen.stdout is not None
            for line in self.popen.stdout:
                line = line.strip()
                if line.startswith("{"):
                    # Periodic counters (`--progress-s`): keep the latest only.
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    if isinstance(row, dict) and row.get("type") == "progress":
                        self.progress = row
                        self.progress_rows.append(line)
                    elif isinstance(row, dict) and row.get("type") == "results":
                        rows = row.get("rows")
                        self.sent_rows = [r for r in rows if isinstance(r, dict)] \
                            if isinstance(rows, list) else []
                        self.write_error = str(row.get("error", ""))
                    continue
                self.lines.append(line)
                if line == "READY" and self.ready_s is None:
                    self.ready_s = time.monotonic() - t0
                elif line in ("DONE", "PARTIAL"):
                    self.done_s = time.monotonic() - t0

        self._reader = threading.Thread(target=read, name=f"agent-{self.host}", daemon=True)
        self._reader.start()

    def finished(self) -> bool:
        return self.popen.poll() is not None

    def tell(self, line: str) -> bool:
        """A line on its stdin (emu.roce.agent: START, LOST); False if it has exited."""
        stdin = self.popen.stdin
        if stdin is None or stdin.closed:
            return False
        try:
            stdin.write(line + "\n")
            stdin.flush()
        except OSError:  # exited meanwhile (BrokenPipeError): its exit is reported
            return False
        return True

    def read_to_end(self, timeout: float) -> None:
        """Wait for the reader to take the last lines of an agent that has exited."""
        if self._reader is not None:
            self._reader.join(timeout)

    def stderr_tail(self) -> str:
        try:
            err = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        lines = [x for x in err.strip().splitlines() if x.strip()]
        return lines[-1] if lines else ""


class Experiment:
    """One run on a live EmuNet: the pieces `run_experiment` and the CLI share."""

    def __init__(self, plan: RunPlan, net: EmuNet, controller: FabricController, run_dir: Path,
                 log: Log) -> None:
        self.plan = plan
        self.net = net
        self.controller = controller
        self.run_dir = run_dir
        self.log = log
        self.runs = 0  # workloads run from the CLI (emu.experiments.cli_ext)
        self.t0 = time.monotonic()
        # The captures' time origin (emu.experiments.results.pcaps_to_modelled): the START
        # instant once it is sent, else this.
        self.origin_wall_ns = time.time_ns()
        self.sampler = FabricSampler([s.name for s in plan.fabric.switches], self._target_stats,
                                     controller, t0=self.t0)

    def _target_stats(self, switch: str) -> Row | None:
        node = self.net.switches.get(switch)
        proc = getattr(node, "process", None)
        call = getattr(proc, "admin_call", None)
        if call is None:
            return None  # e.g. BMv2: the P4 counters are all there is
        result: Row = call("stats")
        return result

    def pfc_counters(self, switch: str) -> Counters | None:
        """The switch's flow-control state and counters (admin `stats` -> "pfc", or
        "credit" in credit mode, whose counters say "mode": "credit")."""
        stats = self._target_stats(switch)
        return None if stats is None else pfc.flow_control_stats(stats)

    # -- agents ---------------------------------------------------------------------

    def launch_agents(self, plan: RunPlan, tag: str = "") -> dict[str, AgentProc]:
        """An agent per host, each on its configuration file; RunError (none left
        running) where the files cannot be written (disk full, folder removed)."""
        adir = self.run_dir / "agents"
        procs: dict[str, AgentProc] = {}
        try:
            adir.mkdir(parents=True, exist_ok=True)
            for host, cfg in plan.agents.items():
                (adir / f"{host}{tag}.json").write_text(json.dumps(cfg.to_dict(), indent=1))
            for host in plan.agents:
                procs[host] = self._launch_agent(plan, adir, host, tag)
        except OSError as exc:
            _stop_agents(procs)
            raise RunError(f"emu run: cannot write the agents' files in {adir}: "
                           f"{exc.strerror or exc}") from None
        return procs

    def _launch_agent(self, plan: RunPlan, adir: Path, host: str, tag: str) -> AgentProc:
        res = adir / f"{host}{tag}.jsonl"
        cmd = [sys.executable, "-m", "emu.roce", "agent", "--iface",
               plan.fabric.host(host).intf, "--config", str(adir / f"{host}{tag}.json"),
               "--results", str(res), "--status-file", str(adir / f"{host}{tag}.status"),
               "--progress-s", f"{self.plan.config.agent_progress_s:g}", "--start-on-stdin"]
        host_pfc = pfc.host_pfc_json(plan.config)
        if host_pfc is not None:  # the NIC honours its leaf's PAUSE frames
            cmd += ["--pfc", json.dumps(host_pfc)]
        log_path = adir / f"{host}{tag}.log"
        # stderr to a file: an unread pipe would block a chatty agent.
        with log_path.open("w") as err:
            p = self.net.popen(host, cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=err, text=True, cwd=str(REPO),
                               env={**os.environ, "PYTHONPATH": str(REPO)})
        ap = AgentProc(host, p, res, log_path)
        ap.start_reader(self.t0)
        return ap

    def start_agents(self, agents: dict[str, AgentProc], deadline: float,
                     stop: StopRequest | None = None) -> None:
        """Once every agent is READY (or has exited, or the deadline passed), send each
        the same START instant: the flows of all hosts then start start_delay_s after
        it together, as they do in virtual time, not each after its own READY (agents
        come up tens of ms apart on a loaded machine: several modelled frame times).
        A stop asked meanwhile sends no START."""
        while time.monotonic() < deadline and not all(
                a.ready_s is not None or a.finished() for a in agents.values()):
            if stop is not None and stop.requested:
                return
            time.sleep(0.01)
        go = time.monotonic_ns()
        self.origin_wall_ns = time.time_ns()
        for a in agents.values():
            # stdin stays open: LOST lines may follow (emu.experiments.failures)
            if a.tell(f"{START} {go}"):
                a.epoch_s = go / 1e9 - self.t0

    def run_workload(self, plan: RunPlan, *, view: LiveView | None = None,
                     tag: str = "") -> RunRecords:
        cfg = plan.config
        first = self.sampler.sample(with_p4=True)
        snaps: list[Snapshot] = [first]
        # A signal from here on stops the loop at its next check, not inside a switch read
        # (see emu.core.signals.stop_requests); a second one cuts in at once.
        with stop_requests() as stop:
            agents = self.launch_agents(plan, tag)
            t_launch = time.monotonic()
            t_p4 = t_launch
            cpu0 = time.process_time()  # the orchestrator's own CPU: sampling's cost
            state = ProgressState(phase="running", hosts=len(agents),
                                  bytes_total=plan.workload.total_bytes(),
                                  dilation=plan.dilation.factor)
            deadline = t_launch + plan.budget_s + 10.0  # agents stop themselves at timeout_s
            failed_link = False
            told: set[str] = set()  # flows the agents were told are lost
            t_traffic: float | None = None
            notes: list[str] = []
            events: list[tuple[float, str]] = []
            base_moved = snapshots_bytes_to_hosts(first, plan)
            prev_t, prev_moved = first.t_s, 0
            forced = False
            how = ""
            try:
                self.start_agents(agents, deadline, stop)
                while not stop.requested:
                    time.sleep(cfg.sample_interval())
                    if stop.requested:
                        break
                    p4_due = time.monotonic() - t_p4 >= P4_SAMPLE_S
                    if p4_due:
                        t_p4 = time.monotonic()
                    snap = self.sampler.sample(with_p4=p4_due)
                    snaps.append(snap)
                    moved = snapshots_bytes_to_hosts(snap, plan) - base_moved
                    d = snap.t_s - prev_t
                    state.rate_bps = (moved - prev_moved) * 8 / d if d > 0 else 0.0
                    prev_t, prev_moved = snap.t_s, moved
                    state.elapsed_s = time.monotonic() - t_launch
                    state.bytes_moved = moved
                    _update_progress(state, first, snap, agents)
                    if moved > 0 and t_traffic is None:
                        t_traffic = time.monotonic()
                    # The failure clock starts with the traffic, not with the agents' start-up.
                    if (cfg.fail_link and not failed_link and t_traffic is not None
                            and time.monotonic() - t_traffic >= cfg.fail_after_s):
                        end_a, end_b = cfg.fail_link
                        events.append((time.monotonic() - self.t0, f"link_down {end_a} {end_b}"))
                        self.link_down(end_a, end_b)
                        events.append((time.monotonic() - self.t0, "rerouted"))
                        failed_link = True
                        state.note = (f"link {end_a}-{end_b} failed "
                                      f"{time.monotonic() - t_traffic:.1f} s into the traffic")
                        notes.append(state.note)
                    if view is not None:
                        view.update(state)
                    if all(a.finished() for a in agents.values()):
                        break
                    news = newly_lost(plan.workload, {h: a.progress for h, a in
                                                      agents.items()}, told)
                    if news:  # flows that failed: no agent waits for them any more
                        told.update(news)
                        for a in agents.values():
                            a.tell(f"{LOST} {json.dumps(news)}")
                    if time.monotonic() > deadline:
                        notes.append(f"agents still running after {plan.budget_s:g} s: stopped")
                        for a in agents.values():
                            if not a.finished():
                                a.popen.send_signal(signal.SIGTERM)
                        break
            except KeyboardInterrupt as exc:
                # A second signal (or a first one outside the main thread's handlers)
                # cut a call short: what was measured so far is still a result.
                forced = True
                how = interrupt_name(exc)
            else:
                how = stop.describe()
            finally:
                t_stop = time.monotonic() - t_launch
                _stop_agents(agents)
        interrupted = forced or stop.requested
        if interrupted:
            notes.append(f"interrupted ({how}) {t_stop:.1f} s into the workload: "
                         "partial results")
        duration = time.monotonic() - t_launch
        sm = self.sampler
        sampling = {"orchestrator_cpu_s": time.process_time() - cpu0,
                    "samples": float(len(snaps) - 1), "duration_s": duration,
                    "target_stats_s": sm.target_s, "p4_reads": float(sm.p4_reads),
                    "p4_read_s": sm.p4_s}
        # A call cut short may have left its gRPC channel unusable (a read on it would
        # wait for ever): then the last P4 reading stands.
        snaps.append(self.sampler.sample(with_p4=not forced))
        rows = _collect_results(agents, notes)
        offsets = {h: a.epoch_s for h, a in agents.items() if a.epoch_s is not None}
        return RunRecords(rows, offsets, snaps, duration, notes=notes, events=events,
                          bringup_s={f"workload_{k}": v for k, v in sampling.items()},
                          interrupted=interrupted)

    # -- fabric changes -------------------------------------------------------------

    def link_down(self, a: str, b: str) -> None:
        """Fail the a-b link: both interfaces down, then the controller reroutes."""
        self._mininet().configLinkStatus(a, b, "down")
        self.controller.link_down(a, b)

    def link_up(self, a: str, b: str) -> None:
        self._mininet().configLinkStatus(a, b, "up")
        self.controller.link_up(a, b)

    def _mininet(self) -> Mininet:
        if self.net.mininet is None:
            raise RunError("emu run: the network is not up")
        return self.net.mininet


def _update_progress(state: ProgressState, first: Snapshot, snap: Snapshot,
                     agents: dict[str, AgentProc]) -> None:
    """The live view's counters: switch counters since `first`, the agents' reports."""
    state.ecn_marks = sum(c.ecn_marks - first.ports.get(k, c).ecn_marks
                          for k, c in snap.ports.items())
    state.drops = sum(c.drops - (first.ports[k].drops if k in first.ports else 0)
                      for k, c in snap.ports.items())
    state.kernel_drops = sum(
        c.kernel_drops - (first.ports[k].kernel_drops if k in first.ports else 0)
        for k, c in snap.ports.items())
    state.hosts_done = sum(a.finished() for a in agents.values())
    reports = [a.progress for a in agents.values() if a.progress]
    if reports:
        state.cnps = sum(count(r, "cnps_sent") for r in reports)
        state.retx_pkts = sum(count(r, "retx_pkts") for r in reports)
        state.timeouts = sum(count(r, "timeouts") for r in reports)
        state.ecn_marked_rcvd = sum(count(r, "ecn_marked_rcvd") for r in reports)
        state.tx_lag_max_ms = max(num(r, "tx_lag_max_us") or 0.0 for r in reports) / 1e3
    if snap.tm_lag_ms is not None:
        state.tm_lag_max_ms = max(state.tm_lag_max_ms or 0.0, snap.tm_lag_ms)
    state.hottest = hottest(snap)
    ready = sum(a.ready_s is not None for a in agents.values())
    state.phase = "running" if ready == len(agents) else f"agents {ready}/{len(agents)}"


def _collect_results(agents: dict[str, AgentProc], notes: list[str]) -> dict[str, list[Row]]:
    """The agents' result rows; their progress lines saved beside them; a note per agent
    that did not exit cleanly (0, or 2: stopped with partial results), and one for the
    files that could not be written (disk full: the rows an agent sent on stdout stand
    in for its results file)."""
    from .metrics import read_jsonl

    deadline = time.monotonic() + 5.0  # the agents have exited: their pipes are at EOF
    for a in agents.values():
        a.read_to_end(max(0.0, deadline - time.monotonic()))
    rows = {h: a.sent_rows if a.sent_rows is not None else read_jsonl(a.results_path)
            for h, a in agents.items()}
    sent = [h for h, a in agents.items() if a.write_error]
    unwritten = [str(agents[h].write_error) for h in sent]
    for a in agents.values():  # the agents' counters over time, next to their results
        if a.progress_rows:
            path = a.results_path.with_suffix(".progress.jsonl")
            try:
                path.write_text("\n".join(a.progress_rows) + "\n")
            except OSError as exc:
                unwritten.append(f"cannot write {path}: {exc.strerror or exc}")
    if unwritten:  # one note, not one per file: a full disk refuses them all
        notes.append(f"{len(unwritten)} agent file(s) not written, first {unwritten[0]}"
                     + (f"; the results of {', '.join(sorted(sent))} came on their output"
                        if sent else ""))
    for h, a in agents.items():
        rc = a.popen.returncode
        if rc not in (0, 2):
            notes.append(f"agent {h} exited {rc}: {a.stderr_tail() or 'no message'}")
    return rows


AGENT_STOP_GRACE_S = 10.0  # for every agent together to write partial results and exit


def _stop_agents(agents: dict[str, AgentProc]) -> None:
    """Normally all have exited; on an error or Ctrl-C, stop the rest now (they write
    partial results on SIGTERM) rather than wait for their workload."""
    for a in agents.values():
        if not a.finished():
            a.popen.send_signal(signal.SIGTERM)
    # One grace period for all of them, not one each: waiting 10 s per agent in turn
    # kept an interrupted 8-host run alive for minutes when agents were slow to exit.
    deadline = time.monotonic() + AGENT_STOP_GRACE_S
    for a in agents.values():
        try:
            a.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            a.popen.kill()
            a.popen.wait(timeout=5)
        if a.popen.stdin is not None:
            with contextlib.suppress(OSError):
                a.popen.stdin.close()


NO_DELAY_HINT = "run without link delay: make run ... LINK_DELAY=0 (emu run --no-link-delay)"


def preflight(cfg: RunConfig, fabric: Fabric | None = None) -> None:
    """One-line errors before anything is created."""
    try:
        from emu.net import NetError, check_environment
    except ImportError as exc:
        raise RunError(f"emu run: Mininet integration unavailable ({exc}); "
                       "apt-get install mininet") from None
    try:
        check_environment()
    except NetError as exc:
        raise RunError(str(exc)) from None
    from emu.targets import get_target

    target = get_target(cfg.target)
    missing = target.missing()
    if missing:
        raise RunError(target.unavailable_message(missing))
    delayed = [link for link in fabric.links if link.delay_ns] if fabric is not None else []
    if fabric is not None and delayed:
        problem = target.link_delay_problem()
        if problem is not None:
            link = max(delayed, key=lambda x: x.delay_ns)
            raise RunError(f"emu run: {problem}; {fabric.name} has link delays (up to "
                           f"{link.delay_ns / 1000:g} us, {link}); {NO_DELAY_HINT}")


def compile_pipeline(target: SwitchTarget, build_dir: Path) -> CompiledPipeline:
    try:
        return target.compile(FABRIC_P4, build_dir)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RunError(f"emu run: {target.name} cannot compile fabric.p4: {first}") from exc


def bring_up(plan: RunPlan, run_dir: Path, log: Log
             ) -> tuple[EmuNet, FabricController, CompiledPipeline, dict[str, float]]:
    """Compile, start EmuNet, program the switches, verify every host pair.
    Returns (net, controller, pipeline, timings); the caller owns net.stop()."""
    from emu.control import FabricController
    from emu.control.p4rt import connect
    from emu.net import EmuNet
    from emu.targets import get_target

    cfg = plan.config
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    target = get_target(cfg.target)
    pipeline = compile_pipeline(target, run_dir / "build")
    timings["compile_s"] = time.monotonic() - t0
    net = EmuNet(plan.fabric, target, run_dir, pipeline=pipeline, pcap=cfg.pcap, log=log,
                 priority_queues=pfc.priority_queues(cfg), lock_wait_s=cfg.lock_wait_s,
                 flow_control=pfc.flow_control(plan), seed=cfg.workload.seed,
                 model=plan.model)
    net.__enter__()
    try:
        timings.update({f"net_{k}": v for k, v in net.timings.items()})
        t1 = time.monotonic()
        handles = connect(plan.fabric, net.grpc_addresses(), pipeline.load_p4info(),
                          device_config=pipeline.device_config())
        ctl = FabricController(
            plan.fabric, handles, lb=plan.lb_settings(),
            ecn=plan.ecn_settings(),
            qos=pfc.qos(cfg))
        ctl.program()
        if cfg.lb is LbMode.TE:  # pin the workload's flows on least-loaded paths
            plan.pin_te(ctl)
        timings["program_s"] = time.monotonic() - t1
        t2 = time.monotonic()
        failed = net.check_reachability(timeout_s=plan.ping_timeout_s(), attempts=3)
        timings["reachability_s"] = time.monotonic() - t2
        if failed:
            pairs = len(plan.fabric.hosts) * (len(plan.fabric.hosts) - 1)
            raise RunError(f"emu run: {len(failed)}/{pairs} host pairs unreachable through the "
                           f"programmed fabric, e.g. {failed[0][0]}->{failed[0][1]}")
        timings["ready_s"] = time.monotonic() - t0
    except BaseException:
        net.__exit__(None, None, None)
        raise
    return net, ctl, pipeline, timings


def run_experiment(cfg: RunConfig, *, console: Console | None = None, plan: RunPlan | None = None,
                   log: Log | None = None) -> RunSummary:
    """The whole run; raises RunError (one line) when it cannot run."""
    plan = plan or plan_run(cfg)
    say: Log = log or (lambda m: print(m, file=sys.stderr, flush=True))
    for warning in plan.notes:
        say(f"emu run: warning: {warning}")
    if cfg.virtual:
        from .virtual import run_virtual

        return run_virtual(plan, console=console)
    preflight(cfg, plan.fabric)
    run_dir = make_run_dir(Path(cfg.results_root), cfg.topo, cfg.lb, cfg.cc)
    from emu.net import NetError

    try:
        net, ctl, _pipeline, timings = bring_up(plan, run_dir, say)
    except BaseException as exc:
        discard_unused_run_dir(run_dir, ("build",))  # nothing ran
        from emu.targets import TargetUnavailable, Unsupported

        if isinstance(exc, NetError | Unsupported | TargetUnavailable):
            msg = str(exc)
            raise RunError(msg if msg.startswith("emu") else f"emu run: {msg}") from exc
        raise
    exp: Experiment | None = None
    try:
        # Said only now: an error before this point is the one line the user sees.
        say(f"emu run: {plan.fabric.name} ({plan.fabric.summary()}) fabric ready in "
            f"{timings['ready_s']:.1f} s ({len(plan.fabric.hosts) * (len(plan.fabric.hosts) - 1)}"
            f" host pairs verified); results in {run_dir}")
        from .rates import rate_line

        say(rate_line(plan, cfg.rate_reason))
        exp = Experiment(plan, net, ctl, run_dir, say)
        if cfg.cli:
            from .cli_ext import run_cli

            run_cli(exp)
            rec = RunRecords({}, {}, [exp.sampler.sample(with_p4=True)], 0.0)
        else:
            live = cfg.progress and sys.stdout.isatty()
            with LiveView(live, console) as view:
                rec = exp.run_workload(plan, view=view)
    finally:
        t_stop = time.monotonic()
        errors = net.stop()
        timings["teardown_s"] = time.monotonic() - t_stop
        net.__exit__(None, None, None)
    rec.bringup_s = {**timings, **rec.bringup_s}
    if errors:
        rec.notes.append(f"teardown problems (run `make stop`): {'; '.join(errors)}")
    if cfg.pcap and exp is not None:  # the switches have stopped: their files are whole
        rec.notes.extend(pcaps_to_modelled(run_dir / "pcap", exp.origin_wall_ns,
                                           plan.dilation.factor))
    summary = build_summary(plan, rec, run_dir)
    if cfg.cli:  # the CLI's workloads wrote their own results
        print_results_path(run_dir, summary)
    else:
        write_and_show(run_dir, plan, rec, summary, console)
    return summary
