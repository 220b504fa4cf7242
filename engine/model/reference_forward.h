// The plain reference forward pass (see reference_forward.cpp).
#pragma once

#include <memory>

#include "engine/backend/backend.h"

namespace ghostline::engine {

std::unique_ptr<Backend> make_reference_backend(const Model& model, KvBlockPool& pool);

}  // namespace ghostline::engine
