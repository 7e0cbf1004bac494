"""Let loopy's 'vec' iname tag vectorize calls to elementwise OpenCL math builtins.
Stock loopy 2025.2 raises UnvectorizableError("function calls cannot yet be vectorized")
in VectorizabilityChecker.map_call and silently falls back to unrolling (.s0,.s1,...)."""
import pymbolic.primitives as p
from loopy.expression import VectorizabilityChecker
from loopy.codegen import UnvectorizableError
ELEMENTWISE = {"exp", "log", "sin", "cos", "tan", "tanh", "sinh", "cosh", "sqrt", "fabs",
               "abs", "expm1", "log1p", "asin", "acos", "atan", "erf", "pow", "fmin", "fmax",
               "floor", "ceil", "exp2", "log2", "log10", "rsqrt", "cbrt", "atan2", "fmod"}
_orig = VectorizabilityChecker.map_call
def map_call(self, expr):
    name = getattr(expr.function, "name", None)
    if name in ELEMENTWISE:
        return any([self.rec(c) for c in expr.parameters])
    return _orig(self, expr)
VectorizabilityChecker.map_call = map_call
