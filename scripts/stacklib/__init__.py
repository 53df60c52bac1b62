"""The local Tessera stack (scripts/stack): PostgreSQL 15, the three services and the nginx ingress.

Standard library only: `make run` on a fresh machine runs it before any virtual environment exists.
The modules: output (messages, errors), shell (quoting for the files other scripts source), config
(paths, settings, the frozen configuration, the services' environments, the env file, nginx.conf),
proc (processes, pid files, ports, the lock), postgres (the single PostgreSQL and the HA profile),
services (the services and nginx), cli (the commands).
"""
