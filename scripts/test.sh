#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs every test: the C++ GoogleTest suite through ctest,
# then the Python suite through pytest against the installed package.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== C++ tests (ctest)"
cmake -S . -B build/test -G Ninja -DAOIZORA_BUILD_PYTHON=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/test -j "$(nproc)"
ctest --test-dir build/test --output-on-failure -j "$(nproc)"

echo "== Python tests (pytest)"
.venv/bin/python -m pytest -q -p no:cacheprovider tests/python "$@"
