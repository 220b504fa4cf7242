// bus_fault.h on Linux: a SIGBUS handler (SA_SIGINFO, for the faulting address in si_addr).
#include "base/bus_fault.h"

#include <signal.h>

#include <atomic>

namespace ghostline::platform {
namespace {

std::atomic<BusFaultReporter> installed_reporter{nullptr};

void on_sigbus(int signal, siginfo_t* info, void*) {
  if (const BusFaultReporter reporter = installed_reporter.load(std::memory_order_acquire))
    reporter(info->si_addr);
  // Not an address the reporter knows: the default action, as if no handler had been installed.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(signal, &dfl, nullptr);
  ::raise(signal);
}

}  // namespace

bool install_bus_fault_reporter(BusFaultReporter reporter) {
  installed_reporter.store(reporter, std::memory_order_release);
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  return ::sigaction(SIGBUS, &sa, nullptr) == 0;
}

}  // namespace ghostline::platform
