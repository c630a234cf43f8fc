"""Float32 that is deliberate where the activations meet it (``POLICY.md`` F1, look-alikes):
a rotary or frequency table (built in float32 on purpose and cast where it is applied), a
low-bit format's scales, a parameter's or buffer's storage, a module the model keeps in
float32, values that become integers or feed the loss, and values handed to code that
casts back (a function of this file or another, a sub-layer whose forward casts back)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dtype_lint.concepts.activations import LOSS_SIDE_WORDS, STORAGE_CALLS
from dtype_lint.concepts.float32 import INTEGER_RESULTS
from dtype_lint.concepts.layer_facts import key_of, layer_facts
from dtype_lint.core.calls import callee_name
from dtype_lint.core.deferred import cst
from dtype_lint.core.rule import Check
from dtype_lint.core.traversal import descendants
from dtype_lint.frameworks.casts import TYPE_CAST_METHODS

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext
    from dtype_lint.core.options import Options

# Names that say a value routes tokens to experts: a router's float32 is deliberate (its
# outputs are cast back where the experts' outputs are combined).
ROUTER_WORDS = ("router", "routing")
# Names that say a value is a rotary/frequency table (or a call builds one): such tables are
# built in float32 on purpose and cast where they are applied to activations.
TABLE_WORDS = ("rope", "rotary", "freq")
# Functions whose result is a table of phases or frequencies: what feeds them is computed
# in float32 on purpose (sin/cos of large positions lose everything in half precision).
_TABLE_FUNCTIONS = frozenset({"exp", "sin", "cos", "polar", "exp2", "sincos"})


def _elsewhere_casts_back(func: cst.BaseExpression, ctx: FileContext) -> bool:
    """A function imported from another file whose body casts back (the project model)."""
    from dtype_lint.core.model.summary import FunctionSummary

    written = ctx.module.code_for_node(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
    if ctx.view is None or not written:
        return False
    qualified = _whole_file_name(written, ctx)
    if "." not in qualified:
        return False
    found = ctx.view.resolve(qualified)
    return found is not None and isinstance(found.node, FunctionSummary) and ctx.view.casts_back(found)


def _whole_file_name(written: str, ctx: FileContext) -> str:
    """A dotted name as the file writes it, its head written out through the whole file's
    imports (the project model's summary of the text: the prefilter may have left the
    import out of what LibCST parsed)."""
    from dtype_lint.core.model.project import qualify

    return qualify(ctx.view.own(ctx.source or ctx.module.code, ctx.file_tree()), written) if ctx.view else written


def _layer_object(func: cst.BaseExpression, facts, cls: str | None, ctx: FileContext) -> bool:
    """Whether a callee is an object called, a layer as far as the file shows (``block``
    in ``for block in self.blocks``, ``self.attn``), not a function of the file, a method
    of the class or an imported function."""
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        return not facts.has_method(cls, func.attr.value)
    if isinstance(func, cst.Name):
        return func.value not in facts.top_functions and ctx.resolve(func) == func.value
    return False


def _sublayer_casts_back(constructors: list[str], facts, ctx: FileContext) -> bool:
    """Whether every layer class stored in a ``self.<name>`` casts its result back in its
    forward: a class of this file by the layer facts, one of another by the project
    model's reading of its file."""
    from dtype_lint.core.model.summary import ClassSummary

    if not constructors:
        return False
    for written in constructors:
        head, dot, rest = written.partition(".")
        if not dot and head in facts.classes:
            if facts.has_method(head, "forward") or facts.has_method(head, "__call__"):
                if not (facts.callee_casts_back(head, "forward") or facts.callee_casts_back(head, "__call__")):
                    return False
                continue
            # no forward in the file: the one it inherits from a class of another file
            found = ctx.view.local(ctx.source or ctx.module.code, head, ctx.file_tree()) if ctx.view else None
            if found is None or not ctx.view.casts_back(found):
                return False
            continue
        qualified = _whole_file_name(written, ctx)
        found = ctx.view.resolve(qualified) if ctx.view is not None and "." in qualified else None
        if found is None or not isinstance(found.node, ClassSummary) or not ctx.view.casts_back(found):
            return False
    return True


def deliberate_float32(pin: cst.CSTNode, function: cst.FunctionDef, parents: dict[int, cst.CSTNode],
                       ctx: FileContext, options: Options) -> bool:
    """Whether the float32 value the pin makes is deliberate: the function is quantised
    code (``concepts.quantised``), the value is stored as a parameter or buffer, the cast's
    result is unused (``self.vae.to(torch.float32)``: only a module casts in place), or
    by where the value flows within the
    function (directly, or through the names it is assigned to): into a sin/cos/exp
    table, into integers (``.long()``, ``bucketize``: coordinates made into indices),
    into a function of this file that casts its result back, or into logits (a name
    saying so: a router's or a loss's), and not applied to a sub-layer
    (``self.proj(table)``) there. A function or class named for a rotary or frequency
    table builds one. Such a value is handed on, to be cast where
    it is applied, and so is a table handed to a layer beside its input
    (``block(h, rotary_emb=table)``). Nor in a module the file's model keeps in float32
    by name (``_keep_in_fp32_modules``): its weights are float32 too, nor in a private
    helper whose every caller casts its result back."""
    facts = layer_facts(ctx, options)
    cls = ctx.classes[-1].name if ctx.classes else None
    if any(word in name.lower() for name in (function.name.value, cls or "") for word in TABLE_WORDS):
        return True  # the function or its class says it builds a rotary or frequency table
    if facts.quantised(key_of(ctx)):
        return True  # a low-bit format's scales, tables or dequantised values
    if facts.kept_float32(cls):
        return True  # the model keeps this module in float32 (`_keep_in_fp32_modules`)
    if facts.results_cast_back(key_of(ctx)):
        return True  # a private helper whose every caller casts its result back
    node = parents.get(id(pin))
    while node is not None and not isinstance(node, cst.BaseStatement):
        if isinstance(node, cst.Call):
            name = callee_name(node)
            if name in STORAGE_CALLS:
                return True  # a parameter's or buffer's storage dtype
            if name in TYPE_CAST_METHODS and isinstance(parents.get(id(node)), cst.Expr):
                return True  # result unused: an in-place cast, which only a module has
        node = parents.get(id(node))
    starts, seen, deliberate = [pin], set(), False
    body_names: list[cst.Name] | None = None  # the function's names, read once
    for _ in range(8):
        names: set[str] = set()
        for start in starts:
            node, child = parents.get(id(start)), start
            while node is not None and not isinstance(node, cst.BaseStatement):
                if isinstance(node, cst.Call):
                    func = node.func
                    name = callee_name(node)
                    if name in INTEGER_RESULTS:
                        deliberate = True
                        break  # integers from here on: nothing float32 flows further
                    table = name is not None and any(word in name.lower() for word in TABLE_WORDS)
                    deliberate = deliberate or name in _TABLE_FUNCTIONS or table
                    if table:
                        node, child = parents.get(id(node)), node
                        continue  # a table builder (`self.rope(..., dtype=float32)`), not a layer applied
                    if (deliberate and isinstance(child, cst.Arg) and child is not node.args[0]
                            and _layer_object(func, facts, cls, ctx)):
                        # a table handed to a layer beside its input (`block(h, rotary_emb=table)`,
                        # `checkpoint(block, h, table)`): the layer applies it where it casts
                        # it; its result follows its own input and weights
                        break
                    if child is not func and name is not None and facts.callee_casts_back(
                            cls if isinstance(func, cst.Attribute) else None, name):
                        return True  # handed to a function of this file that casts back
                    if child is not func and _elsewhere_casts_back(func, ctx):
                        return True  # handed to a function of another file that casts back
                    if (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                            and func.value.value == "self" and child is not func and facts.is_sublayer(cls, name)):
                        # applied to a sub-layer here: in the layer's dtype, unless the
                        # sub-layer's forward casts its result back (a norm computing in
                        # float32 and returning the input's dtype)
                        return _sublayer_casts_back(facts.stored_constructors(cls, name), facts, ctx)
                    if (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                            and func.value.value == "self" and child is not func and _sublayer_casts_back(
                                facts.stored_constructors(cls, name, layers_only=False), facts, ctx)):
                        return True  # a layer of another file whose forward casts back
                    if (isinstance(func, cst.Call) and child is not func
                            and facts.layer_constructor_name(ctx.resolve(func.func))):
                        return False  # applied to a layer made in place (`nn.Dense(8)(x)`)
                if isinstance(node, cst.Assign):
                    targets = {n.value for t in node.targets for n in names_in(t.target)}
                    deliberate = deliberate or any(word in t.lower() for t in targets
                                                   for word in LOSS_SIDE_WORDS + ROUTER_WORDS + TABLE_WORDS)
                    names |= targets
                    break
                node, child = parents.get(id(node)), node
        names -= seen
        if not names:
            break
        seen |= names
        body_names = names_in(function.body) if body_names is None else body_names
        starts = [n for n in body_names if n.value in names and _read(n, parents)]
    return deliberate


def names_in(root: cst.CSTNode) -> list[cst.Name]:
    return [node for node in descendants(root) if isinstance(node, cst.Name)]


def _read(name: cst.Name, parents: dict[int, cst.CSTNode]) -> bool:
    """Whether the name is read (not bound by an assignment target, nor an attribute's
    or keyword's name)."""
    parent = parents.get(id(name))
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return False
    if isinstance(parent, cst.Arg) and parent.keyword is name:
        return False
    node = parent
    while node is not None and not isinstance(node, cst.BaseStatement):
        if isinstance(node, (cst.AssignTarget, cst.CompFor)):
            return False
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.Call)):
            return True
        node = parents.get(id(node))
    return True


QUANTISED_CODE = Check("quantised code (its float32 is the low-bit format's)",
                       lambda ctx, options, hit: layer_facts(ctx, options).quantised(key_of(ctx)))


def _deliberate(ctx: FileContext, options: Options, hit) -> bool:
    """The finder's site names the function it lies in and that function's parents."""
    if hit.site.context is None:
        return False
    function, parents = hit.site.context
    return deliberate_float32(hit.site.node, function, parents, ctx, options)


DELIBERATE = Check("float32 that is deliberate where it goes (a rotary or frequency table, storage, quantised "
                   "code, the loss side, integers, code that casts back)", _deliberate)
