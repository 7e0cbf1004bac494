# SPDX-License-Identifier: MIT
"""Translation of IndexLambda bodies to loopy expressions.

The translator inlines the bodies of non-stored arrays into their readers
(substituting index expressions), turns :class:`~ftlazy.scalar_expr.Reduce`
into :class:`loopy.Reduction` with fresh inames, and maps numpy semantics
that C lacks (float floor division and remainder, integer division by zero,
bool storage as ``int8``) onto explicit expressions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from constantdict import constantdict
from loopy.kernel.function_interface import ScalarCallable
from loopy.library.reduction import (
    ScalarReductionOperation,
    get_ge_neutral,
    get_le_neutral,
)
from loopy.symbolic import IdentityMapper, Reduction, ResolvedFunction
from loopy.translation_unit import add_callable_to_table
from loopy.symbolic import TypeCast as LoopyTypeCast
from loopy.types import NumpyType

from ftlazy.array import SizeParam
from ftlazy.scalar_expr import (
    ExprIdentityMapper, Reduce, TypeCast, iter_subexpressions)

#: numpy function names -> OpenCL C names
C_FUNCTIONS = {
    "abs": "abs", "sqrt": "sqrt", "exp": "exp", "exp2": "exp2", "log": "log",
    "log2": "log2", "log10": "log10", "sin": "sin", "cos": "cos", "tan": "tan",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arctan2": "atan2",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "isnan": "isnan",
    "isinf": "isinf", "floor": "floor", "ceil": "ceil", "rint": "rint", "fmod": "fmod",
    "real": "real", "imag": "imag", "conj": "conj",
}


#: complex functions OpenCL (and pyopencl) lack, by the one they scale
_COMPLEX_BY_LOG_EXP = {"log2": ("log", 1 / np.log(2)),
                       "log10": ("log", 1 / np.log(10)),
                       "exp2": ("exp", np.log(2))}


def storage_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype an array is stored with in device memory (OpenCL has no
    ``bool`` buffers). float16 is a :class:`TypeError`: OpenCL devices
    need an extension for it, which this target does not use."""
    if dtype == np.float16:
        raise TypeError("float16 arrays are not supported by the OpenCL target "
                        "(numpy gives float16 for some operations on bool and "
                        "int8 arrays, e.g. sqrt): cast to float32 first")
    return np.dtype(np.int8) if dtype == np.bool_ else dtype


class OpenCLBuiltin(ScalarCallable):
    """An OpenCL C math builtin that loopy does not know: its arguments and
    result have the dtype of its first argument (``int32`` for predicates)."""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        nargs = _BUILTIN_ARITY[self.name]
        if any(i not in arg_id_to_dtype for i in range(nargs)):
            return self.copy(arg_id_to_dtype=arg_id_to_dtype), clbl_inf_ctx
        dtype = arg_id_to_dtype[0]
        if dtype.numpy_dtype.kind != "f":
            raise TypeError(f"OpenCL builtin {self.name} needs floating point "
                            f"arguments, got {dtype.numpy_dtype}")
        result = NumpyType(np.dtype(np.int32)) if self.name == "isinf" else dtype
        types = {i: dtype for i in range(nargs)}
        types[-1] = result
        return (self.copy(name_in_target=self.name,
                          arg_id_to_dtype=constantdict(types)), clbl_inf_ctx)


#: OpenCL builtins that :func:`register_builtins` adds, with their arity
_BUILTIN_ARITY = {"exp2": 1, "log2": 1, "isinf": 1, "rint": 1, "fmod": 2,
                  "copysign": 2}

#: C bodies of numpy's integer ``//`` and ``%`` (0 for a zero divisor, as
#: numpy gives; ``MIN // -1`` wraps to ``MIN`` as in numpy). Unlike loopy's
#: floor division helpers, nothing overflows on the way: loopy computes
#: ``a - (b - 1)`` in the operands' type, so ``-125 // 5`` is 25 in int8.
_INT_DIVISION = {
    ("_ft_floordiv", "signed"): (
        "if (b == 0) return 0;\n"
        "  if (b == -1) return ({T}) (0 - ({U}) a);\n"
        "  {T} q = a / b;\n"
        "  if (a % b != 0 && (a < 0) != (b < 0)) q = q - 1;\n"
        "  return q;"),
    ("_ft_mod", "signed"): (
        "if (b == 0 || b == -1) return 0;\n"
        "  {T} r = a % b;\n"
        "  if (r != 0 && (r < 0) != (b < 0)) r = r + b;\n"
        "  return r;"),
    ("_ft_floordiv", "unsigned"): "return b == 0 ? 0 : a / b;",
    ("_ft_mod", "unsigned"): "return b == 0 ? 0 : a % b;",
}


class _InlineBinaryFunction(ScalarCallable):
    """A function of two arguments of one dtype (of a kind in
    :attr:`kinds`) with a result of that dtype, emitted as an inline C
    function per dtype (its name suffixed with the dtype's)."""

    kinds = ""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        if 0 not in arg_id_to_dtype or 1 not in arg_id_to_dtype:
            return self.copy(arg_id_to_dtype=arg_id_to_dtype), clbl_inf_ctx
        dtype = arg_id_to_dtype[0]
        if dtype.numpy_dtype.kind not in self.kinds:
            raise TypeError(f"{self.name} needs arguments of a kind in "
                            f"{self.kinds!r}, got {dtype.numpy_dtype}")
        return (self.copy(name_in_target=f"{self.name}_{dtype.numpy_dtype.name}",
                          arg_id_to_dtype=constantdict({0: dtype, 1: dtype,
                                                        -1: dtype})),
                clbl_inf_ctx)


class IntegerDivision(_InlineBinaryFunction):
    """numpy's integer floor division (``_ft_floordiv``) or remainder
    (``_ft_mod``) as an inline C function per dtype."""

    kinds = "iu"

    def generate_preambles(self, target: Any) -> Any:
        dtype = self.arg_id_to_dtype[-1]
        signed = dtype.numpy_dtype.kind == "i"
        ctype = target.dtype_to_typename(dtype)
        unsigned = target.dtype_to_typename(
            NumpyType(np.dtype(f"u{dtype.numpy_dtype.itemsize}")))
        body = _INT_DIVISION[self.name, "signed" if signed else "unsigned"]
        name = self.name_in_target
        code = (f"static inline {ctype} {name}({ctype} a, {ctype} b)\n"
                f"{{\n  {body.format(T=ctype, U=unsigned)}\n}}\n")
        yield (f"45_{name}", code)


#: C body of numpy's complex division (Smith's method; a zero divisor
#: gives infinities or NaNs part by part, where pyopencl's division gives
#: NaN), without contraction into FMAs, as numpy computes it
_COMPLEX_DIVISION = """\
  #pragma OPENCL FP_CONTRACT OFF
  {R} br = fabs(b.real), bi = fabs(b.imag);
  if (br >= bi) {{
    if (br == 0 && bi == 0)
      return {T}_new(a.real / br, a.imag / br);
    {R} rat = b.imag / b.real;
    {R} scl = 1 / (b.real + b.imag * rat);
    return {T}_new((a.real + a.imag * rat) * scl, (a.imag - a.real * rat) * scl);
  }}
  {R} rat = b.real / b.imag;
  {R} scl = 1 / (b.imag + b.real * rat);
  return {T}_new((a.real * rat + a.imag) * scl, (a.imag * rat - a.real) * scl);"""


class ComplexDivision(_InlineBinaryFunction):
    """numpy's complex division ``_ft_cdivide(a, b)`` as an inline C
    function per dtype (see :data:`_COMPLEX_DIVISION`)."""

    kinds = "c"

    def generate_preambles(self, target: Any) -> Any:
        dtype = self.arg_id_to_dtype[-1].numpy_dtype
        root = "cdouble" if dtype == np.complex128 else "cfloat"
        real = "double" if dtype == np.complex128 else "float"
        name = self.name_in_target
        body = _COMPLEX_DIVISION.format(T=root, R=real)
        yield (f"45_{name}", f"static inline {root}_t {name}({root}_t a, "
                             f"{root}_t b)\n{{\n{body}\n}}\n")


#: C body of numpy's complex power (its ``nc_pow``): ``1`` for a zero
#: exponent, ``0`` for a zero base and an exponent of positive real part
#: (NaN for other exponents of zero), integer exponents below 100 in
#: magnitude by repeated squaring (a negative one divides 1 by numpy's
#: division), else ``exp(b log a)``; products without contraction into
#: FMAs, as numpy's
_COMPLEX_POWER = """\
  #pragma OPENCL FP_CONTRACT OFF
  if (b.real == 0 && b.imag == 0)
    return {T}_new(1, 0);
  if (a.real == 0 && a.imag == 0) {{
    if (b.real > 0)
      return {T}_new(0, 0);
    return {T}_new(NAN, NAN);
  }}
  if (b.imag == 0 && b.real == floor(b.real) && fabs(b.real) < 100) {{
    int n = (int) b.real;
    if (n == 1)
      return a;
    if (n == 2 || n == 3) {{
      {T}_t r = {T}_new(a.real * a.real - a.imag * a.imag,
                        a.real * a.imag + a.imag * a.real);
      if (n == 2)
        return r;
      return {T}_new(a.real * r.real - a.imag * r.imag,
                     a.real * r.imag + a.imag * r.real);
    }}
    int m = n < 0 ? -n : n;
    {T}_t acc = {T}_new(1, 0), p = a;
    for (int mask = 1; ; mask <<= 1) {{
      if (m & mask)
        acc = {T}_new(acc.real * p.real - acc.imag * p.imag,
                      acc.real * p.imag + acc.imag * p.real);
      if (m < (mask << 1))
        break;
      p = {T}_new(p.real * p.real - p.imag * p.imag,
                  p.real * p.imag + p.imag * p.real);
    }}
    return n < 0 ? {divide}({T}_new(1, 0), acc) : acc;
  }}
  return {T}_pow(a, b);"""


class ComplexPower(_InlineBinaryFunction):
    """numpy's complex power ``_ft_cpow(a, b)`` as an inline C function
    per dtype (see :data:`_COMPLEX_POWER`), after the division it uses."""

    kinds = "c"

    def generate_preambles(self, target: Any) -> Any:
        dtype = self.arg_id_to_dtype[-1].numpy_dtype
        root = "cdouble" if dtype == np.complex128 else "cfloat"
        divide = f"_ft_cdivide_{dtype.name}"
        yield from ComplexDivision(
            name="_ft_cdivide", name_in_target=divide,
            arg_id_to_dtype=self.arg_id_to_dtype).generate_preambles(target)
        body = _COMPLEX_POWER.format(T=root, divide=divide)
        name = self.name_in_target
        yield (f"46_{name}", f"static inline {root}_t {name}({root}_t a, "
                             f"{root}_t b)\n{{\n{body}\n}}\n")


def register_builtins(t_unit: lp.TranslationUnit) -> lp.TranslationUnit:
    """*t_unit* with the OpenCL builtins that translated bodies may call but
    loopy does not know (``exp2``, ``log2``, ``isinf``, ``fmod``,
    ``copysign``) and ftlazy's integer division functions."""
    for name in _BUILTIN_ARITY:
        t_unit = lp.register_callable(t_unit, name, OpenCLBuiltin(name=name),
                                      redefining_not_ok=False)
    for name in ("_ft_floordiv", "_ft_mod"):
        t_unit = lp.register_callable(t_unit, name, IntegerDivision(name=name),
                                      redefining_not_ok=False)
    t_unit = lp.register_callable(t_unit, "_ft_cdivide",
                                  ComplexDivision(name="_ft_cdivide"),
                                  redefining_not_ok=False)
    t_unit = lp.register_callable(t_unit, "_ft_cpow",
                                  ComplexPower(name="_ft_cpow"),
                                  redefining_not_ok=False)
    return t_unit


def _compare(left: Any, op: str, right: Any) -> Any:
    """``left op right``; an operand that is itself a comparison is cast to
    ``char``, because loopy prints nested comparisons without parentheses
    (``a != 0 != b != 0``) and C then parses them left to right. Two
    float numbers compare now (``inf < 0.0`` in the division by an
    infinite constant), as numpy compares them: loopy's analysis of
    conditions reads constants with ``int()``."""
    known = _known_number(left), _known_number(right)
    if (known[0] is not None and known[1] is not None
            and any(isinstance(k, (float, np.floating)) for k in known)):
        # (integers stay: loopy's analysis of indices reads them exactly)
        return np.int8(_COMPARISONS[op](*known))

    def wrap(e: Any) -> Any:
        if isinstance(e, prim.Comparison):
            return LoopyTypeCast(np.dtype(np.int8), e)
        return e
    return prim.Comparison(wrap(left), op, wrap(right))


_COMPARISONS = {"<": np.less, "<=": np.less_equal, ">": np.greater,
                ">=": np.greater_equal, "==": np.equal, "!=": np.not_equal}


#: OpenCL C's double infinity (loopy types it as one)
_HUGE_VAL = prim.Variable("HUGE_VAL")


def _known_number(e: Any) -> Any:
    """The real number a translated constant *e* stands for (a cast one,
    NaN and double infinities included), else None."""
    if isinstance(e, LoopyTypeCast) and e.type.numpy_dtype.kind == "f":
        e = e.child
    if isinstance(e, prim.NaN):
        return np.nan
    if e == _HUGE_VAL:
        return np.inf
    if e == -1 * _HUGE_VAL:
        return -np.inf
    if isinstance(e, (int, float, np.integer, np.floating)) and not isinstance(
            e, (bool, np.bool_)):
        return e
    return None


class _Extremum(ScalarReductionOperation):
    """numpy's ``amax``/``amin`` as a loopy reduction: the first NaN wins
    (loopy's max and min use ``fmax``/``fmin``, which drop NaNs), and every
    integer width has a neutral element."""

    largest = True

    def neutral_element(self, *dtypes: Any, callables_table: Any, target: Any
                        ) -> tuple[Any, Any]:
        dtype, = dtypes
        if dtype.numpy_dtype.kind == "f":
            neutral = (get_ge_neutral if self.largest else get_le_neutral)(dtype)
            return neutral, callables_table
        if dtype.numpy_dtype.kind == "c":
            # below (above) every value in numpy's lexicographic order
            inf = -np.inf if self.largest else np.inf
            return dtype.numpy_dtype.type(complex(inf, inf)), callables_table
        info = np.iinfo(dtype.numpy_dtype)
        neutral = info.min if self.largest else info.max
        if neutral > np.iinfo(np.int64).max:
            # (loopy types an untyped integer as int32 or int64 only)
            neutral = dtype.numpy_dtype.type(neutral)
        return neutral, callables_table

    def __call__(self, dtypes: Any, operand1: Any, operand2: Any,
                 callables_table: Any, target: Any) -> tuple[Any, Any]:
        dtype, = dtypes
        if dtype.numpy_dtype.kind == "c":
            # (realizing the reduction comes after type inference: the
            # functions the step calls are resolved here, as loopy's own
            # max is)
            def call(name: str, arg: Any, arg_dtype: np.dtype) -> Any:
                nonlocal callables_table
                known = target.get_device_ast_builder().known_callables[name]
                typed, callables_table = known.with_types(
                    {0: NumpyType(arg_dtype)}, callables_table)
                func_id, callables_table = add_callable_to_table(
                    callables_table, name, typed)
                return ResolvedFunction(func_id)(arg)

            step = complex_extremum_step(self.largest, operand1, operand2,
                                         dtype.numpy_dtype, call)
            return step, callables_table
        return (extremum_step(self.largest, operand1, operand2,
                              dtype.numpy_dtype.kind == "f"), callables_table)


def extremum_step(largest: bool, acc: Any, value: Any, floating: bool) -> Any:
    """The larger (*largest*) or smaller of *acc* and *value* as numpy's
    ``amax``/``amin`` take it: *acc* on ties, and for floats (*floating*)
    a NaN in *acc* stays (a NaN *value* then wins as the next *acc*)."""
    keep: Any = prim.Comparison(acc, ">=" if largest else "<=", value)
    if floating:
        keep = prim.LogicalOr((keep, prim.Comparison(acc, "!=", acc)))
    return prim.If(keep, acc, value)


def _unresolved_call(name: str, arg: Any, arg_dtype: Any) -> Any:
    """``name(arg)``, resolved by loopy's type inference."""
    return prim.Variable(name)(arg)


def complex_extremum_step(largest: bool, acc: Any, value: Any,
                          dtype: np.dtype, call: Any = _unresolved_call
                          ) -> Any:
    """:func:`extremum_step` of complex values of *dtype*: numpy's
    ``maximum`` (``minimum``) keeps *acc* if a part of it is NaN or it is
    not below (above) *value* in numpy's lexicographic order.
    ``call(name, arg, arg_dtype)`` builds the function calls."""
    acc_parts = complex_parts(acc, dtype, call)
    value_parts = complex_parts(value, dtype, call)
    part_dtype = np.empty(0, dtype).real.dtype
    keep = prim.LogicalOr((
        _is_nan(acc_parts[0], part_dtype, call),
        _is_nan(acc_parts[1], part_dtype, call),
        complex_comparison(acc_parts, ">=" if largest else "<=", value_parts,
                           part_dtype, call)))
    return prim.If(keep, acc, value)


def complex_parts(value: Any, dtype: np.dtype | None = None,
                  call: Any = _unresolved_call) -> tuple[Any, Any]:
    """The real and imaginary parts of the translated complex *value* (a
    loopy expression of *dtype*, or a number)."""
    if isinstance(value, (complex, np.complexfloating)):
        return value.real, value.imag
    return call("real", value, dtype), call("imag", value, dtype)


def _is_nan(part: Any, part_dtype: np.dtype | None = None,
            call: Any = _unresolved_call) -> Any:
    if isinstance(part, (int, float, np.number)):
        return np.int8(bool(np.isnan(part)))
    return call("isnan", part, part_dtype)


def complex_comparison(left: tuple[Any, Any], op: str,
                       right: tuple[Any, Any], part_dtype: np.dtype | None = None,
                       call: Any = _unresolved_call) -> Any:
    """``left op right`` of complex values given as (real, imaginary)
    parts (of *part_dtype*), as numpy compares them: ``==`` and ``!=``
    part by part, and the order lexicographic, where the real parts decide
    only if neither imaginary part is NaN."""
    (lr, li), (rr, ri) = left, right
    if op == "==":
        return prim.LogicalAnd((_compare(lr, "==", rr), _compare(li, "==", ri)))
    if op == "!=":
        return prim.LogicalOr((_compare(lr, "!=", rr), _compare(li, "!=", ri)))
    strict = op[0]
    by_real = prim.LogicalAnd((
        _compare(lr, strict, rr),
        prim.LogicalNot(_is_nan(li, part_dtype, call)),
        prim.LogicalNot(_is_nan(ri, part_dtype, call))))
    by_imaginary = prim.LogicalAnd((_compare(lr, "==", rr),
                                    _compare(li, op, ri)))
    return prim.LogicalOr((by_real, by_imaginary))


class _Maximum(_Extremum):
    largest = True


class _Minimum(_Extremum):
    largest = False


class _IntegerCastRemover(IdentityMapper):
    """Drops casts to int64 in indices where they change no value: widening
    index arithmetic (``ft.arange``'s ``(int64) i``), which is computed in
    the index's own type, and the cast back of int64 arithmetic computed in
    uint64 (:func:`_wrapping`); loopy's affine analysis of indices, and
    ftlazy's matching of segment rows, cannot see through casts. The
    widened factors of a product of two or more variable factors stay
    (``(long) i * (long) i`` past 2**31, ``(long) k * (long) k`` on ``int``
    reads): that product needs 64 bits, and is not affine anyway."""

    def map_type_cast(self, expr: LoopyTypeCast) -> Any:
        child = self.rec(expr.child)
        if expr.type.numpy_dtype == np.int64 and not _sign_change(expr):
            return _unwrapped(child)
        return LoopyTypeCast(expr.type, child)

    def map_product(self, expr: prim.Product) -> Any:
        if not _nonlinear(expr):
            return super().map_product(expr)
        return prim.Product(tuple(
            LoopyTypeCast(c.type, self.rec(c.child))
            if isinstance(c, LoopyTypeCast) and c.type.numpy_dtype == np.int64
            else self.rec(c) for c in expr.children))


def _sign_change(expr: Any) -> bool:
    """Whether *expr* is ``(long) (ulong) x``: a uint64 value read as int64
    (an index from uint64 data, whose mix with int64 loopy would type as
    float64), which index translation keeps."""
    return (isinstance(expr, LoopyTypeCast) and expr.type.numpy_dtype == np.int64
            and isinstance(expr.child, LoopyTypeCast)
            and expr.child.type.numpy_dtype == np.uint64)


def _nonlinear(expr: prim.Product) -> bool:
    """Whether a product has two or more factors that are not constants."""
    return sum(not isinstance(c, (int, np.integer)) for c in expr.children) >= 2


def _unwrapped(expr: Any) -> Any:
    """*expr*, an int64 operation of :func:`_wrapping` (operands cast to
    uint64) without its cast back, computed in int64 again: an index or
    guard, where no value wraps and loopy's analysis needs plain
    arithmetic (uint64 operands would also make its type inference promote
    a mix with int64 to double)."""
    def plain(c: Any) -> Any:
        if isinstance(c, LoopyTypeCast) and c.type.numpy_dtype == np.uint64:
            return c.child
        return None

    if isinstance(expr, (prim.Sum, prim.Product)):
        children = [plain(c) for c in expr.children]
        if all(c is not None for c in children):
            if isinstance(expr, prim.Product) and _nonlinear(
                    prim.Product(tuple(children))):
                # (the product of variables needs 64 bits)
                children = [LoopyTypeCast(np.dtype(np.int64), c)
                            if not isinstance(c, (int, np.integer)) else c
                            for c in children]
            return type(expr)(tuple(children))
    elif isinstance(expr, prim.BitwiseNot) and plain(expr.child) is not None:
        return prim.BitwiseNot(plain(expr.child))
    return expr


class _TypedIntegerLiterals(IdentityMapper):
    """Gives the Python integers of an integer expression *dtype*: loopy
    emits the child of a cast to a float type with the float literals of
    the cast's type (``(double) max(0.0 * n + m, 1l)``), which makes an
    integer ``max``'s overload ambiguous. Nested casts keep their own, and
    array indices their own type (a GPU group's ``256 * gid(0)`` in the
    index of an ``int8`` read)."""

    def __init__(self, dtype: np.dtype) -> None:
        super().__init__()
        self.dtype = dtype
        info = np.iinfo(dtype)
        self.bounds = (int(info.min), int(info.max))

    def map_constant(self, expr: Any) -> Any:
        if (isinstance(expr, int) and not isinstance(expr, bool)
                and self.bounds[0] <= expr <= self.bounds[1]):
            return self.dtype.type(expr)
        return expr

    def map_subscript(self, expr: prim.Subscript) -> Any:
        return expr

    def map_type_cast(self, expr: LoopyTypeCast) -> Any:
        return expr


def plain_index_arithmetic(index: Any) -> Any:
    """*index*, a translated index, guard or loop bound, in plain integer
    arithmetic: no int64 casts, and no wrapping of :func:`_wrapping` (an
    index never overflows, and loopy's affine analysis and ftlazy's own
    matching of segment rows, see :mod:`.ranges`, read plain sums)."""
    return _IntegerCastRemover()(index)


class Translator(ExprIdentityMapper):
    """Translates one IndexLambda body in the context of a stored array.

    :arg index_map: ftlazy index variable name -> loopy expression
    :arg bindings: binding name -> array node
    :arg read: ``read(node, index_tuple) -> loopy expression`` for a binding
    :arg fresh_iname: ``fresh_iname(upper_bound) -> name`` creates a
        reduction iname with a domain ``0 <= name < upper_bound``
    :arg declare_size: ``declare_size(name)`` is called for each size
        parameter the body uses by name (a kernel value argument even where
        no loop bound mentions it), if given
    """

    def __init__(self, index_map: dict[str, Any], bindings: Any,
                 read: Callable[[Any, tuple], Any],
                 fresh_iname: Callable[[Any], str],
                 declare_size: Callable[[str], None] | None = None) -> None:
        self.index_map = index_map
        self.bindings = bindings
        self.read = read
        self.fresh_iname = fresh_iname
        self.declare_size = declare_size
        self.in_index = False
        self.in_condition = False

    # {{{ typed constants

    def _value_dtype(self, expr: Any) -> np.dtype | None:
        """The dtype of the value arithmetic *expr* (None in index
        arithmetic, which stays untyped for loopy's affine analysis)."""
        if self.in_index:
            return None
        dtype = expr_dtype(expr, self.bindings)
        return dtype if dtype is not None and dtype.kind in "iuf" else None

    def _typed(self, operand: Any, dtype: np.dtype | None) -> Any:
        """*operand* of an arithmetic expression of *dtype*, translated; a
        Python number becomes a constant of *dtype* (``a - b`` on int64
        holds a Python ``-1``). loopy would print an untyped constant in
        the type context of the enclosing expression, which a cast does not
        reset: inside ``(double) max(a + -1 * b, 1l)`` the ``-1`` became
        ``-1.0``, and OpenCL's ``max(double, long)`` is ambiguous."""
        if (dtype is not None and isinstance(operand, (int, float))
                and not isinstance(operand, (bool, np.generic))):
            with np.errstate(all="ignore"):
                operand = np.asarray(operand).astype(dtype)[()]
        return self.rec(operand)

    def _wrapped_dtype(self, expr: Any, dtype: np.dtype | None
                       ) -> np.dtype | None:
        """The dtype whose wrapping :func:`_wrapping` gives *expr*: none for
        64-bit arithmetic of sizes and indices alone (``n - 3``), which
        cannot overflow and which loopy's analysis of bounds and guards
        must read as plain sums."""
        if (dtype is not None and dtype == np.int64
                and not self._reads_data(expr)):
            return None
        return dtype

    def map_sum(self, expr: prim.Sum) -> Any:
        dtype = self._value_dtype(expr)
        return _wrapping(prim.Sum, tuple(self._typed(c, dtype)
                                         for c in expr.children),
                         self._wrapped_dtype(expr, dtype), identity=0)

    def map_product(self, expr: prim.Product) -> Any:
        if (self.in_index or self.in_condition) and _nonlinear(expr):
            # (its factors' widening casts stay, see _IntegerCastRemover)
            saved = self.in_index, self.in_condition
            self.in_index = self.in_condition = False
            try:
                return self.map_product(expr)
            finally:
                self.in_index, self.in_condition = saved
        dtype = self._value_dtype(expr)
        return _wrapping(prim.Product, tuple(self._typed(c, dtype)
                                             for c in expr.children),
                         self._wrapped_dtype(expr, dtype), identity=1)

    def map_bitwise_not(self, expr: prim.BitwiseNot) -> Any:
        dtype = self._value_dtype(expr)
        return _wrapping(lambda c: prim.BitwiseNot(c[0]),
                         (self.rec(expr.child),), self._wrapped_dtype(expr, dtype))

    def map_quotient(self, expr: prim.Quotient) -> Any:
        dtype = self._value_dtype(expr)
        if expr_kind(expr, self.bindings) == "c":
            return prim.Variable("_ft_cdivide")(
                self._complex_operand(expr.numerator, expr),
                self._complex_operand(expr.denominator, expr))
        return prim.Quotient(self._typed(expr.numerator, dtype),
                             self._typed(expr.denominator, dtype))

    def _complex_operand(self, operand: Any, expr: Any) -> Any:
        """*operand* of the complex expression *expr*, translated, a Python
        number as a constant of *expr*'s dtype."""
        if isinstance(operand, (int, float, complex)) and not isinstance(
                operand, (bool, np.generic)):
            operand = expr_dtype(expr, self.bindings).type(operand)
        return self.rec(operand)

    def map_if(self, expr: prim.If) -> Any:
        dtype = self._value_dtype(expr)
        outer, self.in_condition = self.in_condition, True
        try:
            condition = self.rec(expr.condition)
        finally:
            self.in_condition = outer
        return prim.If(condition,
                       self._typed(expr.then, dtype),
                       self._typed(expr.else_, dtype))

    # }}}

    def map_constant(self, expr: Any) -> Any:
        if isinstance(expr, (bool, np.bool_)):
            return np.int8(1 if expr else 0)
        if (isinstance(expr, np.signedinteger)
                and expr == np.iinfo(expr.dtype).min):
            # C reads the literal -2147483648 as a wider type
            return LoopyTypeCast(expr.dtype, expr.dtype.type(expr + 1)) - 1
        if (isinstance(expr, (int, np.unsignedinteger))
                and not isinstance(expr, bool) and expr > np.iinfo(np.int64).max):
            # (loopy types a comparison by its operands' difference, whose
            # negated constant overflows: typed, it stays a uint64)
            return LoopyTypeCast(np.dtype(np.uint64), np.uint64(expr))
        if isinstance(expr, np.float64) and not np.isfinite(expr):
            # loopy prints a double infinity as INFINITY, a float in OpenCL
            # C: a call of a double and it, atan2(INFINITY, x), is ambiguous
            if np.isnan(expr):
                return prim.NaN(np.float64)
            return _HUGE_VAL if expr > 0 else -1 * _HUGE_VAL
        return expr

    def map_variable(self, expr: prim.Variable) -> Any:
        name = expr.name
        if name in self.index_map:
            return self.index_map[name]
        if name in self.bindings:
            return self.read(self.bindings[name], ())
        # a size parameter (a kernel value argument)
        if self.declare_size is not None:
            self.declare_size(name)
        return expr

    def map_subscript(self, expr: prim.Subscript) -> Any:
        outer, self.in_index = self.in_index, True
        try:
            index = tuple(plain_index_arithmetic(self.rec(i))
                          for i in expr.index_tuple)
        finally:
            self.in_index = outer
        return self.read(self.bindings[expr.aggregate.name], index)

    def map_reduce(self, expr: Reduce) -> Any:
        if any(hi == 0 for _, _, hi in expr.bounds):
            # over nothing: the neutral element (amax/amin of nothing is an
            # error the front end raises)
            value = {"sum": 0, "product": 1, "any": np.int8(0),
                     "all": np.int8(1)}[expr.op]
            return self._typed(value, self._value_dtype(expr.inner))
        saved = dict(self.index_map)
        inames = []
        for name, lo, hi in expr.bounds:
            if lo != 0:
                raise ValueError("reductions must start at 0")
            iname = self.fresh_iname(hi)
            inames.append(iname)
            self.index_map[name] = prim.Variable(iname)
        try:
            inner = self.rec(expr.inner)
        finally:
            self.index_map = saved
        op: Any = expr.op
        kind = expr_kind(expr.inner, self.bindings)
        if op in ("max", "min") and kind == "b":
            op = "any" if op == "max" else "all"
        if op in ("any", "all"):
            inner = (complex_comparison(complex_parts(inner), "!=", (0, 0))
                     if kind == "c" else _compare(inner, "!=", 0))
        elif op in ("max", "min"):
            op = _Maximum() if op == "max" else _Minimum()
        return Reduction(op, tuple(inames), inner)

    def _reads_data(self, expr: Any) -> bool:
        """Whether ftlazy expression *expr* reads an array (a binding that
        is no size parameter)."""
        return any(isinstance(e, prim.Subscript)
                   or (isinstance(e, prim.Variable) and e.name in self.bindings
                       and not isinstance(self.bindings[e.name], SizeParam))
                   for e in iter_subexpressions(expr))

    def map_type_cast(self, expr: TypeCast) -> Any:
        child = self.rec(expr.child)
        if expr.dtype.kind != "c" and expr_kind(expr.child, self.bindings) == "c":
            # numpy's cast of a complex value to a real type takes the real
            # part (with a ComplexWarning), except to bool
            if expr.dtype == np.bool_:
                return complex_comparison(complex_parts(child), "!=", (0, 0))
            child = complex_parts(child)[0]
        if expr.dtype == np.int64 and expr_dtype(
                expr.child, self.bindings) == np.uint64:
            # a sign change, kept in indices too (see _sign_change)
            return LoopyTypeCast(expr.dtype, LoopyTypeCast(
                np.dtype(np.uint64), child))
        if expr.dtype == np.int64 and (self.in_index or (
                self.in_condition and not self._reads_data(expr.child))):
            # widening an index read from data, or index arithmetic in a
            # condition (a guard): C converts implicitly, and loopy's affine
            # analysis of indices and guards cannot see through casts. (A
            # condition on data keeps its casts: (long) y * (long) y > 2**31.)
            return child
        if expr.dtype == np.bool_:
            return _compare(child, "!=", 0)
        source = expr_dtype(expr.child, self.bindings)
        if expr.dtype.kind == "f" and source is not None and source.kind in "iu":
            child = _TypedIntegerLiterals(source)(child)
        return LoopyTypeCast(expr.dtype, child)

    def _extremum(self, expr: prim.Min | prim.Max, op: str) -> Any:
        self._refuse_complex(expr, "a maximum or minimum")  # (made by If)
        dtype = expr_dtype(expr, self.bindings)
        value_dtype = self._value_dtype(expr)
        children = [self._typed(c, value_dtype) for c in expr.children]
        if (dtype is None or dtype.kind not in "biu"
                or (dtype.itemsize >= 4 and dtype != np.uint32)):
            return type(expr)(tuple(children))
        # C has no char or short literals, so OpenCL's max(c, 100u) on a
        # uchar c is an ambiguous overload: select instead (and loopy
        # prints a uint32 constant as an unsigned long: min(u, 5ul))
        result = children[0]
        for c in children[1:]:
            result = prim.If(_compare(result, op, c), result, c)
        return result

    def map_max(self, expr: prim.Max) -> Any:
        return self._extremum(expr, ">=")

    def map_min(self, expr: prim.Min) -> Any:
        return self._extremum(expr, "<=")

    def _refuse_complex(self, expr: Any, what: str) -> None:
        """:class:`TypeError` if *expr* (an operand) is complex: *what*
        is not emitted for complex values yet."""
        dtype = expr_dtype(expr, self.bindings)
        if dtype is not None and dtype.kind == "c":
            raise TypeError(f"compiling {what} of complex values ({dtype}) is "
                            "not supported yet (ft.evaluate_numpy evaluates it)")

    def map_comparison(self, expr: prim.Comparison) -> Any:
        left, right = self.rec(expr.left), self.rec(expr.right)
        if isinstance(left, prim.NaN) or isinstance(right, prim.NaN):
            # (known: only != holds for a NaN; loopy's analysis of guards
            # cannot read a NaN constant)
            return np.int8(expr.operator == "!=")
        if "c" in (expr_kind(expr.left, self.bindings),
                   expr_kind(expr.right, self.bindings)):
            return complex_comparison(self._parts(expr.left, left),
                                      expr.operator,
                                      self._parts(expr.right, right))
        return _compare(left, expr.operator, right)

    def _parts(self, operand: Any, translated: Any) -> tuple[Any, Any]:
        """The real and imaginary parts of *operand* of a complex
        comparison (*translated*: its translation), which may be real."""
        if expr_kind(operand, self.bindings) == "c" or isinstance(
                translated, (complex, np.complexfloating)):
            return complex_parts(translated)
        return translated, 0

    def map_power(self, expr: prim.Power) -> Any:
        if expr_kind(expr, self.bindings) == "c":
            return prim.Variable("_ft_cpow")(
                self._complex_operand(expr.base, expr),
                self._complex_operand(expr.exponent, expr))
        if (isinstance(expr.exponent, (float, np.floating))
                and expr.exponent == 0.5
                and expr_kind(expr.base, self.bindings) == "f"):
            # numpy takes a constant exponent 0.5 as sqrt: -0.0 and NaN
            # for -0.0 and -inf, where pow gives 0.0 and inf
            return prim.Variable("sqrt")(self.rec(expr.base))
        return super().map_power(expr)

    def map_call(self, expr: prim.Call) -> Any:
        name = C_FUNCTIONS[expr.function.name]
        if expr.function.name in ("isnan", "isfinite", "sign", "floor",
                                  "ceil", "rint", "fmod", "arctan2", "arcsin",
                                  "arccos", "arctan"):
            for p in expr.parameters:
                self._refuse_complex(p, f"{expr.function.name}()")
        if expr.function.name in _COMPLEX_BY_LOG_EXP and expr_kind(
                expr, self.bindings) == "c":
            return self._complex_log_exp(expr)
        call = prim.Variable(name)(*[self.rec(p) for p in expr.parameters])
        dtype = self._value_dtype(expr)
        if dtype is not None and dtype.kind in "iu":
            # (OpenCL's abs of a signed integer is unsigned: abs(-128) of a
            # char is 128, numpy's int8 abs is -128)
            return LoopyTypeCast(dtype, call)
        return call

    def _complex_log_exp(self, expr: prim.Call) -> Any:
        """A complex ``log2``/``log10`` (a scaled ``log``) or ``exp2`` (``exp``
        of a scaled argument), as numpy computes them (OpenCL has none for
        complex values)."""
        (z,) = expr.parameters
        real = np.dtype(expr_dtype(expr, self.bindings).char.lower())
        function, scale = _COMPLEX_BY_LOG_EXP[expr.function.name]
        factor = real.type(scale)
        if function == "log":
            return prim.Product((prim.Variable("log")(self.rec(z)), factor))
        return prim.Variable("exp")(prim.Product((self.rec(z), factor)))

    def _float_dtype(self, expr: Any) -> np.dtype | None:
        dtype = expr_dtype(expr, self.bindings)
        return dtype if dtype is not None and dtype.kind in "fc" else None

    def map_floor_div(self, expr: prim.FloorDiv) -> Any:
        num, den = self.rec(expr.numerator), self.rec(expr.denominator)
        dtype = self._float_dtype(expr)
        if dtype is not None:
            return _float_divmod(num, den, dtype)[0]
        if expr_kind(expr, self.bindings) == "?":
            return prim.FloorDiv(num, den)  # index arithmetic, divisor > 0
        return prim.Variable("_ft_floordiv")(num, den)

    def map_remainder(self, expr: prim.Remainder) -> Any:
        num, den = self.rec(expr.numerator), self.rec(expr.denominator)
        dtype = self._float_dtype(expr)
        if dtype is not None:
            return _float_divmod(num, den, dtype)[1]
        if expr_kind(expr, self.bindings) == "?":
            return prim.Remainder(num, den)  # index arithmetic, divisor > 0
        return prim.Variable("_ft_mod")(num, den)


def _wrapping(op: Callable[[tuple], Any], children: tuple,
              dtype: np.dtype | None, identity: int | None = None) -> Any:
    """``op(children)`` wrapping around as numpy's integers of *dtype* do.
    OpenCL C computes ``char`` and ``short`` operands as ``int`` (no wrap at
    their width), widens to the type of a wider literal (``x + 4294967294ul``
    on a ``uint``), and leaves signed overflow undefined (a compiler may take
    ``(y + y) > 0`` for ``y > 0``, or ``x + 1 > x`` as true for int64's
    largest value): signed integers compute in the unsigned type of their
    width and are cast back, unsigned ones of 32 bits or fewer in a wider
    unsigned type (64-bit unsigned arithmetic wraps in C as in numpy).
    Constant operands equal to the operation's *identity* (``0 + x``,
    ``1 * x``) are left out of a wrapped operation."""
    if dtype is None or dtype.kind not in "iu" or (
            dtype.kind == "u" and dtype.itemsize > 4):
        return op(children)
    if identity is not None:
        kept = tuple(c for c in children if not (
            isinstance(c, (int, np.integer)) and not isinstance(
                c, (bool, np.bool_)) and c == identity))
        if len(kept) == 1:
            return kept[0]
        children = kept or children[:1]
    # (signed: the unsigned type of the width; unsigned: a wider one, so
    # that loopy, which types the operation in it, keeps the cast back)
    width = dtype.itemsize if dtype.kind == "i" else max(4, 2 * dtype.itemsize)
    computed = np.dtype(f"u{width}")
    return LoopyTypeCast(dtype, op(tuple(LoopyTypeCast(computed, c)
                                         for c in children)))


def expr_kind(expr: Any, bindings: Any) -> str:
    """The dtype kind of a well-typed ftlazy expression ('?' for untyped
    index arithmetic)."""
    dtype = expr_dtype(expr, bindings)
    return "?" if dtype is None else dtype.kind


def expr_dtype(expr: Any, bindings: Any) -> np.dtype | None:
    """The dtype of a well-typed ftlazy arithmetic expression (*None* for
    untyped index arithmetic): operands of an operator share its dtype, so
    the first typed leaf decides."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, TypeCast):
            return e.dtype
        if isinstance(e, np.generic):
            return e.dtype
        if isinstance(e, prim.NaN):
            return np.dtype(e.data_type)
        if isinstance(e, float):
            return np.dtype(np.float64)
        if isinstance(e, prim.Subscript):
            return bindings[e.aggregate.name].dtype
        if isinstance(e, prim.Variable) and e.name in bindings:
            return bindings[e.name].dtype
        if isinstance(e, (prim.FloorDiv, prim.Remainder, prim.Quotient)):
            stack.extend([e.denominator, e.numerator])
        elif isinstance(e, prim.Power):
            stack.extend([e.exponent, e.base])
        elif isinstance(e, (prim.Sum, prim.Product, prim.Min, prim.Max,
                            prim.BitwiseAnd, prim.BitwiseOr,
                            prim.BitwiseXor)):
            stack.extend(reversed(e.children))
        elif isinstance(e, prim.BitwiseNot):
            stack.append(e.child)
        elif isinstance(e, (prim.LeftShift, prim.RightShift)):
            stack.append(e.shiftee)
        elif isinstance(e, prim.If):
            stack.extend([e.else_, e.then])
        elif isinstance(e, prim.Call):
            stack.extend(reversed(e.parameters))
        elif isinstance(e, Reduce):
            stack.append(e.inner)
    return None


def _float_divmod(a: Any, b: Any, dtype: np.dtype) -> tuple[Any, Any]:
    """numpy's ``npy_divmod``: the floor quotient and the remainder (with
    the divisor's sign) of floats *a* and *b*, signed zeros included."""
    if _known_number(b) is not None and np.isnan(_known_number(b)):
        return b, b  # (x // nan and x % nan are NaN)
    zero, one, half = dtype.type(0), dtype.type(1), dtype.type(0.5)
    copysign = prim.Variable("copysign")
    fm = prim.Variable("fmod")(a, b)
    div = prim.Quotient(a - fm, b)
    mismatch = prim.LogicalAnd((_compare(fm, "!=", zero), _compare(
        _compare(b, "<", zero), "!=", _compare(fm, "<", zero))))
    mod = prim.If(mismatch, fm + b,
                  prim.If(_compare(fm, "!=", zero), fm, copysign(zero, b)))
    div = prim.If(mismatch, div - one, div)
    fl = prim.Variable("floor")(div)
    floordiv = prim.If(
        _compare(div, "!=", zero),
        prim.If(_compare(div - fl, ">", half), fl + one, fl),
        copysign(zero, prim.Quotient(a, b)))
    # a zero divisor gives a / b (inf or NaN) and fmod's NaN
    return (prim.If(_compare(b, "==", zero), prim.Quotient(a, b), floordiv),
            prim.If(_compare(b, "==", zero), fm, mod))
