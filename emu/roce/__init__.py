"""RoCEv2 host stack: wire format, reliable-connected QPs, loss recovery, DCQCN, PLB, agent.

The data path never touches Scapy: frames are built from per-QP byte templates and
parsed with struct on memoryviews. Scapy layers (scapy.contrib.roce + `layers`) define
the format and serve as the golden reference in tests.

Imports: emu.topo and emu.core; nothing of P4, P4Runtime or gRPC. Layer 3, beside emu.p4
(neither imports the other) of the package layers that pyproject.toml's import-linter
contracts enforce; nothing above it.
"""

from emu.roce.dcqcn import PROFILES, DcqcnParams, profile
from emu.roce.nic import Nic, NicParams
from emu.roce.plb import PlbParams
from emu.roce.qp import Message, QpParams, QueuePair, WorkRequest
from emu.roce.wire import Path

__all__ = ["PROFILES", "DcqcnParams", "Message", "Nic", "NicParams", "Path", "PlbParams",
           "QpParams", "QueuePair", "WorkRequest", "profile"]
