"""A training-loop progress bar with loss and throughput, without dependencies.

    with Progress(total=args.steps, desc="train", unit="examples") as bar:
        for i in range(args.steps):
            loss = train_step(x, y)
            bar.update(loss=float(loss), examples=len(x))
            if i % 100 == 0:
                bar.write(f"step {i:4d}  loss {float(loss):.4f}")

On a terminal it redraws one line in place (``\\r``) at most `min_interval` times a second,
as tqdm and Keras do: steps done, percent, elapsed and remaining time, steps/s, examples/s
and the mean loss since the last redraw. When the stream is not a terminal (a log file, a
pipe, CI) it draws no bar: it writes one summary line every `every` steps (0: none), so
logs stay readable. Either way `write` prints a line above the bar and `close` ends with one
summary line. `history` keeps ``(step, loss)`` for a training-curve plot.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _rate(n: float, seconds: float) -> str:
    if seconds <= 0:
        return "?"
    r = n / seconds
    return f"{r:.1f}" if r < 100 else f"{r:.0f}"


class Progress:
    """Progress of a loop of `total` steps (None: unknown) on `stream` (default stdout).

    `unit` names what `update`'s `examples` counts (shown as a throughput); `enabled`
    forces the terminal bar on or off (default: whether `stream` is a terminal); `every`
    is the number of steps between summary lines when there is no bar."""

    def __init__(self, total: int | None = None, *, desc: str = "train",
                 unit: str = "examples", stream: TextIO | None = None,
                 enabled: bool | None = None, every: int = 0, width: int = 24,
                 min_interval: float = 0.1, clock: Callable[[], float] = time.perf_counter
                 ) -> None:
        self.total = total
        self.desc = desc
        self.unit = unit
        self.stream = stream if stream is not None else sys.stdout
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.bar = enabled
        self.every = every
        self.width = width
        self.min_interval = min_interval
        self._clock = clock
        self.start = clock()
        self.steps = 0
        self.examples = 0
        self.history: list[tuple[int, float]] = []
        self._window: list[float] = []  # losses since the last redraw or summary
        self._last_loss: float | None = None
        self._last_draw = -float("inf")
        self._drawn = False
        self._closed = False

    # ------------------------------------------------------------------ updates
    def update(self, steps: int = 1, *, loss: float | None = None, examples: int = 0) -> None:
        """Count `steps` more steps (with their `loss`, if given, and `examples`
        processed); redraws the bar or writes a summary line when it is time."""
        self.steps += steps
        self.examples += examples
        if loss is not None:
            loss = float(loss)
            self.history.append((self.steps, loss))
            self._window.append(loss)
            self._last_loss = loss
        now = self._clock()
        if self.bar:
            done = self.total is not None and self.steps >= self.total
            if done or now - self._last_draw >= self.min_interval:
                self._draw(now)
        elif self.every and self.steps % self.every < steps:
            self.stream.write(self._summary(now, prefix=f"{self.desc} ") + "\n")
            self._window = []
            self.stream.flush()

    def curve(self) -> tuple[list[int], list[float]]:
        """The steps and losses recorded so far, as two lists (for a plot)."""
        return [s for s, _ in self.history], [v for _, v in self.history]

    def write(self, line: str) -> None:
        """Print `line` on a line of its own (above the bar, which is drawn again)."""
        if self.bar and self._drawn:
            self.stream.write("\r\x1b[K")  # erase the bar, print, draw it again below
            self.stream.write(line + "\n")
            self._draw(self._clock(), keep_window=True)
        else:
            self.stream.write(line + "\n")
            self.stream.flush()

    def close(self) -> None:
        """End the bar and write one summary line (steps, time, throughput, last loss)."""
        if self._closed:
            return
        self._closed = True
        now = self._clock()
        if self.bar and self._drawn:
            self._draw(now, keep_window=True)
            self.stream.write("\n")
        elapsed = now - self.start
        text = (f"{self.desc}: {self.steps} steps in {elapsed:.1f} s, "
                f"{_rate(self.steps, elapsed)} steps/s")
        if self.examples:
            text += f", {_rate(self.examples, elapsed)} {self.unit}/s"
        if self._last_loss is not None:
            text += f", last loss {self._last_loss:.4f}"
        self.stream.write(text + "\n")
        self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ drawing
    def _summary(self, now: float, prefix: str = "") -> str:
        elapsed = now - self.start
        of = f"/{self.total}" if self.total is not None else ""
        parts = [f"{prefix}step {self.steps}{of}", f"{_rate(self.steps, elapsed)} steps/s"]
        if self.examples:
            parts.append(f"{_rate(self.examples, elapsed)} {self.unit}/s")
        loss = self._mean_loss()
        if loss is not None:
            parts.append(f"loss {loss:.4f}")
        return "  ".join(parts)

    def _mean_loss(self) -> float | None:
        if self._window:
            return sum(self._window) / len(self._window)
        return self._last_loss

    def _draw(self, now: float, keep_window: bool = False) -> None:
        elapsed = now - self.start
        if self.total:
            frac = min(1.0, self.steps / self.total)
            filled = int(round(frac * self.width))
            bar = "#" * filled + "-" * (self.width - filled)
            left = (elapsed / self.steps * (self.total - self.steps)) if self.steps else 0.0
            head = (f"{self.desc} {frac * 100:3.0f}%|{bar}| {self.steps}/{self.total} "
                    f"[{_duration(elapsed)}<{_duration(left)}")
        else:
            head = f"{self.desc} {self.steps} [{_duration(elapsed)}"
        tail = f", {_rate(self.steps, elapsed)} steps/s"
        if self.examples:
            tail += f", {_rate(self.examples, elapsed)} {self.unit}/s"
        tail += "]"
        loss = self._mean_loss()
        if loss is not None:
            tail += f" loss {loss:.4f}"
        self.stream.write("\r" + head + tail + "\x1b[K")
        self.stream.flush()
        self._drawn = True
        self._last_draw = now
        if not keep_window:
            self._window = []


__all__ = ["Progress"]
