"""Differential hunt for silent wrong answers: tensorweave against TensorFlow 2.21.

Two halves, run by two Pythons (TensorFlow is not a dependency of tensorweave):

    /path/to/tf-venv/bin/python tools/tf_differential.py record OUT_DIR [--only SUBSTR ...]
    python tools/tf_differential.py compare OUT_DIR [--modes eager,reference,cpu] [--only ...]
    python tools/tf_differential.py pack OUT_DIR FIXTURE.npz CASE[:KEY,...|:first] ...

``record`` draws every case's arguments (``tests/tf_differential_cases.py``), runs the case
eagerly in TensorFlow, differentiates ``sum_j sum(out_j * W_j)`` (fixed random ``W_j``) with
``tf.GradientTape`` with respect to the case's float64 arguments, and writes one ``.npz``
per case: the arguments, parameters, results, weights and gradients (or the error
TensorFlow raised). ``compare`` runs the same function and gradient in tensorweave (eagerly
and with ``tw.compile`` on the reference and cpu targets) on the recorded arguments and
prints every difference: dtype, shape, values (NaN positions and the sign of zeros
included), a gradient one library gives and the other does not (None), and an error only
one of them raises. ``tests/test_review_tf_differential.py`` replays a committed subset.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import zlib
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import tf_differential_cases as cases  # noqa: E402

# ---------------------------------------------------------------- TensorFlow side

def record_case(tf, case: cases.Case, out_dir: Path) -> dict[str, int]:
    """Run every draw of `case` in TensorFlow and save it to OUT_DIR/<name>.npz."""
    store: dict[str, np.ndarray] = {}
    counts = {"draws": 0, "errors": 0}
    for key, kind, dt, args, params in cases.draws(case):
        counts["draws"] += 1
        meta: dict[str, Any] = {"kind": kind, "dtype": dt, "params": params, "n_args": len(args),
                                "tf_version": tf.__version__}
        for i, a in enumerate(args):
            store[f"{key}/in{i}"] = a
        gidx = cases.differentiated(case, args, dt)
        wrng = np.random.default_rng(zlib.crc32(f"{case.name}/{key}".encode()))
        try:
            xs = [tf.constant(a) for a in args]
            with tf.GradientTape(persistent=True) as tape:
                for i in gidx:
                    tape.watch(xs[i])
                outs = [tf.convert_to_tensor(o) for o in cases.flatten(case.fn(tf, *xs, **params))]
                loss = tf.constant(0.0, tf.float64)
                for j, o in enumerate(outs):
                    if gidx and o.dtype.is_floating:
                        w = wrng.normal(size=o.shape.as_list())
                        store[f"{key}/w{j}"] = w
                        loss = loss + tf.reduce_sum(tf.cast(o, tf.float64) * w)
            meta["n_out"] = len(outs)
            for j, o in enumerate(outs):
                store[f"{key}/out{j}"] = o.numpy()
        except Exception as e:  # noqa: BLE001 - TensorFlow's refusal is what we record
            meta["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            counts["errors"] += 1
            store[f"{key}/meta"] = np.asarray(json.dumps(meta))
            continue
        meta["grad"] = gidx
        if gidx:
            try:
                grads = tape.gradient(loss, [xs[i] for i in gidx])
                meta["grad_none"] = [i for i, g in zip(gidx, grads) if g is None]
                for i, g in zip(gidx, grads):
                    if g is not None:
                        store[f"{key}/g{i}"] = tf.convert_to_tensor(g).numpy()
            except Exception as e:  # noqa: BLE001
                meta["grad_error"] = f"{type(e).__name__}: {str(e)[:300]}"
        store[f"{key}/meta"] = np.asarray(json.dumps(meta))
    np.savez_compressed(out_dir / f"{case.name}.npz", **store)
    return counts


def record(out_dir: Path, only: list[str]) -> None:
    import tensorflow as tf
    out_dir.mkdir(parents=True, exist_ok=True)
    total = {"cases": 0, "draws": 0, "errors": 0}
    for case in cases.CASES.values():
        if only and not any(s in case.name for s in only):
            continue
        c = record_case(tf, case, out_dir)
        total["cases"] += 1
        total["draws"] += c["draws"]
        total["errors"] += c["errors"]
    print(f"recorded with TensorFlow {tf.__version__}: {total}")


# ---------------------------------------------------------------- tensorweave side

def compare(rec_dir: Path, modes: list[str], only: list[str], verbose: bool) -> int:
    """Replay every recorded draw in tensorweave in each mode and print the differences:
    first each documented one (docs/api.md, "Against TensorFlow 2.21") with its reason,
    then the rest; exit status 1 if any is not documented."""
    import tensorweave as tw
    n_draws = 0
    undocumented: list[str] = []
    known: dict[str, int] = {}
    start = time.time()
    for path in sorted(rec_dir.glob("*.npz")):
        name = path.stem
        if only and not any(s in name for s in only):
            continue
        case = cases.CASES[name]
        for (_, key), draw in cases.read_draws(path).items():
            meta = draw["meta"]
            for mode in modes:
                n_draws += 1
                try:
                    found = cases.compare_draw(tw, case, draw, mode)
                except Exception:  # noqa: BLE001 - a crash of the harness is a finding too
                    found = ["harness: " + traceback.format_exc().splitlines()[-1]]
                if not found:
                    continue
                args = "; ".join(f"{a.dtype}{list(a.shape)}" for a in draw["args"])
                line = (f"{name} [{key} {meta['kind']} {meta['dtype']}] {mode}: " + " | ".join(found)
                        + f"   params={json.dumps(meta['params'])} args={args}")
                if verbose:
                    line += "\n      inputs: " + " / ".join(
                        np.array2string(a, threshold=30, precision=4).replace("\n", "")
                        for a in draw["args"])
                why = cases.documented(name, draw, found)
                if why:
                    known[why] = known.get(why, 0) + 1
                    if verbose:
                        print(f"[documented: {why}] {line}", flush=True)
                else:
                    undocumented.append(line)
                    print(line, flush=True)
    print(f"\n{n_draws} (draw, mode) comparisons in {time.time() - start:.0f} s: "
          f"{len(undocumented)} undocumented differences, {sum(known.values())} documented:")
    for why, n in sorted(known.items(), key=lambda kv: -kv[1]):
        print(f"  {n:4d}  {why}")
    return 1 if undocumented else 0


def pack(rec_dir: Path, out: Path, selection: list[str]) -> None:
    """Copy recorded draws into one fixture file: each selection is CASE (every draw),
    CASE:KEY[,KEY...] or CASE:first (its first draw)."""
    chosen = {}
    for sel in selection:
        name, _, keys = sel.partition(":")
        recorded = cases.read_draws(rec_dir / f"{name}.npz")
        wanted = (list(recorded) if not keys else [next(iter(recorded))] if keys == "first"
                  else [(name, k) for k in keys.split(",")])
        for ident in wanted:
            chosen[ident] = recorded[ident]
    cases.pack_draws(chosen, out)
    print(f"{len(chosen)} draws -> {out} ({out.stat().st_size} bytes)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("out_dir", type=Path)
    r.add_argument("--only", nargs="*", default=[])
    c = sub.add_parser("compare")
    c.add_argument("rec_dir", type=Path)
    c.add_argument("--modes", default="eager,reference,cpu")
    c.add_argument("--only", nargs="*", default=[])
    c.add_argument("-v", "--verbose", action="store_true")
    k = sub.add_parser("pack")
    k.add_argument("rec_dir", type=Path)
    k.add_argument("out", type=Path)
    k.add_argument("selection", nargs="+")
    a = ap.parse_args()
    if a.cmd == "record":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        record(a.out_dir, a.only)
        return 0
    if a.cmd == "pack":
        pack(a.rec_dir, a.out, a.selection)
        return 0
    return compare(a.rec_dir, a.modes.split(","), a.only, a.verbose)


if __name__ == "__main__":
    sys.exit(main())
