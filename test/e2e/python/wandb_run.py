"""Logs a small run with the real `wandb` package (WANDB_BASE_URL points at the stand-in)."""
import json
import wandb

run = wandb.init(
    project="proj",
    group="grp",
    name="gsm8k_0-2026-11-25-abcdef",
    config={"group_size": 8, "tokenizer_name": "qwen3"},
)
run.log({"gsm8k_0_train/percent_correct": 0.25}, step=1)
run.log({"gsm8k_0_train/percent_correct": 0.5, "gsm8k_0_eval/pass@1": 0.4}, step=2)
run_id = run.id
run.finish()
print(json.dumps({"run_id": run_id}))
