"""The command line's bad input is one line on stderr and a non-zero status, never a
Python traceback: an IR file that is a directory or not UTF-8, an output path that
cannot be written, unnamed --signature entries that do not match the parameters."""

from __future__ import annotations

import textwrap

import pytest

from tensorweave.cli import main

MODULE = textwrap.dedent("""
    import tensorweave as tw

    @tw.compile(input_signature=[tw.TensorSpec([2], tw.float32)])
    def f(x):
        return x * 2

    def g(x, y):
        return x + y
""")


@pytest.fixture
def module(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(MODULE)
    return path


def _error(capsys, *argv) -> str:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code != 0
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tensorweave: error:"), err
    return lines[0]


def test_an_ir_file_that_is_a_directory(tmp_path, capsys):
    (tmp_path / "g.mlir").mkdir()
    err = _error(capsys, "dump", tmp_path / "g.mlir")
    assert "g.mlir" in err and "directory" in err.lower()


def test_an_ir_file_that_is_not_utf8(tmp_path, capsys):
    (tmp_path / "g.mlir").write_bytes(b"\xff\xfe func.func")
    err = _error(capsys, "dump", tmp_path / "g.mlir")
    assert "g.mlir" in err and "UTF-8" in err


def test_dump_output_that_is_a_directory(module, tmp_path, capsys):
    err = _error(capsys, "dump", f"{module}:f", "-o", tmp_path)
    assert str(tmp_path) in err


def test_aot_output_directory_that_cannot_be_made(module, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    err = _error(capsys, "aot", f"{module}:f", "-o", tmp_path / "file" / "out")
    assert "file" in err


@pytest.mark.parametrize("entries", [["f32[2]"], ["f32[2]", "f32[2]", "f32[2]"]])
def test_unnamed_signature_entries_must_match_the_parameters(module, capsys, entries):
    err = _error(capsys, "dump", f"{module}:g", "--signature", *entries)
    assert f"{len(entries)}" in err and "(x, y)" in err
