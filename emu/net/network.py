"""EmuNet: the fabric as a Mininet network of RoCE hosts and P4 switches.

    with EmuNet(fabric, "embedded", run_dir) as net:
        ctl = connect(fabric, net.grpc_addresses(), p4info, device_config=...)
        agent = net.popen("h1", ["python", "-m", "emu.roce", "agent", ...])
        assert not net.check_reachability()

Bring-up: lock + run record -> host namespaces -> veths (named and addressed by the
model) -> host and switch interface setup in batches -> switch processes, all
launched, then waited for together (readiness, not sleeps). Every object is recorded
in the run state before or right as it is created, so `emu stop` can remove what a
killed run left. Teardown always runs (exception, Ctrl-C, SIGTERM), is best-effort
per step and collects errors instead of stopping at the first.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

from mininet.net import Mininet

from emu.core import signals
from emu.core.pfc import FlowControl
from emu.core.reaper import Reaper
from emu.core.runstate import (
    RunState,
    kill_verified,
    net_ns_inode,
    pids_in_netns,
    proc_start_time,
)
from emu.core.seeds import switch_seed
from emu.targets import get_target
from emu.targets.base import AddressInUse, CompiledPipeline, SwitchTarget
from emu.topo import Fabric

from .addresses import PortAllocator, unix_address
from .errors import NetError
from .hosts import RoceHost
from .links import add_link, configure_switch_intfs, link_ends
from .preflight import check_environment
from .reach import Pair, check_reachability
from .switch_node import P4SwitchNode, queue_configs, switch_class

REPO = Path(__file__).resolve().parents[2]
DEFAULT_P4 = REPO / "p4src" / "fabric.p4"
# P4Runtime's IANA port; below Linux's ephemeral range (32768-60999 by default), so
# the kernel does not hand these ports to other programs' connections meanwhile.
GRPC_BASE_PORT = 9559
BIND_ATTEMPTS = 3  # starts of a switch whose port was taken after it was chosen


def _root_links() -> dict[str, str]:
    """Interface name -> MAC in the root namespace (one `ip` call)."""
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    links: dict[str, str] = {}
    for line in out.splitlines():
        words = line.split()
        if len(words) < 2:
            continue
        name = words[1].rstrip(":").split("@")[0]
        mac = words[words.index("link/ether") + 1] if "link/ether" in words else ""
        links[name] = mac.lower()
    return links


class EmuNet:
    """The emulated fabric. Use as a context manager, or call start()/stop()."""

    def __init__(self, fabric: Fabric, target: SwitchTarget | str, run_dir: Path | str, *,
                 pipeline: CompiledPipeline | None = None, p4_path: Path | None = None,
                 state: RunState | None = None, grpc: str = "tcp",
                 grpc_base_port: int = GRPC_BASE_PORT, pcap: bool = False,
                 ready_timeout_s: float = 60.0, lock_wait_s: float = 0.0,
                 log: Callable[[str], None] | None = None, priority_queues: int = 1,
                 flow_control: FlowControl | None = None, seed: int = 1,
                 reaper: bool = True, model: Fabric | None = None) -> None:
        if grpc not in ("tcp", "unix"):
            raise ValueError("grpc must be 'tcp' or 'unix'")
        self.fabric = fabric
        # The modelled fabric, of which `fabric` is the wire's version: the switches'
        # PFC headroom is that of the modelled links (docs/pfc.md).
        self.model = model if model is not None else fabric
        self.target = get_target(target) if isinstance(target, str) else target
        self.run_dir = Path(run_dir)
        self.pipeline = pipeline
        self.p4_path = p4_path or DEFAULT_P4
        self.state = state
        self._own_state = state is None
        # A run that owns its record starts a reaper: if this process is killed (SIGKILL
        # runs no teardown), it removes what the record lists (emu.core.reaper).
        self._use_reaper = reaper
        self._reaper: Reaper | None = None
        self.grpc = grpc
        self.grpc_base_port = grpc_base_port
        self.pcap = pcap
        self.ready_timeout_s = ready_timeout_s
        self.lock_wait_s = lock_wait_s  # for a live run's lock (0: refuse at once)
        if not 1 <= priority_queues <= 8:
            raise ValueError(f"priority_queues must be 1..8, got {priority_queues}")
        self.priority_queues = priority_queues
        self.flow_control = flow_control if flow_control is not None and \
            flow_control.enabled else None
        self.log = log or (lambda _msg: None)
        self.seed = seed  # the run's: each switch draws from switch_seed(seed, device id)
        self.mininet: Mininet | None = None
        self.hosts: dict[str, RoceHost] = {}
        self.switches: dict[str, P4SwitchNode] = {}
        self.timings: dict[str, float] = {}
        self.errors: list[str] = []  # from the last teardown
        self._processes: list[tuple[int, int | None]] = []  # launched in hosts via popen
        self._old_handlers: dict[int, Any] = {}
        self._started = False
        self._stopped = False

    # -- context manager ----------------------------------------------------------------

    def __enter__(self) -> EmuNet:
        self._install_signal_handlers()
        try:
            self.start()
        except BaseException:
            self._restore_signal_handlers()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self.stop()
        finally:
            self._restore_signal_handlers()

    def _install_signal_handlers(self) -> None:
        # SIGTERM/SIGHUP while the network is up unwind like Ctrl-C, so teardown runs.
        self._old_handlers = signals.arm()

    def _restore_signal_handlers(self) -> None:
        signals.disarm(self._old_handlers)

    # -- bring-up -----------------------------------------------------------------------

    def start(self) -> EmuNet:
        if self._started:
            return self
        self._started = True
        t0 = time.monotonic()
        check_environment()
        if self.pipeline is None:
            self.target.check_available()
            self.pipeline = self.target.compile(self.p4_path, self.run_dir / "build")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.state is None:
            self.state = self._lock_with_free_names(max(3.0, min(self.lock_wait_s, 120.0)))
            if self._use_reaper:
                try:
                    self._reaper = Reaper.start(self.state.path)
                except BaseException:
                    self.state.finish()
                    raise
        try:
            self._check_names_free(3.0)
            self._build(t0)
        except BaseException:
            self.stop()
            raise
        self.timings["start_s"] = time.monotonic() - t0
        return self

    def _lock_with_free_names(self, wait_s: float) -> RunState:
        """The run lock, at a moment when no model interface name is taken. A live run
        is reported as such (RunActive from the lock). Names still taken once we hold
        the lock are a killed run's: the lock is let go while waiting, since the
        `emu stop` that removes them needs it."""
        deadline = time.monotonic() + wait_s
        while True:
            state = RunState.begin(self.run_dir, lock_timeout_s=self.lock_wait_s)
            try:
                self._check_names_free(0.0)
                return state
            except NetError:
                state.finish()
                if time.monotonic() >= deadline:
                    raise
            time.sleep(0.2)

    def _check_names_free(self, wait_s: float) -> None:
        """No model interface name may exist in the root namespace: that would be
        someone else's, or a killed run's (for `make stop`). Namespaces of a run that
        just ended are freed by the kernel asynchronously: allow them `wait_s`."""
        wanted = {end.intf for link in self.fabric.links for end in link_ends(self.fabric, link)}
        deadline = time.monotonic() + wait_s
        while True:
            clash = sorted(wanted & set(_root_links()))
            if not clash:
                return
            if time.monotonic() > deadline:
                raise NetError(f"interface {clash[0]} already exists ({len(clash)} clash"
                               f"{'es' if len(clash) > 1 else ''}): left by an earlier run? "
                               "run `make stop`")
            time.sleep(0.1)

    def _build(self, t0: float) -> None:
        assert self.state is not None and self.pipeline is not None
        state = self.state
        # Mininet.init() would raise system-wide sysctls and rlimits (fixLimits); we
        # check root ourselves and leave the machine's settings alone.
        Mininet.inited = True
        net = self.mininet = Mininet(topo=None, build=False, controller=None,
                                     host=RoceHost, switch=P4SwitchNode, autoSetMacs=False,
                                     waitConnected=False)
        link_rate = {link.index: link.rate_bps for link in self.fabric.links}

        for h in self.fabric.hosts:
            node = net.addHost(h.name, cls=RoceHost, model=h, rate_bps=link_rate.get(h.link),
                               ip=h.ip_with_prefix, mac=h.mac)
            self.hosts[h.name] = node
            state.add_mininet_namespace(h.name, node.pid, h.intf, h.mac)
        self.timings["hosts_s"] = time.monotonic() - t0

        sw_cls = switch_class(self.target.name)
        grpc_ports = PortAllocator(self.grpc_base_port)
        delays = {s.name: {p.number: 0 for p in s.ports} for s in self.fabric.switches}
        for link in self.fabric.links:
            for ep in (link.a, link.b):
                if ep.node in delays:
                    delays[ep.node][ep.port] = link.delay_ns
        (self.run_dir / "logs").mkdir(exist_ok=True)
        pcap_dir = self.run_dir / "pcap" if self.pcap else None
        if pcap_dir:
            pcap_dir.mkdir(exist_ok=True)
        for s in sorted(self.fabric.switches, key=lambda s: s.device_id):
            if self.grpc == "unix":
                addr = unix_address(state.scratch_dir, s.name)
                state.add_socket(addr.removeprefix("unix:"))
            else:
                addr = f"127.0.0.1:{grpc_ports.take()}"
            # BMv2's Thrift port from the same allocator: a port picked later by the
            # kernel could be one reserved here for a switch not yet started.
            thrift = grpc_ports.take() if self.target.name == "bmv2" else None
            node = net.addSwitch(
                s.name, cls=sw_cls, model=s, target=self.target, pipeline=self.pipeline,
                grpc_addr=addr, thrift_port=thrift, queues=queue_configs(s, delays[s.name], self.priority_queues),
                log_path=self.run_dir / "logs" / f"{s.name}.log", pcap_dir=pcap_dir,
                ready_timeout_s=self.ready_timeout_s, flow_control=self._switch_pfc(s.name),
                seed=switch_seed(self.seed, s.device_id))
            self.switches[s.name] = node
            state.add_process(node.pid, "switch-shell", s.name, group=True)

        # Write-ahead: every interface name and MAC before any veth exists.
        ends = [link_ends(self.fabric, link) for link in self.fabric.links]
        state.add_interfaces([(e.intf, e.mac, e.node if e.is_host else None)
                              for pair in ends for e in pair])
        for link in self.fabric.links:
            add_link(net, self.fabric, link)
        for h in self.fabric.hosts:
            if link_rate.get(h.link):
                state.add_qdisc(h.intf, h.name)
        self.timings["links_s"] = time.monotonic() - t0

        setups = {name: host.begin_setup() for name, host in self.hosts.items()}
        problems = []
        for name, proc in setups.items():
            try:
                self.hosts[name].end_setup(proc)
            except NetError as exc:
                problems.append(str(exc))
        mtu = self.fabric.switch_mtu  # the largest frame of any host
        configure_switch_intfs([(e.intf, mtu) for pair in ends for e in pair if not e.is_host])
        if problems:
            raise NetError("; ".join(problems))
        self.timings["config_s"] = time.monotonic() - t0

        for node in self.switches.values():
            self._launch(node)
        self._wait_switches(grpc_ports)
        self.timings["switches_s"] = time.monotonic() - t0

    def _launch(self, node: P4SwitchNode) -> None:
        assert self.state is not None
        sw_proc = node.launch()
        self.state.add_process(sw_proc.pid, "switch", node.name, group=True)
        # What a target keeps outside the run dir (the embedded target's mkdtemp
        # work dir and admin socket), so `emu stop` removes it too.
        work = getattr(sw_proc, "work", None)
        if isinstance(work, Path):
            self.state.add_dir(work)
        admin = getattr(sw_proc, "admin_socket", None)
        if isinstance(admin, str | Path):
            self.state.add_socket(admin)

    def _switch_pfc(self, switch: str) -> dict[str, Any] | None:
        """The switch daemon's --pfc-config: the run's PFC with the topology's per-link
        thresholds and each port's link (for the headroom it needs)."""
        if self.flow_control is None:
            return None
        from emu.topo.pfc import port_links, switch_flow_control

        d = switch_flow_control(self.fabric, switch, self.flow_control).to_dict()
        d["links"] = {str(p): list(v) for p, v in port_links(self.model, switch).items()}
        return d

    def _wait_switches(self, ports: PortAllocator) -> None:
        """Wait for every switch at once. A switch whose port another process took
        after the allocator's bind test (ports from the base up are fair game for
        anyone) starts again on the next free ones, up to BIND_ATTEMPTS times."""
        waiting = list(self.switches.values())
        for attempt in range(1, BIND_ATTEMPTS + 1):
            failed = self._wait_ready(waiting)
            taken = [n for n, exc in failed.items() if isinstance(exc.__cause__, AddressInUse)]
            if not failed or len(taken) < len(failed) or attempt == BIND_ATTEMPTS:
                break
            for node in taken:
                self.log(f"switch {node.name}: {node.grpc_addr} was taken; on other ports")
                node.stop_process()
                unix = node.grpc_addr.startswith("unix:")
                node.readdress(node.grpc_addr if unix else f"127.0.0.1:{ports.take()}",
                               ports.take() if node.spec.thrift_port is not None else None)
                self._launch(node)
            waiting = taken
        if failed:
            problems = [str(exc) for exc in failed.values()]
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            raise NetError(problems[0] + more)

    def _wait_ready(self, nodes: list[P4SwitchNode]) -> dict[P4SwitchNode, NetError]:
        """Each of `nodes` that did not get ready, with why. Daemon threads, joined from
        the main thread: a Ctrl-C lands here and teardown starts at once, instead of
        waiting (as a thread pool's shutdown would) for every readiness timeout."""
        failed: dict[P4SwitchNode, NetError] = {}

        def wait(node: P4SwitchNode) -> None:
            try:
                node.wait_ready(self.ready_timeout_s)
            except NetError as exc:
                failed[node] = exc

        threads = [threading.Thread(target=wait, args=(n,), daemon=True,
                                    name=f"ready-{n.name}") for n in nodes]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.2)
        return failed

    # -- use ----------------------------------------------------------------------------

    def host(self, name: str) -> RoceHost:
        try:
            return self.hosts[name]
        except KeyError:
            raise NetError(f"no host {name!r} in {self.fabric.name}") from None

    def switch(self, name: str) -> P4SwitchNode:
        try:
            return self.switches[name]
        except KeyError:
            raise NetError(f"no switch {name!r} in {self.fabric.name}") from None

    def grpc_addresses(self) -> dict[str, str]:
        """Switch name -> P4Runtime address ("127.0.0.1:PORT" or "unix:PATH")."""
        return {name: node.grpc_addr for name, node in self.switches.items()}

    def popen(self, host: str, cmd: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start `cmd` in `host`'s namespace (Mininet's popen: a new session, stdout and
        stderr piped unless given), recorded so teardown and `emu stop` end it."""
        proc: subprocess.Popen[Any] = self.host(host).popen(list(cmd), **kwargs)
        self.record_process(proc.pid, "host-process", host)
        return proc

    def record_process(self, pid: int, role: str, name: str = "") -> None:
        """Record a process the caller started, so teardown and `emu stop` end it."""
        self._processes.append((pid, proc_start_time(pid)))
        if self.state is not None:
            self.state.add_process(pid, role, name, group=True)

    def check_reachability(self, pairs: list[Pair] | None = None, timeout_s: int = 1,
                           attempts: int = 3) -> list[Pair]:
        """Ping every ordered host pair (or `pairs`); returns the failing pairs."""
        return check_reachability(self.hosts, pairs, timeout_s, attempts)

    def cli(self) -> None:
        """Mininet's CLI on this network (nodes, net, pingall, `h1 ping h2`, ...)."""
        from mininet.cli import CLI

        CLI(self.mininet)

    # -- teardown -----------------------------------------------------------------------

    def stop(self) -> list[str]:
        """Tear everything down (idempotent); returns the errors, also in `.errors`."""
        if self._stopped:
            return self.errors
        self._stopped = True
        t0 = time.monotonic()
        # Ctrl-C (or `kill`) during teardown would leak what is not yet removed.
        old: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                old[sig] = signal.signal(sig, signal.SIG_IGN)
        errors: list[str] = []
        try:
            self._teardown(errors)
        finally:
            for signum, handler in old.items():
                signal.signal(signum, handler)
        self.errors = errors
        self.timings["stop_s"] = time.monotonic() - t0
        if self._own_state and self.state is not None:
            # A clean teardown drops the record; a failed one keeps it for `make stop`.
            self.state.finish(keep=bool(errors))
        if self._reaper is not None:
            self._reaper.release()
            self._reaper = None
        for e in errors:
            self.log(f"teardown: {e}")
        return errors

    def _step(self, errors: list[str], what: str, fn: Callable[[], object]) -> None:
        try:
            fn()
        except Exception as exc:  # best effort: note it, carry on with the next step
            errors.append(f"{what}: {exc}")

    def _teardown(self, errors: list[str]) -> None:
        # 1. Switch processes first, so none sees its ports vanish (ENETDOWN).
        def stop_switch(node: P4SwitchNode) -> None:
            self._step(errors, f"switch {node.name}", node.stop_process)

        nodes = [n for n in self.switches.values() if n.process is not None]
        if nodes:
            with ThreadPoolExecutor(max_workers=min(16, len(nodes))) as pool:
                list(pool.map(stop_switch, nodes))
        # 2. What was started inside hosts: recorded, or found in their namespaces
        #    (started with host.popen or from the CLI), shells excepted.
        self._step(errors, "host processes", self._kill_host_processes)
        # 3. Root-side veths, in one `ip` batch: deleting one end deletes its peer, now,
        #    rather than whenever the kernel gets round to freeing the namespaces.
        self._step(errors, "interfaces", self._delete_root_intfs)
        # 4. Node shells (the host namespaces go with them) and their ptys.
        shells: list[Any] = [*self.hosts.values(), *self.switches.values()]
        for shell in shells:
            self._step(errors, f"node {shell.name}", shell.terminate)
        self._step(errors, "state", self._remove_scratch)

    def _kill_host_processes(self) -> None:
        shells = {h.pid for h in self.hosts.values() if h.shell and h.shell.poll() is None}
        inodes = {ino for ino in (net_ns_inode(pid) for pid in shells) if ino}
        stray = [p for pids in pids_in_netns(inodes).values() for p in pids
                 if p not in shells]
        procs = [(p, st, True) for p, st in self._processes]
        procs += [(p, proc_start_time(p), False) for p in stray]
        kill_verified(procs, 2.0)

    def _delete_root_intfs(self) -> None:
        if self.state is None:
            return
        present = _root_links()
        doomed = [i["name"] for i in self.state.data.get("interfaces", [])
                  if i.get("netns") is None and present.get(i["name"]) == i["mac"]]
        if not doomed:
            return
        batch = "".join(f"link del dev {name}\n" for name in doomed)
        subprocess.run(["ip", "-force", "-batch", "-"], input=batch, capture_output=True,
                       text=True)
        left = sorted(set(doomed) & set(_root_links()))
        if left:
            raise NetError(f"could not delete {', '.join(left)}")

    def _remove_scratch(self) -> None:
        if self.state is None:
            return
        for path in self.state.data.get("sockets", []):
            with contextlib.suppress(FileNotFoundError):
                Path(path).unlink()
        for d in self.state.data.get("dirs", []):
            with contextlib.suppress(FileNotFoundError, OSError):
                Path(d).rmdir()
