# SPDX-License-Identifier: MIT
"""ftlazy: lazy array computation with nested data parallelism.

``import ftlazy as ft``. The documentation is in ``doc/`` (build it with
Sphinx, see README.md): ``doc/tutorial.rst`` introduces the library,
``doc/reference.rst`` is the API reference (the public contract) and
``doc/design.rst`` explains the design decisions.
"""

from ftlazy.array import (  # noqa: F401
    AdvancedIndex, Array, Axis, AxisPermutation, BasicIndex, Concatenate,
    DataWrapper, DictOfNamedArrays, Einsum, IndexLambda, NormalizedSlice,
    Placeholder, Reshape, Roll, SizeParam, Stack)
from ftlazy.fractal import (  # noqa: F401
    Body, BodyParam, Gather, LoopResult, Map, Scan, fold, gather, map, reduce,
    scan, scatter)
from ftlazy.inputs import (  # noqa: F401
    make_data_wrapper, make_dict_of_named_arrays, make_placeholder,
    make_size_param)
from ftlazy.ops import *  # noqa: F401,F403
from ftlazy.ops import asarray, result_type  # noqa: F401
from ftlazy import analysis, tags, transform  # noqa: F401
from ftlazy.transform import mappers as _mappers

_mappers._install_named_fallbacks()

from ftlazy.target.numpy import evaluate_numpy  # noqa: E402,F401
from ftlazy.visualization import (  # noqa: E402,F401
    get_dot_graph, show_dot_graph, to_svg)

from ftlazy.target.loopy import compile, generate_loopy  # noqa: E402,F401,A001
from ftlazy.target.loopy.host_loops import (  # noqa: E402,F401
    HostEvaluationWarning)
from ftlazy.progress import set_progress  # noqa: E402,F401
from ftlazy.target.loopy.profile import (  # noqa: E402,F401
    CodegenOptions, DeviceProfile)
from ftlazy.jagged import JaggedArray  # noqa: E402,F401

__version__ = "0.1.0"
from ftlazy.fractal_tensor import (  # noqa: E402,F401,A001
    Jagged, flatten, lengths, make_jagged_placeholder, map)
from ftlazy.fractal_access import (  # noqa: E402,F401,A001
    filter, join, product, repeat)
from ftlazy.jagged_scan_outer import JaggedScan  # noqa: E402,F401
from ftlazy.text_ir import pretty  # noqa: E402,F401
from ftlazy.verification import VerificationError, verify  # noqa: E402,F401
from ftlazy.transform.einsum_broadcasts import (  # noqa: E402,F401
    rewrite_einsums_with_no_broadcasts)

#: pytato's name for the base class of results made of named arrays; in
#: ftlazy :class:`DictOfNamedArrays` is the only such result
AbstractResultWithNamedArrays = DictOfNamedArrays
