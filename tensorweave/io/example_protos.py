"""``tw.train.Example`` and its parts: protobuf message classes of TensorFlow's
``tensorflow/core/example/{feature,example}.proto``, to build records to write.

The classes are made at first use from descriptors written here (the schema is
`example_wire`'s docstring), in a descriptor pool of their own, so they are real
protobuf messages with TensorFlow's full names (``tensorflow.Example``):
``SerializeToString``, ``FromString``, text format and ``features.feature["x"]
.float_list.value.append(...)`` work as in TensorFlow, and they do not clash with
TensorFlow's own classes when both are imported. They need the ``protobuf`` package
(installed with tensorboard, the ``tensorweave[tensorboard]`` extra); parsing records
(`parsing`) does not.
"""

from __future__ import annotations

import threading
from typing import Any

_NAMES = ("BytesList", "FloatList", "Int64List", "Feature", "Features", "FeatureList",
          "FeatureLists", "Example", "SequenceExample")
_DOCS = {
    "BytesList": "A list of byte strings (``value``), one kind of Feature.",
    "FloatList": "A list of float32 numbers (``value``, packed), one kind of Feature.",
    "Int64List": "A list of int64 numbers (``value``, packed), one kind of Feature.",
    "Feature": "One of ``bytes_list``, ``float_list`` or ``int64_list`` (oneof ``kind``).",
    "Features": "A map ``feature`` from names to Features.",
    "FeatureList": "A sequence of Features (``feature``): one step each.",
    "FeatureLists": "A map ``feature_list`` from names to FeatureLists.",
    "Example": "A record of named features (``features``): what tf.io.parse_example reads.",
    "SequenceExample": "``context`` Features and per-step ``feature_lists``.",
}
_classes: dict[str, type] = {}
_lock = threading.Lock()


def _file_descriptor() -> Any:
    from google.protobuf import descriptor_pb2 as d
    f = d.FileDescriptorProto(name="tensorweave/example.proto", package="tensorflow",
                              syntax="proto3")
    lab_rep = d.FieldDescriptorProto.LABEL_REPEATED
    lab_opt = d.FieldDescriptorProto.LABEL_OPTIONAL
    t = d.FieldDescriptorProto

    def message(name: str, fields: list[tuple], nested: list | None = None,
                oneof: str | None = None, map_entry: bool = False) -> Any:
        m = d.DescriptorProto(name=name)
        if map_entry:
            m.options.map_entry = True
        if oneof:
            m.oneof_decl.add(name=oneof)
        for fname, number, ftype, label, type_name, packed in fields:
            field = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                field.type_name = type_name
            if packed:
                field.options.packed = True
            if oneof and label == lab_opt and not map_entry:
                field.oneof_index = 0
        for n in nested or []:
            m.nested_type.append(n)
        return m

    f.message_type.append(message("BytesList", [("value", 1, t.TYPE_BYTES, lab_rep, "", False)]))
    f.message_type.append(message("FloatList", [("value", 1, t.TYPE_FLOAT, lab_rep, "", True)]))
    f.message_type.append(message("Int64List", [("value", 1, t.TYPE_INT64, lab_rep, "", True)]))
    f.message_type.append(message("Feature", [
        ("bytes_list", 1, t.TYPE_MESSAGE, lab_opt, ".tensorflow.BytesList", False),
        ("float_list", 2, t.TYPE_MESSAGE, lab_opt, ".tensorflow.FloatList", False),
        ("int64_list", 3, t.TYPE_MESSAGE, lab_opt, ".tensorflow.Int64List", False)],
        oneof="kind"))

    def map_of(owner: str, value_type: str) -> Any:
        return message("FeatureEntry" if owner != "FeatureLists" else "FeatureListEntry", [
            ("key", 1, t.TYPE_STRING, lab_opt, "", False),
            ("value", 2, t.TYPE_MESSAGE, lab_opt, value_type, False)], map_entry=True)

    f.message_type.append(message("Features", [
        ("feature", 1, t.TYPE_MESSAGE, lab_rep, ".tensorflow.Features.FeatureEntry", False)],
        nested=[map_of("Features", ".tensorflow.Feature")]))
    f.message_type.append(message("FeatureList", [
        ("feature", 1, t.TYPE_MESSAGE, lab_rep, ".tensorflow.Feature", False)]))
    f.message_type.append(message("FeatureLists", [
        ("feature_list", 1, t.TYPE_MESSAGE, lab_rep,
         ".tensorflow.FeatureLists.FeatureListEntry", False)],
        nested=[map_of("FeatureLists", ".tensorflow.FeatureList")]))
    f.message_type.append(message("Example", [
        ("features", 1, t.TYPE_MESSAGE, lab_opt, ".tensorflow.Features", False)]))
    f.message_type.append(message("SequenceExample", [
        ("context", 1, t.TYPE_MESSAGE, lab_opt, ".tensorflow.Features", False),
        ("feature_lists", 2, t.TYPE_MESSAGE, lab_opt, ".tensorflow.FeatureLists", False)]))
    return f


def _build() -> dict[str, type]:
    try:
        from google.protobuf import descriptor_pool, message_factory
    except ImportError as e:
        raise ImportError(f"tw.train.Example and its parts are protobuf messages and need the "
                          f"'protobuf' package, which is not installed ({e}); install it with: "
                          f"pip install protobuf (or 'tensorweave[tensorboard]'). Parsing "
                          f"records with tw.io.parse_example does not need it.") from None
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file_descriptor())
    out = {}
    for name in _NAMES:
        cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tensorflow.{name}"))
        cls.__module__ = "tensorweave.train"
        cls.__doc__ = _DOCS[name]
        out[name] = cls
    return out


def message_class(name: str) -> type:
    """The protobuf class ``tensorflow.<name>`` (one of `_NAMES`)."""
    if not _classes:
        with _lock:
            if not _classes:
                _classes.update(_build())
    return _classes[name]


NAMES = _NAMES
