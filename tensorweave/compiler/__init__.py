"""The IR, the op registry, the verifier, the text form and the pipeline driver."""

from . import dtypes
from .ir import Graph, Node, SourceLoc, Value
from .registry import AttrSpec, OpDef, all_ops, attr, def_op, get_op, register_gradient
from .types import RESOURCE, ResourceType, TensorType, Type

__all__ = ["dtypes", "Graph", "Node", "SourceLoc", "Value", "AttrSpec", "OpDef", "all_ops",
           "attr", "def_op", "get_op", "register_gradient", "RESOURCE", "ResourceType",
           "TensorType", "Type"]
