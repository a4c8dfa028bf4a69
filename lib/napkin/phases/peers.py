"""DGX Spark's arithmetic beside other chips', at the same arithmetic.

A headline peak is often another arithmetic than the next chip's, so only like compares with
like: chapter 2 sets DGX Spark against NVIDIA's datacenter and GeForce GPUs, arithmetic by
arithmetic, and its bandwidth against a laptop chip's.
"""

from __future__ import annotations

import pandas as pd

#: What DGX Spark's arithmetic is set against: the datacenter GPU of each of NVIDIA's last three
#: generations, and the two newest GeForce cards, all with figures in data/hardware_specs.csv.
DATACENTER_PEERS = ("A100 SXM", "H100 SXM", "B200")
DESKTOP_PEERS = ("RTX 4090", "RTX 5090")
#: A laptop chip to hold DGX Spark's memory bandwidth against: Apple's M4 Pro, the chip of its
#: MacBook Pro laptops (and the Mac mini) in the row's source.
LAPTOP_PEER = "M4 Pro"


def peak_comparison(chip: str = "DGX Spark",
                    peers: tuple[str, ...] = DATACENTER_PEERS + DESKTOP_PEERS) -> pd.DataFrame:
    """``chip``'s peak as a share of each peer's, arithmetic by arithmetic, where both have a
    figure (dense and 2:4-sparse FP4, FP8, INT8, FP16). Only the same arithmetic compares:
    a headline is often another arithmetic than the next chip's (DGX Spark's petaFLOP is
    sparse FP4, an H100's 989 TFLOPS dense FP16). Each row also gives both chips' peak per
    byte of memory bandwidth (FLOP/byte), and ``peer_class`` (datacenter, desktop) from
    :data:`DATACENTER_PEERS` and :data:`DESKTOP_PEERS`."""
    from .. import hardware

    if not peers:
        raise ValueError("peers must name at least one chip")
    own = hardware.chip(chip)
    rows = []
    for arith in ("fp4", "fp8", "int8", "fp16"):
        for sparse in (True, False):
            if not own.has_peak(arith, sparse):
                continue
            mine = own.peak(arith, sparse)
            for name in peers:
                other = hardware.chip(name)
                if not other.has_peak(arith, sparse):
                    continue
                theirs = other.peak(arith, sparse)
                rows.append({
                    "kind": mine.kind, "arithmetic": arith, "sparse": sparse, "peer": name,
                    "peer_class": "datacenter" if name in DATACENTER_PEERS else
                    "desktop" if name in DESKTOP_PEERS else "other",
                    "chip_flops_per_s": mine.flops_per_s, "peer_flops_per_s": theirs.flops_per_s,
                    "chip_derived": mine.derived, "peer_derived": theirs.derived,
                    "share": mine.flops_per_s / theirs.flops_per_s,
                    "chip_flop_per_byte": mine.flops_per_s / own.bandwidth_bytes_per_s,
                    "peer_flop_per_byte": theirs.flops_per_s / other.bandwidth_bytes_per_s})
    if not rows:
        raise ValueError(f"{chip} shares no arithmetic with {', '.join(peers)}")
    return pd.DataFrame(rows)
