#!/usr/bin/env bash
# Put vLLM release $1 into the throwaway virtual environment $VENV (created on first
# use), so that scripts/release/serve_parser/dump.py can read the parser `vllm serve` builds.
# CPU torch from local disk first (so pip never pulls a CUDA build), then the import
# dependencies of vllm.entrypoints.cli.main at the versions of constraints-common.txt,
# then the release and the few packages whose pins differ between releases.
set -euo pipefail
V="$1"
HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="${VENV:-/tmp/kernelcfg-serve-venv}"
PIP="$VENV/bin/pip"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$PIP" install -q --upgrade pip
  "$PIP" install -q torch==2.13.0
  "$PIP" install -q -c "$HERE/constraints-common.txt" \
    pydantic==2.14.4 pydantic_core==2.50.5 "openai>=2.25.0" numpy psutil "pyzmq>=25" \
    PyYAML==6.0.4 cbor2 regex "requests>=2.33.0" "safetensors>=0.6.2" "tokenizers>=0.23.2" \
    tqdm "aiohttp>=3.14.4" typer rich "fastapi[standard]==0.136.3" "starlette>=1.0.1" \
    "prometheus_client>=0.18.0" "prometheus-fastapi-instrumentator>=8.0.0" "orjson>=3.11.6" \
    msgspec cachetools blake3 py-cpuinfo "pillow>=13.0.0" cloudpickle pybase64 \
    partial-json-parser einops "apache-tvm-ffi==0.1.11" "llguidance>=1.7.0,<1.8.0" \
    uvloop==0.23.0 "model-hosting-container-standards<1.0.0,>=0.1.14"
fi
case "$V" in
  0.34.0) PINS=(transformers==5.22.2 huggingface_hub==2.4.0 xgrammar==0.2.8 "oss-harmony>=0.0.11"); HARMONY=oss ;;
  0.33.0) PINS=(transformers==5.20.2 huggingface_hub==2.4.0 xgrammar==0.2.8 "oss-harmony>=0.0.11"); HARMONY=oss ;;
  0.32.0) PINS=(transformers==5.19.0 huggingface_hub==2.4.0 xgrammar==0.2.8 "oss-harmony>=0.0.11"); HARMONY=oss ;;
  0.31.0) PINS=(transformers==5.17.0 huggingface_hub==1.33.0 httpx==0.28.1 xgrammar==0.2.7 "oss-harmony>=0.0.11"); HARMONY=oss ;;
  0.30.0|0.29.0|0.28.0|0.27.1|0.27.0|0.26.0|0.25.1|0.25.0|0.24.0) PINS=(transformers==5.17.0 huggingface_hub==1.33.0 httpx==0.28.1 xgrammar==0.2.8 openai-harmony==0.0.8); HARMONY=openai ;;
  # 0.23.0's vllm.config imports gguf (transformers_utils/gguf_utils.py:9), its CLI the
  # Mistral tool parser's ijson and mistral_common (tool_parsers/mistral_tool_parser.py:14-16)
  0.23.0) PINS=(transformers==5.17.0 huggingface_hub==1.33.0 httpx==0.28.1 xgrammar==0.2.8 openai-harmony==0.0.8 "gguf>=0.17.0" ijson "mistral_common[image]>=1.11.3"); HARMONY=openai ;;
  *) echo "venv.sh: no pins for vLLM $V; add them here" >&2; exit 2 ;;
esac
# oss-harmony and openai-harmony both provide the openai_harmony module
if [ "$HARMONY" = openai ]; then
  "$PIP" uninstall -y -q oss-harmony 2>/dev/null || true
else
  "$PIP" uninstall -y -q openai-harmony 2>/dev/null || true
fi
WHEEL=$(ls "${KERNELCFG_WHEELS:-/nonexistent}"/vllm-"$V"-*.whl 2>/dev/null | head -1 || true)
"$PIP" install -q --no-deps --force-reinstall "${WHEEL:-vllm==$V}"
"$PIP" install -q "${PINS[@]}"
"$PIP" uninstall -y -q triton 2>/dev/null || true  # pulled by xgrammar; the parser needs none
