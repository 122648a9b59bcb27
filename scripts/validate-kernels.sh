#!/bin/sh
# validate-kernels.sh - the GPU model against every measured kernel set in
# results/reference/kernels (see its README): predicted vs measured rate
# and the error of each row, the median and largest error per set and
# overall. Fails (exit 1) when a scored row is off by more than 35%, the
# regression gate for the GPU model and its presets.
#
# Run by `make validate` with LLMSIM_TOOLS=build/tools; by hand:
#   LLMSIM_TOOLS=build/tools scripts/validate-kernels.sh
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tools=${LLMSIM_TOOLS:-$root/build/tools}
LLMSIM_DATA=${LLMSIM_DATA:-$root}
export LLMSIM_DATA
exec "$tools/kernels" --max-error 35 "$root"/results/reference/kernels/*.yaml
