#!/usr/bin/env bash
# The GitHub Action's step (action.yml): check a batch file and/or the vllm serve lines
# of files with kernelcfg, as GitHub annotations. Inputs come as environment variables:
#   KERNELCFG_BATCH   a JSON-lines file (kernelcfg resolve --batch)
#   KERNELCFG_FILES   files whose `vllm serve` lines to check: words (over any number of
#                     lines), each a glob pattern (`**` crosses folders) expanded here;
#                     a pattern that matches no file is an error of its own
#   KERNELCFG_ARGS    flags for every line (--device h100 --vllm-version 0.34 …), over any
#                     number of lines
#   KERNELCFG         the command (default: kernelcfg)
# Both inputs are split into words as a POSIX shell splits them (quotes and backslashes;
# no variables, no commands: Python's shlex, never eval). File names go after `--`, so a
# file named `--env` is a file. Exit: the worst exit code of the checks (0 fine,
# 1 refused, 2 unusable input).
set -uo pipefail
shopt -s globstar nullglob

worst=0
raise() { [ "$1" -gt "$worst" ] && worst=$1; }

# ::error with GitHub's escapes for the message (% CR LF).
error() {
  local text=${1//%/%25}
  text=${text//$'\r'/%0D}
  echo "::error title=kernelcfg::${text//$'\n'/%0A}"
}

# words NAME TEXT: the array NAME gets TEXT's words, split as the shell splits them.
words() {
  local -n into=$1
  into=()
  mapfile -d '' -t into < <(python -c '
import shlex, sys
try:
    sys.stdout.write("".join(word + "\0" for word in shlex.split(sys.argv[1])))
except ValueError:  # an unclosed quote, a backslash at the end
    sys.exit(1)
' "$2")
  wait $! || { error "$3: an unclosed quote, or a backslash at the end"; return 1; }
}

read -r -a KC <<< "${KERNELCFG:-kernelcfg}"
if [ -z "${KERNELCFG_BATCH:-}${KERNELCFG_FILES:-}" ]; then
  error "give the action a batch file or files to scan"
  exit 2
fi
words EXTRA "${KERNELCFG_ARGS:-}" "args" || exit 2

if [ -n "${KERNELCFG_BATCH:-}" ]; then
  "${KC[@]}" resolve --batch "$KERNELCFG_BATCH" "${EXTRA[@]}" --format github
  raise $?
fi

# expand PATTERN: FILES gains the files PATTERN matches (each once), or an error names it.
declare -A SEEN=()
FILES=()
expand() {
  local IFS=  # pathname expansion only: no word splitting, and no eval
  local matched=($1) file
  if [ ${#matched[@]} -eq 0 ] || { [ "${matched[0]}" = "$1" ] && [ ! -e "$1" ]; }; then
    error "files: '$1' matches no file"
    raise 2
    return
  fi
  for file in "${matched[@]}"; do
    [ -n "${SEEN["/$file"]:-}" ] || FILES+=("$file")
    SEEN["/$file"]=1  # "/" first: no key is @ or *
  done
}

if [ -n "${KERNELCFG_FILES:-}" ]; then
  words PATTERNS "$KERNELCFG_FILES" "files" || exit 2
  for pattern in "${PATTERNS[@]}"; do expand "$pattern"; done
  if [ ${#FILES[@]} -gt 0 ]; then
    "${KC[@]}" scan "${EXTRA[@]}" --format github -- "${FILES[@]}"
    raise $?
  fi
fi
exit "$worst"
