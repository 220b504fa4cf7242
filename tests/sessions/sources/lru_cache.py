"""A small LRU cache with per-entry expiry, used to memoize slow lookups."""
from collections import OrderedDict
import time


class LruCache:
    def __init__(self, capacity, ttl_seconds=None, clock=time.monotonic):
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self._entries = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key, default=None):
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return default
        value, stored_at = entry
        if self.ttl_seconds is not None and self.clock() - stored_at > self.ttl_seconds:
            del self._entries[key]
            self.misses += 1
            return default
        self._entries.move_to_end(key)
        self.hits += 1
        return value

    def put(self, key, value):
        if key in self._entries:
            self._entries.move_to_end(key)
        self._entries[key] = (value, self.clock())
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def __len__(self):
        return len(self._entries)

    def hit_rate(self):
        total = self.hits + self.misses
        return self.hits / total if total else 0.0
