// What platform_posix.cpp asks of each system's platform file.
#pragma once

namespace ghostline::platform {

// How a user raises the locked-memory limit on this system, for lock_resident's refusal.
const char* memlock_limit_hint();

}  // namespace ghostline::platform
