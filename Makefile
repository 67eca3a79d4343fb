# `make test` and `make demo` set up their own virtual environment from this project's files.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.tierank-installed
DEMO_STAMP := $(VENV)/.tierank-demo-installed

BENCH_VENV ?= .venv-bench
BENCH_PY := $(BENCH_VENV)/bin/python
BENCH_STAMP := $(BENCH_VENV)/.tierank-bench-installed

.PHONY: test demo install clean bench bench-quick chromium docs

# the demo needs only the core and the plot extra (well under a minute); `make test` adds every extra to the
# same environment
$(DEMO_STAMP): pyproject.toml setup.py src/tierank/io/rowreader.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[plot]'
	touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP) pyproject.toml setup.py src/tierank/io/rowreader.c
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# headless Chromium renders the HTML report in a test; installed from Debian's packages when missing
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); $$SUDO apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

test: $(STAMP) chromium
	TIERANK_REQUIRE_CHROMIUM=1 $(PY) -m pytest -q

demo: $(DEMO_STAMP)
	PYTHON=$(abspath $(PY)) sh examples/demo.sh

$(BENCH_STAMP): pyproject.toml setup.py src/tierank/io/rowreader.c
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_PY) -m pip install --quiet --upgrade pip
	$(BENCH_PY) -m pip install --quiet -e '.[bench]'
	touch $(BENCH_STAMP)

# the benchmark table against the anchors (about 20 minutes); rewrites the full table in docs/benchmarks.md
# and its summary in README.md
bench: $(BENCH_STAMP)
	$(BENCH_PY) benchmarks/run.py --docs

bench-quick: $(BENCH_STAMP)
	$(BENCH_PY) benchmarks/run.py --quick

clean:
	rm -rf $(VENV) $(BENCH_VENV) .pytest_cache .hypothesis

# the documentation site, into docs/_build/html; warnings are errors, every cross-reference must resolve,
# and the pages' examples run (sphinx.ext.doctest)
docs: $(STAMP)
	$(PY) -m sphinx -b html -n -W --keep-going -d docs/_build/doctrees docs docs/_build/html
	$(PY) -m sphinx -b doctest -n -W --keep-going -d docs/_build/doctrees docs docs/_build/doctest
