#!/bin/sh
# store-views.sh - every view docs/results-store.md documents returns
# exactly its documented columns, in the documented order, on a new
# database (the contract dashboards read by). Also runs each view once
# on a database with a run, a sweep and a collective in it.
#
# Environment: LLMSIM (the binary; default build/llmsim).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-build/llmsim}
case $llmsim in /*) ;; *) llmsim=$PWD/$llmsim ;; esac
doc=$root/docs/results-store.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0

# The backquoted names in the first cell of each table row under
# "### `VIEW`", up to the next heading.
documented() {
	awk -v v="$1" '
	/^#/ { on = (index($0, "### `" v "`") == 1); next }
	on && /^\| `/ {
		split($0, cell, "|"); c = cell[2]
		while (match(c, /`[^`]*`/)) {
			printf "%s%s", n++ ? "," : "", substr(c, RSTART + 1, RLENGTH - 2)
			c = substr(c, RSTART + RLENGTH)
		}
	}
	END { print "" }' "$doc"
}

cat >"$tmp/s.yaml" <<EOS
name: views
base: $root/workloads/jobs/llama2-7b-mi300x.yaml
grid:
  parallelism.tp: [3, 8]
EOS
"$llmsim" run "$root/workloads/jobs/llama2-7b-mi300x.yaml" --db "$tmp/r.db" >/dev/null 2>&1 &&
"$llmsim" sweep "$tmp/s.yaml" --db "$tmp/r.db" >/dev/null 2>&1 &&
"$llmsim" collective --system mi300x-roce --op allreduce -g 8 -b 1M -e 1M \
	--db "$tmp/r.db" >/dev/null 2>&1 || { echo "FAIL: could not fill a database"; exit 1; }

for view in v_runs v_sweep_points v_step_breakdown v_collectives; do
	want=$(documented $view)
	got=$(sqlite3 "$tmp/r.db" "SELECT group_concat(name, ',') FROM pragma_table_info('$view')")
	[ -n "$want" ] || { echo "FAIL: $view is not documented in $doc"; fail=1; continue; }
	[ "$got" = "$want" ] || { echo "FAIL: $view columns"; echo "  documented: $want"; echo "  database:   $got"; fail=1; }
	n=$(sqlite3 "$tmp/r.db" "SELECT count(*) FROM $view")
	[ "${n:-0}" -ge 1 ] || { echo "FAIL: $view is empty on a filled database"; fail=1; }
done
# The serving views (empty here: their columns only); v_inference_steps
# starts with v_serving's first 16 columns (run_id ... kv_dtype).
want=$(documented v_serving)
got=$(sqlite3 "$tmp/r.db" "SELECT group_concat(name, ',') FROM pragma_table_info('v_serving')")
[ "$got" = "$want" ] || { echo "FAIL: v_serving columns"; echo "  documented: $want"; echo "  database:   $got"; fail=1; }
want="$(echo "$want" | cut -d, -f1-16),$(documented v_inference_steps)"
got=$(sqlite3 "$tmp/r.db" "SELECT group_concat(name, ',') FROM pragma_table_info('v_inference_steps')")
[ "$got" = "$want" ] || { echo "FAIL: v_inference_steps columns"; echo "  documented: $want"; echo "  database:   $got"; fail=1; }
# db views reads: a directory is not a database (bad input, exit 2, as a
# missing file; it said "cannot open the results database for writing").
mkdir "$tmp/dir"
"$llmsim" db views --db "$tmp/dir" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "dir: error: a directory, not a results database" "$tmp/err" ||
	{ echo "FAIL: db views of a directory: $(cat "$tmp/err")"; fail=1; }

# db views and db export open the database read-only: a missing one is
# bad input (exit 2, naming the file) and stays missing (it was created, empty, and migrated); a
# read-only file reads, byte for byte unchanged.
"$llmsim" db views --db "$tmp/none.db" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "none.db: error: no results database here" "$tmp/err" &&
	[ ! -e "$tmp/none.db" ] ||
	{ echo "FAIL: db views of a missing database: $(cat "$tmp/err")"; fail=1; }
"$llmsim" db export --view v_runs --db "$tmp/none2.db" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "none2.db: error: no results database here" "$tmp/err" ||
	{ echo "FAIL: db export of a missing database: $(cat "$tmp/err")"; fail=1; }
[ ! -e "$tmp/none2.db" ] || { echo "FAIL: db export created a database"; fail=1; }
# A file that is not SQLite, and an empty one, are bad input too.
echo "not a database" >"$tmp/text.db"
"$llmsim" db views --db "$tmp/text.db" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "text.db: error: reading the schema version: file is not a database" "$tmp/err" ||
	{ echo "FAIL: db views of a text file: $(cat "$tmp/err")"; fail=1; }
: >"$tmp/zero.db"
"$llmsim" db export --view v_runs --db "$tmp/zero.db" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "zero.db: error: empty, not a results database" "$tmp/err" ||
	{ echo "FAIL: db export of an empty file: $(cat "$tmp/err")"; fail=1; }
cp "$tmp/r.db" "$tmp/ro.db" && chmod 444 "$tmp/ro.db"
before=$(cksum <"$tmp/ro.db")
n=$("$llmsim" db export --view v_runs --db "$tmp/ro.db" 2>"$tmp/err" | wc -l)
# the header, the run and the sweep point that ran (tp 3 is invalid)
[ "$n" = 3 ] && [ "$(cksum <"$tmp/ro.db")" = "$before" ] ||
	{ echo "FAIL: db export of a read-only file: $n lines, $(cat "$tmp/err")"; fail=1; }
# report and validate --no-store read the same way: a missing database
# stays missing (report created it, empty, and migrated it; validate
# --kind measured --no-store did too), a read-only file makes a report
# and is byte for byte unchanged.
"$llmsim" report --db "$tmp/none3.db" -o "$tmp/none3.html" 2>"$tmp/err"
[ $? = 2 ] && grep -q "none3.db: error: no results database here" "$tmp/err" &&
	[ ! -e "$tmp/none3.db" ] ||
	{ echo "FAIL: report of a missing database: $(cat "$tmp/err")"; fail=1; }
"$llmsim" validate --kind measured --db "$tmp/none4.db" --no-store >/dev/null 2>&1
[ ! -e "$tmp/none4.db" ] || { echo "FAIL: validate --no-store created a database"; fail=1; }
"$llmsim" report --db "$tmp/ro.db" -o "$tmp/ro.html" 2>"$tmp/err" &&
	grep -q "<html" "$tmp/ro.html" && [ "$(cksum <"$tmp/ro.db")" = "$before" ] ||
	{ echo "FAIL: report of a read-only file: $(cat "$tmp/err")"; fail=1; }

# A reader closes the database as a writer does: no -wal or -shm file is
# left beside a writable one (db views, db export and report left both:
# a read-only connection cannot checkpoint, so SQLite keeps them).
cp "$tmp/r.db" "$tmp/rw.db"
"$llmsim" db views --db "$tmp/rw.db" >/dev/null 2>&1 &&
"$llmsim" db export --view v_runs --db "$tmp/rw.db" >/dev/null 2>&1 &&
"$llmsim" report --db "$tmp/rw.db" -o "$tmp/rw.html" >/dev/null 2>&1 ||
	{ echo "FAIL: reading a writable database"; fail=1; }
for f in "$tmp/rw.db-wal" "$tmp/rw.db-shm"; do
	[ ! -e "$f" ] || { echo "FAIL: a reader left $(basename "$f") behind"; fail=1; }
done

# The documented run columns are those of each sweep's view after its
# axis columns: v_sweep_views = idx, status, reason, parallelism_tp, v_runs...
want="idx,status,reason,parallelism_tp,$(documented v_runs)"
got=$(sqlite3 "$tmp/r.db" "SELECT group_concat(name, ',') FROM pragma_table_info('v_sweep_views')")
[ "$got" = "$want" ] || { echo "FAIL: v_sweep_views columns: $got"; fail=1; }
exit $fail
