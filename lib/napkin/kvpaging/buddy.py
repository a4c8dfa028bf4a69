"""A binary buddy allocator: how the paper's Orca baselines place contiguous reservations.

Chapter 6 assumes, as the vLLM paper does for its Orca (Max), (Pow2) and (Oracle) baselines,
that each reservation is one contiguous chunk from a buddy allocator, which rounds every
request up to a power of two. :class:`napkin.kvpaging.memory.ContiguousMemory` uses it.
"""

from __future__ import annotations

__all__ = ["Buddy", "next_pow2"]


def next_pow2(n: int) -> int:
    """The smallest power of two at or above ``n`` (a buddy chunk's size)."""
    return 1 << (int(n) - 1).bit_length()


class Buddy:
    """A binary buddy allocator over ``capacity`` token slots.

    Chunks are powers of two at addresses aligned to their size; the capacity is cut into
    its binary digits (15,728 = 8,192 + 4,096 + ...) so that no chunk crosses its end. A
    freed chunk merges with its buddy when that is free too. The lowest free address of a
    size is handed out first, so a run is the same every time.
    """

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.max_order = capacity.bit_length() - 1
        self.free: dict[int, set[int]] = {}
        address = 0
        for order in range(self.max_order, -1, -1):
            if capacity >> order & 1:
                self.free.setdefault(order, set()).add(address)
                address += 1 << order
        self.free_tokens = capacity

    def alloc(self, size: int) -> tuple[int, int] | None:
        """(address, order) of a chunk of at least ``size`` slots, or None if none fits."""
        order = (size - 1).bit_length()
        for have in range(order, self.max_order + 1):
            if self.free.get(have):
                break
        else:
            return None
        address = min(self.free[have])
        self.free[have].remove(address)
        while have > order:
            have -= 1
            self.free.setdefault(have, set()).add(address + (1 << have))
        self.free_tokens -= 1 << order
        return address, order

    def release(self, address: int, order: int) -> None:
        """Return a chunk, merging it with its buddy for as long as the buddy is free."""
        self.free_tokens += 1 << order
        while order < self.max_order:
            buddy = address ^ (1 << order)
            same = self.free.get(order)
            if not same or buddy not in same:
                break
            same.remove(buddy)
            address = min(address, buddy)
            order += 1
        self.free.setdefault(order, set()).add(address)

    def free_chunks(self):
        """Every free chunk as (address, order)."""
        for order, addresses in self.free.items():
            for address in addresses:
                yield address, order
