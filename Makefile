# The book's commands. `make book` and `make test` are all a newcomer needs;
# both create .venv from the pinned requirements.txt on first use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
STAMP  := $(VENV)/.installed
HTML   := _build/html
PORT   ?= 8000
JB_FLAGS := -n -W --keep-going
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9]*.py)) $(wildcard book/*.py)
# jupyter-cache keys a page's execution on its code alone; the site's extension
# (book/_ext/napkin_site/inputs.py) records which library modules and data files each page
# read as it ran, and re-executes only the pages whose inputs changed since.
# The site's Sphinx extension (book/_ext) shapes every page but no execution: a change there
# makes Sphinx re-read every page, and re-executes nothing.
SITE_INPUTS := $(shell find book/_ext -type f -not -name '*.pyc' 2>/dev/null)
SITE_STAMP := _build/.site-stamp
LIVE_STAMP := _build/.live-$(if $(FULL),full,quick)
# llama.cpp's AMX matmul crashes on some Xeons (llama.cpp issue #20824, open): where the CPU
# has AMX the binding is compiled without it (GCC's -mno-* flags win over -march=native).
NO_AMX := $(if $(shell grep -qsw amx_tile /proc/cpuinfo && echo amx),-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
BINDING_CMAKE_ARGS := $(if $(NO_AMX),-DCMAKE_C_FLAGS='$(NO_AMX)' -DCMAKE_CXX_FLAGS='$(NO_AMX)')

.DEFAULT_GOAL := help
.PHONY: help env check book test serve lab sync measure share figures clean distclean freeze

help:
	@echo "make book     build the site into $(HTML) (creates $(VENV) on first use; FULL=1: full live measurements)"
	@echo "make check    the quick loop: library, data, pairing, glue keys, lint (about a minute)"
	@echo "make test     every test: library, llama.cpp, book build, each notebook against its stored outputs, site in a browser"
	@echo "make serve    serve the built site on http://localhost:$(PORT)/"
	@echo "make lab      JupyterLab on the notebooks"
	@echo "make sync     after editing notebooks/*.py: re-pair and re-execute the .ipynb files"
	@echo "make measure  measure this machine with llama.cpp (QUICK=1 for the seconds-long version;"
	@echo "              LLAMA_BENCH=path for a GPU build of llama-bench, BANDWIDTH=GB/s to override)"
	@echo "make share    turn the newest measurement into a submission for the readers' page"
	@echo "              (results/share/; RESULT=path for another one)"
	@echo "make figures  export every figure to SVG/PNG/PDF + CSV into _build/figures"
	@echo "make clean    remove _build (keeps $(VENV)); make distclean also removes $(VENV)"

env: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "needs Python 3.11+"' \
	  || { echo "error: $(PYTHON) is older than 3.11; run 'make PYTHON=python3.11 ...'"; exit 1; }
	@echo "==> [env] creating $(VENV) from requirements.txt (first time only)"
	@echo "    llama-cpp-python compiles llama.cpp from source: about 7 minutes on 2 cores, once."
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@CMAKE_ARGS="$(BINDING_CMAKE_ARGS) $$CMAKE_ARGS" \
	  $(PY) -m pip install --disable-pip-version-check --progress-bar on -r requirements.txt
	@# The CFF schema that validates CITATION.cff ships in cffconvert's wheel; cffconvert
	@# itself pins jsonschema<4, which the book cannot use, so only its wheel is fetched.
	@$(PY) -m pip download --disable-pip-version-check --quiet --no-deps cffconvert==2.0.0 \
	  -d .cache/wheels
	@touch $(STAMP)
	@echo "==> [env] ready"

$(SITE_STAMP): $(SITE_INPUTS)
	@rm -rf _build/.doctrees
	@mkdir -p _build && touch $@

# Switching between quick and full live measurements re-executes every notebook.
$(LIVE_STAMP):
	@rm -rf _build/.jupyter_cache _build/.doctrees
	@mkdir -p _build && rm -f _build/.live-* && touch $@

book: $(STAMP) $(LIVE_STAMP) $(SITE_STAMP)
	@echo "==> [book] executing notebooks and building the site (cached notebooks are not re-run; live cells: $(if $(FULL),full,quick) measurements)"
	@$(if $(FULL),NAPKIN_LIVE=full) $(BIN)/jupyter-book build . --builder html $(JB_FLAGS)
	@echo "==> [book] done. Open file://$(CURDIR)/$(HTML)/index.html or run 'make serve'"

check: $(STAMP)
	@echo "==> [check] library, data, notebook pairing, glue keys and lint (no llama.cpp, no book build)"
	@$(PY) -m pytest tests -m "not slow and not browser and not site" -q -n 2

test: $(STAMP)
	@echo "==> [test 1/3] library, data and notebook pairing, llama.cpp included"
	@$(PY) -m pytest tests -m "not browser and not site" -q
	@echo "==> [test 2/3] book build with -n -W --keep-going: every notebook executed once"
	@$(MAKE) --no-print-directory book
	@echo "==> [test 3/3] the built book: each execution against the notebook's stored outputs, exported figures, links, and every page in headless Chromium, network blocked"
	@$(PY) -m pytest tests -m "browser or site" -q
	@echo "==> [test] all passed"

serve: $(HTML)/index.html
	@echo "Serving $(HTML) on http://localhost:$(PORT)/ (Ctrl-C to stop)"
	@$(PY) -m http.server --directory $(HTML) --bind 127.0.0.1 $(PORT)

$(HTML)/index.html:
	@$(MAKE) --no-print-directory book

lab: $(STAMP)
	@$(BIN)/jupyter lab notebooks

sync: $(STAMP)
	@for nb in $(NOTEBOOKS); do \
	  echo "==> [sync] $$nb"; \
	  $(BIN)/jupytext --quiet --set-formats ipynb,py:percent "$$nb" && \
	  $(BIN)/jupyter nbconvert --log-level WARN --to notebook --execute --ExecutePreprocessor.record_timing=False --inplace "$${nb%.py}.ipynb" && \
	  $(BIN)/jupytext --quiet --sync "$${nb%.py}.ipynb" || exit 1; \
	done

measure: $(STAMP)
	@$(PY) -m napkin measure $(if $(QUICK),--quick,) \
	  $(if $(LLAMA_BENCH),--llama-bench $(LLAMA_BENCH),) $(if $(BANDWIDTH),--bandwidth $(BANDWIDTH),)

share: $(STAMP)
	@$(PY) -m napkin share $(RESULT)

figures: book
	@echo "==> [figures] exporting every figure (SVG, PNG 2x, PDF, light and dark, with CSV) to _build/figures"
	@$(PY) -m napkin figures --out _build/figures

clean:
	rm -rf _build

distclean: clean
	rm -rf $(VENV)

freeze: $(STAMP)
	@{ head -2 requirements.txt; $(BIN)/pip freeze --exclude-editable; echo "-e ."; } > requirements.new
	@mv requirements.new requirements.txt
