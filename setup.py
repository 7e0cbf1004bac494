# SPDX-License-Identifier: MIT
from setuptools import find_packages, setup

setup(
    name="ftlazy",
    version="0.1.0",
    description="Lazy array computation: numpy-like DAGs with FractalTensor-style "
                "nested parallelism, compiled through loopy to OpenCL",
    long_description=open("README.md").read() if __import__("os").path.exists(
        "README.md") else "",
    long_description_content_type="text/markdown",
    license="MIT",
    packages=find_packages(include=["ftlazy", "ftlazy.*"]),
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.26",
        "pymbolic>=2025.1",
        "pytools>=2025.1",
        # islpy 2026.2 dropped BasicSet.find_dim_by_name and Aff.is_equal,
        # which loopy 2025.2 (the newest loopy) calls when a kernel has
        # data-dependent loop bounds or blocks of rows with a partial last
        # block: FractalTensor maps and scans fail to compile with it
        "islpy>=2025.2.5,<2026.2",
        "loopy>=2025.2",
        "pyopencl>=2025.1",
        # PoCL, the CPU OpenCL driver: the default device where there is no
        # GPU, so a plain install must bring it (without any driver
        # pyopencl finds no platform). Its wheels, pocl-binary-distribution,
        # exist for Linux x86_64 only; elsewhere install an OpenCL driver
        # (see README.md).
        'pyopencl[pocl]>=2025.1; platform_system == "Linux" '
        'and platform_machine == "x86_64"',
    ],
    extras_require={
        # kept for `pip install ftlazy[pocl]`; the plain install has it now
        "pocl": ["pyopencl[pocl]"],
        # pytest-xdist: the README's `pytest -n 2` runs the tests in worker
        # processes, so that a driver crash fails one test, not the run
        # pytest-timeout: a test that hangs (a driver, a browser) is ended
        # after pytest.ini's timeout and fails alone
        "test": ["pytest", "hypothesis", "pytest-xdist", "pytest-timeout",
                 "packaging"],
        "doc": ["sphinx"],
        # ft.to_svg / ft.show_dot_graph: graphviz-pure is a self-contained
        # port of Graphviz's dot (a wheel with a static executable), so
        # pictures need no system package; see
        # doc/notes/visualization_engines.rst for the choice
        "viz": ["graphviz-pure>=0.2.2"],
    },
)
