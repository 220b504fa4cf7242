"""Lists and other sequences."""

FUNCS = [
    dict(name="chunk", blank="chunks.append(items[start:start + size])", code=r'''
def chunk(items, size):
    """Split items into consecutive lists of size elements; the last may be shorter."""
    chunks = []
    for start in range(0, len(items), size):
        chunks.append(items[start:start + size])
    return chunks
''', test=r'''
assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
assert chunk([1, 2, 3], 3) == [[1, 2, 3]]
assert chunk([], 4) == []
'''),
    dict(name="flatten_once", blank="flat.extend(item)", code=r'''
def flatten_once(nested):
    """Flatten one level: lists inside nested are spliced in, other items kept as they are."""
    flat = []
    for item in nested:
        if isinstance(item, list):
            flat.extend(item)
        else:
            flat.append(item)
    return flat
''', test=r'''
assert flatten_once([1, [2, 3], [[4]], 5]) == [1, 2, 3, [4], 5]
assert flatten_once([[], "ab"]) == ["ab"]
'''),
    dict(name="unique_in_order", blank="seen.add(item)", code=r'''
def unique_in_order(items):
    """Drop repeated items, keeping the first occurrence of each, in order."""
    seen = set()
    result = []
    for item in items:
        if item not in seen:
            seen.add(item)
            result.append(item)
    return result
''', test=r'''
assert unique_in_order([3, 1, 3, 2, 1]) == [3, 1, 2]
assert unique_in_order("abracadabra") == ["a", "b", "r", "c", "d"]
assert unique_in_order([]) == []
'''),
    dict(name="rotate_left", blank="k %= len(items)", code=r'''
def rotate_left(items, k):
    """Rotate items left by k places (k may exceed the length); return a new list."""
    if not items:
        return []
    k %= len(items)
    return items[k:] + items[:k]
''', test=r'''
assert rotate_left([1, 2, 3, 4], 1) == [2, 3, 4, 1]
assert rotate_left([1, 2, 3], 4) == [2, 3, 1]
assert rotate_left([1, 2, 3], 3) == [1, 2, 3]
assert rotate_left([], 2) == []
'''),
    dict(name="running_max", blank="best = v", code=r'''
def running_max(values):
    """Return the maximum of each prefix of values."""
    result = []
    best = None
    for v in values:
        if best is None or v > best:
            best = v
        result.append(best)
    return result
''', test=r'''
assert running_max([2, 1, 5, 3, 7]) == [2, 2, 5, 5, 7]
assert running_max([]) == []
assert running_max([-3, -5]) == [-3, -3]
'''),
    dict(name="second_largest", blank="return None", code=r'''
def second_largest(values):
    """Return the second largest distinct value, or None when there is none."""
    distinct = sorted(set(values), reverse=True)
    if len(distinct) < 2:
        return None
    return distinct[1]
''', test=r'''
assert second_largest([4, 9, 9, 2]) == 4
assert second_largest([5, 5]) is None
assert second_largest([]) is None
'''),
    dict(name="merge_sorted", blank="merged.extend(b[j:])", code=r'''
def merge_sorted(a, b):
    """Merge two sorted lists into one sorted list."""
    i = j = 0
    merged = []
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            merged.append(a[i])
            i += 1
        else:
            merged.append(b[j])
            j += 1
    merged.extend(a[i:])
    merged.extend(b[j:])
    return merged
''', test=r'''
assert merge_sorted([1, 4], [2, 3, 9]) == [1, 2, 3, 4, 9]
assert merge_sorted([5, 6], [1]) == [1, 5, 6]
assert merge_sorted([], [7, 8]) == [7, 8]
'''),
    dict(name="interleave", blank="result += a[shorter:] + b[shorter:]", code=r'''
def interleave(a, b):
    """Alternate the items of a and b; the rest of the longer list comes at the end."""
    result = []
    for x, y in zip(a, b):
        result += [x, y]
    shorter = min(len(a), len(b))
    result += a[shorter:] + b[shorter:]
    return result
''', test=r'''
assert interleave([1, 2, 3], ["a", "b"]) == [1, "a", 2, "b", 3]
assert interleave([], [4, 5]) == [4, 5]
assert interleave([1], [2]) == [1, 2]
'''),
    dict(name="binary_search", blank="return mid", code=r'''
def binary_search(items, target):
    """Return the index of target in the sorted list items, or -1."""
    lo, hi = 0, len(items) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if items[mid] == target:
            return mid
        if items[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
''', test=r'''
assert binary_search([1, 3, 5, 7, 9, 11], 7) == 3
assert binary_search([1, 3, 5, 7, 9, 11], 1) == 0
assert binary_search([1, 3, 5], 4) == -1
assert binary_search([], 1) == -1
'''),
    dict(name="partition", blank="target.append(item)", code=r'''
def partition(items, predicate):
    """Split items into (those for which predicate is true, the others), keeping order."""
    yes, no = [], []
    for item in items:
        target = yes if predicate(item) else no
        target.append(item)
    return yes, no
''', test=r'''
assert partition([1, 2, 3, 4, 5], lambda n: n % 2) == ([1, 3, 5], [2, 4])
assert partition([], bool) == ([], [])
'''),
    dict(name="moving_average", blank="total += values[i] - values[i - window]", code=r'''
def moving_average(values, window):
    """Return the average of every run of window consecutive values."""
    averages = []
    total = sum(values[:window])
    if len(values) >= window:
        averages.append(total / window)
    for i in range(window, len(values)):
        total += values[i] - values[i - window]
        averages.append(total / window)
    return averages
''', test=r'''
assert moving_average([1, 2, 3, 4, 5], 2) == [1.5, 2.5, 3.5, 4.5]
assert moving_average([4, 4, 4], 3) == [4.0]
assert moving_average([1], 2) == []
'''),
    dict(name="transpose", blank="rows, cols = len(matrix), len(matrix[0])", code=r'''
def transpose(matrix):
    """Return the transpose of a rectangular matrix given as a list of rows."""
    if not matrix:
        return []
    rows, cols = len(matrix), len(matrix[0])
    return [[matrix[r][c] for r in range(rows)] for c in range(cols)]
''', test=r'''
assert transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]
assert transpose([[7]]) == [[7]]
assert transpose([]) == []
'''),
    dict(name="find_duplicates", blank="seen.add(item)", code=r'''
def find_duplicates(items):
    """Return the items that occur more than once, each once, in order of their second
    occurrence."""
    seen = set()
    dupes = []
    for item in items:
        if item in seen and item not in dupes:
            dupes.append(item)
        seen.add(item)
    return dupes
''', test=r'''
assert find_duplicates([1, 2, 3, 2, 1, 2]) == [2, 1]
assert find_duplicates("hello") == ["l"]
assert find_duplicates([]) == []
'''),
    dict(name="cumulative_sums", blank="running += v", code=r'''
def cumulative_sums(values):
    """Return the running totals of values."""
    totals = []
    running = 0
    for v in values:
        running += v
        totals.append(running)
    return totals
''', test=r'''
assert cumulative_sums([1, 2, 3, 4]) == [1, 3, 6, 10]
assert cumulative_sums([5, -5]) == [5, 0]
assert cumulative_sums([]) == []
'''),
    dict(name="max_subarray_sum", blank="current = max(v, current + v)", code=r'''
def max_subarray_sum(values):
    """Return the largest sum of a non-empty run of consecutive values."""
    best = current = values[0]
    for v in values[1:]:
        current = max(v, current + v)
        best = max(best, current)
    return best
''', test=r'''
assert max_subarray_sum([-2, 1, -3, 4, -1, 2, 1, -5, 4]) == 6
assert max_subarray_sum([-3, -1, -2]) == -1
assert max_subarray_sum([2, 3]) == 5
'''),
]
