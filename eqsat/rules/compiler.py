"""One rule -> egglog `rule` commands, one per direction.

A direction's query is its LHS patterns (each root `(= root pattern)`), then its
guards, then the shape facts the RHS reads; its actions `let` new bindings and
`union` each LHS root with its replacement. Compiling is also checking: every static
error of a rule is found here and raised at its token.
"""

from __future__ import annotations

from eqsat.rules import ast
from eqsat.rules.errors import GuardTypeError, RuleStructureError, UndefinedRootError
from eqsat.rules.guards import compile_guard
from eqsat.rules.scope import Scope, Ty, var
from eqsat.rules.terms import check_deferred, pattern, template

ROOT = "t_root"
SEED_SUFFIX = "-seed"  # companion rules that build the lists a guard compares with


def egglog_names(rule: ast.RuleDecl) -> tuple[str, ...]:
    """The `:name` of each direction: NAME, and NAME-rev for the way back of `<=>`."""
    return (rule.name, f"{rule.name}-rev") if rule.bidirectional else (rule.name,)


def compile_rule(
    rule: ast.RuleDecl, ruleset: str, file: str, source: str, provenance: bool = False
) -> tuple[str, ...]:
    """The egglog text of each direction of `rule` (raises a RuleError if ill-formed).

    `provenance`: each direction also records its name on the e-node it builds for a
    root, `(set (Prov_<Ctor> args...) "name")`, which `eqsat explain` reads back
    (eqsat/rules/provenance.py declares the functions)."""
    names = egglog_names(rule)
    scope = Scope(file, source)
    out = [_direction(rule, rule.lhs, rule.rhs, ruleset, names[0], scope, provenance)]
    if rule.bidirectional:
        scope = Scope(file, source, reverse=True)
        out.append(_direction(rule, rule.rhs, rule.lhs, ruleset, names[1], scope, provenance))
    return tuple(out)


def _roots(lhs: tuple[ast.Item, ...], scope: Scope) -> dict[str, ast.Item]:
    """Root variable -> item. An unnamed root is allowed only as the single root."""
    roots: dict[str, ast.Item] = {}
    for item in lhs:
        if not isinstance(item.term, ast.Call):
            raise scope.fail(
                RuleStructureError,
                "a left-hand side root must be an op pattern such as add(x, y), not a bare "
                "variable or '_'",
                item.term.pos,
            )
        if item.name is None:
            if len(lhs) > 1:
                raise scope.fail(
                    RuleStructureError,
                    "name each root of a multi-pattern left-hand side: a = op(...), b = op(...)",
                    item.term.pos,
                )
            roots[ROOT] = item
            continue
        assert item.name_pos is not None
        if var(item.name) in roots:
            raise scope.fail(
                RuleStructureError, f"'{item.name}' names two left-hand side roots", item.name_pos
            )
        binding = scope.env.get(item.name)
        if binding is not None and binding.ty is not Ty.TERM:
            raise scope.fail(
                RuleStructureError,
                f"'{item.name}' is an attribute variable; a root names a tensor",
                item.name_pos,
            )
        scope.bind(item.name, Ty.TERM, item.name_pos)
        roots[var(item.name)] = item
    return roots


def _direction(
    rule: ast.RuleDecl,
    lhs: tuple[ast.Item, ...],
    rhs: tuple[ast.Item, ...],
    ruleset: str,
    name: str,
    scope: Scope,
    provenance: bool = False,
) -> str:
    roots = _roots(lhs, scope)
    deferred: list = []
    for root, item in roots.items():
        scope.atoms.append(f"(= {root} {pattern(item.term, scope, deferred)})")
    for guard in rule.guards:
        compile_guard(guard, scope)
    _check_assumes(rule, scope)
    check_deferred(deferred, scope)
    actions = _actions(rhs, roots, scope, name if provenance else None)
    query = "\n       ".join(scope.atoms)
    body = "\n       ".join(actions)
    out = [f'(rule ({query})\n      ({body})\n      :ruleset {ruleset} :name "{name}")']
    for i, (atoms, term) in enumerate(scope.seeds):
        seed_query = "\n       ".join(atoms)
        out.append(
            f"(rule ({seed_query})\n      ((let t_seed {term}))\n"
            f'      :ruleset {ruleset} :name "{name}{SEED_SUFFIX}{i}")'
        )
    return "\n".join(out)


def _actions(
    rhs: tuple[ast.Item, ...],
    roots: dict[str, ast.Item],
    scope: Scope,
    provenance: str | None = None,
) -> list[str]:
    actions: list[str] = []
    defined: set[str] = set()
    scope.in_rhs = True
    for item in rhs:
        code = template(item.term, scope)
        if item.name is None:
            if len(roots) != 1:
                raise scope.fail(
                    RuleStructureError,
                    "with several left-hand side roots, say which one this term replaces: "
                    "root = term",
                    item.term.pos,
                )
            target = next(iter(roots))
        elif var(item.name) in roots:
            target = var(item.name)
        else:
            assert item.name_pos is not None
            if item.name in scope.env:
                raise scope.fail(
                    RuleStructureError,
                    f"'{item.name}' is already a variable of the left-hand side; a right-hand "
                    "side `name = ...` defines a left-hand side root or a new name",
                    item.name_pos,
                )
            scope.bind(item.name, Ty.TERM, item.name_pos, origin="rhs")
            actions.append(f"(let {var(item.name)} {code})")
            actions += _provenance(item.term, scope, provenance)
            continue
        if target in defined:
            raise scope.fail(
                RuleStructureError,
                "this root is already defined by an earlier right-hand side term",
                item.pos,
            )
        defined.add(target)
        actions.append(f"(union {target} {code})")
        actions += _provenance(item.term, scope, provenance)
    inner = _vars_in(item.term for item in roots.values())
    for root, item in roots.items():
        # A root used inside another LHS pattern only names a subterm: no need to replace it.
        if root not in defined and not (item.name and item.name in inner):
            if item.name:
                message = (
                    f"root '{item.name}' is not defined on the right-hand side; "
                    f"add `{item.name} = ...` after the arrow"
                )
            else:
                message = (
                    "the left-hand side is not replaced by anything; end the right-hand "
                    "side with the term that replaces it"
                )
            raise scope.fail(UndefinedRootError, message, item.pos)
    return actions


def _provenance(term: ast.Term, scope: Scope, name: str | None) -> list[str]:
    """With provenance on: record `name` on every e-node the RHS term builds."""
    if name is None:
        return []
    out = []
    stack = [term]
    while stack:
        t = stack.pop()
        if isinstance(t, ast.Call):
            code = template(t, scope)
            out.append(f'(set (Prov_{code[1:]} "{name}")')
            stack.extend(t.args)
    return out


def _vars_in(terms) -> set[str]:
    names: set[str] = set()
    stack = list(terms)
    while stack:
        term = stack.pop()
        if isinstance(term, ast.Var):
            names.add(term.name)
        elif isinstance(term, ast.Call):
            stack.extend(term.args)
    return names


def _check_assumes(rule: ast.RuleDecl, scope: Scope) -> None:
    """An assumption names a tensor of the left-hand side and bounds it by a number.
    It compiles to nothing: egglog cannot see values; verify-rules honours it."""
    for assume in rule.assumes:
        binding = scope.env.get(assume.name)
        if binding is None or binding.ty is not Ty.TERM or binding.origin != "lhs":
            raise scope.fail(
                GuardTypeError,
                f"'{assume.name}' is not a tensor of the left-hand side; an assumption "
                "bounds the values of one (assume s > 0)",
                assume.pos,
            )
        value = assume.value
        if isinstance(value, ast.Neg):
            value = value.operand
        if not isinstance(value, ast.IntLit | ast.FloatLit):
            raise scope.fail(
                GuardTypeError, "an assumption compares with a number, e.g. assume s > 0", value.pos
            )
