"""p4runtime-shell against a switch running fabric.p4 (loaded at start): punt a
prefix to the CPU port, report PacketIns, send a PacketOut. Run as a subprocess.

argv: GRPC_ADDR DEVICE_ID. Prints JSON lines; after "installed" it waits for a line on
stdin, sniffs PacketIn for 5 s, then sends a PacketOut out of port 2.
"""

import json
import sys

import p4runtime_sh.shell as sh


def out(**kw):
    print(json.dumps(kw), flush=True)


def main():
    addr, device_id = sys.argv[1:3]
    sh.setup(device_id=int(device_id), grpc_addr=addr, election_id=(0, 1), verbose=False)
    try:
        te = sh.TableEntry("FabricIngress.routing.ipv4_lpm")(action="route_to_port")
        te.match["hdr.ipv4.dstAddr"] = "10.0.9.0/24"
        te.action["port"] = "255"
        te.insert()
        out(step="installed")
        sys.stdin.readline()
        pkts = []
        sh.PacketIn().sniff(lambda p: pkts.append(p), timeout=5)
        out(packet_in=[{"payload": p.packet.payload.hex(),
                        "md": {m.metadata_id: m.value.hex() for m in p.packet.metadata}}
                       for p in pkts])
        sh.PacketOut(payload=bytes.fromhex("ffffffffffff" "020000000003" "88b5") + b"fabric-out",
                     egress_port="2").send()
        out(step="sent")
    finally:
        sh.teardown()
        out(step="done")


if __name__ == "__main__":
    main()
