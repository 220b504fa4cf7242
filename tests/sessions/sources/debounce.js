// Debounce and throttle helpers for event handlers.
'use strict';

function debounce(fn, waitMs, { leading = false } = {}) {
  let timer = null;
  let pendingArgs = null;
  function flush() {
    timer = null;
    if (pendingArgs) {
      const args = pendingArgs;
      pendingArgs = null;
      fn.apply(this, args);
    }
  }
  function debounced(...args) {
    const callNow = leading && timer === null;
    pendingArgs = callNow ? null : args;
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(flush.bind(this), waitMs);
    if (callNow) fn.apply(this, args);
  }
  debounced.cancel = function cancel() {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    pendingArgs = null;
  };
  return debounced;
}

function throttle(fn, intervalMs) {
  let last = 0;
  let trailing = null;
  return function throttled(...args) {
    const now = Date.now();
    const remaining = intervalMs - (now - last);
    if (remaining <= 0) {
      last = now;
      fn.apply(this, args);
    } else if (trailing === null) {
      trailing = setTimeout(() => {
        trailing = null;
        last = Date.now();
        fn.apply(this, args);
      }, remaining);
    }
  };
}

module.exports = { debounce, throttle };
