"""The engine's seeded generator (xoshiro128**, seeded through splitmix32), bit for bit,
so the data order and the LoRA initialisation are the engine's for the same seed."""

import math

M = 0xFFFFFFFF


def _rotl(x, k):
    return ((x << k) | (x >> (32 - k))) & M


class Rng:
    def __init__(self, seed):
        x = seed & M
        s = []
        for _ in range(4):
            x = (x + 0x9E3779B9) & M
            z = x
            z = ((z ^ (z >> 16)) * 0x85EBCA6B) & M
            z = ((z ^ (z >> 13)) * 0xC2B2AE35) & M
            s.append((z ^ (z >> 16)) & M)
        if not any(s):
            s[0] = 1
        self.s = s

    def next_u32(self):
        s = self.s
        result = (_rotl((s[1] * 5) & M, 7) * 9) & M
        t = (s[1] << 9) & M
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 11)
        return result

    def next(self):
        """A uniform float in [0, 1) with 32 bits of randomness."""
        return self.next_u32() / 4294967296

    def int(self, n):
        return math.floor(self.next() * n)

    def shuffle(self, items):
        for i in range(len(items) - 1, 0, -1):
            j = self.int(i + 1)
            items[i], items[j] = items[j], items[i]
        return items


def epoch_order(n, seed, epoch):
    """The order of the training examples in one epoch, as the engine's epochOrder."""
    return Rng((seed & M) ^ (((epoch + 1) * 0x9E3779B9) & M)).shuffle(list(range(n)))
