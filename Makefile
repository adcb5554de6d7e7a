# The two commands a new user needs:  make demo   and   make test
# Each one sets up its own environment in .venv first (idempotent; see scripts/bootstrap.sh).
VENV ?= .venv
PYTEST_ARGS ?=

.PHONY: demo test setup clean

demo: setup
	$(VENV)/bin/agent-host demo

test: setup
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

setup:
	@VENV=$(VENV) scripts/bootstrap.sh

clean:
	rm -rf $(VENV) .cache build *.egg-info
