#!/usr/bin/env bash
# GPU check for napkin.measure (issue #15): the backend-aware ceiling on a real NVIDIA GPU.
#
# Written for an H200 (sm_90) on a machine that may have no network. NOT YET RUN: the
# session that wrote it had no GPU; its CUDA and Metal paths are tested with fakes
# (tests/test_backends.py). Stages, each one command (see benchmarks/README.md, section (c)):
#
#   benchmarks/gpu_check.sh pack    here, with network: a trimmed copy of the llama.cpp
#                                   sources vendored in the pinned llama-cpp-python (~12 MB)
#                                   -> .cache/gpu_check/llama.cpp-src.tar.gz
#   benchmarks/gpu_check.sh build   on the GPU machine: llama-bench and llama-batched-bench
#                                   with CUDA for $CUDA_ARCH (default 90), native CPU code off
#   benchmarks/gpu_check.sh run     on the GPU machine: devices, the quick plan, a full plan on
#                                   GPU-sized models, a batch sweep and a depth sweep
#
# Everything it prints and writes goes to $OUT (default .cache/gpu_check/out). Needs: cmake,
# a C++ compiler, nvcc (CUDA toolkit), nvidia-smi, and a Python 3.11+ with numpy, pandas,
# altair and gguf (napkin's own imports; set PYTHON to choose it).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STAGE=${1:-}
WORK=.cache/gpu_check
SRC_TGZ=$WORK/llama.cpp-src.tar.gz
BUILD=$WORK/build-cuda
OUT=${OUT:-$WORK/out}
PYTHON=${PYTHON:-python3}
CUDA_ARCH=${CUDA_ARCH:-90}
LB=$BUILD/bin/llama-bench
BB=$BUILD/bin/llama-batched-bench
VERSION=$(grep -i '^llama[-_]cpp[-_]python==' requirements.txt | cut -d= -f3)
mkdir -p "$WORK" "$OUT"

need() { command -v "$1" >/dev/null || { echo "error: $1 is needed for '$STAGE'" >&2; exit 1; }; }

pack() {
  local sdist=.cache/llama.cpp/llama_cpp_python-$VERSION.tar.gz
  if [ ! -f "$sdist" ]; then
    mkdir -p .cache/llama.cpp
    "${PIP:-.venv/bin/pip}" download --quiet --no-deps --no-binary :all: \
      "llama-cpp-python==$VERSION" -d .cache/llama.cpp
  fi
  local tmp; tmp=$(mktemp -d)
  tar -xzf "$sdist" -C "$tmp"
  # models/, docs/ and media/ are test data and pictures (~110 MB), not build inputs
  tar -czf "$SRC_TGZ" -C "$tmp/llama_cpp_python-$VERSION/vendor" --exclude=llama.cpp/models \
    --exclude=llama.cpp/docs --exclude=llama.cpp/media --exclude='*.gguf' llama.cpp
  rm -rf "$tmp"
  ls -l "$SRC_TGZ"
}

build() {
  need cmake; need nvcc
  [ -f "$SRC_TGZ" ] || { echo "error: $SRC_TGZ missing: run '$0 pack' where there is network, and carry it" >&2; exit 1; }
  rm -rf "$WORK/src" && mkdir -p "$WORK/src" && tar -xzf "$SRC_TGZ" -C "$WORK/src"
  cmake -S "$WORK/src/llama.cpp" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    > "$OUT/cmake-configure.log" 2>&1 || { tail -30 "$OUT/cmake-configure.log"; exit 1; }
  cmake --build "$BUILD" --target llama-bench llama-batched-bench -j "$(nproc)" \
    > "$OUT/cmake-build.log" 2>&1 || { tail -30 "$OUT/cmake-build.log"; exit 1; }
  ls -l "$LB" "$BB"
}

run() {
  need nvidia-smi
  [ -x "$LB" ] || { echo "error: $LB missing: run '$0 build' first" >&2; exit 1; }
  "$PYTHON" -c "import numpy, pandas, altair, gguf" 2>/dev/null || {
    echo "error: $PYTHON lacks numpy, pandas, altair or gguf (pip install -e '.[measure]')" >&2
    exit 1; }
  export PYTHONPATH=$ROOT/lib NAPKIN_CACHE=$WORK/models NAPKIN_RESULTS=$OUT/results
  { nvidia-smi; nvcc --version; "$PYTHON" --version; } > "$OUT/env.txt" 2>&1 || true
  "$LB" --list-devices | tee "$OUT/devices.txt"

  echo "==> [1/4] the quick plan, as a reader's 'make measure QUICK=1' (expect: CUDA, the" \
       "device matched to its chip in data/hardware_specs.csv, no CPU probe)"
  "$PYTHON" -m napkin measure --quick --llama-bench "$LB" 2>&1 | tee "$OUT/measure-quick.txt"

  echo "==> [2/4] F16, Q8_0 and Q4_0 models of 4 GB: far larger than the GPU's L2 cache"
  "$PYTHON" - "$LB" <<'PY' 2>&1 | tee "$OUT/measure-gpu-sized.txt"
import sys
from napkin.measure import record, session
plan = session.Plan("gpu", ("F16", "Q8_0", "Q4_0"), n_prompt=512, n_gen=128, reps=5,
                    min_model_bytes=4e9, cache_multiple=0)
rec = session.run(plan, llama_bench=sys.argv[1])
print(record.table(rec)); print("saved", record.save(rec))
PY

  echo "==> [3/4] batch sweep: llama-batched-bench, 1 to 64 sequences, on the Q8_0 model"
  local q8; q8=$(ls "$WORK"/models/synthetic-Q8_0-*.gguf | head -1)
  "$BB" -m "$q8" -c 32768 -b 2048 -ub 512 -ngl 99 -npp 128 -ntg 128 \
    -npl 1,2,4,8,16,32,64 --output-format jsonl > "$OUT/batched-bench.jsonl" 2>&1 || true
  grep '^{' "$OUT/batched-bench.jsonl" || tail -20 "$OUT/batched-bench.jsonl"

  echo "==> [4/4] depth sweep: MHA against GQA, models sized for the GPU (weights ~1.7 GB;"
  echo "          the MHA cache passes the weights near 8.5k tokens)"
  "$PYTHON" - "$LB" <<'PY' 2>&1 | tee "$OUT/depth-gpu-sized.txt"
import sys
from napkin.measure import depth, synthetic
base = synthetic.Shape(hidden_size=6144, num_hidden_layers=8, num_attention_heads=48,
                       num_key_value_heads=48, head_dim=128, intermediate_size=1024,
                       vocab_size=32000, context_length=65536)
plan = depth.DepthPlan("gpu", depths=(0, 4096, 8192, 16384, 32768), n_gen=32, reps=4,
                       base=base, gqa_kv_heads=6)
print(depth.models_table(plan).to_string())
rec = depth.run(plan, llama_bench=sys.argv[1], progress=print)
print(depth.table(rec)); print("saved", depth.save(rec))
PY
  echo "==> done; every output is in $OUT"
}

case "$STAGE" in
  pack) pack ;;
  build) build ;;
  run) run ;;
  *) echo "usage: $0 pack|build|run" >&2; exit 2 ;;
esac
