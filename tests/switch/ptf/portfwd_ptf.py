"""PTF tests (p4lang/ptf) of tests/targets/programs/portfwd.p4, run by the `ptf`
command against the embedded switch daemon (tests/switch/test_ptf.py): the way P4
programs are tested against simple_switch_grpc, with p4runtime-shell as the
controller. PTF collects every BaseTest subclass here; pytest does not (the name).

Test parameters: grpcaddr, p4info (text P4Info) and config (the device config, here
the embedded target's compiled artefact where BMv2 takes its JSON).
"""

import p4runtime_sh.shell as sh
import ptf
from ptf import testutils as tu
from ptf.base_tests import BaseTest


class PortFwdTest(BaseTest):
    """Sets the pipeline as the primary client; each test starts with empty tables."""

    def setUp(self):
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        p = tu.test_params_get()
        sh.setup(device_id=1, grpc_addr=p["grpcaddr"], election_id=(0, 1),
                 config=sh.FwdPipeConfig(p["p4info"], p["config"]), verbose=False)

    def tearDown(self):
        sh.teardown()
        BaseTest.tearDown(self)

    def forward(self, ingress, egress):
        te = sh.TableEntry("Ing.port_map")(action="Ing.forward")
        te.match["sm.ingress_port"] = str(ingress)
        te.action["port"] = str(egress)
        te.insert()


class ForwardByIngressPort(PortFwdTest):
    """An entry per ingress port picks the egress port; the TTL goes down by one and
    the IPv4 checksum follows; a port without an entry takes the default (drop)."""

    def runTest(self):
        self.forward(1, 2)
        self.forward(2, 3)
        pkt = tu.simple_udp_packet(ip_dst="10.0.0.2", ip_ttl=64)
        exp = tu.simple_udp_packet(ip_dst="10.0.0.2", ip_ttl=63)
        tu.send_packet(self, 1, pkt)
        tu.verify_packet(self, exp, 2)
        tu.verify_no_other_packets(self)
        tu.send_packet(self, 2, pkt)
        tu.verify_packet(self, exp, 3)
        tu.send_packet(self, 3, pkt)
        tu.verify_no_other_packets(self)


class DefaultActionAndDelete(PortFwdTest):
    """A new default action forwards what misses; a deleted entry misses again."""

    def runTest(self):
        self.forward(1, 2)
        default = sh.TableEntry("Ing.port_map")(action="Ing.forward", is_default=True)
        default.action["port"] = "4"
        default.modify()
        pkt = tu.simple_tcp_packet(ip_ttl=10)
        exp = tu.simple_tcp_packet(ip_ttl=9)
        tu.send_packet(self, 3, pkt)
        tu.verify_packet(self, exp, 4)
        tu.send_packet(self, 1, pkt)
        tu.verify_packet(self, exp, 2)
        te = sh.TableEntry("Ing.port_map")
        te.match["sm.ingress_port"] = "1"
        te.delete()
        tu.send_packet(self, 1, pkt)
        tu.verify_packet(self, exp, 4)
        tu.verify_no_other_packets(self)
