#!/usr/bin/env bash
# Creates (once) a venv with the official `openai` package for examples/python/proxy_agent.py and
# prints the path of its python. Reused while requirements-openai.txt is unchanged; pip installs
# from the package index pip is configured with, nothing else is downloaded.
#   examples/python/install_openai.sh [VENV_DIR]   # default: node_modules/.cache/openai-venv
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${1:-$root/node_modules/.cache/openai-venv}"
req="$here/requirements-openai.txt"
stamp="$venv/.requirements-sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9 # concurrent test runs install once

if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  if ! "$venv/bin/pip" install --quiet --no-input --retries 0 -r "$req" >&2; then
    rm -rf "$venv"
    echo "install_openai.sh: pip could not install $(grep -v '^#' "$req" | xargs) from its" \
      "configured index (see 'pip config list')." >&2
    exit 1
  fi
  "$venv/bin/python" -W ignore -c "import openai" >&2
  echo "$want" >"$stamp"
fi
echo "$venv/bin/python"
