"""The checks that need mypy's types: DTL303 on module receivers, DTL201/DTL202 through
variables and attributes, and DTL101 on Flax module and dataclass fields.

Each returns hits as ``(line, column, code, message)`` with mypy's positions (1-based
line, 0-based UTF-8 byte column); the plugin turns them into the CLI's columns.
"""

from __future__ import annotations

import fnmatch
from typing import Callable, Iterator

from mypy.nodes import (
    ARG_STAR2,
    AssignmentStmt,
    Block,
    CallExpr,
    ClassDef,
    Decorator,
    Expression,
    FuncDef,
    FuncItem,
    IntExpr,
    LambdaExpr,
    MemberExpr,
    NameExpr,
    OverloadedFuncDef,
    RefExpr,
    StrExpr,
    TypeInfo,
    Var,
)
from mypy.plugin import FunctionContext, MethodContext
from mypy.types import AnyType, CallableType, Instance, Type, get_proper_type

from dtype_lint.frameworks import casts
from dtype_lint.core.options import CAST_HELPER_PATTERNS, Options

# The rules' messages and patterns are imported on first use (importing the rules imports
# LibCST): a mypy run that rechecks no file of the user's pays nothing for the plugin.

Hit = tuple[int, int, str, str]

TORCH_MODULE = "torch.nn.modules.module.Module"
CAST_METHODS = casts.CAST_METHODS
# torch's casts; `.astype` is NumPy's and JAX's, whose arrays are not modules.
TYPE_CAST_METHODS = casts.TYPE_CAST_METHODS - {"astype"}
_TORCH_DTYPES = frozenset({"torch._C.dtype", "torch.dtype"})

# Pool methods whose first argument is pickled, and the receiver classes they belong to.
POOL_METHODS = frozenset({"map", "map_async", "imap", "imap_unordered", "starmap", "starmap_async",
                          "apply", "apply_async"})
EXECUTOR_METHODS = frozenset({"submit", "map"})
_POOL = "multiprocessing.pool.Pool"
_THREAD_POOL = "multiprocessing.pool.ThreadPool"
_EXECUTOR = "concurrent.futures.process.ProcessPoolExecutor"
# Functions and constructors (by mypy's full name) whose argument is pickled: the
# argument's name, and how the sink is named in the message.
SINK_FUNCTIONS = {
    "torch.multiprocessing.spawn.spawn": ("fn", "torch.multiprocessing.spawn"),
    "torch.multiprocessing.spawn.start_processes": ("fn", "torch.multiprocessing.start_processes"),
    "multiprocessing.context.Process": ("target", "Process(target=...)"),
    "multiprocessing.process.BaseProcess": ("target", "Process(target=...)"),
    "multiprocessing.Pool": ("initializer", "the pool's initializer"),
    "multiprocessing.pool.Pool": ("initializer", "the pool's initializer"),
    _EXECUTOR: ("initializer", "the pool's initializer"),
}
DATALOADER = "torch.utils.data.dataloader.DataLoader"
# Context methods that make a pool: `mp.get_context("spawn").Pool(initializer=...)`.
CONTEXT_POOL_SUFFIX = ".Pool"

_FLOAT32_STRINGS = frozenset({"float32", "single"})
_FLOAT32_ROOTS = ("torch.", "jax.", "numpy.", "tensorflow.", "ml_dtypes.", "flax.")


# -- DTL303 ---------------------------------------------------------------------------

def module_recast(ctx: MethodContext, method: str) -> Hit | None:
    """A cast of a torch module (by type), unless the receiver overrides the method or
    the call sits in an explicit casting helper."""
    receiver = get_proper_type(ctx.type)
    if not isinstance(receiver, Instance):
        return None
    info = receiver.type
    # The method must be torch's own: a subclass that overrides .half() casts its own way.
    if _defining_class(info, method) != TORCH_MODULE:
        return None
    call = ctx.context
    if not isinstance(call, CallExpr) or _in_cast_helper(ctx):
        return None
    if method in CAST_METHODS:
        if call.args:
            return None
    elif not _casts_to_dtype(ctx, call, method):
        return None
    why = f"{info.fullname} is a torch.nn.Module"
    from dtype_lint.rules.recast.dtl303_module_recast import ModuleRecast

    return call.line, call.column, "DTL303", ModuleRecast.message.format(why=why)


def _defining_class(info: TypeInfo, name: str) -> str | None:
    for cls in info.mro:
        if name in cls.names:
            return cls.fullname
    return None


def _in_cast_helper(ctx: MethodContext) -> bool:
    # The same exemption as the LibCST rule: casting is the point of `to_fp16()` & co.

    scope = getattr(ctx.api, "scope", None)
    for item in getattr(scope, "stack", ()):
        if isinstance(item, FuncItem) and not isinstance(item, LambdaExpr):
            name = item.name.lower()
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in CAST_HELPER_PATTERNS):
                return True
    return False


def _casts_to_dtype(ctx: MethodContext, call: CallExpr, method: str) -> bool:
    """`.to(dtype)`, `.to(device, dtype)`, `.to(dtype=...)` or `.type(dtype)`: an
    argument whose type is torch.dtype (or, untyped, whose name says dtype)."""
    types = _argument_types(ctx)
    positional = [arg for arg, kind in zip(call.args, call.arg_kinds) if kind.is_positional()]
    candidates = [arg for arg, name in zip(call.args, call.arg_names) if name == "dtype"]
    candidates += positional[:2] if method == "to" else positional[:1]
    for arg in candidates:
        typ = get_proper_type(types.get(id(arg)))
        if isinstance(typ, Instance) and typ.type.fullname in _TORCH_DTYPES:
            return True
        if method == "type" and isinstance(typ, Instance) and typ.type.fullname == "builtins.str":
            return True  # Module.type("torch.HalfTensor") recasts too
        if (typ is None or isinstance(typ, AnyType)) and _names_dtype(arg):
            return True
    return False


def _argument_types(ctx: FunctionContext | MethodContext) -> dict[int, Type]:
    return {id(arg): typ for args, types in zip(ctx.args, ctx.arg_types) for arg, typ in zip(args, types)}


def _names_dtype(expr: Expression) -> bool:
    if isinstance(expr, RefExpr):
        return "dtype" in expr.name.lower() or _is_float_dtype_name(expr.fullname)
    return False


def _is_float_dtype_name(fullname: str | None) -> bool:
    return bool(fullname) and fullname.startswith(_FLOAT32_ROOTS) and fullname.rsplit(".", 1)[-1] in (
        "float16", "bfloat16", "float32", "float64", "half", "double", "float", "single")


# -- DTL201 / DTL202 ------------------------------------------------------------------

class LocalCallables:
    """Which variables and attributes of one file hold a lambda or a local function:
    the assignments that bind them, found once per file."""

    def __init__(self, defs: list) -> None:
        self.kinds: dict[int, str] = {}
        # Every variable's assigned value, for following `F32 = jnp.float32`.
        self.values: dict[int, Expression] = {}
        for stmt in _walk(defs):
            if isinstance(stmt, AssignmentStmt):
                for lvalue in stmt.lvalues:
                    var = _assigned_var(lvalue)
                    if var is None:
                        continue
                    self.values[id(var)] = stmt.rvalue
                    kind = callable_kind(stmt.rvalue, None)
                    if kind:
                        self.kinds[id(var)] = kind

    def kind_of(self, expr: Expression, typ: Type | None) -> str | None:
        kind = callable_kind(expr, typ)
        if kind:
            return kind
        var = _referenced_var(expr, typ)
        return self.kinds.get(id(var)) if var is not None else None


def callable_kind(expr: Expression, typ: Type | None) -> str | None:
    """"a lambda" or "a local function" when the expression (or its type) is one."""
    if isinstance(expr, LambdaExpr):
        return "a lambda"
    node = expr.node if isinstance(expr, RefExpr) else None
    if isinstance(node, Decorator):
        node = node.func
    if isinstance(node, FuncDef) and _is_nested(node):
        return "a local function"
    proper = get_proper_type(typ)
    if isinstance(proper, CallableType) and isinstance(proper.definition, FuncDef):
        if _is_nested(proper.definition):
            return "a local function"
    return None


def _is_nested(func: FuncDef) -> bool:
    # mypy gives functions defined inside functions their bare name as full name;
    # module-level functions and methods are qualified.
    return "." not in func.fullname and func.name not in ("<lambda>", "")


def _assigned_var(lvalue: Expression) -> Var | None:
    if isinstance(lvalue, NameExpr) and isinstance(lvalue.node, Var):
        return lvalue.node
    if isinstance(lvalue, MemberExpr) and isinstance(lvalue.def_var, Var):
        return lvalue.def_var
    return None


def _referenced_var(expr: Expression, typ: Type | None) -> Var | None:
    if isinstance(expr, NameExpr) and isinstance(expr.node, Var):
        return expr.node
    if isinstance(expr, MemberExpr):
        if isinstance(expr.node, Var):
            return expr.node
        owner = get_proper_type(expr.expr.node.type) if isinstance(expr.expr, NameExpr) and isinstance(
            expr.expr.node, Var) else None
        if isinstance(owner, Instance):
            sym = owner.type.get(expr.name)
            if sym is not None and isinstance(sym.node, Var):
                return sym.node
    return None


def _walk(stmts: list, into_functions: bool = True) -> Iterator[object]:
    """Every statement, at any depth; without ``into_functions``, none in a function body."""
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, Decorator):
            stmt = stmt.func
        if isinstance(stmt, FuncItem):
            if into_functions:
                yield from _walk(stmt.body.body)
        elif isinstance(stmt, OverloadedFuncDef):
            for item in stmt.items:
                yield from _walk([item], into_functions)
        elif isinstance(stmt, ClassDef):
            yield from _walk(stmt.defs.body, into_functions)
        else:
            for block in _child_blocks(stmt):
                yield from _walk(block.body, into_functions)


def _child_blocks(stmt: object) -> Iterator[Block]:
    for attr in ("body", "else_body", "finally_body", "handlers", "bodies"):
        value = getattr(stmt, attr, None)
        if isinstance(value, Block):
            yield value
        elif isinstance(value, list):
            yield from (b for b in value if isinstance(b, Block))


def sink_call(ctx: FunctionContext | MethodContext, keyword: str, position: int, sink: str,
              local: LocalCallables) -> list[Hit]:
    """The argument passed as ``keyword`` (or at ``position``), when it is a lambda or
    local function, directly or through a variable or attribute."""
    call = ctx.context
    if not isinstance(call, CallExpr):
        return []
    value = _argument(call, keyword, position)
    if value is None:
        return []
    typ = _argument_types(ctx).get(id(value))
    kind = local.kind_of(value, typ)
    if not kind:
        return []
    from dtype_lint.rules.pickling.dtl201_unpicklable_process_target import PICKLE_WHY

    return [(value.line, value.column, "DTL201", PICKLE_WHY.format(kind=kind, sink=sink))]


def dataloader_call(ctx: FunctionContext, local: LocalCallables) -> list[Hit]:
    call = ctx.context
    if not isinstance(call, CallExpr):
        return []
    workers = _argument(call, "num_workers", 5)
    if workers is None and ARG_STAR2 not in call.arg_kinds:
        return []  # DataLoader's default is num_workers=0
    if isinstance(workers, IntExpr) and workers.value == 0:
        return []
    types = _argument_types(ctx)
    hits = []
    for keyword, position in (("collate_fn", 6), ("worker_init_fn", 10)):
        value = _argument(call, keyword, position)
        kind = local.kind_of(value, types.get(id(value))) if value is not None else None
        if kind:
            from dtype_lint.rules.pickling.dtl201_unpicklable_process_target import PICKLE_WHY

            sink = f"DataLoader({keyword}=...) with workers"
            hits.append((value.line, value.column, "DTL202", PICKLE_WHY.format(kind=kind, sink=sink)))
    return hits


def _argument(call: CallExpr, keyword: str | None, position: int | None) -> Expression | None:
    index = 0
    for arg, kind, name in zip(call.args, call.arg_kinds, call.arg_names):
        if name is not None:
            if name == keyword:
                return arg
        elif kind.is_star():
            return None if position is not None and index <= position else _keyword_only(call, keyword)
        else:
            if index == position:
                return arg
            index += 1
    return None


def _keyword_only(call: CallExpr, keyword: str | None) -> Expression | None:
    for arg, name in zip(call.args, call.arg_names):
        if name is not None and name == keyword:
            return arg
    return None


def is_process_pool(typ: Type | None, method: str) -> bool:
    receiver = get_proper_type(typ)
    if not isinstance(receiver, Instance):
        return False
    info = receiver.type
    if method in POOL_METHODS and info.has_base(_POOL) and not info.has_base(_THREAD_POOL):
        return True
    return method in EXECUTOR_METHODS and info.has_base(_EXECUTOR)


# -- DTL101 on Flax modules and dataclasses -------------------------------------------

def float32_fields(defs: list, options: Options, local: LocalCallables | None) -> list[Hit]:
    """Fields of Flax modules and dataclasses (known by mypy's MRO, whatever the base is
    called or wherever it is defined) whose computation dtype defaults to float32,
    including through a module-level alias such as `F32 = jnp.float32`. ``local``: the
    file's bindings where the hooks have collected them already."""
    def values() -> dict[int, Expression]:
        # Collected only when a field's default is a name to follow: most files have none.
        nonlocal local
        if local is None:
            local = LocalCallables(defs)
        return local.values

    hits = []
    for stmt in _walk(defs, into_functions=False):
        if not isinstance(stmt, ClassDef) or stmt.info is None:
            continue
        if not _is_field_class(stmt.info):
            continue
        for item in stmt.defs.body:
            if not isinstance(item, AssignmentStmt) or len(item.lvalues) != 1:
                continue
            target = item.lvalues[0]
            if not isinstance(target, NameExpr):
                continue
            name = target.name
            if name not in options.compute_dtype_names or name in options.param_dtype_names:
                continue
            if _is_float32(item.rvalue, values, 0):
                from dtype_lint.rules.float32.dtl101_float32_dtype_default import Float32DtypeDefault

                hits.append((item.rvalue.line, item.rvalue.column, "DTL101",
                             Float32DtypeDefault.message.format(name=name)))
    return hits


def _is_field_class(info: TypeInfo) -> bool:
    if info.has_base("flax.linen.module.Module") or info.has_base("flax.nnx.module.Module"):
        return True
    return any(key in info.metadata for key in ("dataclass", "dataclass_tag"))


def _is_float32(expr: Expression, values: Callable[[], dict[int, Expression]], depth: int) -> bool:
    if isinstance(expr, StrExpr):
        return expr.value in _FLOAT32_STRINGS
    if isinstance(expr, CallExpr) and isinstance(expr.callee, RefExpr) and len(expr.args) == 1:
        # np.dtype("float32"), jnp.dtype(jnp.float32)
        if (expr.callee.fullname or "").endswith(".dtype") and (expr.callee.fullname or "").startswith(_FLOAT32_ROOTS):
            return _is_float32(expr.args[0], values, depth + 1)
        return False
    if not isinstance(expr, RefExpr):
        return False
    fullname = expr.fullname or ""
    last = fullname.rsplit(".", 1)[-1]
    if fullname.startswith(_FLOAT32_ROOTS):
        return last in ("float32", "single") or (fullname.startswith("torch.") and last == "float")
    # A name bound in this file to a float32 dtype: follow the binding.
    if isinstance(expr.node, Var) and depth < 4:
        value = values().get(id(expr.node))
        return value is not None and _is_float32(value, values, depth + 1)
    return False
