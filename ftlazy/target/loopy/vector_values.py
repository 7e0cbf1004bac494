# SPDX-License-Identifier: MIT
"""OpenCL vector values (``float8``, ``double4``) as private scalars.

On CPUs a row loop split into lanes (:meth:`.KernelBuilder.sequential_axis`)
runs each elementwise math builtin once on a vector of the lanes'
arguments (PoCL's vector builtins are several times faster per element
than the scalar ones). The arguments used to be gathered lane by lane in
an unrolled loopy loop, whose code generation costs tens of milliseconds
of isl work per lane: most of a stacked LSTM's seconds of code generation.
Here one instruction builds the vector from its lanes, one applies the
builtin, and each lane reads its component, through three callables that
loopy types and emits:

* ``_ft_vgather_<dtype>_<n>(a_0, ..., a_{n-1})``: the vector
  ``(floatn)(a_0, ...)`` (each lane converted to *dtype*);
* ``_ft_vmath_<name>(v, ...)``: the OpenCL builtin *name* on vectors;
* ``_ft_vlane(v, k)``: component ``k`` of *v*: ``v.sk`` where *k* is a
  constant or an unrolled iname (a constant once loopy emits the lane),
  else ``v[k]`` (a loop over the lanes, where the device's probe passed
  such reads, see :data:`~.probe.LANES`);
* ``_ft_vop_add(u, v)``, ``_ft_vop_mul(u, v)``: the lane-wise sum and
  product (the accumulators of :mod:`.ranged_lanes` and of
  :mod:`.padding`'s contraction blocks).
"""

from __future__ import annotations

from typing import Any

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
import pyopencl.cltypes as cltypes
from constantdict import constantdict
from loopy.diagnostic import LoopyError
from loopy.kernel.function_interface import ScalarCallable
from loopy.types import NumpyType

__all__ = ["GATHER_PREFIX", "LANE", "MATH_PREFIX", "OP_PREFIX", "vector_dtype",
           "gather_name", "register_vector_callables"]

GATHER_PREFIX = "_ft_vgather"
MATH_PREFIX = "_ft_vmath_"
LANE = "_ft_vlane"
OP_PREFIX = "_ft_vop_"

#: OpenCL C names of the scalar dtypes vectors are built of
_C_SCALAR = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


def vector_dtype(dtype: np.dtype, lanes: int) -> np.dtype | None:
    """pyopencl's dtype of an OpenCL vector of *lanes* *dtype* values, or
    None where vectors of *dtype* are not built here."""
    dtype = np.dtype(dtype)
    if dtype not in _C_SCALAR:
        return None
    return cltypes.vec_types.get((dtype, lanes))


def _lanes_of(dtype: np.dtype) -> tuple[np.dtype, int] | None:
    for (base, n), vec in cltypes.vec_types.items():
        if vec == dtype:
            return np.dtype(base), n
    return None


def gather_name(dtype: np.dtype, lanes: int) -> str:
    """The name of the callable building a vector of *lanes* *dtype*."""
    return f"{GATHER_PREFIX}_{np.dtype(dtype).name}_{lanes}"


class VectorGather(ScalarCallable):
    """``_ft_vgather_<dtype>_<n>``: an OpenCL vector from its *n* lanes."""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        dtype_name, _, lanes_text = self.name[len(GATHER_PREFIX) + 1:].rpartition("_")
        dtype, lanes = np.dtype(dtype_name), int(lanes_text)
        vec = vector_dtype(dtype, lanes)
        if vec is None:
            raise LoopyError(f"{self.name}: no vector of {lanes} {dtype}")
        types = {i: NumpyType(dtype) for i in range(lanes)}
        types[-1] = NumpyType(vec)
        return (self.copy(name_in_target=f"({_C_SCALAR[dtype]}{lanes})",
                          arg_id_to_dtype=constantdict(types)), clbl_inf_ctx)


class VectorMath(ScalarCallable):
    """``_ft_vmath_<name>``: the OpenCL builtin *name* on vectors (the
    result has its first argument's vector dtype)."""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        if 0 not in arg_id_to_dtype:
            return self.copy(arg_id_to_dtype=arg_id_to_dtype), clbl_inf_ctx
        nargs = max(i for i in arg_id_to_dtype if i >= 0) + 1
        vec = arg_id_to_dtype[0]
        if _lanes_of(vec.numpy_dtype) is None:
            raise LoopyError(f"{self.name} needs vector arguments, got "
                             f"{vec.numpy_dtype}")
        types = {i: vec for i in range(nargs)}
        types[-1] = vec
        return (self.copy(name_in_target=self.name[len(MATH_PREFIX):],
                          arg_id_to_dtype=constantdict(types)), clbl_inf_ctx)


class VectorLane(ScalarCallable):
    """``_ft_vlane(v, k)``: component *k* of the vector *v*: ``v.sk`` where
    *k* is a constant by the time the lane is emitted (an unrolled iname),
    else ``v[k]``."""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        if 0 not in arg_id_to_dtype or 1 not in arg_id_to_dtype:
            return self.copy(arg_id_to_dtype=arg_id_to_dtype), clbl_inf_ctx
        vec = arg_id_to_dtype[0]
        found = _lanes_of(vec.numpy_dtype)
        if found is None:
            raise LoopyError(f"{LANE} needs a vector, got {vec.numpy_dtype}")
        types = {0: vec, 1: arg_id_to_dtype[1], -1: NumpyType(found[0])}
        return (self.copy(name_in_target=LANE, arg_id_to_dtype=constantdict(types)),
                clbl_inf_ctx)

    def emit_call(self, expression_to_code_mapper: Any, expression: Any,
                  target: Any) -> Any:
        from loopy.expression import dtype_to_type_context
        vec, lane = expression.parameters
        lane_dtype = self.arg_id_to_dtype[1]
        k = expression_to_code_mapper.rec(
            lane, dtype_to_type_context(target, lane_dtype), lane_dtype)
        code = expression_to_code_mapper.rec(vec, "f", self.arg_id_to_dtype[0])
        if not isinstance(k, (int, np.integer)):
            return prim.Subscript(code, k)
        return prim.Lookup(code, f"s{int(k):x}")


#: lane-wise operators of two vectors, by the suffix of their callable
_VECTOR_OPS = {"add": prim.Sum, "mul": prim.Product}


class VectorOp(ScalarCallable):
    """``_ft_vop_add(u, v)`` and ``_ft_vop_mul(u, v)``: the lane-wise sum
    ``u + v`` and product ``u * v`` of two vectors (loopy's own operators do
    not type vector operands)."""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        if 0 not in arg_id_to_dtype or 1 not in arg_id_to_dtype:
            return self.copy(arg_id_to_dtype=arg_id_to_dtype), clbl_inf_ctx
        vec = arg_id_to_dtype[0]
        if _lanes_of(vec.numpy_dtype) is None:
            raise LoopyError(f"{self.name} needs vectors, got {vec.numpy_dtype}")
        return (self.copy(name_in_target=self.name,
                          arg_id_to_dtype=constantdict({0: vec, 1: vec, -1: vec})),
                clbl_inf_ctx)

    def emit_call(self, expression_to_code_mapper: Any, expression: Any,
                  target: Any) -> Any:
        vec = self.arg_id_to_dtype[0]
        u, v = (expression_to_code_mapper.rec(p, None, vec)
                for p in expression.parameters)
        return _VECTOR_OPS[self.name[len(OP_PREFIX):]]((u, v))


def register_vector_callables(t_unit: lp.TranslationUnit, names: set[str]
                              ) -> lp.TranslationUnit:
    """*t_unit* with the vector callables among *names* (the functions its
    kernel calls) registered."""
    for name in sorted(names):
        if name.startswith(GATHER_PREFIX):
            callable_: Any = VectorGather(name=name)
        elif name.startswith(MATH_PREFIX):
            callable_ = VectorMath(name=name)
        elif name == LANE:
            callable_ = VectorLane(name=name)
        elif name[len(OP_PREFIX):] in _VECTOR_OPS and name.startswith(OP_PREFIX):
            callable_ = VectorOp(name=name)
        else:
            continue
        t_unit = lp.register_callable(t_unit, name, callable_,
                                      redefining_not_ok=False)
    return t_unit
