#!/usr/bin/env bash
# The GitHub Action's step (action.yml): check a batch file and/or the vllm serve lines
# of files with kernelcfg, as GitHub annotations. Inputs come as environment variables:
#   KERNELCFG_BATCH   a JSON-lines file (kernelcfg resolve --batch)
#   KERNELCFG_FILES   files whose `vllm serve` lines to check (space-separated)
#   KERNELCFG_ARGS    extra flags for every line (--device h100 --vllm-version 0.34 …)
#   KERNELCFG         the command (default: kernelcfg)
# Exit: the worst exit code of the checks (0 fine, 1 refused, 2 unusable input).
set -uo pipefail
KC="${KERNELCFG:-kernelcfg}"
read -r -a EXTRA <<< "${KERNELCFG_ARGS:-}"
worst=0
if [ -n "${KERNELCFG_BATCH:-}" ]; then
  $KC resolve --batch "$KERNELCFG_BATCH" --format github "${EXTRA[@]}"
  code=$?; [ "$code" -gt "$worst" ] && worst=$code
fi
if [ -n "${KERNELCFG_FILES:-}" ]; then
  read -r -a FILES <<< "$KERNELCFG_FILES"
  $KC scan "${FILES[@]}" "${EXTRA[@]}" --format github
  code=$?; [ "$code" -gt "$worst" ] && worst=$code
fi
if [ -z "${KERNELCFG_BATCH:-}${KERNELCFG_FILES:-}" ]; then
  echo "::error title=kernelcfg::give the action a batch file or files to scan" >&2
  exit 2
fi
exit "$worst"
