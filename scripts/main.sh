#!/usr/bin/env bash
# Set up and run the main job on its embedded default: parse sample gpt-oss outputs
# (well-formed and malformed) in both front ends and print the OpenAI view of each.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/setup_env.sh
.venv/bin/harmony-ext demo
