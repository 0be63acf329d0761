"""The random cycle a dependent-load chase follows (workingset's ``ws_chase``).

A chase measures latency only if no load's address can be guessed before the previous load
returns: the cycle must jump about the whole set in an order no prefetcher follows. A full
random permutation does that, but building one (and the host walk that checks it) costs
seconds of host time per GiB. So up to ``FULL_PERMUTATION_WORDS`` words the cycle is a full
random permutation, and past that a structured one that is as unpredictable step to step yet
built in a few passes over memory:

* the set is cut into blocks of ``BLOCK_WORDS`` words (16 KiB: no two consecutive loads share
  a page-sized neighbourhood);
* visit i = j * blocks + k goes to block ``order[k]`` (a random permutation of the blocks) at
  word ``inner[j] ^ salt[order[k]]`` (one random permutation of the offsets, and a random salt
  per block so that the blocks of one round do not all use the same offset, which would crowd
  the same cache sets).

Every word is visited once per cycle, each step lands in another block than the last at a
random offset, and the word reached after s steps has a closed form (``Cycle.after``): the
check of the device's walk needs no host walk at all.
"""

from __future__ import annotations
from ..device.turns import host_work

from dataclasses import dataclass

import numpy as np

BLOCK_WORDS = 4096
FULL_PERMUTATION_WORDS = 1 << 20


@dataclass
class Cycle:
    """``next[p]``: where the chase goes from word p; ``after(s)``: the word reached after s
    steps from ``after(0)``, the start."""

    next: np.ndarray
    blocks: np.ndarray  # the block visited k-th in each round (one block of n words: the whole set)
    inner: np.ndarray   # the offset used in round j, before the block's salt
    salt: np.ndarray    # per block, XORed into the offset

    @property
    def n(self) -> int:
        return int(self.next.size)

    def after(self, steps: int) -> int:
        i = int(steps) % self.n
        j, k = divmod(i, self.blocks.size)
        block = int(self.blocks[k])
        return block * self.inner.size + (int(self.inner[j]) ^ int(self.salt[block]))


@host_work
def cycle(rng: np.random.Generator, n: int, block_words: int | None = None) -> Cycle:
    """A random cycle through all n words. ``block_words`` forces the structured form with that
    block size (a power of two dividing n); by default a full random permutation up to
    FULL_PERMUTATION_WORDS, the structured form past it where BLOCK_WORDS divides n (the
    device profile's sizes between powers of two may not: they get a full permutation)."""
    if block_words is None:
        structured = n > FULL_PERMUTATION_WORDS and n % BLOCK_WORDS == 0
        block_words = BLOCK_WORDS if structured else n
    if block_words == n:  # one block: a full random permutation
        order = rng.permutation(n).astype(np.uint32)
        nxt = np.empty(n, np.uint32)
        nxt[order] = np.roll(order, -1)
        return Cycle(nxt, np.zeros(1, np.uint32), order, np.zeros(1, np.uint32))
    if block_words <= 0 or n % block_words or block_words & (block_words - 1):
        raise ValueError(f"block of {block_words} words must be a power of two dividing {n}")
    count = n // block_words
    blocks = rng.permutation(count).astype(np.uint32)
    inner = rng.permutation(block_words).astype(np.uint32)
    salt = rng.integers(0, block_words, size=count, dtype=np.uint32)
    succ = np.empty(count, np.uint32)  # the block after each one in a round
    succ[blocks] = np.roll(blocks, -1)
    # Within a round, offset o of block b (o = inner[j] ^ salt[b]) leads to offset
    # inner[j] ^ salt[succ[b]] = o ^ salt[b] ^ salt[succ[b]] of block succ[b].
    nxt = np.empty((count, block_words), np.uint32)
    np.bitwise_xor(np.arange(block_words, dtype=np.uint32)[None, :],
                   (salt ^ salt[succ])[:, None], out=nxt)
    nxt += (succ * np.uint32(block_words))[:, None]
    # The round's last block leads to the first block of the next round, at its next offset.
    last, first = int(blocks[-1]), int(blocks[0])
    rank = np.empty(block_words, np.int64)  # j of each offset: rank[inner[j]] = j
    rank[inner] = np.arange(block_words)
    j = rank[np.arange(block_words, dtype=np.uint32) ^ salt[last]]
    nxt[last] = first * block_words + (inner[(j + 1) % block_words] ^ salt[first])
    return Cycle(nxt.reshape(-1), blocks, inner, salt)
