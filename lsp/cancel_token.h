// A cancellation flag shared between the I/O thread (which cancels) and the engine thread
// (which checks it between steps). The engine sees only the std::atomic<bool>.
#pragma once

#include <atomic>
#include <memory>

namespace ghostline::lsp {

class CancelToken {
 public:
  CancelToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  void cancel() const { flag_->store(true, std::memory_order_relaxed); }
  bool cancelled() const { return flag_->load(std::memory_order_relaxed); }
  const std::atomic<bool>* flag() const { return flag_.get(); }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

}  // namespace ghostline::lsp
