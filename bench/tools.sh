# Sourced by the benchmark scripts that compare Sluice with squawk: sets SQUAWK (squawk-cli 2.70.0,
# installed into bench/.venv with pip unless SQUAWK names a binary) and SLUICE (target/release/sluice,
# else a debug build, unless SLUICE names a binary). Expects `repo` (the repository root) and the
# working directory to be it.
SQUAWK_VERSION=2.70.0
if [[ -z "${SQUAWK:-}" ]]; then
  SQUAWK="$repo/bench/.venv/bin/squawk"
  if [[ ! -x "$SQUAWK" ]] || [[ "$("$SQUAWK" --version 2>/dev/null)" != *"$SQUAWK_VERSION"* ]]; then
    echo "installing squawk-cli==$SQUAWK_VERSION into bench/.venv" >&2
    python3 -m venv "$repo/bench/.venv"
    "$repo/bench/.venv/bin/pip" install --quiet "squawk-cli==$SQUAWK_VERSION"
  fi
fi
if [[ -z "${SLUICE:-}" ]]; then
  if [[ -x target/release/sluice ]]; then
    SLUICE="$repo/target/release/sluice"
  else
    cargo build --quiet
    SLUICE="$repo/target/debug/sluice"
  fi
fi
