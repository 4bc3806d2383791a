"""Progress and pictures (issue 15): `tensorweave.utils.Progress` draws a bar with loss and
throughput on a terminal and stays quiet otherwise; ``--plot PATH`` writes a PNG of the
training curve with matplotlib when it is installed, and says how to install it when not."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tensorweave.utils import (
    MissingPlotDependency,
    Progress,
    require_matplotlib,
    save_training_curve,
)

ROOT = Path(__file__).resolve().parent.parent


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _lines(text: str) -> list[str]:
    """What a terminal shows once every \\r and erase have been applied."""
    shown = []
    for line in text.split("\n"):
        line = line.split("\r")[-1].replace("\x1b[K", "")
        shown.append(line)
    return shown


def test_terminal_bar_shows_steps_loss_and_throughput():
    out, clock = Terminal(), Clock()
    bar = Progress(total=10, stream=out, clock=clock, min_interval=0.0, unit="images")
    for step in range(5):
        clock.now += 0.5
        bar.update(loss=1.0 + step, examples=32)
    text = out.getvalue()
    assert text.startswith("\r") and "\n" not in text  # one line, redrawn in place
    last = text.split("\r")[-1]
    assert "train  50%|" in last and "| 5/10 " in last
    assert "[00:02<00:02, 2.0 steps/s, 64.0 images/s]" in last
    assert "loss 5.0000" in last  # the mean of the losses since the last redraw
    bar.write("step 4  loss 5.0")
    clock.now += 0.5
    bar.update(loss=7.0, examples=32)
    bar.close()
    shown = _lines(out.getvalue())
    assert shown[0] == "step 4  loss 5.0"  # printed above the bar, not mixed into it
    assert "| 6/10 " in shown[1] and "loss 7.0000" in shown[1]
    assert shown[2] == "train: 6 steps in 3.0 s, 2.0 steps/s, 64.0 images/s, last loss 7.0000"
    assert bar.history == [(1, 1.0), (2, 2.0), (3, 3.0), (4, 4.0), (5, 5.0), (6, 7.0)]
    assert bar.curve() == ([1, 2, 3, 4, 5, 6], [1.0, 2.0, 3.0, 4.0, 5.0, 7.0])


def test_terminal_bar_redraws_at_most_every_min_interval():
    out, clock = Terminal(), Clock()
    bar = Progress(total=1000, stream=out, clock=clock, min_interval=0.1)
    for _ in range(999):
        clock.now += 0.001  # 1000 steps a second: about 10 redraws a second
        bar.update(loss=0.5)
    draws = out.getvalue().count("\r")
    assert 9 <= draws <= 11, draws
    bar.update(loss=0.5)  # the last step is always drawn
    assert "| 1000/1000 " in out.getvalue().split("\r")[-1]


def test_not_a_terminal_no_bar_and_a_summary_line_every_n_steps():
    out, clock = io.StringIO(), Clock()
    with Progress(total=9, stream=out, clock=clock, every=3, unit="examples") as bar:
        for step in range(9):
            clock.now += 1.0
            bar.update(loss=float(step), examples=10)
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text
    assert text.splitlines() == [
        "train step 3/9  1.0 steps/s  10.0 examples/s  loss 1.0000",
        "train step 6/9  1.0 steps/s  10.0 examples/s  loss 4.0000",
        "train step 9/9  1.0 steps/s  10.0 examples/s  loss 7.0000",
        "train: 9 steps in 9.0 s, 1.0 steps/s, 10.0 examples/s, last loss 8.0000",
    ]


def test_not_a_terminal_and_every_zero_prints_only_what_the_program_writes():
    out = io.StringIO()
    with Progress(total=100, stream=out, desc="fit") as bar:
        for step in range(100):
            bar.update(loss=0.25)
            if step % 50 == 0:
                bar.write(f"step {step}  loss 0.25")
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["step 0  loss 0.25", "step 50  loss 0.25"]
    assert len(lines) == 3 and lines[2].startswith("fit: 100 steps in ")
    assert lines[2].endswith("last loss 0.2500")


def test_unknown_total_and_forced_modes():
    out, clock = io.StringIO(), Clock()
    bar = Progress(stream=out, clock=clock, enabled=True, min_interval=0.0)  # forced on
    clock.now += 2.0
    bar.update(steps=4)
    assert out.getvalue() == "\rtrain 4 [00:02, 2.0 steps/s]\x1b[K"
    quiet = Terminal()
    Progress(total=3, stream=quiet, enabled=False).update(loss=1.0)  # forced off
    assert quiet.getvalue() == ""


# ------------------------------------------------------------------ plots

def test_save_training_curve_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.image import imread
    steps = list(range(1, 201))
    path = save_training_curve(tmp_path / "sub" / "loss.png", steps, [1 / s for s in steps])
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    image = imread(path)
    assert image.shape[:2] == (400, 640)
    assert image[..., :3].std() > 0.01  # something was drawn
    with pytest.raises(ValueError, match="no values"):
        save_training_curve(tmp_path / "empty.png", [], [])
    with pytest.raises(ValueError, match="2 steps but 1 values"):
        save_training_curve(tmp_path / "bad.png", [1, 2], [0.5])


def test_missing_matplotlib_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    with pytest.raises(MissingPlotDependency, match=r"--plot needs matplotlib.*"
                                                    r"pip install 'tensorweave\[plot\]'"):
        require_matplotlib("--plot")
    with pytest.raises(ImportError):  # it is an ImportError too
        save_training_curve("x.png", [1], [1.0])


def _run_example(name: str, *args: str, pythonpath: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TW_DEFAULT_TARGET"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, str(ROOT),
                                                    env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, str(ROOT / "examples" / f"{name}.py"), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


def test_example_plot_flag_writes_the_training_curve(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "curve.png"
    proc = _run_example("softmax_regression", "--steps", "30", "--plot", str(png))
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {png}" in proc.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # stdout is a pipe here: no bar, only the program's lines and one summary
    assert "\r" not in proc.stdout
    assert "train: 30 steps in " in proc.stdout and "examples/s, last loss " in proc.stdout


def test_example_plot_flag_without_matplotlib_says_how_to_install_it(tmp_path):
    fake = tmp_path / "site" / "matplotlib"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('not installed (test)')\n")
    proc = _run_example("softmax_regression", "--steps", "1000", "--plot",
                        str(tmp_path / "x.png"), pythonpath=str(tmp_path / "site"))
    assert proc.returncode == 2  # refused before training, as a usage error
    assert "--plot needs matplotlib" in proc.stderr
    assert "pip install 'tensorweave[plot]'" in proc.stderr
    assert not (tmp_path / "x.png").exists()
