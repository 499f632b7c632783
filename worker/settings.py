"""The service's settings, shared by the API and the workers.

Both sides must agree on them: the API refuses a job whose hard time limit the
broker's ``visibility_timeout`` would not cover, and the workers are started
with the same numbers. They come from the environment (``REDIS_URL`` and
``PATIENCE_*``), so one ``export`` configures every process of a deployment.

Why the visibility timeout matters: with the Redis transport a message that a
worker has taken but not acknowledged (``acks_late``) goes back to the queue
only ``visibility_timeout`` seconds after delivery. That is how the job of a
``kill -9``-ed worker is redelivered; it is also why the timeout must exceed
the longest job, or a healthy but slow job would be run a second time.

Why ``lost_after`` exists: the Redis transport does not deliver atomically.
A worker's BRPOP takes the message off the queue, and only a second command
files it among the unacknowledged ones; a Redis crash in between loses it,
and the job would wait as "queued" for ever. So a job still queued after
``lost_after`` seconds has its message looked for when it is polled, and is
published again if it is nowhere (`service.broker`); a message that is only
waiting its turn is found and left alone.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from patience_encodings.engines import MAX_TIME_LIMIT

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def soft_limit(budget: float) -> float:
    """Return the soft time limit of a job that needs ``budget`` seconds.

    The provers enforce their own limit; the soft limit is the backstop that
    lets the task clean up (kill its prover processes) if they overrun. The
    margin covers what follows the provers' own limit on a busy machine:
    killing the portfolio's processes and replaying the line.
    """
    return round(budget + max(5.0, 0.2 * budget), 3)


def hard_limit(budget: float) -> float:
    """Return the hard time limit (the pool kills the process) for ``budget``."""
    return round(soft_limit(budget) + max(2.0, 0.05 * budget), 3)


@dataclass(frozen=True)
class Settings:
    """Limits and addresses; see the module docstring for how they relate."""

    redis_url: str = DEFAULT_REDIS_URL
    #: Longest time limit one proof may ask for, in seconds.
    max_time_limit: float = 600.0
    #: Longest budget of any job (a whole batch), in seconds.
    max_job_seconds: float = 3600.0
    #: Seconds before an unacknowledged message is redelivered; 0 = derive it.
    visibility_timeout: float = 0.0
    #: Seconds between the broker's sweeps for messages to redeliver.
    restore_interval: float = 10.0
    #: Seconds a queued job waits before a poll looks whether its message
    #: still exists, and publishes it again if not (see the module docstring).
    lost_after: float = 30.0
    #: Seconds a job's record and result are kept.
    result_expires: int = 86400
    #: Seconds a settled answer is kept for identical submissions.
    answer_ttl: int = 7 * 86400

    def __post_init__(self) -> None:
        if not self.visibility_timeout:
            derived = math.ceil(hard_limit(self.max_job_seconds) + 300)
            object.__setattr__(self, "visibility_timeout", float(derived))
        if self.lost_after <= 0:
            raise ValueError("lost_after must be positive")
        if self.max_time_limit > self.max_job_seconds:
            raise ValueError("max_time_limit cannot exceed max_job_seconds")
        if self.max_time_limit > MAX_TIME_LIMIT:
            # Else the API accepts limits that every worker then refuses.
            raise ValueError(
                f"max_time_limit cannot exceed the provers' limit, {MAX_TIME_LIMIT:g} s"
            )
        if self.visibility_timeout <= hard_limit(self.max_job_seconds):
            raise ValueError(
                f"visibility_timeout {self.visibility_timeout:g} s must exceed the "
                f"hard limit of the longest job, {hard_limit(self.max_job_seconds):g} s"
                " (or long jobs would be run twice)"
            )

    @classmethod
    def from_mapping(cls, env: Mapping[str, Any]) -> Settings:
        """Read ``REDIS_URL`` and ``PATIENCE_<FIELD>`` keys (env or Flask config)."""
        values: dict[str, Any] = {}
        if env.get("REDIS_URL"):
            values["redis_url"] = str(env["REDIS_URL"])
        for f in fields(cls):
            key = f"PATIENCE_{f.name.upper()}"
            if f.name != "redis_url" and env.get(key) not in (None, ""):
                kind = int if f.type in ("int", int) else float
                values[f.name] = kind(env[key])
        return cls(**values)

    @classmethod
    def from_env(cls) -> Settings:
        """Return the settings of this process's environment."""
        return cls.from_mapping(os.environ)

    def to_env(self) -> dict[str, str]:
        """Return environment variables that reproduce these settings."""
        env = {"REDIS_URL": self.redis_url}
        for f in fields(self):
            if f.name != "redis_url":
                env[f"PATIENCE_{f.name.upper()}"] = str(getattr(self, f.name))
        return env
