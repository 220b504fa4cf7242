# Cross build for aarch64 Linux from an x86-64 Debian with multiarch (scripts/setup-aarch64
# installs the compiler, the arm64 libraries and qemu). The arm64 libraries live beside the
# host's under /usr/lib/aarch64-linux-gnu and share /usr/include, so no sysroot is set: CMake
# searches lib/aarch64-linux-gnu through CMAKE_LIBRARY_ARCHITECTURE, pkg-config its own folder.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
# Programs are recorded by their real paths: scripts/test runs CMake with a PATH of temporary
# link folders (scripts/with-setup-node), which must not end up in the cache.
function(ghostline_real_program var)
  find_program(program NAMES ${ARGN} REQUIRED NO_CACHE)
  file(REAL_PATH "${program}" real)
  set(${var} "${real}" PARENT_SCOPE)
endfunction()
ghostline_real_program(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
ghostline_real_program(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Only the target's .pc files (the header-only ones in /usr/share/pkgconfig are the same).
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# No CUDA for this target (engine/CMakeLists.txt would otherwise pick up the host's nvcc).
set(CMAKE_CUDA_COMPILER "")

# Test binaries (gtest_discover_tests, ctest) run under user-mode emulation; `-cpu max` gives
# the emulated core every optional feature qemu has (dotprod, i8mm, fp16, SVE). No `-L
# /usr/aarch64-linux-gnu`: that folder's loader (the cross toolchain's glibc) with multiarch's
# libc.so.6 (a newer Debian revision) hangs in the first pthread_create; the multiarch loader in
# /lib matches the libraries the binaries load.
ghostline_real_program(GHOSTLINE_QEMU_AARCH64 qemu-aarch64-static qemu-aarch64)
set(CMAKE_CROSSCOMPILING_EMULATOR "${GHOSTLINE_QEMU_AARCH64};-cpu;max")
