"""The static side of dataflow control flow: which loop frame each node of a partition
runs in, and where its values live.

A graph lowered by `tensorweave.passes.lower_control_flow` holds `Enter`, `Exit`,
`NextIteration` (with `NextIterationSource`), `Switch`, `Merge` and `LoopCond` nodes.
At run time the executor keeps one *frame instance* per run of a loop (per iteration of
the enclosing frame) and, in it, one state per iteration in flight; this module
computes, once per partition, what those states look like:

- every node has an *execution frame*: the frame its inputs live in (all of them: a
  node that mixes frames is a `CompileError`), the root frame for nodes without inputs;
  a node with only control inputs runs in the frame of their outputs. An ``Enter`` runs
  in the enclosing frame and its output lives in the child frame ``frame_name``; an
  ``Exit`` runs in a loop frame and its output lives in the enclosing one; a
  ``NextIterationSource`` lives in the frame of the ``Merge`` it feeds;
- values are numbered per frame (*slots*): an iteration state is a list of one entry per
  slot of its frame, plus the pending-input count of each node of the frame;
- the successor edges say which outputs each consumer reads, so that deadness travels
  per output (a `Switch` is live but one of its outputs is dead).

`DEAD` is the value of a dead tensor.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..compiler.ir import Graph, Node, Value
from ..compiler.types import TensorType
from ..errors import CompileError

# What the executor does with a node (everything not listed runs its kernel).
NORMAL, SWITCH, MERGE, ENTER, EXIT, NEXT_ITERATION, NEXT_SOURCE, LOOP_COND, SEND, RECV = range(10)
KINDS = {"Switch": SWITCH, "Merge": MERGE, "Enter": ENTER, "Exit": EXIT,
         "NextIteration": NEXT_ITERATION, "NextIterationSource": NEXT_SOURCE,
         "LoopCond": LOOP_COND}
# Send and Recv are run by the executor itself only in graphs with control flow: their
# keys then carry the frame and iteration, and a dead tensor travels as `DEAD`.
TRANSFER_KINDS = {"Send": SEND, "Recv": RECV}


class _Dead:
    """The type of `DEAD`; pickles to the same object (a rendezvous may serialize it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEAD"

    def __reduce__(self) -> str:
        return "DEAD"


DEAD = _Dead()
"""The value of a dead tensor (the untaken output of a Switch, and what depends on it)."""

ROOT = 0  # index of the root frame


class StaticFrame:
    """One loop frame of a partition (the root frame is the whole graph): its name, its
    enclosing frame, how many iterations may be in flight, how many slots and nodes an
    iteration state holds, their initial pending counts, and how many Enter nodes feed
    each instance."""

    __slots__ = ("index", "name", "parent", "parallel_iterations", "num_slots", "nodes",
                 "pending", "num_enters")

    def __init__(self, index: int, name: str, parent: int | None, parallel_iterations: int) -> None:
        self.index = index
        self.name = name
        self.parent = parent
        self.parallel_iterations = parallel_iterations
        self.num_slots = 0
        self.nodes: list[int] = []  # global node indices, by local index
        self.pending: list[int] = []  # initial pending count, by local index
        self.num_enters = 0

    def __repr__(self) -> str:
        return f"<StaticFrame {self.name or '(root)'}: {len(self.nodes)} nodes>"


class Edge:
    """What node `dst` reads from one predecessor: the predecessor's output indices it
    reads as data (`outputs`), whether it also has a control edge from it, and, for a
    Merge, which of its inputs those are (`merge_inputs`: (input index, output index))."""

    __slots__ = ("dst", "outputs", "control", "merge_inputs")

    def __init__(self, dst: int, outputs: tuple[int, ...], control: bool,
                 merge_inputs: tuple[tuple[int, int], ...]) -> None:
        self.dst = dst
        self.outputs = outputs
        self.control = control
        self.merge_inputs = merge_inputs


class FrameLayout:
    """The frames, slots and edges of a partition whose nodes are `nodes` (topological
    order); `reads[i]` are the values node i reads (inputs, then what its regions
    capture from this graph)."""

    def __init__(self, graph: Graph, nodes: Sequence[Node], reads: Sequence[Sequence[Value]]) -> None:
        self.graph = graph
        self.nodes = nodes
        self.index = {id(n): i for i, n in enumerate(nodes)}
        self.kinds = [KINDS.get(n.op, NORMAL) for n in nodes]
        self.control_flow = any(k != NORMAL for k in self.kinds)
        if self.control_flow:
            self.kinds = [TRANSFER_KINDS.get(n.op, k) for n, k in zip(nodes, self.kinds)]
        self.frames = [StaticFrame(ROOT, "", None, 1)]
        self._children: dict[tuple[int, str], int] = {}
        self.frame = [ROOT] * len(nodes)      # execution frame
        self.out_frame = [ROOT] * len(nodes)  # frame of the outputs
        self._assign_frames(reads)
        self._assign_slots(graph)
        self.local = [0] * len(nodes)
        for i, f in enumerate(self.frame):
            self.local[i] = len(self.frames[f].nodes)
            self.frames[f].nodes.append(i)
        self.in_slots = [tuple(self.slot[v] for v in n.inputs) for n in nodes]
        self.out_slots = [tuple(self.slot[v] for v in n.outputs) for n in nodes]
        self.result_slots = [self._result_slot(graph, v) for v in graph.results]
        self.source_of = self._pair_iterations()
        self.successors, self.edges, deps = self._edges(reads)
        for i, f in enumerate(self.frame):
            self.frames[f].pending.append(deps[i])
        self.roots = [i for i in self.frames[ROOT].nodes
                      if deps[i] == 0 and self.kinds[i] != NEXT_SOURCE]

    # ----------------------------------------------------------------------- frames
    def _child(self, parent: int, node: Node) -> int:
        """The static frame that `node` (an Enter run in frame `parent`) enters."""
        name = node.attrs["frame_name"]
        key = (parent, name)
        k = self._children.get(key)
        p = node.attrs["parallel_iterations"]
        if k is None:
            k = self._children[key] = len(self.frames)
            self.frames.append(StaticFrame(k, name, parent, p))
        elif self.frames[k].parallel_iterations != p:
            raise CompileError(f"the Enter nodes of frame '{name}' disagree on "
                               f"parallel_iterations ({self.frames[k].parallel_iterations} "
                               f"and {p})", **node.error_context())
        self.frames[k].num_enters += 1
        return k

    def _assign_frames(self, reads: Sequence[Sequence[Value]]) -> None:
        value_frame: dict[Value, int] = {}
        unresolved: dict[int, Node] = {}  # NextIterationSources not placed in a frame yet
        for i, n in enumerate(self.nodes):
            kind = self.kinds[i]
            data = reads[i][:1] if kind == NEXT_ITERATION else reads[i]  # not the token
            found: dict[int, str] = {}
            for v in data:
                f = value_frame.get(v, ROOT if v.producer is None else None)
                if f is not None:
                    found.setdefault(f, v.name)
            for c in n.control_inputs:
                j = self.index.get(id(c))
                if j is not None:
                    found.setdefault(self.out_frame[j], f"^{c.name}")
            if len(found) > 1:
                where = ", ".join(f"{what} in {self._frame_label(f)}" for f, what in found.items())
                raise CompileError(f"the node reads values of different loop frames ({where})",
                                   **n.error_context())
            if kind == NEXT_SOURCE:
                unresolved[i] = n
                continue
            f = next(iter(found), ROOT)
            for v in data:  # a Merge places the NextIterationSource it reads
                j = self.index.get(id(v.producer)) if v.producer is not None else None
                if j in unresolved:
                    del unresolved[j]
                    self._set_frame(j, f, f, value_frame)
            out = f
            if kind == ENTER:
                out = self._child(f, n)
            elif kind in (EXIT, NEXT_ITERATION) and f == ROOT:
                raise CompileError(f"{n.op} outside any loop frame (its input is not in a "
                                   f"frame that an Enter opened)", **n.error_context())
            elif kind == EXIT:
                out = self.frames[f].parent
            self._set_frame(i, f, out, value_frame)
        if unresolved:
            n = next(iter(unresolved.values()))
            raise CompileError("this NextIterationSource feeds no Merge", **n.error_context())

    def _set_frame(self, i: int, frame: int, out: int, value_frame: dict[Value, int]) -> None:
        self.frame[i] = frame
        self.out_frame[i] = out
        for v in self.nodes[i].outputs:
            value_frame[v] = out

    def _frame_label(self, f: int) -> str:
        return "the root frame" if f == ROOT else f"frame '{self.frames[f].name}'"

    # ------------------------------------------------------------------------ slots
    def _assign_slots(self, graph: Graph) -> None:
        self.slot: dict[Value, int] = {}
        root = self.frames[ROOT]
        for a in graph.args:
            self.slot[a] = root.num_slots
            root.num_slots += 1
        self.num_args = len(graph.args)
        for i, n in enumerate(self.nodes):
            frame = self.frames[self.out_frame[i]]
            for v in n.outputs:
                self.slot[v] = frame.num_slots
                frame.num_slots += 1

    def _result_slot(self, graph: Graph, v: Value) -> int:
        j = self.index.get(id(v.producer)) if v.producer is not None else None
        if j is not None and self.out_frame[j] != ROOT:
            raise CompileError(f"result '{v.name}' of '{graph.name}' is computed inside loop "
                               f"frame '{self.frames[self.out_frame[j]].name}' (return it "
                               f"through an Exit)")
        return self.slot[v]

    # -------------------------------------------------------- NextIteration pairs
    def _pair_iterations(self) -> dict[int, int]:
        """For each NextIteration sink, the NextIterationSource its token comes from;
        checks the back edges' shapes."""
        pairs: dict[int, int] = {}
        paired: set[int] = set()
        self._check_source_uses()
        for i, n in enumerate(self.nodes):
            if self.kinds[i] != NEXT_ITERATION:
                continue
            token = n.inputs[1]
            j = self.index.get(id(token.producer)) if token.producer is not None else None
            if j is None or self.kinds[j] != NEXT_SOURCE or token.index != 1:
                raise CompileError("the token of a NextIteration must be output 1 of a "
                                   "NextIterationSource", **n.error_context())
            if j in paired:
                raise CompileError(f"NextIterationSource '{token.producer.name}' is paired with "
                                   f"two NextIteration nodes", **n.error_context())
            if self.frame[j] != self.frame[i]:
                raise CompileError(f"NextIteration runs in {self._frame_label(self.frame[i])} "
                                   f"but its source feeds {self._frame_label(self.frame[j])}",
                                   **n.error_context())
            want, got = self.nodes[j].attrs["value_type"], n.inputs[0].type
            if isinstance(want, TensorType) and isinstance(got, TensorType):
                compatible = want.is_compatible_with(got)
            else:
                compatible = want == got
            if not compatible:
                raise CompileError(f"NextIteration passes {got} to a source of {want}",
                                   **n.error_context())
            pairs[i] = j
            paired.add(j)
        return pairs

    def _check_source_uses(self) -> None:
        """Only Merges read a NextIterationSource's value, only NextIterations (as their
        token) its token."""
        for n in self.nodes:
            for k, v in enumerate(n.inputs):
                source = v.producer
                if source is None or source.op != "NextIterationSource":
                    continue
                ok = (n.op == "Merge") if v.index == 0 else (n.op == "NextIteration" and k == 1)
                if not ok:
                    raise CompileError(f"output {v.index} of NextIterationSource "
                                       f"'{source.name}' is read by {n.op} '{n.name}' (only a "
                                       f"Merge reads the value, only a NextIteration the token)",
                                       **n.error_context())

    # ------------------------------------------------------------------------ edges
    def _edges(self, reads: Sequence[Sequence[Value]]) -> tuple[list[list[int]], list[list[Edge]],
                                                                 list[int]]:
        """Successors of each node (distinct), what each reads from it, and the number
        of pending inputs of each node (a Merge counts its data inputs)."""
        n_nodes = len(self.nodes)
        successors: list[list[int]] = [[] for _ in range(n_nodes)]
        edges: list[list[Edge]] = [[] for _ in range(n_nodes)]
        deps = [0] * n_nodes
        for j, n in enumerate(self.nodes):
            kind = self.kinds[j]
            data = reads[j][:1] if kind == NEXT_ITERATION else reads[j]
            outputs: dict[int, list[int]] = {}
            merge_inputs: dict[int, list[tuple[int, int]]] = {}
            for pos, v in enumerate(data):
                i = self.index.get(id(v.producer)) if v.producer is not None else None
                if i is None:
                    continue
                outputs.setdefault(i, []).append(v.index)
                if kind == MERGE:
                    merge_inputs.setdefault(i, []).append((pos, v.index))
            control = {self.index[id(c)] for c in n.control_inputs if id(c) in self.index}
            if kind == MERGE:
                if control or any(v.producer is None for v in n.inputs):
                    raise CompileError("a Merge reads only node outputs (no graph arguments) "
                                       "and has no control inputs", **n.error_context())
                deps[j] = len(n.inputs)
            else:
                deps[j] = len(set(outputs) | control)
            for i in sorted(set(outputs) | control):
                successors[i].append(j)
                edges[i].append(Edge(j, tuple(outputs.get(i, ())), i in control,
                                     tuple(merge_inputs.get(i, ()))))
        return successors, edges, deps


__all__ = ["DEAD", "ENTER", "EXIT", "KINDS", "LOOP_COND", "MERGE", "NEXT_ITERATION", "NEXT_SOURCE",
           "NORMAL", "RECV", "ROOT", "SEND", "SWITCH", "Edge", "FrameLayout", "StaticFrame"]
