"""The IR, the op registry, the verifier, the text form and the pipeline driver."""

from . import dtypes
from .equality import graph_diff, graphs_equal
from .ir import Graph, Node, SourceLoc, Value
from .parser import parse_graph, parse_module
from .printer import print_graph, print_module
from .registry import AttrSpec, OpDef, all_ops, attr, def_op, get_op, register_gradient
from .types import RESOURCE, ResourceType, TensorType, Type

__all__ = ["graph_diff", "graphs_equal", "parse_graph", "parse_module", "print_graph",
           "print_module", "dtypes", "Graph", "Node", "SourceLoc", "Value", "AttrSpec", "OpDef", "all_ops",
           "attr", "def_op", "get_op", "register_gradient", "RESOURCE", "ResourceType",
           "TensorType", "Type"]
