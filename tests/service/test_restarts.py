"""The stack's restart policy (bnviz.service.restarts): backoff that doubles while a child
keeps dying, a fresh start after a long run, and a restart loop that stops the stack."""

from __future__ import annotations

from bnviz.service.restarts import RestartPolicy


def test_backoff_doubles_then_the_loop_stops_the_stack():
    policy = RestartPolicy(limit=5, window=60.0)
    assert [policy.delay("worker", t) for t in (0, 1, 3, 7, 15)] == [0.5, 1, 2, 4, 8]
    assert policy.delay("worker", 20) is None  # the sixth death within 60 s
    assert policy.delay("gunicorn", 20) == 0.5  # each child has its own count


def test_a_child_that_ran_long_starts_over():
    policy = RestartPolicy(limit=3, window=10.0, max_delay=1.0)
    assert [policy.delay("nginx", t) for t in (0, 1, 2)] == [0.5, 1.0, 1.0]
    assert policy.delay("nginx", 3) is None
    assert policy.delay("nginx", 100) == 0.5  # the old deaths are past the window
