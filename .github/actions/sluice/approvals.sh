#!/usr/bin/env bash
# Collects who approved a pull request, for `sluice check`'s domain-review-required rule, and
# writes it to $GITHUB_ENV for the step that runs the check:
#   SLUICE_APPROVED_BY       logins that approved, and `org/team:login` for each approving
#                            member of a reviewer team named in the base's identity.toml
#   SLUICE_UNRESOLVED_TEAMS  reviewer teams whose members the token could not read (their
#                            approvals cannot count: the rule stays an error, fail closed)
#
# Approvals follow GitHub's rules: the latest APPROVED / CHANGES_REQUESTED / DISMISSED review of
# each user decides (a later COMMENTED review does not withdraw an approval), and unless
# COUNT_STALE=true only approvals of the pull request's head commit count.
#
# Environment:
#   GH_TOKEN        token for the reviews (the workflow token; needs `pull-requests: read`)
#   TEAM_TOKEN      token for team membership (`read:org`, or a GitHub App token with
#                   organization Members: read); default GH_TOKEN, which usually cannot read it
#   REPO            owner/name                      PR        pull request number
#   HEAD_SHA        the pull request's head commit  COUNT_STALE  true to count older approvals
#   SLUICE_BASE, SLUICE_CONFIG  passed to `sluice reviewers` (optional)
#   GITHUB_ENV      where to write (the runner sets it)
# Needs: gh, jq, sluice on PATH.
set -euo pipefail

fail() {
  echo "::error title=sluice approvals::$*" >&2
  exit 2
}

for tool in gh jq sluice; do
  command -v "$tool" >/dev/null || fail "$tool is needed on PATH"
done
[ -n "${REPO:-}" ] || fail "REPO (owner/name) is not set"
[ -n "${GITHUB_ENV:-}" ] || fail "GITHUB_ENV is not set"

if [ -z "${PR:-}" ]; then
  echo "sluice approvals: not a pull request; no approvals collected"
  exit 0
fi

# Every page of reviews, in chronological order (gh prints one JSON array per page).
reviews=$(gh api --paginate "repos/$REPO/pulls/$PR/reviews") || fail "cannot list the reviews of $REPO#$PR"
approvers=$(jq -rs --arg head "${HEAD_SHA:-}" --arg stale "${COUNT_STALE:-false}" '
  add // []
  | map(select(.user != null and (.state == "APPROVED" or .state == "CHANGES_REQUESTED" or .state == "DISMISSED")))
  | group_by(.user.login | ascii_downcase)
  | map(last)
  | map(select(.state == "APPROVED" and ($stale == "true" or $head == "" or .commit_id == $head)))
  | map(.user.login | ascii_downcase)
  | unique
  | .[]' <<<"$reviews") || fail "cannot read the reviews of $REPO#$PR"

logins=()
while IFS= read -r login; do
  [ -n "$login" ] && logins+=("$login")
done <<<"$approvers"
approved=("${logins[@]}")

args=()
[ -n "${SLUICE_BASE:-}" ] && args+=(--base "$SLUICE_BASE")
[ -n "${SLUICE_CONFIG:-}" ] && args+=(--config "$SLUICE_CONFIG")
teams=$(sluice reviewers --teams "${args[@]}") || fail "cannot list the reviewer teams (sluice reviewers)"

unresolved=()
while IFS= read -r team; do
  [ -n "$team" ] || continue
  org=${team%%/*}
  slug=${team#*/}
  if ! members=$(GH_TOKEN="${TEAM_TOKEN:-${GH_TOKEN:-}}" gh api --paginate "orgs/$org/teams/$slug/members" 2>/dev/null); then
    echo "::warning title=sluice approvals::cannot read the members of $team with this token; approvals by its members cannot count (give the action a team-token with read:org)"
    unresolved+=("$team")
    continue
  fi
  while IFS= read -r member; do
    for login in "${logins[@]}"; do
      if [ "$login" = "$member" ]; then approved+=("$team:$login"); fi
    done
  done < <(jq -rs 'add // [] | .[].login | ascii_downcase' <<<"$members")
done <<<"$teams"

join() {
  local IFS=,
  echo "$*"
}
echo "SLUICE_APPROVED_BY=$(join "${approved[@]}")" >>"$GITHUB_ENV"
echo "SLUICE_UNRESOLVED_TEAMS=$(join "${unresolved[@]}")" >>"$GITHUB_ENV"
echo "sluice approvals: approved by ${approved[*]:-nobody}; unresolved teams: ${unresolved[*]:-none}"
