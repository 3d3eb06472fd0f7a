"""Stand-ins for p4c, simple_switch_grpc and simple_switch_CLI (not installable here).

They speak the real tools' command lines, so the BMv2 target's process handling
(start, readiness, Thrift CLI, stop, parent death) is exercised for real; only
the packet behaviour of BMv2 is not. `simple_switch_grpc` in "embedded" mode
keeps a listening Thrift socket and execs our embedded daemon with the same
ports and gRPC address, so a P4Runtime server really answers.
"""

from __future__ import annotations

import sys
from pathlib import Path

P4C = r'''
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps(["p4c", *args]) + "\n")
prog = args[-1]
if "syntax error" in open(prog).read():
    sys.stderr.write(prog + "(3): [--Werror=legacy] error: syntax error, unexpected IDENTIFIER\n")
    sys.exit(1)
p4info = args[args.index("--p4runtime-files") + 1]
out = args[args.index("-o") + 1]
open(p4info, "w").write('pkg_info { arch: "v1model" }\n'
                        'tables { preamble { id: 1 name: "Ing.t" alias: "t" } size: 16 }\n')
stem = os.path.basename(prog)[:-3]
open(os.path.join(out, stem + ".json"), "w").write('{"header_types": []}')
'''

SWITCH = r'''
import json, os, socket, sys, time
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps(["simple_switch_grpc", *args]) + "\n")
sep = args.index("--")
bm, grpc = args[:sep], args[sep + 1:]
def opt(lst, name):
    return lst[lst.index(name) + 1] if name in lst else None
mode = os.environ.get("FAKE_BMV2_MODE", "sleep")
if mode == "exit":
    sys.stderr.write("Error: interface does not exist\n")
    sys.exit(3)
if mode == "sleep":
    with open(os.environ["FAKE_PID"], "w") as f:
        f.write(str(os.getpid()))
    while True:
        time.sleep(1)
thrift = socket.socket()
thrift.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
thrift.bind(("127.0.0.1", int(opt(bm, "--thrift-port"))))
thrift.listen(8)
thrift.set_inheritable(True)
cmd = [sys.executable, "-m", "emu.switch", "--no-p4", "--device-id", opt(bm, "--device-id"),
       "--grpc-addr", opt(grpc, "--grpc-server-addr")]
for i, a in enumerate(bm):
    if a == "-i":
        cmd += ["-i", bm[i + 1]]
if opt(grpc, "--cpu-port"):
    cmd += ["--cpu-port", opt(grpc, "--cpu-port")]
os.execv(sys.executable, cmd)
'''

CLI = r'''
import json, os, re, sys
args = sys.argv[1:]
lines = sys.stdin.read().splitlines()
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps(["simple_switch_CLI", *args, {"stdin": lines}]) + "\n")
print("Obtaining JSON from switch...\nDone\nControl utility for runtime P4 table manipulation")
for line in lines:
    m = re.match(r"register_read (\S+) (\d+)$", line)
    if m and m.group(1) == "nosuch":
        print("RuntimeCmd: Error: Invalid register name (nosuch)")
    elif m:
        print(f"RuntimeCmd: {m.group(1)}[{m.group(2)}]= 42")
    else:
        print("RuntimeCmd: ")
'''


def install(directory: Path) -> dict[str, str]:
    """Write the three fakes into `directory`; returns tool name -> path."""
    out = {}
    for name, body in (("p4c", P4C), ("simple_switch_grpc", SWITCH),
                       ("simple_switch_CLI", CLI)):
        path = directory / name
        path.write_text(f"#!{sys.executable}\n{body}")
        path.chmod(0o755)
        out[name] = str(path)
    return out
