"""A time limit on one call into a world model, so that a model that hangs fails its case
instead of freezing the run.

The limit is a real-time interval timer (``SIGALRM``): when it fires, :class:`CallTimeout` is
raised inside the model's code. It derives from ``BaseException`` so that a model's own
``except Exception`` cannot swallow it. Python code (loops, ``time.sleep``, waits on locks
or queues) is interrupted; a call stuck inside native code that never returns to Python
(a deadlocked CUDA kernel, say) is interrupted only when it does return.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


class CallTimeout(BaseException):
    """A call ran past its time limit; the message says which call and how long."""


@contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    """Raise :class:`CallTimeout` in the block after ``seconds`` (0 or less: no limit).

    Only the main thread receives signals, so a limit can only be set there.
    """
    if seconds <= 0:
        yield
        return
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError(f"{what}: a time limit can only be set in the main thread (timeout_s=0 turns it off)")

    def expire(signum, frame):
        raise CallTimeout(f"{what} timed out after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
