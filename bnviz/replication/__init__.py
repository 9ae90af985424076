"""The replication report (``bnviz replicate``, the page /papers/replication and
docs/REPLICATION.md): every figure, table and closed-form claim of the five papers, the
paper's value beside the value bnviz's own commands give, and a status.

* :mod:`~bnviz.replication.entries`: the entries and the commands that produce their numbers;
* :mod:`~bnviz.replication.judges`: how each entry's numbers are read and judged;
* :mod:`~bnviz.replication.store`: the stored outcomes (shipped, and this machine's reruns);
* :mod:`~bnviz.replication.report`: the JSON, the terminal table, the Markdown and the
  sentences the pages say.
"""
