"""p4runtime-shell with a controller role (run as a subprocess: one per switch).

argv: GRPC_ADDR DEVICE_ID. The pipeline is already set by the default role's
primary. As primary of role "r1" (no role config: full pipeline access) the shell
inserts and reads a table entry; a second client of "r1" with a lower election id
is a backup, and its Write is refused. Prints JSON lines.
"""

import json
import sys

import grpc
import p4runtime_sh.shell as sh
from p4runtime_sh.p4runtime import P4RuntimeClient


def out(**kw):
    print(json.dumps(kw), flush=True)


def main():
    addr, device_id = sys.argv[1], int(sys.argv[2])
    sh.setup(device_id=device_id, grpc_addr=addr, election_id=(0, 5), role_name="r1",
             verbose=False)
    try:
        te = sh.TableEntry("MyIngress.fwd")(action="MyIngress.forward")
        te.match["hdr.ethernet.dstAddr"] = "0a:0b:0c:0d:0e:0f"
        te.action["port"] = "5"
        te.insert()
        entries = []
        sh.TableEntry("MyIngress.fwd").read(lambda e: entries.append(e))
        out(entries=len(entries))
        backup = P4RuntimeClient(device_id, addr, (0, 1), role_name="r1")
        try:
            update = sh.p4runtime_pb2.Update(type=sh.p4runtime_pb2.Update.DELETE)
            update.entity.table_entry.CopyFrom(te.msg())
            backup.write_update(update)
            out(backup_write="accepted")
        except grpc.RpcError as e:
            out(backup_write=e.code().name)
        finally:
            backup.tear_down()
    finally:
        sh.teardown()


if __name__ == "__main__":
    main()
