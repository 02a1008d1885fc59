#!/usr/bin/env bash
# A Python environment in which MaxDiffusion's pyconfig and max_utils import, for
# bench/maxdiffusion_check.py: jax as aoizora pins it, and the packages MaxDiffusion's
# modules import on the way (flax, optax, orbax, ...). torch is left out (its Wan weight
# loader imports it; the check stubs it and says so). MaxDiffusion itself is not installed
# (its package wants Python 3.12): the check puts its checkout's src/ on sys.path.
#   bash bench/maxdiffusion_env.sh [DIR]      (default .venv-maxdiffusion)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.venv-maxdiffusion}
python3.11 -m venv "$DIR"
"$DIR/bin/pip" install -q --disable-pip-version-check jax==0.10.2 jaxlib==0.10.2 \
  libtpu==0.0.42.1 flax optax chex pyyaml absl-py etils ml_dtypes tensorboardX tqdm \
  huggingface_hub safetensors google-cloud-storage pillow einops aqtp qwix
echo "maxdiffusion check environment: $DIR/bin/python"
