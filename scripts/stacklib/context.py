"""What a command works on: the environment it was given, the stack's paths and configuration, the lock."""
from __future__ import annotations

import os
from typing import Mapping

from .config import Config, Paths
from .proc import Lock, is_root


class Stack:
    def __init__(self, env: Mapping[str, str], paths: Paths):
        self.env = dict(env)
        self.paths = paths
        self.config: Config | None = None
        # NAME= arguments of restart/start: settings dropped for this start (the service's own default).
        self.dropped: list[str] = []
        self.lock = Lock(f"{paths.run_dir}/lock")
        self.root = is_root()

    @property
    def cfg(self) -> Config:
        assert self.config is not None
        return self.config

    def pg_superuser(self) -> str:
        if self.root:
            return "postgres"
        import pwd
        return pwd.getpwuid(os.geteuid()).pw_name

    def pg_argv(self, argv: list[str]) -> list[str]:
        """ARGV as the cluster owner (postgres when we are root: PostgreSQL refuses root). Run it with
        cwd "/" (pg_cwd), so postgres need not be able to read the caller's directory."""
        if self.root:
            return ["runuser", "-u", "postgres", "--", *argv]
        return argv

    @property
    def pg_cwd(self) -> str | None:
        return "/" if self.root else None
