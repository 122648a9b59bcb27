#!/bin/sh
# Install the Debian packages llmsim needs to build and test.
# Idempotent: quiet and quick when everything is present. Uses sudo when not root.
set -eu

# openmpi-bin, libopenmpi-dev: the mpi measurement backend, which make test
# runs live, and `mpirun -n R llmsim sweep` (tests/sweep.sh); hipcc,
# libamdhip64-dev: the hip backend is compiled on every machine (it runs
# where a GPU and RCCL are; src/backend/backend.mk); chromium: the
# report's test loads the page in headless Chromium and screenshots it
# (tests/report-browser.sh installs it too when missing, and says SKIPPED
# when it cannot); time: make bench's sweep reads /usr/bin/time.
PKGS="build-essential pkg-config libyaml-dev libcjson-dev libgsl-dev libsqlite3-dev libcriterion-dev sqlite3 time openmpi-bin libopenmpi-dev hipcc libamdhip64-dev chromium"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-deps: need root or sudo to install:$missing" >&2
    exit 1
fi

echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# A stale package index is the usual reason an install fails on a fresh machine.
$SUDO apt-get update -qq >/dev/null || true
# shellcheck disable=SC2086
if ! $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null; then
    # Chromium only serves the report's browser test, which says SKIPPED
    # without it: the build does not fail for want of it.
    rest=$(echo "$missing" | tr ' ' '\n' | grep -vx 'chromium' | tr '\n' ' ')
    [ "$rest" != "$(echo "$missing" | tr ' ' '\n' | tr '\n' ' ')" ] || exit 1
    echo "install-deps: could not install chromium; tests/report-browser.sh will be SKIPPED" >&2
    [ -z "$(echo "$rest" | tr -d ' ')" ] && exit 0
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends $rest >/dev/null
fi
