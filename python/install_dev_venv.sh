#!/usr/bin/env bash
# The venv the Python tests run in (requirements-dev.txt: CPU PyTorch, transformers, TRL, pytest,
# ruff, hatchling); made once under node_modules/.cache/python-dev-venv, reused while the file is
# unchanged (examples/python/install_venv.sh). Prints its python. The package itself is not
# installed there: tests put python/ on PYTHONPATH, so they always run the working tree.
#   python/install_dev_venv.sh [VENV_DIR]
here="$(cd "$(dirname "$0")" && pwd)"
INSTALL_VENV_REQUIREMENTS="$here/requirements-dev.txt" \
  exec "$here/../examples/python/install_venv.sh" python-dev "torch, trl, pytest" "$@"
