#include "worker.hpp"
namespace ember::distributed::test {
int run_data_parallel(const Args&) { EMBER_FAIL("DataParallel: shape (not built yet)"); }
int run_zero(const Args&) { return 1; }
}  // namespace ember::distributed::test
