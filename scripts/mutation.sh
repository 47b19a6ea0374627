#!/usr/bin/env bash
# Needs the bench extra: python -m pip install -e ".[bench]" (mutmut).
# Mutation testing of explorer/formats.py and explorer/rounding.py with mutmut 3, against the
# fast tests that check them: tests/test_formats.py, tests/test_rounding.py and the part of
# tests/test_backends.py that needs no TensorFlow.
#
# Usage:
#   scripts/mutation.sh                  # the working tree's tests
#   PX_MUTATION_TESTS_FROM=HEAD scripts/mutation.sh   # test_formats.py and test_backends.py
#                                           # as committed at HEAD (the "before" score)
#   scripts/mutation.sh 'explorer.formats.x_decode*'  # only some mutants (mutmut name globs)
#   PX_MUTATION_SOURCE=/tmp/explorer-snapshot ...   # mutate a saved copy of explorer/ (so that a
#                                           # before/after pair sees the same code)
#   PX_MUTATION_DIR=/tmp/m PX_MUTATION_PASS2_ONLY=1 scripts/mutation.sh   # redo pass 2 only
#
# Everything happens in a scratch copy ($PX_MUTATION_DIR, default a new /tmp folder): the
# repository is never written to, and the mutmut configuration lives in that copy's setup.cfg
# only.  Prints the surviving mutants and the score.  PX_MUTATION_IMPORT_SAMPLE=N runs only
# every Nth mutant of pass 2 (below).  The oracle's correctly rounded values are
# cached on disk (PX_ORACLE_CACHE) so that each mutant's test run does not recompute them.
set -euo pipefail

ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
WORK=${PX_MUTATION_DIR:-$(mktemp -d /tmp/px-mutation.XXXXXX)}
JOBS=${PX_MUTATION_JOBS:-2}
if [[ "${PX_MUTATION_PASS2_ONLY:-0}" != 1 ]]; then
mkdir -p "$WORK/tests/support"
rm -rf "$WORK/explorer" "$WORK/mutants"
cp -r "${PX_MUTATION_SOURCE:-$ROOT/explorer}" "$WORK/explorer"
find "$WORK/explorer" -name __pycache__ -prune -exec rm -rf {} +
cp "$ROOT"/tests/*.py "$WORK/tests/"
cp "$ROOT"/tests/support/*.py "$WORK/tests/support/"  # the tests' helpers (tests.support)
cp "$ROOT/pyproject.toml" "$WORK/"
if [[ -n "${PX_MUTATION_TESTS_FROM:-}" ]]; then
    for f in test_formats.py test_backends.py; do
        git -C "$ROOT" show "$PX_MUTATION_TESTS_FROM:tests/$f" >"$WORK/tests/$f"
    done
fi
fi

cat >"$WORK/setup.cfg" <<'EOF'
[mutmut]
source_paths = explorer/
only_mutate =
    explorer/formats.py
    explorer/rounding.py
pytest_add_cli_args_test_selection =
    tests/test_formats.py
    tests/test_rounding.py
    tests/test_backends.py
pytest_add_cli_args =
    -p
    no:cacheprovider
    -o
    addopts=
    -k
    not tensorflow and not failures_are_outcomes and not torch
EOF

#: functions only all_formats() (cached at import) calls: see pass 2
IMPORT_TIME='explorer\.formats\.x__(build|build_tf32|measure_overflow)__mutmut_'

cd "$WORK"
export PX_ORACLE_CACHE="$WORK/oracle-cache"
export TF_CPP_MIN_LOG_LEVEL=2
echo "mutation run in $WORK (tests from ${PX_MUTATION_TESTS_FROM:-the working tree})"
start=$(date +%s)
if [[ "${PX_MUTATION_PASS2_ONLY:-0}" != 1 ]]; then
    python -m mutmut run --max-children "$JOBS" "$@" >"$WORK/run.log" 2>&1 || {
        tail -40 "$WORK/run.log"
        exit 1
    }
fi
echo "surviving mutants (pass 1):"
python -m mutmut results | grep -v ': killed' | grep -v -E "$IMPORT_TIME" || true

# Pass 2.  mutmut forks each mutant's test run from a process that has already built
# all_formats() (cached, at test collection) with the original code, so mutants of the
# functions only all_formats() calls never execute there (and mutmut credits them to one
# test).  Each of those runs here in a fresh interpreter, the mutant active from import on,
# against the formats and rounding tests, stopping at the first failure.
python -m mutmut results --all true 2>/dev/null | awk '{print $1}' | tr -d : | grep -E "$IMPORT_TIME" |
    awk -v every="${PX_MUTATION_IMPORT_SAMPLE:-1}" 'NR % every == 0' >"$WORK/import_time_mutants.txt"
cd "$WORK/mutants"
run_one() {
    if MUTANT_UNDER_TEST="$1" timeout 600 python -m pytest -p no:cacheprovider -o addopts= -q -x \
        -k "not tensorflow" tests/test_formats.py tests/test_rounding.py >/dev/null 2>&1; then
        echo "$1 survived"
    else
        echo "$1 killed"
    fi
}
export -f run_one
xargs -P "$JOBS" -I{} bash -c 'run_one {}' <"$WORK/import_time_mutants.txt" | sort >"$WORK/import_time_results.txt"
echo "surviving mutants (pass 2):"
grep survived "$WORK/import_time_results.txt" | sed 's/^/    /' || true
cd "$WORK"
python - "$WORK/import_time_results.txt" "$(($(date +%s) - start))" "$IMPORT_TIME" <<'EOF'
import re
import subprocess
import sys

pass2 = dict(line.split() for line in open(sys.argv[1]) if line.strip())
import_time = re.compile(sys.argv[3])
results = subprocess.run(
    [sys.executable, "-m", "mutmut", "results", "--all", "true"], capture_output=True, text=True
).stdout.splitlines()
# mutmut's verdicts, less those of the import-time functions (pass 2's replace them)
pass1 = [line.rsplit(":", 1)[1].strip() for line in results if ":" in line and not import_time.search(line)]
counts = {v: pass1.count(v) for v in sorted(set(pass1))}
second = {v: list(pass2.values()).count(v) for v in ("killed", "survived")}
killed = counts.get("killed", 0) + counts.get("timeout", 0) + second["killed"]
tested = killed + counts.get("survived", 0) + counts.get("suspicious", 0) + second["survived"]
print("pass 1 (mutmut, less the import-time functions):", counts)
print("pass 2 (import-time functions, fresh interpreter):", second)
print(
    f"score: {killed}/{tested} = {100 * killed / max(tested, 1):.1f}% of the mutants run "
    f"(covered by no test: {counts.get('no tests', 0)}), in {sys.argv[2]} s"
)
EOF
