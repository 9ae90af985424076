"""bnviz: visualise the input-space partition ("linear regions") of deep networks and how
batch normalization shapes it.

Submodules are imported explicitly (``from bnviz import datasets``); importing the package itself
loads nothing heavy.
"""

__version__ = "0.1.0"
