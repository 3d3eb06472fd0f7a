"""Shared pytest fixtures: root detection and throwaway network namespaces."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator

import pytest

from emu.core import netns

IS_ROOT = os.geteuid() == 0
HAVE_IP = shutil.which("ip") is not None

needs_root = pytest.mark.skipif(not (IS_ROOT and HAVE_IP),
                                reason="needs root and iproute2 (network namespaces)")


@pytest.fixture
def veth_pair() -> Iterator[Callable[[], tuple[str, str, str, str]]]:
    """Factory for two fresh namespaces joined by a veth pair.

    Returns (ns_a, if_a, ns_b, if_b). Everything is deleted afterwards, even
    when the test fails, so no namespace or veth outlives the test.
    """
    made: list[str] = []

    def make() -> tuple[str, str, str, str]:
        tag = uuid.uuid4().hex[:6]
        ns_a, ns_b = f"emut-{tag}-a", f"emut-{tag}-b"
        if_a, if_b = f"ea{tag}", f"eb{tag}"
        for ns in (ns_a, ns_b):
            netns.add(ns)
            made.append(ns)
        subprocess.run(["ip", "link", "add", if_a, "netns", ns_a, "type", "veth",
                        "peer", "name", if_b, "netns", ns_b], check=True, capture_output=True)
        for ns, ifc in ((ns_a, if_a), (ns_b, if_b)):
            # No IPv6 on the test link: otherwise the kernel sends frames of its own
            # (neighbour discovery, MLD) that tests counting frames would see.
            netns.run(ns, "sysctl", "-qw", f"net.ipv6.conf.{ifc}.disable_ipv6=1", check=False)
            netns.run(ns, "ip", "link", "set", ifc, "up")
        return ns_a, if_a, ns_b, if_b

    try:
        yield make
    finally:
        for ns in made:
            netns.delete(ns)
