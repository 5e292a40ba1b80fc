// ember::version(): the version compiled into ember_core (include/ember/version.hpp).
#include "ember/version.hpp"

namespace ember {

const char* version() { return EMBER_VERSION_STRING; }

}  // namespace ember
