try:
    from agent_host.cli import entry
except (KeyboardInterrupt, RuntimeError) as exc:   # Ctrl-C while the first modules load: no traceback, 130
    # (a Ctrl-C while a class is made reaches here as a RuntimeError caused by it)
    if not isinstance(exc, KeyboardInterrupt) and not isinstance(exc.__cause__, KeyboardInterrupt):
        raise
    import sys
    print("interrupted", file=sys.stderr)
    sys.exit(130)

entry()
