"""RoCE hosts: a Mininet Host (a shell in its own network namespace) configured from
the topology model.

The P4 switches route at L3 and never answer ARP, so a host sends everything, its
own subnet included, to the gateway MAC: the address is added without its prefix
route, the gateway is on-link, and its neighbour entry is permanent.
"""

from __future__ import annotations

import subprocess
from typing import Any

from mininet.node import Host

from emu.topo import Host as TopoHost

from .errors import NetError
from .links import htb_commands, offload_commands
from .sh import last_line, script

# net.ipv4.icmp_ratelimit's largest value (ms): see RoceHost.__init__.
ICMP_RATELIMIT_MS = 2**31 - 1


class RoceHost(Host):  # type: ignore[misc]
    """A fabric host. `model` is its emu.topo Host; `rate_bps` its link's rate."""

    def __init__(self, name: str, model: TopoHost | None = None, rate_bps: int | None = None,
                 **params: Any) -> None:
        if model is None:
            raise NetError(f"host {name}: RoceHost needs its topology model")
        self.model = model
        self.rate_bps = rate_bps
        params["inNamespace"] = True
        super().__init__(name, **params)
        # Before any interface exists here: interfaces inherit "default", so none of
        # them ever gets an IPv6 link-local address or sends router solicitations.
        # The agent reads RoCE frames through AF_PACKET, no socket has their UDP port, so
        # the kernel would answer ACKs, CNPs and data with ICMP port unreachables (about
        # one a second per peer): frames the modelled network does not have, which queue
        # in front of the RoCE frames and raise the switch's queue depth in packets (ECN
        # marking) above virtual time's. The longest rate-limit interval (24.8 days) lets
        # no ICMP error out; echo replies, which are not rate-limited, still answer pings.
        self.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 "
                 "net.ipv6.conf.default.disable_ipv6=1 "
                 f"net.ipv4.icmp_ratelimit={ICMP_RATELIMIT_MS} 2>/dev/null")

    @property
    def intf_name(self) -> str:
        return self.model.intf

    def setup_commands(self) -> list[list[str]]:
        m, dev = self.model, self.model.intf
        gw = str(m.gateway)
        return [
            ["ip", "link", "set", "dev", "lo", "up"],
            ["ip", "link", "set", "dev", dev, "mtu", str(m.mtu)],
            *offload_commands(dev),
            ["ip", "addr", "add", m.ip_with_prefix, "dev", dev, "noprefixroute"],
            ["ip", "link", "set", "dev", dev, "up"],
            ["ip", "route", "add", gw, "dev", dev, "scope", "link"],
            ["ip", "route", "add", "default", "via", gw, "dev", dev],
            ["ip", "neigh", "replace", gw, "lladdr", m.gateway_mac, "dev", dev,
             "nud", "permanent"],
            *htb_commands(dev, self.rate_bps, m.mtu),
        ]

    def begin_setup(self) -> subprocess.Popen[str]:
        """Start configuring (one process in the namespace); finish with `end_setup`,
        so all hosts are configured in parallel."""
        return self.popen(["sh", "-c", script(self.setup_commands())], text=True)  # type: ignore[no-any-return]

    def end_setup(self, proc: subprocess.Popen[str]) -> None:
        _out, err = proc.communicate()
        if proc.returncode != 0:
            raise NetError(f"host {self.name}: {last_line(err) or f'exit {proc.returncode}'}")
        # Mininet's own view (h1.IP() in the CLI, `h1 ping h2` name substitution).
        intf = self.intf(self.model.intf)
        intf.ip, intf.prefixLen = str(self.model.ip), str(self.model.subnet.prefixlen)
        intf.mac = self.model.mac

    def configure(self) -> None:
        self.end_setup(self.begin_setup())
