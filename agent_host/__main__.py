from agent_host.cli import entry

entry()
