"""What the tiles' forkserver (:mod:`bnviz.slices.tile_pool`) imports before it forks a worker:
this module loads the exact engine's compiled kernels (the ReLU cut, the max-pool cells) in
the server, once, in its one thread, so that every worker forks with them loaded.  Loaded in
each worker instead, they cost each 0.2-0.4 s, one worker after the other (the kernels' lock
file: :mod:`bnviz.core.kernels`).  It also holds numpy's BLAS to one thread, as every worker
runs it (:mod:`bnviz.blas`): done in each worker, finding the BLAS libraries cost its first
tile 20-30 ms.  Nothing else imports it."""

from __future__ import annotations

from bnviz import blas
from bnviz.core import kernels
from bnviz.slices import maxcells, tile_pool  # noqa: F401 - the workers' module, imported once

kernels.require()
maxcells.warm_up()
blas.hold_to_one_thread()
