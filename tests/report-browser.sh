#!/bin/sh
# The report in a real browser: build a results database (jobs, a plan, a sweep
# with invalid points, collectives, measurements), write `llmsim report`, check the
# page statically (one file, nothing fetched), then load it in headless
# Debian Chromium and check that
#   - the page's self-check (a script in the page) says every plot has
#     data marks with a non-empty box and no script error happened,
#   - the browser logged no console message at all (the page logs none;
#     an error, a blocked load or a CSP violation would show up here),
# and write a screenshot to build/report-screenshot.png.
#
# Chromium (Debian's `chromium`) is installed with apt when missing. The
# test is skipped, loudly, only when it is missing and apt cannot install
# it (no network to the Debian archive).
#
# Environment: LLMSIM (the binary, default build/llmsim).
set -eu

LLMSIM=${LLMSIM:-build/llmsim}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=$ROOT/build/report-test
SHOT=$ROOT/build/report-screenshot.png
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
fail() { echo "report-browser: FAIL: $*" >&2; exit 1; }

mkdir -p "$OUTDIR"
DB=$T/r.db

# ---- a database with something in every section we can fill ----------
"$LLMSIM" run "$ROOT/workloads/jobs/default.yaml" --db "$DB" >/dev/null 2>&1 ||
	fail "llmsim run default.yaml"
"$LLMSIM" run "$ROOT/workloads/jobs/llama2-7b-mi300x.yaml" --db "$DB" \
	>/dev/null 2>&1 || fail "llmsim run llama2-7b-mi300x.yaml"
"$LLMSIM" plan "$ROOT/workloads/jobs/default.yaml" --top 4 --db "$DB" \
	>/dev/null 2>&1 || fail "llmsim plan default.yaml"
cat > "$T/s.yaml" <<EOF
name: browser-test
base: $ROOT/workloads/jobs/llama2-7b-mi300x.yaml
grid:
  parallelism.tp: [1, 2, 4, 8]
  training.micro_batch_size: [1, 2]
cases:
  - {system.scale_out: roce-400g}
  - {system.scale_out: roce-800g}
EOF
# tp 8 with micro batch 2 is fine; no point here is invalid by itself, so
# add one case that is (tp 3 does not divide 8 GPUs) to show the table.
cat >> "$T/s.yaml" <<EOF
  - {system.scale_out: roce-400g, parallelism.pp: 3}
EOF
"$LLMSIM" sweep "$T/s.yaml" --db "$DB" -j 2 >/dev/null 2>"$T/sweep.err" ||
	{ cat "$T/sweep.err" >&2; fail "llmsim sweep"; }
for op in allreduce allgather; do
	"$LLMSIM" collective --system mi300x-roce --op $op --ranks 8 \
		-b 1K -e 1G -f 4 --db "$DB" >/dev/null 2>&1 ||
		fail "llmsim collective $op"
done

# Measurements and validation: a live measurement of all-reduce on this
# host's CPUs (the mpi backend, over 2 ranks), llmsim's prediction of the
# same collective, and a validation of both (exit 1 when a table misses
# its gates: not this test's business).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$LLMSIM" measure --backend mpi --op allreduce --ranks 2 --min 1K --max 1M \
	--system cpu-host --db "$DB" >/dev/null 2>"$T/measure.err" ||
	{ cat "$T/measure.err" >&2; fail "llmsim measure"; }
"$LLMSIM" collective --system cpu-host --op allreduce --ranks 2 -b 1K -e 1M \
	--db "$DB" >/dev/null 2>&1 || fail "llmsim collective on cpu-host"
rc=0
"$LLMSIM" validate --kind collective,measured --db "$DB" --quiet >/dev/null \
	2>"$T/validate.err" || rc=$?
[ $rc -le 1 ] || { cat "$T/validate.err" >&2; fail "llmsim validate"; }

"$LLMSIM" report --db "$DB" -o "$OUTDIR/report.html" 2>"$T/report.err" ||
	{ cat "$T/report.err" >&2; fail "llmsim report"; }
HTML=$OUTDIR/report.html

# ---- static checks ----------------------------------------------------
# Deterministic: the same database gives the same bytes.
"$LLMSIM" report --db "$DB" -o "$T/again.html" 2>/dev/null || fail "second report"
cmp -s "$HTML" "$T/again.html" || fail "two reports of one database differ"
# One file that loads nothing: no src= or href= attribute, no url(), and
# no http(s) address but SVG's namespace name (an identifier, never
# fetched).
if grep -n -E '(src|href)=|url\(' "$HTML" >/dev/null; then
	grep -n -E '(src|href)=|url\(' "$HTML" | head -3 >&2
	fail "the report references another resource"
fi
if grep -o -E 'https?://[^"< ]*' "$HTML" | grep -v '^http://www.w3.org/2000/svg$' \
	>/dev/null; then
	fail "the report names a network address"
fi
figs=$(grep -c '<figure class="plot"' "$HTML")
# breakdown + memory (jobs) + the plan's breakdown + sweep: 2 curves,
# heat map, breakdown, memory + 3 collectives (mi300x-roce allreduce and
# allgather, cpu-host allreduce with the measured curve) + predicted
# against measured (one unit: GB/s) = 12 plots
[ "$figs" -eq 12 ] || fail "expected 12 plots (see the comment), got $figs"
grep -q '>measured<' "$HTML" || grep -q 'measured</span>' "$HTML" ||
	fail "no measured series in the collectives plot"
grep -q 'id="fig-[0-9]*-validation"' "$HTML" || fail "no predicted-vs-measured plot"

# ---- the browser ------------------------------------------------------
CHROMIUM=$(command -v chromium || true)
if [ -z "$CHROMIUM" ]; then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	echo "report-browser: installing Debian's chromium (apt-get)" >&2
	if $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends chromium >"$T/apt.log" 2>&1 ||
	   { $SUDO apt-get update -qq >/dev/null 2>&1 &&
	     $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends chromium >"$T/apt.log" 2>&1; }; then
		CHROMIUM=$(command -v chromium || true)
	fi
fi
if [ -z "$CHROMIUM" ]; then
	tail -3 "$T/apt.log" >&2 2>/dev/null || true
	cat >&2 <<EOF
report-browser: ************************************************************
report-browser: SKIPPED: chromium is not installed and apt could not install
report-browser: it (no access to the Debian archive?). The report was NOT
report-browser: checked in a browser. Install it with: apt-get install chromium
report-browser: ************************************************************
EOF
	exit 0
fi

browse() {
	# --virtual-time-budget lets the page's script run before the dump.
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu \
		--disable-quic --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync \
		--user-data-dir="$(mktemp -d "$T/profile.XXXXXX")" \
		--enable-logging=stderr --v=0 --virtual-time-budget=5000 \
		--hide-scrollbars "$@" "file://$HTML"
}

browse --dump-dom >"$T/dom.html" 2>"$T/chromium.log" ||
	{ tail -5 "$T/chromium.log" >&2; fail "chromium --dump-dom failed"; }
verdict=$(grep -o 'id="selfcheck"[^>]*' "$T/dom.html" || true)
case $verdict in
*'data-verdict="ok"'*) ;;
*)
	grep -o '<p id="selfcheck".*</p>' "$T/dom.html" >&2 || true
	fail "the page's self-check did not pass: $verdict"
	;;
esac
plots=$(echo "$verdict" | sed -n 's/.*data-plots="\([0-9]*\)".*/\1/p')
[ "$plots" = "$figs" ] || fail "the browser saw $plots plots, the file has $figs"
if grep -F ':CONSOLE' "$T/chromium.log" >/dev/null; then
	grep -F ':CONSOLE' "$T/chromium.log" | head -5 >&2
	fail "the page logged console messages (above)"
fi

rm -f "$SHOT"
browse --screenshot="$SHOT" --window-size=1100,5800 >/dev/null \
	2>"$T/shot.log" || { tail -5 "$T/shot.log" >&2; fail "screenshot"; }
[ -s "$SHOT" ] || fail "no screenshot at $SHOT"
