"""The two sides: the embedded target in-process on a virtual clock (side A), and a
switch process of a target on veth pairs in a throwaway namespace (side B)."""

from __future__ import annotations

import contextlib
import select
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from emu.core.port import AUX_SPACE, PACKET_AUXDATA, SOL_PACKET, with_vlan_tag
from emu.p4.api import MAX_IDLE_EVENTS, PipelineBusy

from .model import ETH_P_ALL, PACKET_OUTGOING, Outputs, Packet
from .programming import Programming

# ---------------------------------------------------------------------- side A: in-process


def compile_side_a(program: Path, include_dirs: Sequence[Path]) -> Any:
    """The program as the embedded target compiles it, once for every switch of side A
    (the dry run's and the compared one)."""
    from emu.p4.target.program import compile_file

    return compile_file(str(program), [str(d) for d in include_dirs])


def run_in_process(compiled: Any, setup: Programming, packets: Sequence[Packet],
                   registers: Sequence[str], skip: Collection[int] = ()
                   ) -> tuple[list[Outputs], dict[str, Any], Any, dict[int, str]]:
    """Side A, running `compiled` (compile_side_a); `skip`: the trial writes side B
    refused. Also returns the ones this side refused."""
    sw, handle = _side_a(compiled, setup)
    refused = setup.apply_trial(handle, skip)
    wired = set(setup.ports)
    results = []
    for i, pkt in enumerate(packets, 1):
        _send(sw, pkt, i, len(packets))
        results.append([(o.port, bytes(o.data)) for o in sw.outputs(clear=True)
                        if o.port in wired])
    state = {"registers": {f"{r}[{i}]": int(sw.register_read(r, i))
                           for r in registers for i in setup.ports}}
    return results, state, handle, refused


def observed_keys(compiled: Any, setup: Programming, packets: Sequence[Packet],
                  limit: int = 64) -> dict[str, list[tuple[int, ...]]]:
    """A dry run of side A (`compiled`: compile_side_a) with the setup's own writes (no
    trial writes): the distinct keys each table looked up, per table (P4Info name), at
    most `limit` each in the order first seen. Random entries built around them hit."""
    sw, _handle = _side_a(compiled, setup)
    keys: dict[str, dict[tuple[int, ...], None]] = {}

    def record(table: str, key: tuple[Any, ...]) -> None:
        seen = keys.setdefault(table, {})
        if len(seen) < limit:
            seen.setdefault(tuple(int(v) for v in key), None)

    sw.on_lookup(record)
    for i, pkt in enumerate(packets, 1):
        _send(sw, pkt, i, len(packets))
        sw.outputs(clear=True)
    return {table: list(seen) for table, seen in keys.items()}


def _send(sw: Any, pkt: Packet, i: int, n: int) -> None:
    """Packet `i` of `n` through side A until the switch is idle; PipelineBusy naming
    it when the program never lets it go idle (clones that clone again)."""
    sw.inject(pkt.port, pkt.frame)
    try:
        sw.run_until_idle(MAX_IDLE_EVENTS)
    except PipelineBusy as exc:
        raise PipelineBusy(f"embedded target, packet {i} of {n}: {exc}") from None


def _side_a(compiled: Any, setup: Programming) -> tuple[Any, Any]:
    """An embedded switch of side A running `compiled`, in process on a virtual clock,
    with the setup's own writes: (switch, its control handle)."""
    from emu.control.inprocess import InProcessSwitchHandle
    from emu.core.clock import VirtualClock
    from emu.p4.api import P4Switch

    sw = P4Switch(compiled, VirtualClock(), seed=setup.device_id, queue_depth_pkts=1024)
    handle = InProcessSwitchHandle(setup.switch_name, sw)
    setup.apply(handle)
    return sw, handle


# ---------------------------------------------------------------------- side B: a process


@contextlib.contextmanager
def veth_ports(ports: Sequence[int], scratch: Sequence[Path] = ()
               ) -> Iterator[tuple[str, dict[int, str], dict[int, str]]]:
    """A namespace with one veth pair per port: (ns, switch ends, host ends). A SIGKILL
    of this process deletes the namespace and removes the `scratch` folders."""
    from emu.core import netns
    from emu.core.reaper import Reaper

    tag = uuid.uuid4().hex[:6]
    ns = f"emuxc-{tag}"
    # SIGKILL runs no `finally`: the reaper deletes the namespace then (named, it would
    # outlive every process in it).
    reaper = Reaper.for_netns(ns, remove=list(scratch))
    try:
        netns.add(ns)
    except BaseException:
        reaper.release()
        raise
    try:
        for key in ("all", "default"):
            netns.run(ns, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1", check=False)
        sw_end = {p: f"xs{tag}{p}" for p in ports}
        host_end = {p: f"xh{tag}{p}" for p in ports}
        for p in ports:
            netns.run(ns, "ip", "link", "add", sw_end[p], "type", "veth", "peer", "name",
                      host_end[p])
            for i in (sw_end[p], host_end[p]):
                netns.run(ns, "ip", "link", "set", i, "up")
        yield ns, sw_end, host_end
    finally:
        netns.delete(ns)
        reaper.release()


@dataclass
class SwitchProcess:
    """A switch process of one target (`switch_process`): its primary P4Runtime client
    (election id (0,1)) with the pipeline set and `client.p4info` filled, the compiled
    pipeline, and the namespace and host ends of its veth ports."""

    client: Any
    pipe: Any
    ns: str
    host_end: dict[int, str]


@contextlib.contextmanager
def switch_process(target_name: str, program: Path, build: Path,
                   ports: Sequence[int] = (1, 2)) -> Iterator[SwitchProcess]:
    """`program` compiled by the target, running on veth ports, programmed by a P4Runtime
    client: for comparing two servers' answers (the P4Runtime agreement tests, the
    P4Runtime fuzzer)."""
    from emu.runtime.client import P4RuntimeClient
    from emu.targets import SwitchSpec, get_target

    target = get_target(target_name)
    pipe = target.compile(program, build / target_name, (program.parent,))
    sockdir = tempfile.mkdtemp(prefix="emup4rt-")
    try:
        with veth_ports(ports, [Path(sockdir)]) as (ns, sw_end, host_end):
            spec = SwitchSpec("s1", 1, dict(sw_end), f"unix:{sockdir}/p4rt.sock", netns=ns)
            with target.start(spec, pipe) as proc:
                proc.wait_ready(120)
                client = P4RuntimeClient(spec.grpc_addr, 1)
                try:
                    client.p4info = pipe.load_p4info()
                    client.set_pipeline(client.p4info, pipe.device_config())
                    yield SwitchProcess(client, pipe, ns, dict(host_end))
                finally:
                    client.close()
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)


# How long a packet may take to come out at all, before it counts as dropped: a switch
# process on a loaded machine can be much later than the settle time between frames.
FIRST_FRAME_S = 0.25


def collect(socks: Mapping[int, socket.socket], settle_s: float, max_s: float,
            first_s: float | None = None) -> Outputs:
    """The frames out of every port for one packet: wait up to `first_s` for the first
    (default: the settle time), then until `settle_s` pass without another."""
    out: Outputs = []
    by_fd = {s.fileno(): (p, s) for p, s in socks.items()}
    deadline = time.monotonic() + max_s
    quiet_until = time.monotonic() + (settle_s if first_s is None else first_s)
    while True:
        now = time.monotonic()
        wait = min(quiet_until, deadline) - now
        if wait <= 0:
            return out
        ready, _, _ = select.select(list(by_fd), [], [], wait)
        for fd in ready:
            port, s = by_fd[fd]
            data, anc, _flags, addr = s.recvmsg(65535, AUX_SPACE)
            if addr[2] != PACKET_OUTGOING:
                # An 802.1Q tag the kernel took out (VLAN offload) goes back in, as the
                # switch daemon's ports do: the frame as the switch sent it.
                out.append((port, with_vlan_tag(data, anc)))
                quiet_until = time.monotonic() + settle_s


def run_process(target_name: str, pipe: Any, setup: Programming, packets: Sequence[Packet],
                registers: Sequence[str], settle_s: float
                ) -> tuple[list[Outputs], dict[str, Any], Any, dict[int, str]]:
    """Side B: the packets through a switch process of `target_name` running `pipe` (the
    program as that target compiled it). Also returns the trial writes it refused."""
    from emu.control.p4rt import P4RuntimeSwitchHandle
    from emu.core import netns
    from emu.runtime.client import P4RuntimeClient
    from emu.targets import SwitchSpec, get_target

    target = get_target(target_name)
    p4info = pipe.load_p4info()
    sockdir = tempfile.mkdtemp(prefix="emuxc-")
    results: list[Outputs] = []
    try:
        with veth_ports(setup.ports, [Path(sockdir)]) as (ns, sw_end, host_end):
            spec = SwitchSpec(setup.switch_name, setup.device_id, dict(sw_end),
                              f"unix:{sockdir}/p4rt.sock", netns=ns)
            with target.start(spec, pipe) as proc:
                proc.wait_ready(120)
                client = P4RuntimeClient(spec.grpc_addr, setup.device_id)
                socks: dict[int, socket.socket] = {}
                try:
                    try:
                        client.set_pipeline(p4info, pipe.device_config())
                        handle = P4RuntimeSwitchHandle(setup.switch_name, client, p4info)
                        setup.apply(handle)
                        refused = setup.apply_trial(handle)
                    except grpc.RpcError as e:
                        # The program compiled but the switch would not take it (or its
                        # entries): its own words, not a gRPC traceback.
                        tail = "\n".join(proc.output().splitlines()[-8:])
                        raise RuntimeError(f"{target_name} refused the pipeline or its entries: "
                                           f"{e.code().name}: {e.details()}\n{tail}") from None
                    with netns.inside(ns):
                        for p, iface in host_end.items():
                            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                                              socket.htons(ETH_P_ALL))
                            s.bind((iface, 0))
                            s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
                            socks[p] = s
                    collect(socks, 0.05, 0.5)  # drain anything from start-up
                    for n, pkt in enumerate(packets):
                        socks[pkt.port].send(pkt.frame)
                        results.append(collect(socks, settle_s, max(2.0, 10 * settle_s),
                                               max(settle_s, FIRST_FRAME_S)))
                        if not proc.alive():
                            # Not a difference per packet to come: the side is gone.
                            raise proc.died(f"exited at packet {n} (in port {pkt.port}, "
                                            f"{len(pkt.frame)} B: {pkt.frame.hex()})")
                    state = {"registers": {f"{r}[{i}]": proc.read_register(r, i)
                                           for r in registers for i in setup.ports}}
                    counters = read_counters(handle, p4info, setup.ports)
                finally:
                    for s in socks.values():
                        s.close()
                    client.close()
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)
    return results, state, counters, refused


def read_counters(handle: Any, p4info: Any, indices: Sequence[int]) -> dict[str, tuple[int, ...]]:
    """Every indirect counter of the P4Info at `indices`: name[i] -> the unit's values."""
    out: dict[str, tuple[int, ...]] = {}
    for c in p4info.counters:
        unit = c.spec.unit  # 1 BYTES, 2 PACKETS, 3 BOTH
        cells = handle.read_counters(c.preamble.name, [i for i in indices if i < c.size])
        for i, (pk, by) in cells.items():
            vals = {1: (by,), 2: (pk,)}.get(unit, (pk, by))
            out[f"{c.preamble.name}[{i}]"] = tuple(int(v) for v in vals)
    return out
