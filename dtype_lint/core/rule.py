"""What a rule is: its docs and examples, and what it finds, declared as a taint rule is.

A rule names, from the family concepts of ``POLICY.md`` (:mod:`dtype_lint.concepts`):

* **finders** (:class:`Finder`): where its hazard can lie, each a small read-only visitor
  that hands every place it finds (a :class:`Site`) on: the sources of a hazard (a float32
  default, a cast of a module) or its sinks (a process target, an attribute of an object
  that is pickled whole);
* a **flow** (a :class:`~dtype_lint.core.flow.engine.FlowConfig`), for rules whose finders
  find sinks: the sources that must reach the site's value (lambdas, local functions...),
  which the flow engine follows back through the file;
* **sanitizers** (:class:`Check`): what clears a hit (test code, a float32 island that is
  cast back, an inference path).

:class:`Finds` holds the three; :class:`Rule` runs them: the traversal walks the rule's
finders, and each site is followed to its sources, judged by the sanitizers and reported.
The rule's prefilter is its finders' together, so a rule made of known finders needs no
prefilter of its own.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Protocol, Sequence

from dtype_lint.core.confidence import SEEN, rank, weakest
from dtype_lint.core.deferred import cst
from dtype_lint.core.finding import Step
from dtype_lint.core.options import Options
from dtype_lint.core.ruledoc import RuleDoc
from dtype_lint.core.shapes import Prefilter, union

if TYPE_CHECKING:
    import ast

    from dtype_lint.core.context import FileContext
    from dtype_lint.core.flow.engine import FlowConfig, Source


@dataclasses.dataclass(frozen=True)
class Invalid:
    """An example the rule must flag; ``fixed`` is the code after its fix, if it has one."""

    code: str
    fixed: str | None = None


@dataclasses.dataclass
class Report:
    """What a rule found, before the engine turns nodes into positions."""

    code: str
    name: str
    node: cst.CSTNode
    message: str
    # the fix: (old node, new node) pairs, and the imports the new nodes need
    replace: tuple[tuple[cst.CSTNode, cst.CSTNode], ...]
    applicability: str | None
    imports: tuple[tuple[str, str | None], ...] = ()
    flow: tuple[Step, ...] = ()  # where the evidence is, when elsewhere (Finding.flow)
    confidence: str = "high"  # core.confidence
    basis: str = ""  # what keeps it below high


@dataclasses.dataclass
class Site:
    """A place a finder found. ``node``: where a finding about it belongs; ``fields``: what
    the rule's message names; ``value``: for a rule with a flow, the expression whose
    sources are followed (None: the site is a finding by itself); ``attributes``: whether
    the flow reads ``self.attr`` stores; ``passed``: a call and a keyword whose ``**d``
    entries the flow follows too. ``replace``/``imports``: its fix, if any;
    ``steps``: where other files show it; ``context``: what the sanitizers read of it
    (a finder's own facts about the place); ``confidence``: how sure the finder is of
    the place (core.confidence), and ``basis``, what keeps it below high."""

    node: cst.CSTNode
    fields: Mapping[str, str] = dataclasses.field(default_factory=dict)
    value: cst.BaseExpression | None = None
    attributes: bool = True
    passed: tuple[cst.Call, str] | None = None
    replace: tuple[tuple[cst.CSTNode, cst.CSTNode], ...] = ()
    imports: tuple[tuple[str, str | None], ...] = ()
    steps: tuple[Step, ...] = ()
    context: Any = None
    confidence: str = "high"
    basis: str = ""


@dataclasses.dataclass(frozen=True)
class Hit:
    """A site, and the source the flow found reaching it (None for a site that is a
    finding by itself)."""

    site: Site
    source: Source | None = None

    @property
    def node(self) -> cst.CSTNode:
        return self.source.at if self.source is not None else self.site.node


class Finder:
    """Where a hazard can lie: a read-only visitor (``visit_<Node>``/``leave_<Node>``) that
    calls ``found`` with each :class:`Site`. Finders are the families' concepts
    (:mod:`dtype_lint.concepts`); the class docstring's first line names the place in the
    rule's docs. :meth:`prefilter` says what a unit of a file must hold for the finder to
    find anything in it (see :class:`~dtype_lint.core.shapes.Prefilter`)."""

    def __init__(self, ctx: FileContext, options: Options, found: Callable[[Site], None]) -> None:
        self.ctx = ctx
        self.options = options
        self.found = found

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter | None:
        """None: files that may hold this finder's sites are parsed whole."""
        return None

    @classmethod
    def file_facts(cls, tree: ast.Module, text: str, options: Options, path: str) -> object:
        """What the finder reads of the whole file beyond the units its sites lie in (an
        edit is linted incrementally only where these are unchanged); None: nothing."""
        return None


FileFacts = Callable[["ast.Module", str, Options, str], object]


@dataclasses.dataclass(frozen=True)
class Check:
    """A named condition on a hit: a sanitizer clears the hits it holds for, or, with
    ``demotes``, keeps them at that confidence at most (a sanitizer that only likely
    holds: a convention, not code the engine read). ``test`` gets the file, the options
    and the hit; ``file_facts``, what it reads of the whole file (see
    :meth:`Finder.file_facts`)."""

    name: str
    test: Callable[[FileContext, Options, Hit], bool]
    file_facts: FileFacts | None = None
    demotes: str | None = None

    def __call__(self, ctx: FileContext, options: Options, hit: Hit) -> bool:
        return self.test(ctx, options, hit)


@dataclasses.dataclass(frozen=True)
class Finds:
    """What a rule finds: its finders (``at``), the flow whose sources must reach a site's
    value (``flow``; None: each site is a finding), and its sanitizers (``unless``)."""

    at: tuple[type[Finder], ...]
    flow: FlowConfig | None = None
    unless: tuple[Check, ...] = ()


class Rule:
    """One rule: its docs (``doc``), ``message`` (formatted with the site's fields, and
    with ``kind``, the source's, for a rule with a flow), ``fix`` ("safe", "unsafe" or
    None), the options it reads, valid and invalid examples (tests and docs are made from
    them), and what it finds (``finds``). A module ``dtlNNN_<name>.py`` holding one in a
    family folder of :mod:`dtype_lint.rules` is all it takes to add a rule."""

    doc: ClassVar[RuleDoc]
    message: ClassVar[str]
    finds: ClassVar[Finds]
    fix: ClassVar[str | None] = None
    options_used: ClassVar[tuple[str, ...]] = ()
    valid: ClassVar[tuple[str, ...]] = ()
    invalid: ClassVar[tuple[Invalid, ...]] = ()
    # The highest confidence its findings can have (core.confidence): a rule of the audit
    # mode says "low", and is not run at all where min-confidence is above it.
    highest: ClassVar[str] = "high"

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter | None:
        """What a unit of a file must hold for this rule to find something in it: one of
        its finders' prefilters (None where one has none: then the files are parsed whole)."""
        return union([finder.prefilter(options) for finder in cls.finds.at])

    @classmethod
    def describe(cls) -> str:
        """What the rule finds, in words, from its declaration (its docs page's section)."""
        def first(text: str | None) -> str:
            return " ".join((text or "").strip().split("\n\n")[0].split())

        def name(obj: object) -> str:
            kind = obj if isinstance(obj, type) else type(obj)
            return f"`{kind.__module__.removeprefix('dtype_lint.')}.{kind.__name__}`"

        lines = [f"- Where: {first(finder.__doc__)} ({name(finder)})" for finder in cls.finds.at]
        if cls.finds.flow is not None:
            lines.append(f"- What reaches it, followed there by the flow engine: {cls.finds.flow.what} "
                         f"({name(cls.finds.flow)})")
        lines += [f"- Not reported: {check.name}" if check.demotes is None
                  else f"- Reported at `{check.demotes}` confidence at most: {check.name}" for check in cls.finds.unless]
        return "\n".join(lines)

    @classmethod
    def file_facts(cls, tree: ast.Module, text: str, options: Options, path: str) -> tuple:
        """What the rule's finders and sanitizers read of the whole file."""
        return tuple(part.file_facts(tree, text, options, path) for part in (*cls.finds.at, *cls.finds.unless)
                     if part.file_facts is not None)

    def __init__(self, ctx: FileContext, options: Options, reports: list[Report]) -> None:
        self.ctx = ctx
        self.options = options
        self._reports = reports
        self.finders = [finder(ctx, options, self._found) for finder in self.finds.at]

    def _found(self, site: Site) -> None:
        """Follow a site to its sources, judge each hit, and report the hits that stand."""
        flow = self.finds.flow
        if flow is None or (site.value is None and site.passed is None):
            hits = [Hit(site)]
        else:
            from dtype_lint.core.flow.engine import FileFlow

            engine = FileFlow.of(self.ctx)
            sources = engine.sources(site.value, flow, attributes=site.attributes) if site.value is not None else []
            if site.passed is not None:
                sources += engine.keyword_sources(*site.passed, flow)
            hits = [Hit(site, source) for source in sources]
        for hit in hits:
            levels = [(site.confidence, site.basis)]
            if hit.source is not None:
                levels.append((hit.source.confidence, hit.source.basis))
            for check in self.finds.unless:
                if check.demotes is not None and rank(weakest(*(level for level, _ in levels))) <= rank(check.demotes):
                    continue  # already no higher than the check could make it: spare the question
                if check(self.ctx, self.options, hit):
                    if check.demotes is None:
                        break
                    levels.append((check.demotes, check.name))
            else:
                level = weakest(self.highest, *(level for level, _ in levels))
                basis = "; ".join(dict.fromkeys(why for lv, why in levels if why and lv == level)) or (
                    SEEN if level == "high" else "")
                self._report(hit, level, basis)

    def _report(self, hit: Hit, confidence: str, basis: str) -> None:
        site, source = hit.site, hit.source
        fields = dict(site.fields)
        if source is not None:
            fields["kind"] = source.kind
        self._reports.append(Report(
            self.doc.code, self.doc.name, hit.node, self.message.format(**fields), site.replace,
            self.fix if site.replace else None, site.imports,
            (*source.steps, *site.steps) if source is not None else site.steps, confidence, basis,
        ))


class Selection(Protocol):
    """Rules chosen by code, loaded when a file first needs them (importing the rules
    imports LibCST, which a run answered from the cache never needs)."""

    codes: tuple[str, ...]

    def load(self) -> Sequence[type[Rule]]: ...
