// What the build target offers ember: the one place where a freestanding build (a
// microcontroller without an operating system: docs/embedded.md) differs from a hosted one.
//
//   #include <ember/core/config.hpp>
//   static_assert(EMBER_HAS_HEAP == !EMBER_FREESTANDING, "a hosted build has a heap");
//
// Define EMBER_FREESTANDING=1 (CMake's -DEMBER_FREESTANDING=ON does, and so do the Makefiles of
// examples/cortex_m) to get the freestanding profile: no exceptions, no threads, no files and no
// heap. The same source files then compile for both targets; code that needs a hosted feature
// tests the EMBER_HAS_* macro below instead of the target. Without EMBER_FREESTANDING, the
// hosted features follow the compiler (-fno-exceptions turns EMBER_HAS_EXCEPTIONS off).
#pragma once

#ifndef EMBER_FREESTANDING
// 1: build for a target without an operating system (no exceptions, threads, files or heap).
#define EMBER_FREESTANDING 0
#endif

#if !EMBER_FREESTANDING && (defined(__cpp_exceptions) || defined(__EXCEPTIONS))
// 1 where errors may be thrown as ember::Error; otherwise they are status codes plus a message.
#define EMBER_HAS_EXCEPTIONS 1
#else
#define EMBER_HAS_EXCEPTIONS 0
#endif

#if EMBER_FREESTANDING
#define EMBER_HAS_THREADS 0  // 1 where std::thread and thread_local exist
#define EMBER_HAS_FILES 0    // 1 where files can be opened (std::fstream)
#define EMBER_HAS_HEAP 0     // 1 where code may allocate after start-up (new, std::vector)
#else
#define EMBER_HAS_THREADS 1
#define EMBER_HAS_FILES 1
#define EMBER_HAS_HEAP 1
#endif

#if EMBER_HAS_THREADS
// Storage for per-thread state (the kernels' last error message): thread_local where threads exist.
#define EMBER_THREAD_LOCAL thread_local
#else
#define EMBER_THREAD_LOCAL
#endif

// Pointer arguments that do not alias: the kernels' inputs and outputs (unless a kernel says it
// may run in place).
#define EMBER_RESTRICT __restrict__
