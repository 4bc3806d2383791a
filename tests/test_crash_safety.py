"""Crash safety of the files the project writes (docs/files_and_durability.md).

Writers are killed with SIGKILL at random moments; every time, what is listed must load
bit-exactly, and the next start must leave no temporaries behind. Some kills are made to
land inside a write on purpose (the writer stalls in its first fsync), so the sweeping
of orphaned temporaries is exercised on every run, not only when chance allows. The
random seed is printed; TW_CRASH_SEED=<seed> replays a run.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import safetensors

import tensorweave as tw
from tensorweave.runtime import atomic_files, checkpoint_index
from tensorweave.runtime.resources import default_resource_manager
from tensorweave.targets.cpu import disk_cache

ROOT = Path(__file__).resolve().parents[1]
KB, MB = 1 << 10, 1 << 20


def _seed() -> int:
    seed = int(os.environ.get("TW_CRASH_SEED", random.randrange(1 << 30)))
    print(f"TW_CRASH_SEED={seed}")
    return seed


def temporaries(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if atomic_files.is_temporary(n))


def start(script: str, *args: object, env: dict | None = None) -> subprocess.Popen:
    """A Python child running `script` (source) with `args`, stdout piped, line-buffered."""
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)],
                            stdout=subprocess.PIPE, text=True, bufsize=1,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def wait_for(proc: subprocess.Popen, word: str) -> None:
    """Read the child's lines until one starts with `word`."""
    for line in proc.stdout:
        if line.startswith(word):
            return
    raise AssertionError(f"child exited ({proc.wait()}) before printing {word!r}")


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()


# Prints "stalled" and sleeps inside the first fsync of a file after "ready" (checkpoints),
# or in the rename of a temporary (compile cache entries, which are not fsynced): a
# SIGKILL then lands while a temporary file is open, locked and not yet renamed.
STALL = textwrap.dedent("""
    import os, stat, sys, time
    STALL = os.environ.get("STALL") == "1"
    _fsync, _replace = os.fsync, os.replace
    def stall():
        if STALL:
            print("stalled", flush=True)
            time.sleep(60)
    def fsync(fd):
        if stat.S_ISREG(os.fstat(fd).st_mode):  # a file, not a directory
            stall()
        _fsync(fd)
    def replace(src, dst):
        if os.path.basename(src).startswith(".tmp-"):
            stall()
        _replace(src, dst)
    def arm():
        os.fsync, os.replace = fsync, replace
""")


# ------------------------------------------------------------------ checkpoints

SAVER = STALL + textwrap.dedent("""
    import numpy as np
    import tensorweave as tw
    directory, n, tag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    def content(n, seed):
        a = np.arange(n, dtype=np.float32)
        a += np.float32(seed)
        return a
    # w: big and fixed per run (assigning 200 MB per save would dominate the time);
    # v and seed change with every save, so any two saves differ.
    w = tw.Variable(content(n, tag), name="w")
    v = tw.Variable(np.zeros(256, np.float32), name="v")
    seed = tw.Variable(np.int64(0), name="seed")
    manager = tw.train.CheckpointManager(tw.train.Checkpoint(w=w, v=v, seed=seed),
                                         directory, max_to_keep=3)
    def save(i):  # saves before restoring: numbering must continue
        s = tag * 1000 + i
        v.assign(content(256, s))
        seed.assign(np.int64(s))
        manager.save()
    save(0)  # every run saves once (and has compiled its save function) before "ready"
    arm()
    print("ready", flush=True)
    for i in range(1, 1_000_000):
        save(i)
""")


def content(n: int, seed: int) -> np.ndarray:
    a = np.arange(n, dtype=np.float32)
    a += np.float32(seed)
    return a


def restore_latest(directory: Path) -> tuple[int, int]:
    """Start a manager on `directory` (which recovers it), restore its latest checkpoint,
    check every tensor bit for bit, and return (checkpoint number, number of tensors)."""
    seed = tw.Variable(np.int64(-1), name="crash_seed")
    manager = tw.train.CheckpointManager(tw.train.Checkpoint(seed=seed), str(directory),
                                         max_to_keep=3)
    latest = manager.latest_checkpoint
    with safetensors.safe_open(latest + ".safetensors", framework="numpy") as f:
        n = f.get_slice("w").get_shape()[0]
    w = tw.Variable(np.zeros(n, np.float32), name="crash_w")
    v = tw.Variable(np.zeros(256, np.float32), name="crash_v")
    tw.train.Checkpoint(w=w, v=v, seed=seed).restore(latest)
    s = int(seed.numpy())
    assert s >= 0, latest
    assert w.numpy().view(np.uint32).tobytes() == content(n, s // 1000).view(np.uint32).tobytes()
    assert v.numpy().view(np.uint32).tobytes() == content(256, s).view(np.uint32).tobytes()
    for var in (w, v, seed):  # up to 200 MB each time: give the memory back
        default_resource_manager().delete_variable(var.shared_name)
    return checkpoint_index.checkpoint_number(os.path.basename(latest), "ckpt"), n


def test_checkpoints_survive_sigkill_at_random_moments(tmp_path):
    rng = random.Random(_seed())
    # 1 KB to 200 MB of float32; few large ones keep the test near 20 s on 2 cores
    sizes = [KB, KB, 4 * KB, 16 * KB, 64 * KB, 256 * KB, MB, MB, 2 * MB, 4 * MB, 4 * MB,
             8 * MB, 8 * MB, 16 * MB, 16 * MB, 32 * MB, 64 * MB, 100 * MB, 200 * MB, 2 * MB]
    rng.shuffle(sizes)
    stalled = set(rng.sample(range(20), 5))
    directory = tmp_path / "ckpts"
    directory.mkdir()
    last_number, orphans = 0, 0
    for trial, nbytes in enumerate(sizes):
        n = nbytes // 4
        proc = start(SAVER, directory, n, trial + 1, env={"STALL": str(int(trial in stalled))})
        wait_for(proc, "ready")
        if trial in stalled:
            wait_for(proc, "stalled")
        else:
            # a random moment in roughly the time two saves of this size take
            time.sleep(rng.uniform(0.0, 0.05 + 2 * nbytes / (300 * MB)))
        kill(proc)
        left = temporaries(directory)
        orphans += len(left)
        if trial in stalled:
            assert left, "a writer killed inside its fsync left no temporary"
        number, _ = restore_latest(directory)
        assert temporaries(directory) == [], "the manager's start left temporaries"
        # this run saved at least once, numbering after the previous runs' checkpoints
        assert number > last_number, (number, last_number)
        last_number = number
        listed = {os.path.basename(p) for p in checkpoint_index.read_index(str(directory))["all"]}
        assert sorted(os.listdir(directory)) == sorted(
            [checkpoint_index.INDEX] + [p + ".safetensors" for p in listed])
    assert orphans >= len(stalled)


# ------------------------------------------------------------------ restarts and retention

def _manager(directory, name, value=0.0, **kwargs):
    v = tw.Variable(np.float32(value), name=name)
    return v, tw.train.CheckpointManager(tw.train.Checkpoint(v=v), str(directory), **kwargs)


def test_restarted_manager_saving_before_restoring_keeps_the_newest(tmp_path):
    v, first = _manager(tmp_path, "restart_a", max_to_keep=3)
    for i in range(8):
        v.assign(np.float32(i))
        first.save()
    assert [os.path.basename(p) for p in first.checkpoints] == ["ckpt-6", "ckpt-7", "ckpt-8"]
    # a new process: new objects, save_counter 0, saves before restoring anything
    w, second = _manager(tmp_path, "restart_b", value=100.0, max_to_keep=3)
    assert second.save() == str(tmp_path / "ckpt-9")
    assert [os.path.basename(p) for p in second.checkpoints] == ["ckpt-7", "ckpt-8", "ckpt-9"]
    second.checkpoint.restore(str(tmp_path / "ckpt-8"))
    assert float(w.numpy()) == 7.0
    # restoring an older checkpoint does not make the next save overwrite a newer one
    assert second.save() == str(tmp_path / "ckpt-10")
    # an explicit lower number is kept, and deletes nothing numbered after it
    assert second.save(checkpoint_number=2) == str(tmp_path / "ckpt-2")
    names = [os.path.basename(p) for p in second.checkpoints]
    assert names == ["ckpt-8", "ckpt-9", "ckpt-10", "ckpt-2"]
    assert second.latest_checkpoint == str(tmp_path / "ckpt-2")  # TensorFlow: the last saved
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["checkpoint.json"] + [n + ".safetensors" for n in names])


def test_checkpoint_name_and_max_to_keep_none(tmp_path):
    v, manager = _manager(tmp_path, "named", max_to_keep=None, checkpoint_name="model")
    paths = [manager.save() for _ in range(4)]
    assert [os.path.basename(p) for p in paths] == ["model-1", "model-2", "model-3", "model-4"]
    assert manager.checkpoints == paths
    with pytest.raises(ValueError, match="max_to_keep"):
        _manager(tmp_path, "named_bad", max_to_keep=0)


def test_keep_checkpoint_every_n_hours(tmp_path, monkeypatch):
    clock = [1_000_000.0]
    monkeypatch.setattr(checkpoint_index, "now", lambda: clock[0])
    v, manager = _manager(tmp_path, "hours", max_to_keep=2, keep_checkpoint_every_n_hours=1.0)
    for _ in range(6):  # saves 30 minutes apart
        manager.save()
        clock[0] += 1800.0
    # TensorFlow's rule: a dropped checkpoint at least an hour after the last preserved
    # one (initially the manager's creation) stays on disk, unlisted
    assert [os.path.basename(p) for p in manager.checkpoints] == ["ckpt-5", "ckpt-6"]
    on_disk = sorted(n for n in os.listdir(tmp_path) if n.endswith(".safetensors"))
    assert on_disk == ["ckpt-3.safetensors", "ckpt-5.safetensors", "ckpt-6.safetensors"]
    # a restarted manager keeps the hours going from the recorded last preserved one
    _, again = _manager(tmp_path, "hours_b", max_to_keep=2, keep_checkpoint_every_n_hours=1.0)
    assert again.save() == str(tmp_path / "ckpt-7")  # after ckpt-3 and ckpt-6 on disk


def test_manager_start_finishes_what_a_killed_save_left(tmp_path):
    v, manager = _manager(tmp_path, "cut_a", max_to_keep=2)
    for _ in range(3):
        manager.save()
    # A save killed between its data file and its index leaves ckpt-4 complete and
    # unlisted; one killed between its index and its deletions, ckpt-1 to delete.
    ckpt = tw.train.Checkpoint(v=v)
    ckpt.write(str(tmp_path / "ckpt-4"))
    ckpt.write(str(tmp_path / "ckpt-1"))
    index = checkpoint_index.read_index(str(tmp_path))
    index["deleting"] = ["ckpt-1"]
    index["all"].insert(0, "ckpt-0")  # and one deleted by hand
    (tmp_path / "checkpoint.json").write_text(json.dumps(index))
    _, again = _manager(tmp_path, "cut_b", max_to_keep=2)
    assert [os.path.basename(p) for p in again.checkpoints] == ["ckpt-2", "ckpt-3", "ckpt-4"]
    assert again.latest_checkpoint == str(tmp_path / "ckpt-4")
    assert "deleting" not in checkpoint_index.read_index(str(tmp_path))
    assert not (tmp_path / "ckpt-1.safetensors").exists()
    assert again.save() == str(tmp_path / "ckpt-5")
    assert sorted(os.listdir(tmp_path)) == ["checkpoint.json", "ckpt-4.safetensors",
                                            "ckpt-5.safetensors"]


def test_a_save_lists_its_deletions_in_the_index_until_they_are_done(tmp_path, monkeypatch):
    v, manager = _manager(tmp_path, "listed_deletions", max_to_keep=1)
    manager.save()
    seen = []
    real_unlink = os.unlink
    monkeypatch.setattr(os, "unlink", lambda path: (
        seen.append(checkpoint_index.read_index(str(tmp_path))), real_unlink(path)))
    manager.save()
    # while ckpt-1 is deleted, the index already names ckpt-2 only, and ckpt-1 to delete
    assert [(i["all"], i.get("deleting")) for i in seen] == [(["ckpt-2"], ["ckpt-1"])]
    assert "deleting" not in checkpoint_index.read_index(str(tmp_path))


def test_a_manager_on_a_read_only_directory_still_starts(tmp_path, monkeypatch):
    v, manager = _manager(tmp_path, "ro_a", max_to_keep=2)
    manager.save()
    tw.train.Checkpoint(v=v).write(str(tmp_path / "ckpt-2"))  # needs recovery

    def read_only(*args, **kwargs):
        raise PermissionError(errno.EROFS, "Read-only file system")
    monkeypatch.setattr(atomic_files, "write_bytes", read_only)
    _, reader = _manager(tmp_path, "ro_b", max_to_keep=2)
    assert reader.latest_checkpoint == str(tmp_path / "ckpt-1")  # the index, as it is
    with pytest.raises(PermissionError):
        reader.save()


# ------------------------------------------------------------------ atomic_files itself

def test_fsync_file_before_rename_and_directory_after(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(
        ("fsync", "dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "file")), real_fsync(fd)))
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append(("replace",)),
                                                     real_replace(a, b)))
    atomic_files.write_bytes(str(tmp_path / "f"), b"data")
    assert calls == [("fsync", "file"), ("replace",), ("fsync", "dir")]
    calls.clear()
    atomic_files.write_bytes(str(tmp_path / "new" / "deeper" / "f"), b"data")
    # two new directories: each parent's entry made durable before the file's rename
    assert calls == [("fsync", "dir"), ("fsync", "dir"), ("fsync", "file"), ("replace",),
                     ("fsync", "dir")]


def test_sweep_spares_live_writers_and_logs_bytes(tmp_path, caplog):
    orphan = tmp_path / ".tmp-1-deadbeef-f"  # a killed writer's: nobody holds its lock
    orphan.write_bytes(b"x" * 1000)
    legacy = tmp_path / ".tmp-k3j2_h1g.safetensors"  # mkstemp's, from earlier versions
    legacy.write_bytes(b"x" * 234)
    (tmp_path / "keep.txt").write_text("not a temporary")
    with atomic_files.atomic_open(str(tmp_path / "f")) as f:
        f.write(b"live")
        live = temporaries(tmp_path)
        assert len(live) == 3
        with caplog.at_level(logging.DEBUG, logger="tensorweave.runtime.atomic_files"):
            assert atomic_files.sweep_temporaries(str(tmp_path)) == 1234
        assert "removed 2 orphaned temporaries" in caplog.text
        assert "1234 bytes reclaimed" in caplog.text
        assert temporaries(tmp_path) == [n for n in live if n not in (orphan.name, legacy.name)]
    assert (tmp_path / "f").read_bytes() == b"live"
    assert sorted(os.listdir(tmp_path)) == ["f", "keep.txt"]


def test_sweep_in_a_users_directory_only_takes_our_temporaries_of_given_names(tmp_path):
    names = [".tmp-someone-elses", ".tmp-12-0badc0de-other.h", ".tmp-12-0badc0de-libm.so"]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    assert atomic_files.sweep_temporaries(str(tmp_path), only_for=["libm.so", "m.h"]) == 1
    assert temporaries(tmp_path) == sorted(names[:2])


def test_without_file_locks_writes_work_and_nothing_is_swept(tmp_path, monkeypatch):
    def no_locks(fd, op):  # an NFS mount without a lock manager
        raise OSError(errno.ENOLCK, "No locks available")
    monkeypatch.setattr(atomic_files.fcntl, "flock", no_locks)
    (tmp_path / ".tmp-1-deadbeef-f").write_bytes(b"x")
    atomic_files.write_bytes(str(tmp_path / "f"), b"data")
    assert (tmp_path / "f").read_bytes() == b"data"
    assert atomic_files.sweep_temporaries(str(tmp_path)) == 0  # cannot tell: keeps it
    assert temporaries(tmp_path) == [".tmp-1-deadbeef-f"]


# ------------------------------------------------------------------ the compile cache

CACHE_WRITER = STALL + textwrap.dedent("""
    import hashlib, random
    from tensorweave.targets.cpu import disk_cache
    keys = [format(i, "064x") for i in range(8)]
    def payload(i):  # 1 KB to 4 MB, the same in every process
        return hashlib.sha256(str(i).encode()).digest() * (32 << (i * 12 // 7))
    order = list(range(len(keys)))
    random.Random(int(sys.argv[1])).shuffle(order)
    disk_cache.load("f" * 64)  # first use, and its sweep, before the kill: only the
    arm()                      # process started after it may take the dead one's file
    print("ready", flush=True)
    for _ in range(int(sys.argv[2])):
        for i in order:
            # False would mean the write failed: e.g. a sweeper took a live temporary
            assert disk_cache.store(keys[i], payload(i)), i
    print("done", flush=True)
""")

CACHE_STARTER = textwrap.dedent("""
    import logging, sys
    logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format="%(message)s")
    import hashlib
    from tensorweave.targets.cpu import disk_cache
    for i in range(8):  # the first use sweeps; entries being rewritten read whole or not
        payload = hashlib.sha256(str(i).encode()).digest() * (32 << (i * 12 // 7))
        assert disk_cache.load(format(i, "064x")) in (None, payload), i
""")


def _payload(i: int) -> bytes:
    import hashlib
    return hashlib.sha256(str(i).encode()).digest() * (32 << (i * 12 // 7))


def test_compile_cache_survives_a_sigkilled_writer_among_four(tmp_path, monkeypatch):
    rng = random.Random(_seed())
    cache = tmp_path / "cache"
    monkeypatch.setenv("TW_CACHE_DIR", str(cache))
    env = {"TW_CACHE_DIR": str(cache)}
    directory = disk_cache.cache_dir()
    for round_ in range(3):
        victim = rng.randrange(4)
        stall = round_ == 0  # once inside a write for sure, then at random moments
        writers = [start(CACHE_WRITER, rng.randrange(1 << 30), 6 if i != victim else 1000,
                         env={**env, "STALL": str(int(stall and i == victim))})
                   for i in range(4)]
        for w in writers:
            wait_for(w, "ready")
        if stall:
            wait_for(writers[victim], "stalled")
        else:
            time.sleep(rng.uniform(0.0, 0.5))
        kill(writers[victim])
        orphans = [n for n in temporaries(directory) if f"-{writers[victim].pid}-" in n]
        if stall:
            assert orphans, "a writer killed inside its write left no temporary"
        # a process starting while three writers are busy with the same entries
        starter = subprocess.run([sys.executable, "-c", CACHE_STARTER], capture_output=True,
                                 text=True, timeout=60,
                                 env={**os.environ, "PYTHONPATH": str(ROOT), **env})
        assert starter.returncode == 0, starter.stderr
        assert not set(orphans) & set(temporaries(directory))
        if orphans:
            assert "bytes reclaimed" in starter.stdout
        for i, w in enumerate(writers):
            if i != victim:
                assert w.stdout.read().strip() == "done"
                assert w.wait(timeout=60) == 0
                w.stdout.close()
        assert temporaries(directory) == []
        for i in range(8):
            assert disk_cache.load(format(i, "064x")) == _payload(i)
