# Conan 2 recipe: the static library and its CMake package, built from this tree with the system's
# CUDA toolkit (nvcc on PATH, or CUDACXX). No Conan requirements: tests, examples and benchmarks are
# off, so nothing comes from a remote and `conan create . -s compiler.cppstd=20` works offline.
#   cuda_architectures  CMAKE_CUDA_ARCHITECTURES, ';' or ',' between entries ("75-virtual",
#                       "80-real,90-real"); unset: the project's default, the GPU present, else a
#                       fat binary from sm_75 to sm_120 (CUDA 13).
#   with_mpi            smartarray::distributed over the system's MPI (off: a package without
#                       system dependencies beyond CUDA); with_nccl adds its nccl transport.
# Consumers use the package's own CMake config: find_package(smartarray CONFIG REQUIRED) and
# smartarray::smartarray (see test_package/).
import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import load


class SmartarrayConan(ConanFile):
    name = "smartarray"
    description = ("A std::vector-like SmartArray<T> with host/device residency and exact transfer "
                   "counts, on CUDA or an emulated device")
    topics = ("cuda", "gpu", "memory", "containers")
    package_type = "static-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {
        "cuda_architectures": [None, "ANY"],
        "with_mpi": [True, False],
        "with_nccl": [True, False],
    }
    default_options = {"cuda_architectures": None, "with_mpi": False, "with_nccl": False}
    exports_sources = "CMakeLists.txt", "cmake/*", "include/*", "src/*"

    def set_version(self):
        cmakelists = load(self, os.path.join(self.recipe_folder, "CMakeLists.txt"))
        self.version = re.search(r"project\(smartarray VERSION ([0-9.]+)", cmakelists).group(1)

    def configure(self):
        if not self.options.with_mpi:
            self.options.rm_safe("with_nccl")

    def layout(self):
        cmake_layout(self)

    def validate(self):
        check_min_cppstd(self, 20)

    def generate(self):
        toolchain = CMakeToolchain(self)
        # CMakeLists.txt sets C++20 itself. The toolchain's CMAKE_CXX_STANDARD, set before
        # project(), makes CMake < 3.26 test nvcc for a CUDA20 dialect it has no flag for.
        toolchain.blocks.remove("cppstd")
        variables = toolchain.cache_variables
        for option in ("TESTS", "EXAMPLES", "BENCHMARKS", "PYTHON", "FUZZERS"):
            variables[f"SMARTARRAY_BUILD_{option}"] = "OFF"
        variables["SMARTARRAY_WITH_MPI"] = "ON" if self.options.with_mpi else "OFF"
        if self.options.with_mpi:
            variables["SMARTARRAY_WITH_NCCL"] = "ON" if self.options.with_nccl else "OFF"
        if self.options.cuda_architectures:
            variables["CMAKE_CUDA_ARCHITECTURES"] = str(self.options.cuda_architectures).replace(
                ",", ";")
        toolchain.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        CMake(self).install()

    def package_info(self):
        # The installed smartarray-config.cmake is the package's interface: it finds the CUDA
        # toolkit (CUDA::cudart, CCCL's include folder), Threads and, with with_mpi, MPI, and
        # brings C++20 and nvcc's flags. CMakeDeps generates nothing; CMakeToolchain puts the
        # package root on CMAKE_PREFIX_PATH, where find_package() finds lib/cmake/smartarray.
        self.cpp_info.set_property("cmake_find_mode", "none")
        self.cpp_info.builddirs = ["."]
