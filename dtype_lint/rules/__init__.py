"""The rule registry: every static rule, in code order, and every code's docs."""

from __future__ import annotations

from dtype_lint.catalog import RuleDoc
from dtype_lint.rules.base import Rule
from dtype_lint.rules.dtl101_float32_dtype_default import Float32DtypeDefault
from dtype_lint.rules.dtl102_float32_fallback import Float32Fallback
from dtype_lint.rules.dtl103_float32_in_forward import Float32InForward
from dtype_lint.rules.dtl104_float32_beside_input import Float32BesideInput
from dtype_lint.rules.dtl201_unpicklable_process_target import UnpicklableProcessTarget
from dtype_lint.rules.dtl202_unpicklable_dataloader_callable import UnpicklableDataLoaderCallable
from dtype_lint.rules.dtl203_unpicklable_wrapper_transform import UnpicklableWrapperTransform
from dtype_lint.rules.dtl204_unpicklable_callable_on_module import CallableOnModule
from dtype_lint.rules.dtl301_tree_map_recast import TreeMapRecast
from dtype_lint.rules.dtl302_state_dict_recast import StateDictRecast
from dtype_lint.rules.dtl303_module_recast import ModuleRecast
from dtype_lint.rules.dtl304_removed_jax_tree_alias import DeprecatedTreeAlias

RULES: tuple[type[Rule], ...] = (
    Float32DtypeDefault,
    Float32Fallback,
    Float32InForward,
    Float32BesideInput,
    UnpicklableProcessTarget,
    UnpicklableDataLoaderCallable,
    UnpicklableWrapperTransform,
    CallableOnModule,
    TreeMapRecast,
    StateDictRecast,
    ModuleRecast,
    DeprecatedTreeAlias,
)
RULES_BY_CODE: dict[str, type[Rule]] = {rule.doc.code: rule for rule in RULES}


def all_docs() -> dict[str, RuleDoc]:
    """Docs of every code, static rules and runtime checks, by code."""
    from dtype_lint.runtime.codes import RUNTIME_CHECKS

    docs = {rule.doc.code: rule.doc for rule in RULES}
    docs.update({doc.code: doc for doc in RUNTIME_CHECKS})
    return dict(sorted(docs.items()))
