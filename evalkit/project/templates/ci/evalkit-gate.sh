#!/usr/bin/env bash
# evalkit's gate as a shell recipe, for any CI (GitHub Actions runs it from .github/workflows/evalkit-gate.yml).
#   bash ci/evalkit-gate.sh sweep-and-gate   sweep the project's grid, gate the candidate; exit = the gate's
#   bash ci/evalkit-gate.sh post             post reports/$EVALKIT_RUN_ID/gate.md to the pull request (one comment,
#                                            updated in place on every run)
# Which two configs are gated (the route, printed in the log and in gate.md; python -m evalkit.project.ci_route):
#   1. The pull request changes production's retriever (the base branch's conf/ names another retriever=external
#      url, target or version, or another retriever): the base's config is swept too (reports/$EVALKIT_RUN_ID-base,
#      its replies cached like any other) and the NEW production is gated against the production found there.
#   2. The pull request changes production (conf/baseline/production.yaml names another point than the base
#      branch's): the NEW production is the candidate and the base branch's production the baseline. The
#      head's production file cannot be the baseline: production against itself passes any change.
#   3. Otherwise: EVALKIT_CANDIDATE, else ci/candidate.txt, else the sweep's recommendation, against production.
# Environment:
#   EVALKIT_BASE_REF     the base branch (default GITHUB_BASE_REF, which GitHub sets on pull requests); its
#                        production file is read with git from origin (fetched when the checkout lacks it)
#   EVALKIT_BASE_PRODUCTION  instead of git: a production.yaml kept from the last main run (an artefact)
#   EVALKIT_CACHE_DIR    where the model-call cache lives between CI runs (restore/save it with the CI's cache)
#   EVALKIT_CANDIDATE    the candidate config id; empty: ci/candidate.txt, else the sweep's recommendation
#   EVALKIT_RUN_ID       the run folder's name under reports/ (default ci)
#   EVALKIT_SWEEP_ARGS   extra overrides for the sweep (e.g. "labelset.limit=200")
#   EVALKIT_PROGRESS_EVERY_S  seconds between the sweep's progress lines in the log (default 30)
#   GITHUB_TOKEN, GITHUB_REPOSITORY, PR_NUMBER   for `post`; without a token, or with a fork's read-only one,
#                                                post prints gate.md and skips (GITHUB_API_URL: GitHub Enterprise)
# The report (reports/$EVALKIT_RUN_ID/index.html) is rendered again after the gate: its first screen is gate.md's
# route, candidate, baseline and verdict, read from gate.json.
# Exit codes: 0 the gate passed, 1 it failed (worse than production beyond the margins), 2 an error.
set -euo pipefail
cd "$(dirname "$0")/.."
run_id="${EVALKIT_RUN_ID:-ci}"
run="reports/$run_id"
cache_dir="${EVALKIT_CACHE_DIR:-.evalkit-cache}"

production_file="conf/baseline/production.yaml"

base_production() {
    # Writes the base branch's production file to $1 and prints its path; prints nothing when no base is
    # known or the base has no production file yet. A base that cannot be read is an error: gating against
    # the head's own production would pass any change to it.
    if [ -n "${EVALKIT_BASE_PRODUCTION:-}" ]; then
        [ -f "$EVALKIT_BASE_PRODUCTION" ] || {
            echo "evalkit-gate: error: EVALKIT_BASE_PRODUCTION=$EVALKIT_BASE_PRODUCTION is not a file" >&2; exit 2; }
        echo "$EVALKIT_BASE_PRODUCTION"
        return
    fi
    local base="${EVALKIT_BASE_REF:-${GITHUB_BASE_REF:-}}"
    [ -n "$base" ] || return 0
    if ! git rev-parse -q --verify "origin/$base^{commit}" >/dev/null; then
        git fetch -q --no-tags --depth=1 origin "+refs/heads/$base:refs/remotes/origin/$base" || {
            echo "evalkit-gate: error: cannot fetch the base branch $base from origin (its production is the baseline)" >&2
            exit 2; }
    fi
    if git cat-file -e "origin/$base:./$production_file" 2>/dev/null; then
        git show "origin/$base:./$production_file" > "$1"
        echo "$1"
    fi
}

base_conf() {
    # Writes the base branch's conf/ under $1 and prints its path; prints nothing when no base branch is known
    # (or EVALKIT_BASE_PRODUCTION stands in for it) or the base has no conf/project.yaml yet. base_production
    # has fetched origin/$base already.
    local base="${EVALKIT_BASE_REF:-${GITHUB_BASE_REF:-}}"
    [ -n "$base" ] && [ -z "${EVALKIT_BASE_PRODUCTION:-}" ] || return 0
    git cat-file -e "origin/$base:./conf/project.yaml" 2>/dev/null || return 0
    mkdir -p "$1/conf"
    git archive "origin/$base:./conf" | tar -x -C "$1/conf"
    echo "$1/conf"
}

sweep_and_gate() {
    mkdir -p "$cache_dir"
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    base_file="$(base_production "$scratch/base-production.yaml")"
    # Progress: off a terminal the sweep prints a plain line per stage every
    # EVALKIT_PROGRESS_EVERY_S seconds (30) while it runs and one when it ends: a long job never looks hung.
    # shellcheck disable=SC2086  # EVALKIT_SWEEP_ARGS is a list of overrides
    python -m evalkit.sweep run_id="$run_id" cache_path="$(pwd)/$cache_dir/evalkit.sqlite" ${EVALKIT_SWEEP_ARGS:-}
    # Production's retriever is not a grid point: when the base branch names another one (an external service's
    # new url or version), its config is swept into a folder of its own and is the baseline.
    base_run=""
    base_conf_dir="$(base_conf "$scratch/base")"
    if [ -n "$base_conf_dir" ]; then
        changed="$(python -m evalkit.project.ci_route --run "$run" --base-conf "$base_conf_dir" --retriever-changed \
            --sweep-args="${EVALKIT_SWEEP_ARGS:-}")"
        if [ "$changed" = "changed" ]; then
            base_run="reports/$run_id-base"
            # shellcheck disable=SC2086
            python -m evalkit.sweep --config-dir "$base_conf_dir" run_id="$run_id-base" report=false \
                cache_path="$(pwd)/$cache_dir/evalkit.sqlite" ${EVALKIT_SWEEP_ARGS:-}
        fi
    fi
    mapfile -t gate_args < <(python -m evalkit.project.ci_route --run "$run" --base-production "$base_file" \
        --base-ref "${EVALKIT_BASE_REF:-${GITHUB_BASE_REF:-}}" --candidate "${EVALKIT_CANDIDATE:-}" \
        --candidate-file ci/candidate.txt --base-run "$base_run"; echo "exit=$?")
    [ "${gate_args[-1]}" = "exit=0" ] || exit 2
    unset 'gate_args[-1]'
    verdict=0
    # Answers: a compared config the run's answer check did not answer is answered on the check's own sample
    # (cached: a powered check made on main answers the PR's unchanged configs for free); without answers while
    # the check is on, the gate fails closed. A project whose check is off gates on retrieval.
    python -m evalkit.gate "${gate_args[@]}" --answer --require-answers -- \
        cache_path="$(pwd)/$cache_dir/evalkit.sqlite" ${EVALKIT_SWEEP_ARGS:-} || verdict=$?
    # The report a reviewer opens leads with what the gate said (gate.json), whatever it said.
    if [ "$verdict" -le 1 ]; then
        python -m evalkit.report "$run" >/dev/null || verdict=2
    fi
    exit "$verdict"
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
