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
        "islpy>=2025.2.5",
        "loopy>=2025.2",
        "pyopencl>=2025.1",
    ],
    extras_require={
        "pocl": ["pyopencl[pocl]"],
        "test": ["pytest", "hypothesis"],
        "doc": ["sphinx"],
    },
)
