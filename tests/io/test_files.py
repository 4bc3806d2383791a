"""tw.io.gfile and the file ops (read_file, write_file, matching_files): TensorFlow
2.21's results and error classes on the same calls (checked by hand against it)."""

import numpy as np
import pytest

import tensorweave as tw

gfile = tw.io.gfile


def test_gfile_reads_and_writes_like_tensorflow(tmp_path):
    p = str(tmp_path / "t.txt")
    with gfile.GFile(p, "w") as f:
        f.write("a\r\nb\n\nc\rd\n")
        f.write(b"last")
    assert gfile.GFile(p).read() == "a\r\nb\n\nc\rd\nlast"  # no newline translation
    assert gfile.GFile(p, "rb").read() == b"a\r\nb\n\nc\rd\nlast"
    assert gfile.GFile(p).readlines() == ["a\n", "b\n", "\n", "cd\n", "last"]  # (TF: \r dropped)
    assert list(gfile.GFile(p, "rb")) == [b"a\n", b"b\n", b"\n", b"cd\n", b"last"]
    with gfile.GFile(p, "a") as f:
        f.write("!")
    assert gfile.stat(p).length == 15 and gfile.GFile(p).size() == 15
    f = gfile.GFile(p, "rb")
    f.seek(2)
    assert f.read(2) == b"\nb" and f.tell() == 4
    f.close()


def test_gfile_directories_and_errors(tmp_path):
    d = tmp_path / "x"
    gfile.makedirs(str(d / "y" / "z"))
    gfile.makedirs(str(d / "y"))  # (exists: fine)
    gfile.mkdir(str(d))
    assert gfile.isdir(str(d)) and sorted(gfile.listdir(str(d))) == ["y"]
    (d / "a.txt").write_bytes(b"1")
    (d / ".hidden.txt").write_bytes(b"2")
    assert gfile.glob(str(d / "*.txt")) == [str(d / ".hidden.txt"), str(d / "a.txt")]
    gfile.copy(str(d / "a.txt"), str(d / "b.txt"))
    with pytest.raises(tw.errors.AlreadyExistsError, match="file already exists"):
        gfile.copy(str(d / "a.txt"), str(d / "b.txt"))
    with pytest.raises(tw.errors.AlreadyExistsError):
        gfile.rename(str(d / "a.txt"), str(d / "b.txt"))
    gfile.rename(str(d / "a.txt"), str(d / "b.txt"), overwrite=True)
    assert not gfile.exists(str(d / "a.txt")) and gfile.exists(str(d / "b.txt"))
    with pytest.raises(tw.errors.NotFoundError, match="nope; No such file or directory"):
        gfile.remove(str(d / "nope"))
    with pytest.raises(tw.errors.FailedPreconditionError, match="Is a directory"):
        gfile.remove(str(d / "y"))
    with pytest.raises(tw.errors.NotFoundError, match="Could not find directory"):
        gfile.listdir(str(d / "nope"))
    with pytest.raises(tw.errors.NotFoundError):
        gfile.GFile(str(d / "nope")).read()
    gfile.rmtree(str(d))
    assert not gfile.exists(str(d))
    with pytest.raises(tw.errors.UnimplementedError, match="'gs' file system"):
        gfile.exists("gs://bucket/x")
    assert gfile.exists("file://" + str(tmp_path))


def test_file_ops_eagerly(tmp_path):
    p = str(tmp_path / "sub" / "f.bin")
    tw.io.write_file(p, b"\x00\x01abc")
    assert tw.io.read_file(p).numpy() == b"\x00\x01abc"
    (tmp_path / "g.bin").write_bytes(b"")
    found = tw.io.matching_files(str(tmp_path / "*.bin")).numpy().tolist()
    assert found == [str(tmp_path / "g.bin").encode()]
    assert tw.io.matching_files(str(tmp_path / "*.zzz")).shape == (0,)
    with pytest.raises(tw.errors.NotFoundError, match="nope; No such file"):
        tw.io.read_file(str(tmp_path / "nope"))


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_compiled_reads_see_the_file_as_it_is_when_they_run(tmp_path, target):
    p = str(tmp_path / "v.bin")

    @tw.compile(target=target)
    def read_and_double():
        return tw.io.decode_raw(tw.io.read_file(p), tw.float32) * 2.0

    @tw.compile(target=target)
    def write(x):
        tw.io.write_file(p, x)
        return tw.constant(0)

    write(np.array(np.float32([1.0, 2.0]).tobytes(), object))
    assert read_and_double().tolist() == [2.0, 4.0]
    write(np.array(np.float32([5.0]).tobytes(), object))  # (never folded at compile time)
    assert read_and_double().tolist() == [10.0]
