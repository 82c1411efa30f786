"""A round is in recovery when it meets a congestion episode (tables._in_episodes): the sweep
over rounds must mark exactly the rounds the product of every round with every episode marks,
also when capture time goes backwards (rounds out of time order)."""

from __future__ import annotations

import numpy as np

from hscc_trace.events import tables


def _marks(start, end, e_start, e_end, closed):
    rec = np.zeros(len(start), np.bool_)
    tables._in_episodes(
        np.array(start, np.int64),
        np.array(end, np.int64),
        np.array(e_start, np.int64),
        np.array(e_end, np.int64),
        np.array(closed, np.bool_),
        rec,
    )
    return rec.tolist()


def _product(start, end, e_start, e_end, closed):
    big = np.iinfo(np.int64).max
    return [
        any(s < (b if c else big) and e >= a for a, b, c in zip(e_start, e_end, closed)) for s, e in zip(start, end)
    ]


def test_a_round_meets_an_episode_that_starts_inside_it_or_at_its_end():
    # rounds [0, 10], [10, 20], [20, 30]; the episode [12, 15) lies inside round 1 only:
    # round 0 ends at 10 < 12, round 2 starts at 20 >= 15
    assert _marks([0, 10, 20], [10, 20, 30], [12], [15], [True]) == [False, True, False]
    # [10, 20): round 0 ends at 10 >= 10 (meets it), round 1 too, round 2 starts at 20, not < 20
    assert _marks([0, 10, 20], [10, 20, 30], [10], [20], [True]) == [True, True, False]


def test_an_open_episode_runs_to_the_flow_end():
    # [25, open): rounds 2 (ends at 30 >= 25) and 3 meet it, rounds 0 and 1 end before 25
    assert _marks([0, 10, 20, 30], [10, 20, 30, 40], [25], [0], [False]) == [False, False, True, True]


def test_rounds_out_of_time_order_are_found_past_an_earlier_end():
    # capture time went backwards: round 1 ([4, 6]) ends before round 0 ([0, 10]) does. The
    # episode [5, 8) meets both: round 0 (0 < 8, 10 >= 5) and round 1 (4 < 8, 6 >= 5); round 2
    # ([6, 7]) too, round 3 ([9, 12]) starts at 9 >= 8. A search on the ends alone (10, 6, 7, 12
    # is not sorted) would start at round 0 and may stop early; the running maximum does not.
    assert _marks([0, 4, 6, 9], [10, 6, 7, 12], [5], [8], [True]) == [True, True, True, False]
    # an episode [0, 3) meets round 0 only: every later start (4, 6, 9) is at or past 3
    assert _marks([0, 4, 6, 9], [10, 6, 7, 12], [0], [3], [True]) == [True, False, False, False]


def test_the_sweep_marks_what_every_round_against_every_episode_marks():
    rng = np.random.default_rng(7)
    for it in range(400):
        nr = int(rng.integers(0, 40))
        cuts = np.sort(rng.integers(0, 1000, nr + 1))
        start, end = cuts[:-1].copy(), cuts[1:].copy()
        if it % 2 and nr:  # capture time going backwards here and there
            j = rng.integers(0, nr, nr // 4 + 1)
            start[j] -= rng.integers(0, 200, j.size)
            end[j] -= rng.integers(0, 200, j.size)
        ne = int(rng.integers(0, 8))
        e_start = np.sort(rng.integers(-50, 1050, ne))
        e_end = e_start + rng.integers(0, 150, ne)
        closed = rng.random(ne) > 0.1
        args = (start.tolist(), end.tolist(), e_start.tolist(), e_end.tolist(), closed.tolist())
        assert _marks(*args) == _product(*args), it
