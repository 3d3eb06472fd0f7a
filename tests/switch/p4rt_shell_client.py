"""Drives one switch with p4runtime-shell, as its users do (run as a subprocess:
its client is a module global, so one process per switch).

argv: GRPC_ADDR DEVICE_ID P4INFO DEVICE_CONFIG. Prints JSON lines; after
"installed" it waits for a line on stdin, then sniffs PacketIn for 5 s.
"""

import json
import sys

import p4runtime_sh.shell as sh
from p4runtime_sh.p4runtime import P4RuntimeWriteException


def out(**kw):
    print(json.dumps(kw), flush=True)


def main():
    addr, device_id, p4info, devcfg = sys.argv[1:5]
    sh.setup(device_id=int(device_id), grpc_addr=addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(p4info, devcfg), verbose=False)
    try:
        # one-shot ECMP first, while the profile is empty: the switch makes hidden
        # members and a group, reads the set back as written; then it goes
        one = sh.TableEntry("MyIngress.ipv4_lpm")
        one.match["hdr.ipv4.dstAddr"] = "10.0.3.0/24"
        one.oneshot = sh.Oneshot("MyIngress.ipv4_lpm")
        for mac, w in (("02:00:00:00:00:33", 1), ("02:00:00:00:00:34", 1)):
            a = sh.Action("MyIngress.set_nhop")
            a["dmac"] = mac
            a["port"] = "2"
            one.oneshot.add(a, weight=w)
        one.insert()
        shots = []
        sh.TableEntry("MyIngress.ipv4_lpm").read(
            lambda e: shots.append(len(e.oneshot.actions)) if e.oneshot is not None else None)
        out(oneshot_actions=[n for n in shots if n])
        one.delete()
        for mid, (mac, port) in enumerate([("02:00:00:00:00:02", "2"),
                                           ("02:00:00:00:00:12", "2")], start=1):
            m = sh.ActionProfileMember("MyIngress.ecmp_selector")(
                member_id=mid, action="MyIngress.set_nhop")
            m.action["dmac"] = mac
            m.action["port"] = port
            m.insert()
        g = sh.ActionProfileGroup("MyIngress.ecmp_selector")(group_id=10)
        g.add(1, weight=1)
        g.add(2, weight=2)
        g.insert()
        te = sh.TableEntry("MyIngress.ipv4_lpm")
        te.match["hdr.ipv4.dstAddr"] = "10.0.2.0/24"
        te.group_id = 10
        te.insert()
        cpu = sh.ActionProfileMember("MyIngress.ecmp_selector")(
            member_id=3, action="MyIngress.send_to_cpu")
        cpu.insert()
        te2 = sh.TableEntry("MyIngress.ipv4_lpm")
        te2.match["hdr.ipv4.dstAddr"] = "10.0.9.9/32"
        te2.member_id = 3
        te2.insert()
        # errors surface as p4runtime-shell's P4RuntimeWriteException with per-update codes
        try:
            te2.insert()
            out(dup_error=None)
        except P4RuntimeWriteException as e:
            out(dup_error=[err[1].canonical_code for err in e.errors])
        # mixing one-shot sets with members and groups in one profile is refused
        try:
            one.insert()
            out(mix_error=None)
        except P4RuntimeWriteException as e:
            out(mix_error=[err[1].canonical_code for err in e.errors])
        entries = []
        sh.TableEntry("MyIngress.ipv4_lpm").read(lambda e: entries.append(str(e.match)))
        groups = []
        sh.ActionProfileGroup("MyIngress.ecmp_selector").read(
            lambda g: groups.append([(m.member_id, m.weight) for m in g.members]))
        out(entries=len(entries), groups=groups)
        sh.PacketOut(payload=bytes.fromhex("ffffffffffff" "020000000003" "88b5") + b"hello-out",
                     egress_port="2").send()
        out(step="installed")
        sys.stdin.readline()
        pkts = []
        sh.PacketIn().sniff(lambda p: pkts.append(p), timeout=5)
        out(packet_in=[{"payload": p.packet.payload.hex(),
                        "md": {m.metadata_id: m.value.hex() for m in p.packet.metadata}}
                       for p in pkts])
        regs = []
        sh.CounterEntry("MyIngress.port_rx").read(
            lambda c: regs.append((c.index, c.packet_count)))
        out(port_rx={str(i): n for i, n in regs if n})
    finally:
        sh.teardown()
        out(step="done")


if __name__ == "__main__":
    main()
