#!/usr/bin/env bash
# A venv with CPU PyTorch for grpo_torch_trainer.py; prints its python (see install_venv.sh).
#   examples/python/install_torch.sh [VENV_DIR]   # default: node_modules/.cache/torch-venv
exec "$(dirname "$0")/install_venv.sh" torch torch "$@"
