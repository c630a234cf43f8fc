"""DTL201/DTL202: callables that cannot be pickled, reaching a sink through names."""
from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

import torch.multiprocessing as tmp
from torch.utils.data import DataLoader


def top(x: int) -> int:
    return x


class Holder:
    def __init__(self) -> None:
        self.fn = lambda x: x
        self.ok = top


def main(h: Holder, ds: Any) -> None:
    def local(rank: int) -> None: ...

    def collate(batch: Any) -> Any: ...

    f = lambda x: x
    g = local
    tmp.spawn(g, nprocs=2)  # expect: DTL201
    tmp.spawn(local, nprocs=2)  # expect: DTL201
    mp.Process(target=f).start()  # expect: DTL201
    mp.Process(target=h.fn).start()  # expect: DTL201
    mp.Process(target=h.ok).start()
    mp.Process(target=top).start()
    with mp.Pool(2) as pool:
        pool.map(f, [1])  # expect: DTL201
        pool.map(top, [1])
    mp.get_context("spawn").Pool(2).imap(g, [1])  # expect: DTL201
    with ProcessPoolExecutor() as ex:
        ex.submit(f, 1)  # expect: DTL201
        ex.map(top, [1])
    with ThreadPoolExecutor() as tex:
        tex.submit(f, 1)
    DataLoader(ds, num_workers=2, collate_fn=collate)  # expect: DTL202
    DataLoader(ds, num_workers=0, collate_fn=collate)
    DataLoader(ds, collate_fn=collate)
