"""Every component id of the dashboard, in one place (layouts and callbacks import these)."""


class Explorer:
    """The partition explorer page (home)."""

    DEPTH = "explorer-depth"
    WIDTH = "explorer-width"
    ACTIVATION = "explorer-activation"
    MODE = "explorer-mode"
    DATASET = "explorer-dataset"
    N_POINTS = "explorer-n-points"
    SEED = "explorer-seed"
    BATCH_SIZE = "explorer-batch-size"
    LAYER = "explorer-layer"
    GRAPH = "explorer-graph"
    SUMMARY = "explorer-summary"
    MESSAGE = "explorer-message"
