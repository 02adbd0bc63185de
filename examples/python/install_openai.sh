#!/usr/bin/env bash
# A venv with the official openai package for proxy_agent.py; prints its python (see install_venv.sh).
#   examples/python/install_openai.sh [VENV_DIR]   # default: node_modules/.cache/openai-venv
exec "$(dirname "$0")/install_venv.sh" openai openai "$@"
