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


def _perplexities(out: str) -> list[float]:
    return [float(p) for p in re.findall(r"perplexity\s+([0-9.]+)\s+words/s", out)]


def test_lstm_language_model_sharded_over_two_parameter_servers_matches_one_process():
    """The distributed mode (TensorFlow 1's API under `tensorweave launch`, embedding and
    output layer partitioned over 2 PS tasks, one worker) trains the same model on the
    same batches as the single-process run: the same losses and held-out perplexity."""
    args = ["--steps", "6", "--batch", "8", "--seq-len", "8", "--hidden", "16",
            "--embed", "16", "--vocab", "300", "--chars", "200000", "--report-every", "2"]
    single = subprocess.run([sys.executable, str(ROOT / "examples" / "lstm_lm.py"), *args],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert single.returncode == 0, single.stderr
    launched = subprocess.run(
        [sys.executable, "-m", "tensorweave.cli", "launch", "--ps", "2", "--workers", "1",
         str(ROOT / "examples" / "lstm_lm.py"), "--", "--distributed", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    expected, got = _perplexities(single.stdout), _perplexities(launched.stdout)
    assert len(expected) == 3 and len(got) == 3, (single.stdout, launched.stdout)
    assert expected[0] > expected[-1]  # it trains
    for e, g in zip(expected, got):
        assert abs(e - g) <= 1e-3 * e + 0.011, (expected, got)  # printed to 2 decimals
    held_single = float(re.search(r"held-out perplexity:? (\S+)$", single.stdout,
                                  re.MULTILINE).group(1))
    held_launched = float(re.search(r"held-out perplexity (\S+)$", launched.stdout,
                                    re.MULTILINE).group(1))
    assert abs(held_single - held_launched) <= 1e-3 * held_single + 0.011
