def is_prime(n):
    """Return True when n is a prime number."""
    if n < 2:
        return False
    for d in range(2, int(n ** 0.5) + 1):
        if n % d == 0:
            return False
    return True


def primes_below(limit):
    return [n for n in range(limit) if 


if __name__ == "__main__":
    print(primes_below(50))
