"""Code whose job is casting: an explicit casting API (``to_bf16``, ``cast_params``,
``convert_to_fp16``), a precision plugin or policy class, a casting hook. Casting there is
what the user configured or asked for: the body is not reported, the call sites that hand
it the trained model are (``POLICY.md``, F3 "Helpers")."""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

from dtype_lint.core.deferred import cst
from dtype_lint.core.options import CAST_HELPER_PATTERNS
from dtype_lint.core.rule import Check
from dtype_lint.core.words import words_of

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext

# Words of a function's name that make it an explicit casting helper (`tree_cast`,
# `cast_params`; also options.CAST_HELPER_PATTERNS, such as `to_bf16`): its body is the
# casting API, its call sites are not.
CASTING_FUNCTION_WORDS = frozenset({"cast", "casting", "caster"})
# A conversion is a casting helper only where its name says to what precision or of what
# copy (`convert_to_fp16`, `convert_weights_to_lp`, `convert_checkpoint`):
# `convert_model_to_mod` changes the architecture, and a cast in it is that step's own.
_CONVERSION_WORDS = frozenset({"convert", "converter"})
_PRECISION_WORDS = frozenset({"half", "fp16", "bf16", "float16", "bfloat16", "fp32", "float32", "float", "dtype",
                              "precision", "lp", "mixed", "amp", "low", "checkpoint", "ckpt"})


def _named_for_casting(name: str) -> bool:
    words = words_of(name)
    return bool(words & CASTING_FUNCTION_WORDS or (words & _CONVERSION_WORDS and words & _PRECISION_WORDS))
# Words of a class name (or its bases') whose job is casting: precision plugins and
# policies, casting hooks; their bodies do what the user configured.
_CASTING_CLASS_WORDS = frozenset({"precision", "cast", "casting", "caster", "autocast", "recast"})


def casting_helper(name: str) -> bool:
    """A function named as an explicit casting helper (``cast_params``, ``to_bf16``), whose
    body is the casting API: not reported there, but where it is called."""
    return _named_for_casting(name) or any(
        fnmatch.fnmatchcase(name.lower(), pattern) for pattern in CAST_HELPER_PATTERNS) or any(
        word in name.lower() for word in ("half", "fp16", "bf16", "float16", "bfloat16"))


def in_cast_helper(ctx: FileContext) -> bool:
    """Inside the body of an explicit casting API, where casting is what was asked for."""
    return any(
        isinstance(scope.node, cst.FunctionDef)
        and any(fnmatch.fnmatchcase(scope.name.lower(), pat) for pat in CAST_HELPER_PATTERNS)
        for scope in ctx.scopes
    )


def casting_code(ctx: FileContext) -> str | None:
    """Why code here casts by design: a class whose job is casting, or the body of a
    casting helper; None elsewhere."""
    for info in ctx.classes:
        if any(words_of(n.rsplit(".", 1)[-1]) & _CASTING_CLASS_WORDS for n in (info.name, *info.bases)):
            return "a class whose job is casting"
    if in_cast_helper(ctx) or any(
            isinstance(s.node, cst.FunctionDef) and _named_for_casting(s.name) for s in ctx.scopes):
        return "the body of a casting helper"
    return None


CASTING_CODE = Check("code whose job is casting (a precision plugin or policy, a casting helper's body)",
                     lambda ctx, options, hit: casting_code(ctx) is not None)
