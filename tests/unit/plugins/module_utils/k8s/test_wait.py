"""k8s/wait.py: the wait inside one module call, on a fake clock."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import argument_spec, poll, problems, until


def _clock():
    now, slept = [0.0], []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds
    return now, slept, sleep


def test_poll_reads_until_done_and_says_how_long():
    now, slept, sleep = _clock()
    answers = iter([1, 2, 3, 4])
    result, waited, polls = poll(lambda: next(answers), lambda x: x == 3, timeout=60, interval=5, sleep=sleep,
                                 clock=lambda: now[0])
    assert (result, waited, polls) == (3, 10, 3) and slept == [5, 5]


def test_poll_stops_before_a_read_past_the_timeout_and_reads_once_with_zero():
    now, slept, sleep = _clock()
    result, waited, polls = poll(lambda: "no", lambda x: False, timeout=12, interval=5, sleep=sleep,
                                 clock=lambda: now[0])
    assert (result, waited, polls) == ("no", 10, 3) and slept == [5, 5]
    result, waited, polls = poll(lambda: "no", lambda x: False, timeout=0, interval=5, sleep=sleep,
                                 clock=lambda: now[0])
    assert polls == 1 and slept == [5, 5]


def test_problems_name_the_option():
    assert problems(600, 10) == []
    assert problems(-1, 0, prefix="x_") == ["x_wait_timeout is -1: give whole seconds, at least 0",
                                            "x_poll_interval is 0: give whole seconds, at least 1"]
    assert problems(True, 5) == ["wait_timeout is True: give whole seconds, at least 0"]


def test_until_reads_once_without_wait_and_until_done_with_it():
    """``until`` is ``poll`` with a module's wait options (argument_spec): ``wait`` false is one read whatever the
    timeout; with ``wait`` it reads again every poll_interval until done or wait_timeout."""
    params = dict((k, v["default"]) for k, v in argument_spec().items())
    assert params == {"wait": False, "wait_timeout": 600, "poll_interval": 10}
    now, reads = [0.0], []

    def read():
        reads.append(now[0])
        return len(reads)

    def sleep(seconds):
        now[0] += seconds
    assert until(read, lambda n: n >= 3, params, sleep=sleep, clock=lambda: now[0]) == (1, 0.0)
    reads[:] = []
    assert until(read, lambda n: n >= 3, dict(params, wait=True), sleep=sleep, clock=lambda: now[0]) == (3, 20.0)
    assert reads == [0.0, 10.0, 20.0]
