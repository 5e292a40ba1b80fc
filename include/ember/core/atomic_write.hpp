// Writes a whole file so that readers see the old file or the new one, never a torn one: the
// bytes go to a temporary file unique to this process and call (`<path>.tmp.<pid>.<n>`) in the
// same directory, which is renamed over `path`. Used by the caches (kernels, autotune winners)
// and the trace writer; model files have their own durable writer (store/file_io.cpp).
//
//   # std::string dir = "runs", text = "hello";
//   bool written = ember::write_file_atomically(dir + "/x.txt", text);  // false: not written, no temp left
//   if (!written) throw ember::Error("not saved");
#pragma once

#include <string>
#include <string_view>

namespace ember {

// False (and no temporary file left behind) when the file could not be written or renamed.
bool write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace ember
