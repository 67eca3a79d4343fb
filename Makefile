# `make test` and `make demo` set up their own virtual environment from this project's files.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.tierank-installed

.PHONY: test demo install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q

demo: $(STAMP)
	PYTHON=$(abspath $(PY)) sh examples/demo.sh

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
