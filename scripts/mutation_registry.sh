#!/usr/bin/env bash
# Needs the bench extra: python -m pip install -e ".[bench]" (mutmut).
# Mutation testing of the TensorFlow registry reader, explorer/backends/tensorflow_registry.py,
# with mutmut 3 (pip install mutmut), killed by tests/test_registry.py alone.  Prints mutmut's
# summary and the score (killed / (killed + survived)); the surviving mutants are listed after.
#
#   bash scripts/mutation_registry.sh                          # the tests in the working tree
#   MUTATION_TESTS_FROM=HEAD bash scripts/mutation_registry.sh # tests/test_registry.py of a revision
#   MUTATION_DESELECT=test_name ...                               # also leave out tests matching this
#   MUTATION_LIVE=1 bash scripts/mutation_registry.sh          # read_registry_data's mutants only,
#                                                                 # against the live reader test
#
# mutmut needs the tests green on the unmutated code; a revision's test that fails there must be
# deselected (at d572242 the test_full_declared_matrix_matches_raw_registry still expects DEFAULT
# kernels on XLA, issue 9.1).
#
# Everything happens in a temporary copy of the repository (MUTATION_WORKDIR to choose it), so the
# working tree gets no mutmut configuration and no mutants/ folder.  TensorFlow is read once into a
# JSON fixture (tests/support/registry_oracle.py reads it when PX_REGISTRY_ORACLE_FIXTURE names it), so no
# mutant's run imports TensorFlow; the tests whose names contain "live" need TensorFlow in the
# process and are deselected.  mutmut forks each mutant's run from the process that ran the tests
# once, so the oracle's answers are computed once.  439 mutants; about 5 minutes on 2 cores.
# read_registry_data (45 mutants) has no test without TensorFlow: MUTATION_LIVE=1 runs just those
# against the live test, each mutant in a fresh process (mutmut's forkserver) that imports TensorFlow
# (about 10 minutes).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${MUTATION_WORKDIR:-$(mktemp -d /tmp/mutation-registry.XXXXXX)}
children=${MUTATION_CHILDREN:-2}
select="not live${MUTATION_DESELECT:+ and not $MUTATION_DESELECT}"
isolation=fork
timeout_constant=1
mutants=()
if [[ -n "${MUTATION_LIVE:-}" ]]; then
  select="live_reader"
  isolation=forkserver
  timeout_constant=120 # each mutant's process imports TensorFlow (CPU seconds mutmut does not expect)
  mutants=("explorer.backends.tensorflow_registry.x_read_registry_data__mutmut_*")
fi
mkdir -p "$work"

# a copy of the working tree: tracked and untracked files, not the ignored ones
(cd "$repo" && git ls-files -co --exclude-standard -z) | (cd "$repo" && xargs -0 cp --parents -t "$work")
if [[ -n "${MUTATION_TESTS_FROM:-}" ]]; then
  git -C "$repo" show "$MUTATION_TESTS_FROM:tests/test_registry.py" >"$work/tests/test_registry.py"
fi

cd "$work"
export PX_CACHE_DIR="$work/.px-cache"
if [[ -z "${MUTATION_LIVE:-}" ]]; then
  export PX_REGISTRY_ORACLE_FIXTURE="$work/registry-fixture.json"
fi
export TF_CPP_MIN_LOG_LEVEL=2
# read TensorFlow once: the oracle's fixture, and explorer's registry cache (used by older tests)
python - <<'EOF'
from tests.support import registry_oracle

if not registry_oracle.is_live():
    registry_oracle.snapshot()
from explorer.runtime.registry import get_registry

get_registry(where="here")
EOF

cat >setup.cfg <<EOF
[mutmut]
source_paths = explorer
only_mutate = explorer/backends/tensorflow_registry.py
process_isolation = $isolation
timeout_constant = $timeout_constant
pytest_add_cli_args_test_selection = tests/test_registry.py
pytest_add_cli_args =
    -p
    no:cacheprovider
    -p
    no:hypothesispytest
    -k
    $select
    -o
    addopts=
EOF

start=$(date +%s)
mutmut run --max-children "$children" "${mutants[@]}" | tr '\r' '\n' | grep -v '^[[:space:]]*$' | tail -n 2
echo "mutmut run took $(($(date +%s) - start)) s in $work"
mutmut export-cicd-stats >/dev/null
python - <<'EOF'
import json

stats = json.load(open("mutants/mutmut-cicd-stats.json"))
killed, survived = stats["killed"], stats["survived"]
print(json.dumps(stats))
print(f"score: {killed}/{killed + survived} = {killed / max(1, killed + survived):.1%} killed "
      f"(no tests: {stats.get('no_tests', 0)}, timeouts: {stats.get('timeout', 0)})")
EOF
echo "surviving mutants (mutmut show NAME in $work for the diff):"
mutmut results | sed 's/^/  /'
