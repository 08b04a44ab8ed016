# make demo | make test | make docs | make bench | make soak | make oracles | make lint | make minimums
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
ORACLES := .oracles

.PHONY: demo test test-setup docs bench soak oracles lint minimums clean

# Python caches compiled bytecode of what it imports unless PYTHONDONTWRITEBYTECODE is set (some machines set it).
# The package is installed editable, so nothing compiled it beforehand, and a run imports it hundreds of times: in
# the suite's workers, Spark's Python workers, the subprocesses. Without the cache each import compiles the
# package again: `import paimon_ds` 0.40 -> 0.20 CPU s, collecting the suite 9.3 -> 2.7 CPU s.
unexport PYTHONDONTWRITEBYTECODE

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[test]"
	touch $(STAMP)

# The documentation site (mkdocs.yml, docs/) into site/ (git-ignored), with only the docs extra installed. The test
# extra includes it too, so $(STAMP) installs mkdocs and make test builds the site as well (tests/test_docs.py): a
# broken link, anchor or docstring fails the suite. NO_MKDOCS_2_WARNING: mkdocs-material's end-of-life banner.
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e ".[docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir site

# The two reference implementations the interop tests compare against (see tests/oracles/setup.sh).
$(ORACLES)/.ready: tests/oracles/setup.sh
	bash tests/oracles/setup.sh $(ORACLES)
	touch $@

oracles: $(ORACLES)/.ready

# The Spark Connect tests' server venvs (tests/spark/connect_server.py), at the versions the test venv has
CONNECT_VENVS := $(ORACLES)/.connect-venvs
$(CONNECT_VENVS): $(STAMP) tests/spark/connect_server.py
	mkdir -p $(ORACLES) && $(BIN)/python tests/spark/connect_server.py $(ORACLES)
	touch $@

# The classes the suite's Spark drivers load, archived by one training run (tests/spark_class_archive.py) for
# the others to map instead of loading and verifying them again (Java's class data sharing): a driver's start and
# first queries 16-17 -> 7-9 CPU s. A JVM whose class path differs ignores it (-Xlog: silently).
SPARK_CLASSES := $(VENV)/spark-classes.jsa
SUITE_JVM_OPTS := -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m -XX:+UseParallelGC
CDS_QUIET := -Xlog:cds=off -Xlog:cds+dynamic=off
$(SPARK_CLASSES): $(STAMP) tests/spark_class_archive.py
	rm -f $@
	SPARK_SUBMIT_OPTS="$(SUITE_JVM_OPTS) -XX:ArchiveClassesAtExit=$(CURDIR)/$@ $(CDS_QUIET)" \
		$(BIN)/python tests/spark_class_archive.py > $(VENV)/spark-classes.log 2>&1 || (cat $(VENV)/spark-classes.log; false)

# What make test needs, built side by side: each mostly waits on downloads or a JVM and works on one core
# (on a fresh machine, one after the other: the venv 2:05, the oracles 1:07, the Connect venvs 0:50).
test-setup:
	$(MAKE) --no-print-directory -j3 $(STAMP) $(ORACLES)/.ready $(CONNECT_VENVS) $(SPARK_CLASSES)

demo: $(STAMP)
	$(BIN)/python -m paimon_ds.demo

# The suite in three worker processes on the 2 cores: each waits on JVMs, subprocesses and Spark's scheduling part
# of the time, and two kept the cores 87% busy, three 98% (a clean-clone suite 35:47 -> 33:30 on 2026-12-07). Each
# worker ends with the after_suite check of the tables its tests left (tests/suite_scheduling.py), beside the
# other workers' last files.
# SUITE_JVM: the suite's Spark drivers (its sessions, stream jobs, Connect servers) compile with C1 only: their
# JVMs live seconds to minutes, where C2's compiler threads cost more CPU than its code saves (a ported SQL
# suite: 237 -> 176 CPU s; the after_suite check on 104 snapshots: 110 -> 89). Without tiers the JVM reserves 48 MiB
# for compiled code, which a worker's session fills, and then stops compiling: hence the code cache size. They
# collect garbage with the parallel collector: G1's write barriers and concurrent work cost more in C1's code than
# its short pauses save here (20 ported MERGE cases: JVM 43.7-46.0 -> 29.4-34.3 CPU s; Serial 37-38).
# make bench keeps the JVM's defaults.
# Files go to the workers slowest first (tests/file_durations.txt, see tests/conftest.py), not xdist's default
# of most tests first, which handed out the files of one or two long multi-JVM cases last. DURATIONS=1 records the
# run's figures into that file.
RECORD := $(if $(DURATIONS),PAIMON_DS_RECORD_DURATIONS=$(CURDIR)/tests/file_durations.txt)
SUITE_TMP := .pytest-suite
SUITE_JVM := SPARK_SUBMIT_OPTS="$(SUITE_JVM_OPTS) -XX:SharedArchiveFile=$(CURDIR)/$(SPARK_CLASSES) $(CDS_QUIET)"
test: test-setup
	rm -rf $(SUITE_TMP) && mkdir -p $(SUITE_TMP)
	$(SUITE_JVM) $(RECORD) $(BIN)/python -m pytest -q -n 3 --dist loadfile --no-loadscope-reorder \
		--basetemp=$(SUITE_TMP)/run --durations=15 -m "not bench and not soak"
	rm -rf $(SUITE_TMP)

# the bench extra (deltalake, pyiceberg) on top of the test install; make test does not need it
BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install -q -e ".[test,bench]"
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BIN)/python -m pytest -q -m bench -s -p no:cacheprovider -o addopts=""

soak: $(STAMP) $(ORACLES)/.ready
	$(BIN)/python -m pytest -q -m soak -s -p no:cacheprovider -o addopts=""

# The suite's core, Spark, S3, API and CLI tests on the lowest versions pyproject.toml admits (tests/minimums.txt)
MIN_VENV := .venv-min
MIN_TESTS := tests/format tests/mergetree tests/operation tests/io tests/index tests/deletionvectors \
	tests/options/test_registry.py tests/schema/test_types.py tests/test_table_api.py tests/test_cli.py \
	tests/spark/test_roundtrip.py tests/spark/test_read.py tests/spark/test_native_read.py tests/spark/test_stream_write.py \
	tests/spark/test_table_api_spark.py tests/s3/test_s3_commit.py tests/s3/test_s3_spark.py
minimums: $(ORACLES)/.ready
	$(PY) -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/pip install -q --upgrade pip
	$(MIN_VENV)/bin/pip install -q -r tests/minimums.txt
	$(MIN_VENV)/bin/pip install -q --no-deps -e .
	$(MIN_VENV)/bin/pip install -q pytest mmh3 "moto[s3,server]>=5.0.20" duckdb polars
	$(MIN_VENV)/bin/python -m pytest -q $(MIN_TESTS)

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) $(MIN_VENV) $(ORACLES) .pytest_cache $(SUITE_TMP) site
