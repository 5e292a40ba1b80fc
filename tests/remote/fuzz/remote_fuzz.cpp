// libFuzzer target: the input is one client frame, as the server reads it from the socket.
// Any outcome but a decoded frame or an ember::Error (a crash, a sanitizer report, another
// exception, a leak) is a finding. A frame that decodes is checked and re-encoded: its ops'
// attributes must be the kind ops.def gives the op, and writing them again must succeed.
#include <cstddef>
#include <cstdint>
#include <span>

#include "wire.hpp"

using namespace ember;
using namespace ember::remote;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const wire::ClientFrame m = wire::decode_client_frame(std::span<const uint8_t>(data, size));
    if (m.type == wire::Type::chunk &&
        (m.values.size() != m.chunk.n || m.chunk.offset + m.chunk.n > m.chunk.total ||
         m.values.data() + m.values.size() != reinterpret_cast<const std::byte*>(data + size)))
      __builtin_trap();  // a chunk's values are the rest of the frame, inside the tensor
    std::vector<uint8_t> out;
    wire::Writer w(out);
    for (const auto& c : m.commands) {
      if (const auto* e = std::get_if<wire::ExecCmd>(&c)) {
        if (e->attrs.index() != op_info(e->kind).attrs_index) __builtin_trap();
        w.attrs(e->kind, e->attrs);
      } else if (const auto* u = std::get_if<wire::UploadCmd>(&c)) {
        if (u->bytes.data() < reinterpret_cast<const std::byte*>(data) ||
            u->bytes.data() + u->bytes.size() > reinterpret_cast<const std::byte*>(data + size))
          __builtin_trap();  // a chunk must lie inside the frame
        w.meta(u->meta);
        (void)wire::tensor_bytes(u->meta, "fuzz");
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
