// How ember's freestanding kernels (include/ember/kernels/) report errors: a Status code, and a
// message in a fixed buffer that last_error() reads. They never throw and never allocate, so the
// same code runs where exceptions and the heap are absent (docs/embedded.md).
//
//   ember::kernels::Status s = ember::kernels::fail("conv2d", "channels not divisible by groups");
//   // s == Status::invalid_argument; last_error() is "conv2d: channels not divisible by groups"
//   bool failed = s != ember::kernels::Status::ok && ember::kernels::last_error()[0] != '\0';
//
// Hosted code that prefers exceptions wraps a call in check_status(), which throws ember::Error
// with the message.
#pragma once

#include <cstdint>

#include "ember/core/config.hpp"

namespace ember::kernels {

// The outcome of a kernel call or a generated model's run().
enum class Status : int32_t {
  ok = 0,                // done
  invalid_argument = 1,  // a shape, a count or a pointer the kernel cannot take (see last_error())
};

// The capacity of the message buffer, the terminating zero included; longer messages are cut.
inline constexpr int32_t kErrorMessageCapacity = 96;

// Records "op: message" as the last error (cut to the buffer) and returns Status::invalid_argument.
Status fail(const char* op, const char* message);
// The last recorded error message ("" when none); per thread where threads exist.
const char* last_error();
// Forgets the last error message.
void clear_error();

#if EMBER_HAS_EXCEPTIONS
// Throws ember::Error with last_error()'s message when `status` is not Status::ok.
void check_status(Status status);
#endif

}  // namespace ember::kernels
