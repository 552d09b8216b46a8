"""A clock for waits under test: ``clock()`` reads it, ``clock.sleep(s)`` moves it on (no real time passes)."""


class Clock(object):
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
