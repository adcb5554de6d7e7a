try:
    from agent_host.cli import entry
except KeyboardInterrupt:   # Ctrl-C while the first modules load: no traceback, the status of SIGINT
    import sys
    print("interrupted", file=sys.stderr)
    sys.exit(130)

entry()
