// The freestanding kernels' error buffer: see include/ember/kernels/status.hpp.
#include "ember/kernels/status.hpp"

#if EMBER_HAS_EXCEPTIONS
#include "ember/core/error.hpp"
#endif

namespace ember::kernels {

namespace {
EMBER_THREAD_LOCAL char g_message[kErrorMessageCapacity] = {};

// Appends `text` at `at` without passing the buffer's end; returns the new end.
int32_t append(int32_t at, const char* text) {
  for (; text && *text && at < kErrorMessageCapacity - 1; ++text) g_message[at++] = *text;
  g_message[at] = '\0';
  return at;
}
}  // namespace

Status fail(const char* op, const char* message) {
  int32_t at = append(0, op);
  at = append(at, ": ");
  append(at, message);
  return Status::invalid_argument;
}

const char* last_error() { return g_message; }

void clear_error() { g_message[0] = '\0'; }

#if EMBER_HAS_EXCEPTIONS
void check_status(Status status) {
  if (status != Status::ok) EMBER_FAIL(g_message[0] ? g_message : "kernel failed");
}
#endif

}  // namespace ember::kernels
