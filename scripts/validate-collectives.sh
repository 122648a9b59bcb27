#!/bin/sh
# validate-collectives.sh - predicted vs measured collective bus bandwidth
# for every table in results/reference/collectives (make validate).
#
# For each table: every size with measured and predicted busbw and the
# error, then the median |error| over 1 KiB - 8 GiB and at >= 64 MB.
# Fails (exit 1) when a table misses its targets (<= 20% and <= 10%).
#
# Environment: LLMSIM_TOOLS (default build/tools of this checkout) holds
# the `collectives` tool. Runs from any directory.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tools=${LLMSIM_TOOLS:-$root/build/tools}
dir=$root/results/reference/collectives
if [ ! -x "$tools/collectives" ]; then
	echo "validate-collectives: $tools/collectives not built (run make tools)" >&2
	exit 2
fi
exec "$tools/collectives" "$dir"/*.yaml
