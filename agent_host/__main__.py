import sys

from agent_host.cli import main

sys.exit(main())
