#!/usr/bin/env bash
# Build llama-bench from the llama.cpp sources vendored in the pinned llama-cpp-python
# release, so the in-process runner and llama-bench run the very same llama.cpp.
# Result: .cache/llama.cpp/build/bin/llama-bench (about 5 minutes on 2 cores, once).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=$(grep -i '^llama[-_]cpp[-_]python==' requirements.txt | cut -d= -f3)
DEST=.cache/llama.cpp
BIN=$DEST/build/bin/llama-bench
if [ -x "$BIN" ]; then echo "$BIN"; exit 0; fi
command -v cmake >/dev/null || { echo "error: cmake is needed to build llama-bench" >&2; exit 1; }
mkdir -p "$DEST"
echo "==> fetching llama-cpp-python $VERSION sources (pip cache or PyPI)" >&2
.venv/bin/pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$DEST"
tar -xzf "$DEST/llama_cpp_python-$VERSION.tar.gz" -C "$DEST"
SRC="$DEST/llama_cpp_python-$VERSION/vendor/llama.cpp"
echo "==> configuring and building llama-bench (CPU backend, native instructions)" >&2
cmake -S "$SRC" -B "$DEST/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
cmake --build "$DEST/build" --target llama-bench -j "$(nproc)" >&2
echo "$BIN"
