"""p4runtime-shell, as its users drive digests (run as a subprocess: one per switch).

argv: GRPC_ADDR DEVICE_ID P4INFO DEVICE_CONFIG. Configures the learn_t digest with a
DigestEntry, prints it as read back, waits for a line on stdin (the test injects
frames), then sniffs DigestLists (p4runtime-shell acks each one) and prints them.
"""

import json
import sys

import p4runtime_sh.shell as sh


def out(**kw):
    print(json.dumps(kw), flush=True)


def main():
    addr, device_id, p4info, devcfg = sys.argv[1:5]
    sh.setup(device_id=int(device_id), grpc_addr=addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(p4info, devcfg), verbose=False)
    try:
        d = sh.DigestEntry("learn_t")
        d.max_list_size = 2
        d.max_timeout_ns = 1_000_000_000
        d.ack_timeout_ns = 3600 * 10**9
        d.insert()
        got = []
        sh.DigestEntry("learn_t").read(
            lambda e: got.append([e.max_list_size, e.max_timeout_ns, e.ack_timeout_ns]))
        out(configured=got[0] if got else None)
        lists = sh.DigestList()  # its thread acks every list it takes
        sys.stdin.readline()
        seen = []
        for msg in lists.sniff(timeout=10):
            seen.append([int.from_bytes(x.struct.members[0].bitstring, "big")
                         for x in msg.digest.data])
            if sum(len(x) for x in seen) >= 2:
                break
        out(lists=seen)
    finally:
        sh.teardown()


if __name__ == "__main__":
    main()
