"""The local-memory bank model of Guide 3.2.2.1 and the Slides, for today's NVIDIA GPUs.

Local memory is split into ``banks`` banks; successive 32-bit words go to successive banks
(word w lives in bank w mod banks). Each bank serves one word per cycle, so the work-items of
one warp that ask for *different* words of the same bank are served one after another, while
work-items asking for the *same* word share one read (a broadcast). The cost of one warp-wide
access is therefore the conflict degree: the largest number of distinct words any one bank
must deliver (1 = conflict-free, 32 = fully serialised). Since compute capability 2.0 NVIDIA
GPUs have 32 banks of 4 bytes serving a whole warp of 32 at once (the Guide's 1.x devices had 16
banks per half-warp).
"""

from __future__ import annotations

from math import gcd
from typing import Iterable

import numpy as np

BANKS = 32
WARP = 32


def conflict_degree(words: Iterable[int], banks: int = BANKS) -> int:
    """Largest number of distinct word addresses of one warp access that fall in one bank."""
    distinct = np.unique(np.fromiter((int(w) for w in words), dtype=np.int64))
    if distinct.size == 0:
        return 0
    return int(np.bincount(distinct % banks, minlength=banks).max())


def strided_words(stride: int, words: int, padded: bool, lanes: int = WARP,
                  first_lane: int = 0) -> np.ndarray:
    """Word addresses of lanes ``first_lane ..`` reading logical index (lane * stride) mod words,
    stored plainly or with one spare word after every 32 (slot = i + i // 32)."""
    lane = np.arange(first_lane, first_lane + lanes, dtype=np.int64)
    index = (lane * int(stride)) % int(words)
    return index + index // 32 if padded else index


def strided_degree(stride: int, words: int, padded: bool, work_group: int = WARP) -> int:
    """Worst conflict degree over the warps of a work-group of ``work_group`` work-items."""
    warps = max(1, -(-int(work_group) // WARP))
    return max(conflict_degree(strided_words(stride, words, padded, min(WARP, work_group),
                                             first_lane=w * WARP))
               for w in range(warps))


def strided_degree_formula(stride: int, words: int, banks: int = BANKS) -> int:
    """Closed form of the unpadded case (words a power of two, >= banks).

    Lanes l and l' use the same bank when (l - l') * stride = 0 mod banks, i.e. when they are a
    multiple of banks / g apart, g = gcd(stride, banks): each bank in use is asked by g lanes.
    Those g lanes read the same word when additionally (l - l') * stride = 0 mod words; along
    the g lanes of a bank (spaced banks / g apart) the addresses repeat with period
    words / gcd(stride * banks / g, words). The degree is the smaller of the two.
    """
    g = gcd(int(stride), banks)
    period = int(words) // gcd(int(stride) * banks // g, int(words))
    return min(g, period)
