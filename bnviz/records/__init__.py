"""What jobs leave and how they are described, below every computation that runs or reads
them: a job's record (:mod:`~bnviz.records.job`), the store that keeps the records (SQLite or
Redis: :mod:`~bnviz.records.store`), the files a job writes (:mod:`~bnviz.records.results`:
results, checkpoints, kept networks) and what a job type is (:mod:`~bnviz.records.types`: its
parameters, its context, its errors).

The views, the image experiments, the slices and the papers read results and declare job
types here; the job system that submits, dispatches and runs them (:mod:`bnviz.jobs`) sits
above them all, so the packages' imports point one way (tests/test_architecture.py).
"""
