#!/usr/bin/env bash
# evalkit's gate as a shell recipe, for any CI (GitHub Actions runs it from .github/workflows/evalkit-gate.yml).
#   bash ci/evalkit-gate.sh sweep-and-gate   sweep the project's grid, gate the candidate; exit = the gate's
#   bash ci/evalkit-gate.sh post             post reports/$EVALKIT_RUN_ID/gate.md to the pull request
# Environment:
#   EVALKIT_CACHE_DIR    where the model-call cache lives between CI runs (restore/save it with the CI's cache)
#   EVALKIT_CANDIDATE    the candidate config id; empty: ci/candidate.txt, else the sweep's recommendation
#   EVALKIT_RUN_ID       the run folder's name under reports/ (default ci)
#   EVALKIT_SWEEP_ARGS   extra overrides for the sweep (e.g. "labelset.limit=200")
#   GITHUB_TOKEN, GITHUB_REPOSITORY, PR_NUMBER   for `post`; without a token, post prints gate.md and skips
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
    if [ -z "${GITHUB_TOKEN:-}" ] || [ -z "${PR_NUMBER:-}" ] || [ -z "${GITHUB_REPOSITORY:-}" ]; then
        echo "evalkit-gate: no GITHUB_TOKEN/PR_NUMBER/GITHUB_REPOSITORY: not posting; gate.md follows" >&2
        cat "$run/gate.md"
        return 0
    fi
    python -c 'import json,sys; print(json.dumps({"body": open(sys.argv[1], encoding="utf-8").read()}))' "$run/gate.md" |
        curl -sS --fail -X POST -H "Authorization: Bearer $GITHUB_TOKEN" -H "Accept: application/vnd.github+json" \
            "${GITHUB_API_URL:-https://api.github.com}/repos/$GITHUB_REPOSITORY/issues/$PR_NUMBER/comments" -d @- >/dev/null
    echo "evalkit-gate: posted gate.md to pull request #$PR_NUMBER" >&2
}

case "${1:-sweep-and-gate}" in
    sweep-and-gate) sweep_and_gate ;;
    post) post ;;
    *) echo "usage: bash ci/evalkit-gate.sh [sweep-and-gate|post]" >&2; exit 2 ;;
esac
