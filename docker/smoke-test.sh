#!/usr/bin/env bash
# Builds the container image from the repository's Dockerfile and runs it on the bundled
# examples: the version, a lint that fails the gate (exit 1), a plan comparison against the
# PostgreSQL server the image carries (exit 1 on the regression, 0 on the safe head), the
# non-root user, and the completions. Needs a running Docker engine; without one it says so
# and exits 77 (skipped), never 0.
#
#   docker/smoke-test.sh [IMAGE_TAG]      (default sluice:smoke)
set -euo pipefail
cd "$(dirname "$0")/.."
image="${1:-sluice:smoke}"

if ! command -v docker >/dev/null || ! docker info >/dev/null 2>&1; then
  echo "docker/smoke-test.sh: SKIPPED: no Docker engine is reachable (docker info failed); the image was not built" >&2
  exit 77
fi

fail() {
  echo "docker/smoke-test.sh: FAILED: $1" >&2
  exit 1
}

# Runs the image with the repository mounted at /repo; prints the output, returns its exit code.
run() {
  docker run --rm -v "$PWD:/repo:ro" "$@"
}

expect_exit() {
  local want="$1"
  shift
  set +e
  run "$@"
  local got=$?
  set -e
  [ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want"
}

docker build -t "$image" .

version="$(sed -n '/^\[package\]/,/^\[/{s/^version *= *"\(.*\)"/\1/p;}' Cargo.toml | head -n1)"
[ "$(run "$image" --version)" = "sluice $version" ] || fail "--version does not print sluice $version"
[ "$(run --entrypoint id "$image" -u)" != 0 ] || fail "the image runs as root"
run "$image" completions bash | grep -q "sluice" || fail "no bash completions"

expect_exit 1 "$image" lint --config fixtures/transit-planner/sluice.toml
expect_exit 0 "$image" lint --config fixtures/transit-planner/safe/sluice.toml

plan=(plan --base-dir base --scale scale.toml --queries queries --no-cache)
expect_exit 1 -w /repo/fixtures/reporting/plan "$image" "${plan[@]}" --head-dir head-regression
expect_exit 0 -w /repo/fixtures/reporting/plan "$image" "${plan[@]}" --head-dir head-safe

echo "docker/smoke-test.sh: PASSED ($image)"
