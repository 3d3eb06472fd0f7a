"""What the P4Runtime server needs from a switch: the device interface.

The server speaks P4Runtime; a *device* holds the running program (a
`Dataplane`, see dataplane.py): verify/commit a pipeline, run control-plane
work serialised with the data path (`call`), packet-out, packet-in and digest
sinks. `LocalDevice` implements it for any Dataplane on any Clock; the switch
daemon (emu.switch) wires it to AF_PACKET ports.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Collection, Mapping
from typing import Protocol, TypeVar

import grpc

from emu.core.clock import Clock, RealClock
from emu.p4.tables import MatchKind, Table

from .dataplane import ControlPlane, Dataplane, DigestFn, OutputFn
from .devconfig import load_dataplane
from .errors import P4RTError, failed_precondition, invalid, not_found
from .translate import P4InfoIndex, TableInfo
from .translation import translated_types

T = TypeVar("T")

__all__ = ["Device", "LocalDevice", "check_device_id"]


class Device(Protocol):
    """The switch as the P4Runtime server sees it."""

    device_id: int
    cpu_port: int | None

    def prepare(self, index: P4InfoIndex, device_config: bytes) -> object:
        """Verify a pipeline (raise P4RTError); return a handle for commit()."""
        ...

    def commit(self, prepared: object,
               before_swap: Callable[[ControlPlane], None] | None = None) -> ControlPlane:
        """Swap the prepared pipeline in. `before_swap(new_control)` runs serialised with
        the data path just before the swap (state carried over by RECONCILE_AND_COMMIT);
        if it raises, the prepared pipeline is dropped and the running one stays."""
        ...

    def prepared_control(self, prepared: object) -> ControlPlane:
        """The control plane of a prepared, not yet committed pipeline (VERIFY_AND_SAVE:
        it takes writes before it forwards)."""
        ...

    def discard(self, prepared: object) -> None:
        """Release a prepared pipeline that will not be committed."""
        ...

    def control(self) -> ControlPlane | None: ...
    def call(self, fn: Callable[[], T]) -> T: ...
    def packet_out(self, frame: bytes) -> None: ...
    def set_packet_in_sink(self, sink: Callable[[bytes], None] | None) -> None: ...
    def set_digest_sink(self, sink: DigestFn | None) -> None: ...


class _Prepared:
    __slots__ = ("index", "config", "dataplane")

    def __init__(self, index: P4InfoIndex, config: bytes, dataplane: Dataplane) -> None:
        self.index, self.config, self.dataplane = index, config, dataplane


class LocalDevice:
    """A Device for any Dataplane on any Clock.

    `output(port, frame)` receives every frame the pipeline sends to a port
    other than the CPU port; frames to the CPU port go to the packet-in sink.
    With a RealClock whose loop runs in another thread, `call` hands work to
    that thread (control-plane changes never race the data path); otherwise it
    runs the work under a lock.
    """

    def __init__(self, device_id: int, clock: Clock, *, cpu_port: int | None = 255,
                 output: OutputFn | None = None,
                 on_commit: Callable[[Dataplane], None] | None = None,
                 priority_queues: int = 1, seed: int = 0,
                 trust_compiled: bool = False) -> None:
        self.device_id = device_id
        # Whether a client may load a compiled program (generated Python) rather than
        # P4 sources: only when every client that reaches the server is trusted.
        self.trust_compiled = trust_compiled
        self.seed = seed  # of each pipeline's random draws, re-seeded at every commit
        self.cpu_port = cpu_port
        self.clock = clock
        self.priority_queues = priority_queues
        self.dataplane: Dataplane | None = None
        self._output = output
        self._on_commit = on_commit
        self._packet_in: Callable[[bytes], None] | None = None
        self._digest: DigestFn | None = None
        self._lock = threading.RLock()
        self.loop_thread: int | None = None  # set by whoever runs the RealClock loop
        self._out_errors: list[str] | None = None  # send failures during one PacketOut

    # -- Device -------------------------------------------------------------

    def prepare(self, index: P4InfoIndex, device_config: bytes) -> object:
        dp = load_dataplane(index, device_config, self.clock,
                            priority_queues=self.priority_queues, seed=self.seed,
                            trust_compiled=self.trust_compiled)
        _check_consistent(index, dp.control)
        return _Prepared(index, device_config, dp)

    def commit(self, prepared: object,
               before_swap: Callable[[ControlPlane], None] | None = None) -> ControlPlane:
        assert isinstance(prepared, _Prepared)
        dp = prepared.dataplane

        def swap() -> None:
            if before_swap is not None:
                try:
                    before_swap(dp.control)
                except BaseException:
                    dp.close()
                    raise
            old = self.dataplane
            dp.set_output(self._emit)
            dp.set_digest_sink(self._on_digest)
            self.dataplane = dp
            if old is not None:
                old.close()
            if self._on_commit is not None:
                self._on_commit(dp)

        self.call(swap)
        return dp.control

    def prepared_control(self, prepared: object) -> ControlPlane:
        assert isinstance(prepared, _Prepared)
        return prepared.dataplane.control

    def discard(self, prepared: object) -> None:
        assert isinstance(prepared, _Prepared)
        prepared.dataplane.close()

    def control(self) -> ControlPlane | None:
        dp = self.dataplane
        return None if dp is None else dp.control

    def call(self, fn: Callable[[], T]) -> T:
        loop = self.loop_thread
        if (loop is None or loop == threading.get_ident()
                or not isinstance(self.clock, RealClock)):
            with self._lock:
                return fn()
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not fut.set_running_or_notify_cancel():
                return
            try:
                fut.set_result(fn())
            except BaseException as exc:  # handed back to the caller's thread
                fut.set_exception(exc)

        self.clock.call_soon_threadsafe(run)
        deadline = 300  # x 0.1 s
        while True:
            try:
                return fut.result(timeout=0.1)
            except concurrent.futures.TimeoutError:
                pass
            # The loop stopped (shutdown) before taking the work: do it here, once.
            if self.loop_thread is None and fut.cancel():
                with self._lock:
                    return fn()
            deadline -= 1
            if deadline <= 0:
                raise P4RTError(grpc.StatusCode.DEADLINE_EXCEEDED,
                                "switch loop did not answer in 30 s")

    def packet_out(self, frame: bytes) -> None:
        """Inject a PacketOut on the CPU port. A port that cannot send the frame right
        away (too long for its MTU, ...) makes this raise INVALID_ARGUMENT; frames
        the traffic manager holds back are sent later, their failures only counted."""
        dp = self.dataplane
        if dp is None:
            raise failed_precondition("no forwarding pipeline config")
        port = self.cpu_port if self.cpu_port is not None else 0
        run_due = getattr(self.clock, "run_due", None)

        def run() -> list[str]:
            self._out_errors = []
            try:
                dp.inject(port, frame)
                if run_due is not None:
                    run_due()  # egress of what can leave now, as for received frames
            finally:
                errors, self._out_errors = self._out_errors, None
            return errors

        errors = self.call(run)
        if errors:
            raise invalid(f"PacketOut of {len(frame)} bytes not sent: {'; '.join(errors)}")

    def send_failed(self, port: int, why: str | None) -> None:
        """The output could not send a frame on `port` (called from the data path)."""
        errs = self._out_errors
        if errs is not None:
            errs.append(f"port {port}: {why or 'send failed'}")

    def set_packet_in_sink(self, sink: Callable[[bytes], None] | None) -> None:
        self._packet_in = sink

    def set_digest_sink(self, sink: DigestFn | None) -> None:
        self._digest = sink

    # -- data path ----------------------------------------------------------

    def inject(self, port: int, frame: bytes) -> bool:
        """A frame arrived on `port`: False when no pipeline is loaded (dropped)."""
        dp = self.dataplane
        if dp is None:
            return False
        dp.inject(port, frame)
        return True

    def _emit(self, port: int, frame: bytes) -> None:
        if port == self.cpu_port:
            sink = self._packet_in
            if sink is not None:
                sink(frame)
            return
        out = self._output
        if out is not None:
            out(port, frame)

    def _on_digest(self, name: str, values: tuple[int, ...]) -> None:
        sink = self._digest
        if sink is not None:
            sink(name, values)


def _check_consistent(index: P4InfoIndex, cp: ControlPlane) -> None:
    """Every P4Info object must exist in the program (else the two don't belong together)."""

    checks: list[tuple[str, Mapping[str, object], list[str]]] = [
        ("table", cp.tables, [t.name for t in index.tables.values()]),
        ("action profile", cp.action_profiles,
         [p.preamble.name for p in index.profiles.values()]),
        ("counter", cp.counters, [c.preamble.name for c in index.counters.values()]),
        ("meter", cp.meters, [m.preamble.name for m in index.meters.values()]),
        ("register", cp.registers, [r.preamble.name for r in index.registers.values()]),
        ("value set", cp.value_sets, [v.preamble.name for v in index.value_sets.values()]),
    ]
    for kind, objects, names in checks:
        for n in names:
            if n not in objects:
                raise invalid(f"P4Info {kind} {n!r} is not in the device config's program")
    translated = translated_types(index.p4info)
    for ti in index.tables.values():
        _check_table_shape(index, ti, cp.tables[ti.name], translated.keys())
    for v in index.value_sets.values():  # else every write of its members fails
        widths = cp.value_sets[v.preamble.name].widths
        if len(widths) != len(v.match):
            raise invalid(f"P4Info value set {v.preamble.name!r} has {len(v.match)} match "
                          f"fields, the device config's program {len(widths)}")


def _check_table_shape(index: P4InfoIndex, ti: TableInfo, table: Table,
                       translated: Collection[str]) -> None:
    """The P4Info's match fields and action parameters must have the program's match
    kinds and widths: entries are encoded by the one and matched by the other. A field
    of a `translated` type has the controller's width in P4Info (translation.py), so
    its width is not compared."""
    free = {i for i, mf in enumerate(ti.proto.match_fields) if mf.type_name.name in translated}
    ours = [(k.kind, None if i in free else k.bitwidth) for i, k in enumerate(ti.key)]
    prog = [(k.kind, None if i in free else k.bitwidth) for i, k in enumerate(table.match_fields)]
    if ours != prog:
        def show(key: list[tuple[MatchKind, int | None]]) -> str:
            return ", ".join(f"{kind.value}:{'translated' if w is None else w}"
                             for kind, w in key) or "none"
        raise invalid(f"P4Info table {ti.name!r} has match fields ({show(ours)}), the device "
                      f"config's program ({show(prog)})")
    widths = {a.name: a.param_widths for a in table.actions}
    for spec in ti.action_specs:
        want = widths.get(spec.name)
        action = index.action_by_name.get(spec.name)
        free = {i for i, p in enumerate(action.params if action else ())
                if p.type_name.name in translated}
        if want is not None and _masked(want, free) != _masked(spec.param_widths, free):
            raise invalid(f"P4Info action {spec.name!r} of table {ti.name!r} has parameter "
                          f"widths {list(spec.param_widths)}, the device config's program "
                          f"{list(want)}")


def _masked(widths: tuple[int, ...], free: set[int]) -> list[int | None]:
    """`widths` with those at the `free` positions (translated types) left out."""
    return [None if i in free else w for i, w in enumerate(widths)]


def check_device_id(device: Device, device_id: int) -> None:
    """NOT_FOUND for a request naming another device."""
    if device_id != device.device_id:
        raise not_found(f"device_id {device_id} does not exist "
                        f"(this switch is {device.device_id})")
