"""The weights-staging Job's program (run in the vLLM image as `python3 -c`): a Hugging Face model copied once
into the stack bucket, and what the Job that runs it needs (workloads/vllm/manifests.py stage_job)."""

from __future__ import annotations

STAGED_MARKER = "_STAGED"  # written last by the staging Job: its presence means the copy is complete
# The staging Job copies one model once; the largest the stack serves (405B, ~800 GB in bf16) takes hours over a
# NAT'd link: `pulumi up` waits that long for it (pulumi-kubernetes awaits a Job until Complete).
STAGE_TIMEOUT_MINUTES = 360


# The staging Job (one per workload: the model and its Hugging Face LoRA adapters, ITEMS): the image's huggingface_hub (a vLLM dependency) and google-cloud-storage (tpu-inference@v0.27.0
# requirements.txt), as its own identity (objectUser on the staged prefix only). It copies what vLLM reads (the
# safetensors, config and tokenizer files; not the `original/` checkpoint some repositories add), one file at a
# time through local scratch, skips files already in the bucket (a retry resumes), and writes the marker last.
STAGE_SCRIPT = """
import os, sys, fnmatch
from huggingface_hub import HfApi, hf_hub_download
from google.cloud import storage
import json
bucket = storage.Client().bucket(os.environ["BUCKET"])
marker, wanted = os.environ["MARKER"], os.environ["PATTERNS"].split()
for item in json.loads(os.environ["ITEMS"]):
    repo, rev, prefix = item["repo"], item["revision"], item["prefix"]
    if bucket.blob(prefix + marker).exists():
        print(f"gs://{bucket.name}/{prefix} is staged already"); continue
    info = HfApi().model_info(repo, revision=rev)
    names = [s.rfilename for s in info.siblings if "/" not in s.rfilename and any(fnmatch.fnmatch(s.rfilename, p) for p in wanted)]
    if not any(n.endswith(".safetensors") for n in names):
        sys.exit(f"{repo}@{rev} has no safetensors at its top level: the Run:ai streamer and vLLM's LoRA loader read safetensors")
    for name in names:
        blob = bucket.blob(prefix + name)
        if blob.exists():
            continue
        path = hf_hub_download(repo, name, revision=rev, local_dir="/scratch")
        blob.upload_from_filename(path)
        os.remove(path)
        print(f"staged {name}", flush=True)
    bucket.blob(prefix + marker).upload_from_string(info.sha or rev)
    print(f"staged {repo}@{rev} ({info.sha}) into gs://{bucket.name}/{prefix}")
"""
# What vLLM reads from a model directory: weights, config and tokenizer files (vllm 0.27.0
# docs/models/extensions/runai_model_streamer.md serves `vllm serve gs://<bucket>/<model>` with no other source of
# config or tokenizer: they come from the same directory).
STAGE_PATTERNS = ("*.safetensors", "*.json", "*.model", "*.tiktoken", "*.txt", "*.jinja", "*.py")
STAGE_RESOURCES = {
    "requests": {"cpu": "2", "memory": "8Gi", "ephemeral-storage": "40Gi"},
    "limits": {"memory": "8Gi", "ephemeral-storage": "60Gi"},
}
