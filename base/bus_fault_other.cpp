// bus_fault.h on a system without a file of its own: which signal a read past the end of a
// shrunk mapping raises, and whether it names the address, differ between systems, so nothing
// is installed and the caller is told.
#include "base/bus_fault.h"

namespace ghostline::platform {

bool install_bus_fault_reporter(BusFaultReporter) {
  return false;
}

}  // namespace ghostline::platform
