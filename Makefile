# make demo | make test | make bench | make soak | make oracles | make lint
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
ORACLES := .oracles

.PHONY: demo test bench soak oracles lint clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[test]"
	touch $(STAMP)

# The two reference implementations the interop tests compare against (see tests/oracles/setup.sh).
$(ORACLES)/.ready: tests/oracles/setup.sh
	bash tests/oracles/setup.sh $(ORACLES)
	touch $@

oracles: $(ORACLES)/.ready

demo: $(STAMP)
	$(BIN)/python -m paimon_ds.demo

test: $(STAMP) $(ORACLES)/.ready
	$(BIN)/python -m pytest -q --durations=15

bench: $(STAMP)
	$(BIN)/python -m pytest -q -m bench -s -p no:cacheprovider -o addopts=""

soak: $(STAMP) $(ORACLES)/.ready
	$(BIN)/python -m pytest -q -m soak -s -p no:cacheprovider -o addopts=""

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) $(ORACLES) .pytest_cache
