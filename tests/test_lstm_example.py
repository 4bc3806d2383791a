"""examples/lstm_lm.py, run as a user would (in a subprocess) at a test-sized
configuration: it trains, reports words per second, and its perplexity falls."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_lstm_language_model_perplexity_falls():
    args = ["--steps", "60", "--batch", "16", "--seq-len", "10", "--hidden", "32",
            "--embed", "32", "--vocab", "500", "--chars", "300000", "--report-every", "10"]
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "lstm_lm.py"), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    rows = re.findall(r"^step\s+(\d+)\s+perplexity\s+(\S+)\s+words/s\s+(\S+)$", out, re.MULTILINE)
    assert len(rows) == 6, out
    perplexities = [float(p) for _, p, _ in rows]
    assert all(float(w) > 0 for _, _, w in rows), out
    # From about the vocabulary size (uniform guessing) to well below it.
    assert perplexities[0] > perplexities[-1], out
    assert perplexities[-1] < 0.5 * perplexities[0], out
    held_out = float(re.search(r"^held-out perplexity: (\S+)$", out, re.MULTILINE).group(1))
    assert held_out < 200, out


def test_lstm_language_model_trains_with_a_sampled_softmax():
    """Trained on a sampled softmax of 64 of 500 words, the exact held-out perplexity
    still falls far below the vocabulary size (uniform guessing)."""
    args = ["--steps", "80", "--batch", "16", "--seq-len", "10", "--hidden", "32",
            "--embed", "32", "--vocab", "500", "--chars", "300000", "--report-every", "20",
            "--sampled-softmax", "64"]
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "lstm_lm.py"), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    held_out = float(re.search(r"^held-out perplexity: (\S+)$", proc.stdout,
                               re.MULTILINE).group(1))
    assert held_out < 150, proc.stdout  # ~490 after one step, ~70 after 80
