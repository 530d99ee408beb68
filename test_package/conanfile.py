# `conan create .` builds this after the package: a CUDA project that links smartarray through the
# package's own CMake config and runs one check on the backend present (without a GPU, the host
# backend).
import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout


class SmartarrayTestPackageConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    generators = "CMakeDeps"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        toolchain = CMakeToolchain(self)
        # C++20 comes with the target; CMAKE_CXX_STANDARD before project() makes CMake < 3.26
        # test nvcc for a CUDA20 dialect it has no flag for.
        toolchain.blocks.remove("cppstd")
        # The package's architectures, so that the program's kernels need no more than its own.
        archs = self.dependencies["smartarray"].options.cuda_architectures
        if archs:
            toolchain.cache_variables["CMAKE_CUDA_ARCHITECTURES"] = str(archs).replace(",", ";")
        toolchain.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            self.run(os.path.join(self.cpp.build.bindir, "test_package"), env="conanrun")
