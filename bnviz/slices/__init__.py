"""Slices of image networks (issue 27): the exact partition of a trained conv net on a plane
through image space, x(a, b) = origin + a u + b v, with BN in eval mode (running statistics)
or train mode (a mini-batch's statistics).

``graph`` is the network as a list of ops (conv, BN, bias, ReLU/leaky ReLU, max and average
pooling, residual add, flatten, linear) and its float64 forward; ``onnx_import`` and
``torch_import`` build it from an ONNX file or from bnviz's own architectures (whose files,
kept by the image jobs, are safetensors); ``plane`` the planes; ``engine`` the exact cut
(the 2D views' compiled ReLU cut, ``maxcells`` for max pooling and the decision boundary);
``cost`` the region count before any cut (an estimate from exact cuts of a sample, its
standard error, and the bound the caps act on); ``estimate`` the grid's boundary crossings
(the density pictures); ``view`` what ``bnviz slice`` runs;
``sources`` where its network and images come from; ``picture`` its PNG/SVG.
"""
