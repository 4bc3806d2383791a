"""TensorFlow 1's ``tf.gfile`` (``tf.compat.v1.gfile``): `tw.io.gfile` under its old
CamelCase names (``Exists``, ``Glob``, ``MakeDirs``, ``Open``, ``FastGFile``...)."""

from __future__ import annotations

from .gfile import (
    GFile,
    copy,
    exists,
    glob,
    isdir,
    listdir,
    makedirs,
    mkdir,
    remove,
    rename,
    rmtree,
    stat,
    walk,
)

Copy = copy
DeleteRecursively = rmtree
Exists = exists
FastGFile = GFile
Glob = glob
IsDirectory = isdir
ListDirectory = listdir
MakeDirs = makedirs
MkDir = mkdir
Open = GFile
Remove = remove
Rename = rename
Stat = stat
Walk = walk

__all__ = ["Copy", "DeleteRecursively", "Exists", "FastGFile", "GFile", "Glob", "IsDirectory",
           "ListDirectory", "MakeDirs", "MkDir", "Open", "Remove", "Rename", "Stat", "Walk"]


def __dir__() -> list[str]:
    return sorted(__all__)
