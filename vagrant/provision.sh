#!/usr/bin/env bash
# Provision the BMv2 reference VM (Ubuntu 22.04, run as root by `vagrant up`):
#   1. p4lang-p4c, p4lang-bmv2, p4lang-pi from the home:p4lang OBS repository,
#      added with its signing key as that project documents;
#   2. Mininet and the tools the tests use;
#   3. a working copy of the project in $PROJECT with its own .venv (`make setup`).
# Idempotent: running it again (vagrant provision) only refreshes what changed.
set -euo pipefail

PROJECT_SRC=${PROJECT_SRC:-/vagrant}
PROJECT=${PROJECT:-/home/vagrant/emu}
export DEBIAN_FRONTEND=noninteractive

say() { printf 'provision: %s\n' "$*"; }
die() { printf 'provision: error: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "run as root"
# shellcheck source=/dev/null
. /etc/os-release
[[ ${ID:-} == ubuntu ]] || die "expected Ubuntu, found ${PRETTY_NAME:-unknown}"

say "base packages"
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
    ca-certificates curl gnupg rsync make git gcc \
    python3 python3-venv python3-dev \
    mininet iproute2 ethtool tcpdump iputils-ping >/dev/null

OBS_URL="https://download.opensuse.org/repositories/home:/p4lang/xUbuntu_${VERSION_ID}"
KEYRING=/etc/apt/keyrings/home_p4lang.gpg
if [[ ! -s $KEYRING ]]; then
    say "adding the home:p4lang repository for xUbuntu_${VERSION_ID}"
    install -d -m 0755 /etc/apt/keyrings
    curl -fsSL "$OBS_URL/Release.key" | gpg --dearmor --yes -o "$KEYRING"
    chmod 0644 "$KEYRING"
fi
echo "deb [signed-by=$KEYRING] $OBS_URL/ /" > /etc/apt/sources.list.d/home_p4lang.list
apt-get update -qq

say "p4lang-p4c p4lang-bmv2 p4lang-pi"
if ! apt-get install -y -qq p4lang-p4c p4lang-bmv2 p4lang-pi >/dev/null; then
    die "the home:p4lang packages did not install on Ubuntu ${VERSION_ID}; see $OBS_URL/ \
(BMv2 is not built for every release: use a box the project publishes for)"
fi
for tool in p4c simple_switch_grpc simple_switch_CLI; do
    command -v "$tool" >/dev/null || die "$tool is not on PATH after installing the packages"
done
say "$(p4c --version 2>&1 | head -n 1); $(simple_switch_grpc --version 2>&1 | head -n 1)"

say "project: $PROJECT_SRC -> $PROJECT"
bash "$PROJECT_SRC/vagrant/in-vm.sh" sync
make -C "$PROJECT" setup
chown -R vagrant:vagrant "$PROJECT"

say "done: vagrant ssh, then: cd $PROJECT && sudo make test"
