#!/usr/bin/env bash
# Idempotent setup: Debian packages (only when missing), .venv from the Debian
# Python, pinned Python dependencies, and P4Runtime protobuf modules that import
# with the fast (upb) protobuf backend. A second run only checks stamps.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# EMU_VENV: build the environment elsewhere (e.g. to try these steps in a throwaway venv).
VENV=${EMU_VENV:-$ROOT/.venv}
PY=/usr/bin/python3

APT_PKGS=(mininet iproute2 ethtool tcpdump tshark iputils-ping procps psmisc
          python3-venv python3-dev gcc)

say() { printf '[setup] %s\n' "$*"; }

if [[ $(id -u) -ne 0 ]]; then
    echo "setup: must run as root (apt-get, network namespaces); try: sudo make setup" >&2
    exit 1
fi

missing=()
for p in "${APT_PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    say "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # tshark asks whether non-root users may capture; answer no, silently.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -x $VENV/bin/python ]]; then
    say "creating $VENV from $PY"
    $PY -m venv "$VENV"
fi
SITE=$($VENV/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

# Mininet is Debian's package for the system Python: expose just that package.
if [[ ! -e $SITE/mininet && -d /usr/lib/python3/dist-packages/mininet ]]; then
    ln -s /usr/lib/python3/dist-packages/mininet "$SITE/mininet"
fi

STAMP=$VENV/.deps-stamp
WANT=$(cat pyproject.toml scripts/setup.sh scripts/regen_p4runtime.py \
       scripts/p4runtime_shell_wheel.py | sha256sum | cut -c1-16)
if [[ ! -f $STAMP || $(cat "$STAMP") != "$WANT" ]]; then
    say "installing Python dependencies"
    $VENV/bin/pip install -q --upgrade pip >/dev/null
    $VENV/bin/pip install -q -e ".[dev]"
    # p4runtime-shell 0.0.6 pins an old protobuf/p4runtime/ipython stack; its code works
    # with ours (tests/runtime), so install it rebuilt with requirements that say so
    # (version 0.0.6+emu1): pip resolves it like any package and `pip check` passes.
    WHEELS=$(mktemp -d)
    trap 'rm -rf "$WHEELS"' EXIT
    $VENV/bin/pip download -q --no-deps "p4runtime-shell==0.0.6" -d "$WHEELS/upstream"
    SHELL_WHEEL=$($VENV/bin/python scripts/p4runtime_shell_wheel.py \
        "$WHEELS"/upstream/p4runtime_shell-0.0.6-*.whl "$WHEELS")
    $VENV/bin/pip uninstall -q -y p4runtime-shell 2>/dev/null || true
    $VENV/bin/pip install -q "$SHELL_WHEEL"
    # Ray (`emu experiment --ray`) is optional and a large wheel: a failed download or a
    # platform without wheels leaves everything else working. EMU_NO_RAY=1 skips it.
    if [[ ${EMU_NO_RAY:-0} == 1 ]]; then
        say "skipping Ray (EMU_NO_RAY=1): emu experiment --ray will say how to install it"
    elif ! $VENV/bin/pip install -q -e ".[ray]"; then
        say "WARNING: could not install Ray (optional: only emu experiment --ray needs it);"
        say "         retry with: $VENV/bin/pip install -e '.[ray]'"
    fi
    $VENV/bin/pip check
    $VENV/bin/python scripts/regen_p4runtime.py
    echo "$WANT" > "$STAMP"
fi
# The per-packet modules compiled with mypyc (emu.core.accel): a build per version of
# their sources, so this is quick when nothing changed. Without one, they run as Python.
if ! $VENV/bin/python -m emu.core.accel_build; then
    say "WARNING: running the per-packet modules as plain Python (slower, same results)"
fi
say "ready: $($VENV/bin/python --version), $VENV"
