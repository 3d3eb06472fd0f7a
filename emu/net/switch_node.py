"""P4 switches as Mininet nodes: one class per target, running the target's
SwitchProcess on the node's `<switch>-ethN` interfaces.

Switches stay in the root namespace (as in the BMv2 tutorials) so the controller
reaches them on 127.0.0.1 or a unix socket. Mininet's Switch.start() is expected to
return a started switch; ours returns only when the switch reports ready (every port
open, P4Runtime answering), never after a sleep. EmuNet uses launch()/wait_ready()
separately to start all switches at once and wait for them together.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from mininet.node import Switch

from emu.core.wire import CPU_PORT
from emu.targets.base import (
    CompiledPipeline,
    PortQueueConfig,
    SwitchProcess,
    SwitchSpec,
    SwitchTarget,
)
from emu.topo import Switch as TopoSwitch

from .errors import NetError


def queue_configs(model: TopoSwitch, delays_ns: dict[int, int],
                  priority_queues: int = 1) -> dict[int, PortQueueConfig]:
    """Egress queues per port from the model: the switch emulates rate, depth and delay;
    `priority_queues` strict-priority queues per port (fabric.p4 maps DSCP to them)."""
    return {p.number: PortQueueConfig(rate_bps=p.rate_bps or None, depth_pkts=p.depth_pkts,
                                      delay_ns=delays_ns.get(p.number, 0),
                                      priority_queues=priority_queues)
            for p in model.ports}


class P4SwitchNode(Switch):  # type: ignore[misc]
    """A fabric switch. Construct through Mininet.addSwitch(name, cls=..., **params)."""

    target_name = ""

    def __init__(self, name: str, *, model: TopoSwitch | None = None,
                 target: SwitchTarget | None = None, pipeline: CompiledPipeline | None = None,
                 grpc_addr: str = "", queues: dict[int, PortQueueConfig] | None = None,
                 log_path: Path | None = None, pcap_dir: Path | None = None,
                 thrift_port: int | None = None, ready_timeout_s: float = 60.0,
                 flow_control: dict[str, Any] | None = None, seed: int | None = None,
                 **params: Any) -> None:
        if model is None or target is None or pipeline is None:
            raise NetError(f"switch {name}: needs model, target and pipeline")
        self.model = model
        self.target = target
        self.pipeline = pipeline
        self.spec = SwitchSpec(
            name=name, device_id=model.device_id,
            ports={p.number: p.intf for p in model.ports}, grpc_addr=grpc_addr,
            cpu_port=CPU_PORT, queues=dict(queues or {}), netns=None, pcap_dir=pcap_dir,
            log_path=log_path, thrift_port=thrift_port, flow_control=flow_control, seed=seed)
        self.ready_timeout_s = ready_timeout_s
        self.process: SwitchProcess | None = None
        # dpid from the device id: Mininet would otherwise parse digits from the name.
        params["inNamespace"] = False
        super().__init__(name, dpid=f"{model.device_id:x}", **params)

    @property
    def grpc_addr(self) -> str:
        return self.spec.grpc_addr

    @property
    def device_id(self) -> int:
        return self.model.device_id

    def launch(self) -> SwitchProcess:
        """Start the switch process without waiting. Call from the main thread: targets
        tie their processes to the parent *thread* (PR_SET_PDEATHSIG)."""
        if self.process is None:
            self.process = self.target.start(self.spec, self.pipeline)
        return self.process

    def readdress(self, grpc_addr: str, thrift_port: int | None) -> None:
        """New addresses for the next launch (the old process must be stopped)."""
        self.spec = replace(self.spec, grpc_addr=grpc_addr, thrift_port=thrift_port)
        self.process = None

    def wait_ready(self, timeout_s: float | None = None) -> None:
        if self.process is None:
            raise NetError(f"switch {self.name}: not launched")
        try:
            self.process.wait_ready(timeout_s or self.ready_timeout_s)
        except Exception as exc:
            raise NetError(f"switch {self.name}: not ready: {exc}{self._log_tail()}") from exc

    def _log_tail(self) -> str:
        path = self.spec.log_path
        if not path or not path.exists():
            return ""
        lines = path.read_text(errors="replace").strip().splitlines()
        return f" (log {path}: {lines[-1]})" if lines else ""

    # -- Mininet's Switch interface ----------------------------------------------------

    def start(self, controllers: Any = ()) -> None:
        self.launch()
        self.wait_ready()

    def stop_process(self, timeout_s: float = 3.0) -> None:
        if self.process is not None:
            self.process.stop(timeout_s)

    def stop(self, deleteIntfs: bool = False) -> None:  # noqa: N803 (Mininet's name)
        self.stop_process()
        super().stop(deleteIntfs=deleteIntfs)

    def connected(self) -> bool:
        return self.process is not None and self.process.alive()

    def set_queue(self, port: int | None, config: PortQueueConfig) -> None:
        if self.process is None:
            raise NetError(f"switch {self.name}: not running")
        self.process.set_queue(port, config)


class EmbeddedSwitchNode(P4SwitchNode):
    """The embedded Python v1model switch (`python -m emu.switch`)."""

    target_name = "embedded"


class Bmv2SwitchNode(P4SwitchNode):
    """BMv2 simple_switch_grpc (its target picks the Thrift port for simple_switch_CLI)."""

    target_name = "bmv2"


SWITCH_CLASSES: dict[str, type[P4SwitchNode]] = {
    "embedded": EmbeddedSwitchNode,
    "bmv2": Bmv2SwitchNode,
}


def switch_class(target_name: str) -> type[P4SwitchNode]:
    """The node class for a target; unknown targets (test stand-ins) get the base class."""
    return SWITCH_CLASSES.get(target_name, P4SwitchNode)
