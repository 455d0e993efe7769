"""Builds the Python module `ctspmd` without CMake, for `pip install --no-build-isolation ./python`.

The same sources as python/CMakeLists.txt's target: the module (module.cpp) and the request
reader it shares with ctspmd-infer (tools/requests: rule, plan and model requests, the runtime
layer's by-name table). It needs a C++20 compiler, the headers of pybind11, Boost, and
nlohmann-json (Debian: pybind11-dev, libboost-dev, nlohmann-json3-dev), and nothing from a
package index.
"""
import pathlib
import re

from setuptools import Extension, setup

here = pathlib.Path(__file__).resolve().parent
root = here.parent
version = re.search(r"project\(ctspmd VERSION ([0-9.]+)", (root / "CMakeLists.txt").read_text()).group(1)
requests = root / "tools" / "requests"

module = Extension(
    "ctspmd",
    sources=[str(here / "module.cpp")]
    + [str(requests / name) for name in ("rule_request.cpp", "plan_request.cpp", "model_request.cpp", "runtime_layer.cpp")],
    include_dirs=[str(root / "include"), str(requests)],
    define_macros=[("CTSPMD_RUNTIME_SEPARATE", None), ("CTSPMD_VERSION", f'"{version}"')],
    extra_compile_args=["-std=c++20", "-O2", "-fvisibility=hidden"],
    language="c++",
)

setup(
    name="ctspmd",
    version=version,
    description="Compile-time SPMD sharding propagation: PaddlePaddle's sharding rules by operator name",
    ext_modules=[module],
    python_requires=">=3.9",
)
