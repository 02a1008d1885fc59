#!/usr/bin/env bash
# Runs `aoizora eval` from a frozen copy of the code (a git worktree at COMMIT), so that a
# grid that takes several sessions is made by one code version while main moves on. The
# worktree sits at a fixed path: the C++ extension built there has the same bytes as one
# built anywhere else from the same sources (checked: the results' code fingerprint hashes
# it), so a later session that rebuilds it resumes the same version. The out folder is the
# checkpoint: settings already done by this code version are kept.
#
#   bash scripts/frozen_grid.sh COMMIT OUT [eval arguments...]
#   e.g. bash scripts/frozen_grid.sh 5b49b05 /work/grid_out --grid paper --oracle --jobs 2
#
# Needs the set-up of scripts/setup.sh (.venv); runs in the foreground (start it with
# setsid nohup ... & for a long grid). The log is OUT/log.
set -euo pipefail
cd "$(dirname "$0")/.."
main=$(pwd)
[ $# -ge 2 ] || { echo "usage: $0 COMMIT OUT [eval arguments...]" >&2; exit 2; }
commit=$1 out=$2
shift 2
tree=${AOIZORA_FROZEN_TREE:-/work/frozen-$(git rev-parse --short=7 "$commit")}

if [ ! -d "$tree" ]; then
  git worktree add --detach "$tree" "$commit"
fi
if ! ls "$tree"/python/aoizora/_core*.so >/dev/null 2>&1; then
  echo "frozen_grid: building the extension of $commit in $tree"
  wheels=$(mktemp -d)
  "$main/.venv/bin/pip" wheel -q --no-build-isolation --no-deps -w "$wheels" "$tree"
  (cd "$wheels" && "$main/.venv/bin/python" -m zipfile -e ./*.whl unpacked)
  cp "$wheels"/unpacked/aoizora/_core*.so "$tree/python/aoizora/"
  rm -rf "$wheels"
fi

# The editable install of main maps `aoizora` to main's python/: drop its finder so that the
# worktree's package on PYTHONPATH is the one imported (here and in the spawned workers).
site=$(mktemp -d)
cat > "$site/sitecustomize.py" <<EOF
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "ScikitBuild" not in type(f).__name__]
sys.path[:] = [p for p in sys.path if p != "$main/python"]
EOF
mkdir -p "$out"
export PYTHONPATH="$site:$tree/python"
cd "$tree"
"$main/.venv/bin/python" -c "import aoizora, sys; from aoizora.evaluation.provenance import code_version; \
print('frozen_grid: aoizora from', aoizora.__file__, code_version(), file=sys.stderr)"
exec "$main/.venv/bin/python" -m aoizora.cli eval --out "$out" "$@" >> "$out/log" 2>&1
