#!/usr/bin/env bash
# Creates (once) a venv from requirements-NAME.txt, checks that MODULE imports, and prints the
# path of its python. Reused while the requirements file is unchanged; pip installs from the
# package index pip is configured with, nothing else is downloaded.
#   examples/python/install_venv.sh NAME MODULE [VENV_DIR]   # default: node_modules/.cache/NAME-venv
set -euo pipefail
name="$1"
module="$2"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${3:-$root/node_modules/.cache/$name-venv}"
req="${INSTALL_VENV_REQUIREMENTS:-$here/requirements-$name.txt}" # another file: python/install_dev_venv.sh
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
    echo "install_venv.sh: pip could not install $(grep -v '^#' "$req" | xargs) from its" \
      "configured index (see 'pip config list')." >&2
    exit 1
  fi
  "$venv/bin/python" -W ignore -c "import $module" >&2
  echo "$want" >"$stamp"
fi
echo "$venv/bin/python"
