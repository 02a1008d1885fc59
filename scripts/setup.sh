#!/usr/bin/env bash
# One set-up path for a fresh machine (Debian, Python 3.11, root): a virtual environment
# .venv with aoizora installed into it with its pinned dependencies (ninja from Debian for
# the C++ build). `--test` adds what only the tests need: GoogleTest and Chromium from
# Debian, pytest and the torch/transformers/diffusers references (pyproject's [test] extra).
# Re-running it is fast: nothing is fetched twice and the C++ build in build/wheel is
# incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

with_tests=0
case "${1:-}" in
  --test) with_tests=1 ;;
  "") ;;
  *) echo "usage: bash scripts/setup.sh [--test]" >&2; exit 2 ;;
esac

# chromium: the headless browser tests/python/test_report.py loads the report in.
apt_needed=()
packages=(ninja-build)
[ "$with_tests" -eq 1 ] && packages+=(libgtest-dev chromium)
for pkg in "${packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || apt_needed+=("$pkg")
done
if [ ${#apt_needed[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${apt_needed[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_needed[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3.11}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PYTHON" -m venv .venv
fi
# Build requirements are installed up front so the package builds without isolation and
# reuses build/wheel between runs.
pip_install() {
  # pip warns about every missing local index folder; keep its real output only.
  local log
  log=$(mktemp)
  if ! .venv/bin/pip install -q --disable-pip-version-check "$@" >"$log" 2>&1; then
    grep -v '^WARNING: Location' "$log" >&2
    rm -f "$log"
    echo "setup: pip install $* failed" >&2
    exit 1
  fi
  rm -f "$log"
}
pip_install "scikit-build-core==1.1.2" "nanobind==3.1.0"
echo "setup: building and installing aoizora (C++ core + Python package)"
if [ "$with_tests" -eq 1 ]; then
  pip_install --no-build-isolation ".[test]"
else
  pip_install --no-build-isolation "."
fi
.venv/bin/python -c "import aoizora._core" || { echo "setup: aoizora._core failed to import" >&2; exit 1; }
echo "setup: done (.venv/bin/aoizora)"
