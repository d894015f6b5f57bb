#!/usr/bin/env bash
# evalkit's gate as a shell recipe, for any CI (GitHub Actions runs it from .github/workflows/evalkit-gate.yml).
#   bash ci/evalkit-gate.sh sweep-and-gate   sweep the project's grid, gate the candidate; exit = the gate's
#   bash ci/evalkit-gate.sh post             post reports/$EVALKIT_RUN_ID/gate.md to the pull request (one comment,
#                                            updated in place on every run)
# Environment:
#   EVALKIT_CACHE_DIR    where the model-call cache lives between CI runs (restore/save it with the CI's cache)
#   EVALKIT_CANDIDATE    the candidate config id; empty: ci/candidate.txt, else the sweep's recommendation
#   EVALKIT_RUN_ID       the run folder's name under reports/ (default ci)
#   EVALKIT_SWEEP_ARGS   extra overrides for the sweep (e.g. "labelset.limit=200")
#   GITHUB_TOKEN, GITHUB_REPOSITORY, PR_NUMBER   for `post`; without a token, or with a fork's read-only one,
#                                                post prints gate.md and skips (GITHUB_API_URL: GitHub Enterprise)
# Exit codes: 0 the gate passed, 1 it failed (worse than production beyond the margins), 2 an error.
set -euo pipefail
cd "$(dirname "$0")/.."
run_id="${EVALKIT_RUN_ID:-ci}"
run="reports/$run_id"
cache_dir="${EVALKIT_CACHE_DIR:-.evalkit-cache}"

sweep_and_gate() {
    mkdir -p "$cache_dir"
    # shellcheck disable=SC2086  # EVALKIT_SWEEP_ARGS is a list of overrides
    python -m evalkit.sweep run_id="$run_id" cache_path="$(pwd)/$cache_dir/evalkit.sqlite" progress=false \
        ${EVALKIT_SWEEP_ARGS:-}
    candidate="${EVALKIT_CANDIDATE:-}"
    if [ -z "$candidate" ] && [ -f ci/candidate.txt ]; then
        candidate="$(tr -d '\n' < ci/candidate.txt)"
    fi
    if [ -z "$candidate" ]; then
        # The sweep's recommendation; when it keeps production, production is gated against itself (a pass).
        candidate="$(python -c 'import json,sys; r=json.load(open(sys.argv[1])); print((r.get("recommended") or r["production"])["config_id"])' "$run/recommendation.json")"
    fi
    echo "evalkit-gate: candidate $candidate" >&2
    python -m evalkit.gate --run "$run" --candidate-config "$candidate"
}

post() {
    if [ ! -f "$run/gate.md" ]; then
        echo "evalkit-gate: no $run/gate.md (the sweep or the gate stopped before writing it)" >&2
        exit 2
    fi
    # One comment per pull request, updated on every run; a fork's read-only token is a log line, not a failure.
    python -m evalkit.project.pr_comment "$run/gate.md"
}

case "${1:-sweep-and-gate}" in
    sweep-and-gate) sweep_and_gate ;;
    post) post ;;
    *) echo "usage: bash ci/evalkit-gate.sh [sweep-and-gate|post]" >&2; exit 2 ;;
esac
