"""Shared set-up of the Python tests."""
import os

# Under the sanitizers CTest preloads their runtime into the interpreter (LD_PRELOAD, see
# python/CMakeLists.txt); the programs these tests start (ctspmd-infer) carry their own runtime
# and must not load a second one. The interpreter has loaded it already: the variable can go.
os.environ.pop("LD_PRELOAD", None)
