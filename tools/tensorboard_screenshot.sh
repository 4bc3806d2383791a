#!/usr/bin/env bash
# Opt-in browser check of the TensorBoard integration (docs/tools.md): train the MLP
# example with --logdir, export a graph with `tensorweave dump --format tensorboard`,
# serve TensorBoard on 127.0.0.1 and screenshot its scalars, histograms and graphs pages
# with headless Chromium. Needs `pip install -e '.[tensorboard]'` and Debian's chromium
# (`apt-get install -y chromium`).
#
#   tools/tensorboard_screenshot.sh [OUT_DIR]     # default: ./tensorboard_screenshots
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-tensorboard_screenshots}"
mkdir -p "$out"
logdir="$(mktemp -d)"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

python examples/mnist_mlp.py --steps 1000 --logdir "$logdir/mlp"
python -m tensorweave.cli dump examples/softmax_regression.py:train_step \
    --format tensorboard --logdir "$logdir/softmax_placed" --stage placed

port="$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
tensorboard --logdir "$logdir" --host 127.0.0.1 --port "$port" >"$out/tensorboard.log" 2>&1 &
tb_pid=$!
trap 'kill "$tb_pid" 2>/dev/null || true; rm -rf "$logdir"' EXIT
for _ in $(seq 60); do
    curl -sf "http://127.0.0.1:$port/data/runs" >/dev/null && break
    sleep 0.5
done

for page in scalars histograms graphs; do
    chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$(mktemp -d)" --window-size=1400,900 --virtual-time-budget=15000 \
        --screenshot="$out/$page.png" "http://127.0.0.1:$port/#$page" >/dev/null 2>&1
    echo "wrote $out/$page.png"
done
