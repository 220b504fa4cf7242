// A read of a mapped file's page that lies past the file's end (the file shrank while mapped)
// faults, and by default ends the process without a word. One file per system:
// bus_fault_linux.cpp (a SIGBUS handler told the address); bus_fault_other.cpp installs nothing
// and says so, and such a fault ends the process as that system decides.
#pragma once

namespace ghostline::platform {

// Called inside the fault's signal handler with the faulting address, so async-signal-safe code
// only. It does not return when the address is one it knows; when it returns, the fault takes
// the system's default action, as if nothing had been installed.
using BusFaultReporter = void (*)(const void* address);

// Process-wide. False where the system offers no such hook (the fault keeps its default action).
bool install_bus_fault_reporter(BusFaultReporter reporter);

}  // namespace ghostline::platform
