"""Mininet integration: the fabric as hosts in namespaces, P4 switch processes and veths.

    from emu.net import EmuNet
    with EmuNet(load_topology("clos4"), "embedded", run_dir) as net:
        net.grpc_addresses()            # switch -> "127.0.0.1:PORT" for the controller
        net.popen("h1", [...])          # a process in h1's namespace, recorded for cleanup
        net.check_reachability()        # [] when every host pair answers ping

| module | concept |
|---|---|
| `network.py` | `EmuNet`: bring-up, run-state recording, always-on teardown |
| `hosts.py` | `RoceHost`: addresses, gateway route + permanent neighbour, MTU, offloads, htb |
| `switch_node.py` | `P4SwitchNode` (+ one class per target): a SwitchProcess as a Mininet switch |
| `links.py` | veth pairs named by the model, htb commands, switch-side interface setup |
| `addresses.py` | gRPC/Thrift addresses: bind-tested TCP ports or unix sockets |
| `reach.py` | all-pairs ping probe |
| `preflight.py` | root and tool checks with one-line errors |
| `sh.py`, `errors.py` | batched ip/tc/ethtool scripts; `NetError` |

Run bookkeeping (the state record, the run lock, `emu stop`) is emu.core.runstate.

Imports: emu.targets and every layer below it. Layer 9 of the package layers that
pyproject.toml's import-linter contracts enforce; nothing above it.
"""

from emu.core.signals import Interrupted

from .errors import NetError
from .hosts import RoceHost
from .network import EmuNet
from .preflight import check_environment
from .reach import check_reachability
from .switch_node import Bmv2SwitchNode, EmbeddedSwitchNode, P4SwitchNode, switch_class

__all__ = [
    "Bmv2SwitchNode",
    "EmbeddedSwitchNode",
    "EmuNet",
    "Interrupted",
    "NetError",
    "P4SwitchNode",
    "RoceHost",
    "check_environment",
    "check_reachability",
    "switch_class",
]
