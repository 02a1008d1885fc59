#!/usr/bin/env bash
# Runs the code checks (scripts/check_code.py), sets up (scripts/setup.sh) and runs every
# test: the C++ GoogleTest suite through ctest (plain, then under ASan + UBSan), then the
# Python suite through pytest against the installed package.
set -euo pipefail
cd "$(dirname "$0")/.."

# Seconds, standard library only: fails on a new import cycle or upward import, a new function
# over 80 lines, a new `except ValueError` in planning code, or any Result<bool> (known
# findings, each with its reason: scripts/check_code_baseline.txt).
# Its verdict is the run's last word, so a failed check still lets every test run and report.
echo "== Code checks (scripts/check_code.py)"
checks_failed=0
python3 scripts/check_code.py || checks_failed=1

bash scripts/setup.sh --test

echo "== C++ tests (ctest)"
cmake -S . -B build/test -G Ninja -DAOIZORA_BUILD_PYTHON=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/test -j "$(nproc)"
ctest --test-dir build/test --output-on-failure -j "$(nproc)"

# The same C++ tests again under AddressSanitizer + UndefinedBehaviorSanitizer, in a build
# directory of their own (a memory or UB error fails the run).
echo "== C++ tests under ASan + UBSan (ctest)"
cmake -S . -B build/asan -G Ninja -DAOIZORA_BUILD_PYTHON=OFF -DAOIZORA_BUILD_TOOLS=OFF \
  -DAOIZORA_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build/asan -j "$(nproc)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j "$(nproc)"

echo "== Python tests (pytest)"
# setup.sh installed Chromium: the report's browser test must run here, not skip. One
# pytest-xdist worker per core, each module on one worker (tests/python/conftest.py); the
# slowest tests are listed at the end.
AOIZORA_REQUIRE_BROWSER=1 .venv/bin/python -m pytest -q -p no:cacheprovider \
  -n "$(nproc)" --dist loadgroup --durations=25 tests/python "$@"

if [ "$checks_failed" -ne 0 ]; then
  echo "scripts/check_code.py found new problems (listed at the top of this run)" >&2
  exit 1
fi
