# Step timing for the CI tiers (sourced by .ci/run, .ci/nightly, .ci/overnight).
#
#   step NAME COMMAND...   runs COMMAND under a "== NAME" header and records how long
#                          it took; a failing step stops the tier (set -e).
#   The table of every step run so far is printed when the script exits, pass or
#   fail, and written to target/ci-steps-<tier>.tsv (name, seconds, status).

ci_tier="${ci_tier:-ci}"
ci_started=$SECONDS
ci_steps=()

step() {
    local name="$1"
    shift
    echo "== $name"
    local t0=$SECONDS status=0
    "$@" || status=$?
    ci_steps+=("$name"$'\t'"$((SECONDS - t0))"$'\t'"$([[ $status -eq 0 ]] && echo ok || echo "FAILED ($status)")")
    return "$status"
}

ci_table() {
    local status=$?
    mkdir -p target
    local tsv="target/ci-steps-$ci_tier.tsv"
    : >"$tsv"
    echo
    echo "== $ci_tier: time per step"
    printf '%-58s %8s  %s\n' step seconds status
    local row name seconds result
    for row in "${ci_steps[@]}"; do
        IFS=$'\t' read -r name seconds result <<<"$row"
        printf '%-58s %8d  %s\n' "$name" "$seconds" "$result"
        printf '%s\t%s\t%s\n' "$name" "$seconds" "$result" >>"$tsv"
    done
    printf '%-58s %8d  %s\n' "total (wall)" "$((SECONDS - ci_started))" \
        "$([[ $status -eq 0 ]] && echo passed || echo "FAILED ($status)")"
    return "$status"
}
trap ci_table EXIT
