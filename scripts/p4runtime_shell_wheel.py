"""Rebuild the p4runtime-shell wheel with requirements that match this project's stack.

p4runtime-shell 0.0.6 (the latest release) pins p4runtime==1.4.1, protobuf<3.21,
ipython==7.31.* and jedi==0.17.2. Its own note gives the reason for the protobuf pin:
newer protobuf needs the P4Runtime modules regenerated with a matching protoc, which
scripts/regen_p4runtime.py does. The shell's code runs on the versions this project
installs (tests/runtime drives it against our switches), so installing it with
`--no-deps` would leave `pip check` reporting the pins as broken, and pip's resolver
prints an ERROR about them on every later install.

This script writes the same wheel with those four requirements replaced by the ranges
it is used with here, under the local version `0.0.6+emu1` so the rebuilt wheel is never
mistaken for the upstream one. Nothing but METADATA (and the RECORD line hashing it)
changes. Usage: p4runtime_shell_wheel.py UPSTREAM_WHEEL OUT_DIR -> prints the new path.
"""

from __future__ import annotations

import base64
import hashlib
import re
import sys
import zipfile
from pathlib import Path

UPSTREAM = "0.0.6"
LOCAL = "0.0.6+emu1"
# What the shell needs here: the stack pyproject.toml installs (see there for why).
REQUIRES = [
    "p4runtime>=1.4.1,<1.7",
    "protobuf>=4.25,<8",
    "grpcio>=1.35.0",
    "ipython>=8,<10",
    "jedi>=0.17.2",
]


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()},{len(data)}"


def relaxed_metadata(text: str) -> str:
    lines = [ln for ln in text.splitlines() if not ln.startswith("Requires-Dist:")]
    at = next(i for i, ln in enumerate(lines) if ln.startswith("Requires-Python:")) + 1
    lines[at:at] = [f"Requires-Dist: {r}" for r in REQUIRES]
    out = "\n".join(lines) + "\n"
    return re.sub(rf"^Version: {re.escape(UPSTREAM)}$", f"Version: {LOCAL}", out, count=1,
                  flags=re.M)


def rebuild(wheel: Path, out_dir: Path) -> Path:
    old_info = f"p4runtime_shell-{UPSTREAM}.dist-info/"
    new_info = f"p4runtime_shell-{LOCAL}.dist-info/"
    out = out_dir / wheel.name.replace(f"-{UPSTREAM}-", f"-{LOCAL}-")
    if out.name == wheel.name:
        raise SystemExit(f"{wheel.name}: not a p4runtime-shell {UPSTREAM} wheel")
    with zipfile.ZipFile(wheel) as src:
        files = {name: src.read(name) for name in src.namelist()}
    if old_info + "METADATA" not in files:
        raise SystemExit(f"{wheel.name}: no {old_info}METADATA")
    renamed = {name.replace(old_info, new_info, 1): data for name, data in files.items()}
    meta = new_info + "METADATA"
    record = new_info + "RECORD"
    renamed[meta] = relaxed_metadata(renamed[meta].decode()).encode()
    rows = []
    for line in renamed[record].decode().splitlines():
        path = line.split(",", 1)[0].replace(old_info, new_info, 1)
        rows.append(f"{path},{_record_hash(renamed[path])}" if path in renamed and
                    path != record else f"{path},,")
    renamed[record] = ("\n".join(rows) + "\n").encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for name, data in renamed.items():
            dst.writestr(name, data)
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    print(rebuild(Path(argv[0]), Path(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
