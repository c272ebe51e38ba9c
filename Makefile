# ferry — the two commands: `make demo` and `make test`.
# Both install what is missing (scripts/setup.sh), build, then run.

BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_TSAN ?= build-tsan
BUILD_NOVIDEO ?= build-novideo
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all deps build build-asan build-tsan test-tsan test-novideo demo check test test-full \
        test-asan test-asan-full py-ext pytest-check pytest-rest pytest-slow bench clean format install

all: build

deps:
	@scripts/setup.sh

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD_ASAN)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DFERRY_SANITIZE=ON -DFERRY_CUDA=OFF $(CMAKE_ARGS)

build-asan: deps $(BUILD_ASAN)/Makefile
	cmake --build $(BUILD_ASAN) -j $(JOBS)

$(BUILD_TSAN)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD_TSAN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFERRY_TSAN=ON -DFERRY_CUDA=OFF $(CMAKE_ARGS)

build-tsan: deps $(BUILD_TSAN)/Makefile
	cmake --build $(BUILD_TSAN) -j $(JOBS) --target thread_tests

# ThreadSanitizer over the thread tests (label `threads`, tests/tiers.cmake);
# any report fails the run.
test-tsan: build-tsan
	cd $(BUILD_TSAN) && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  $(CTEST) -L threads -LE slow

# A build without libavformat/libavcodec (-DFERRY_VIDEO=OFF, as the CUDA
# bundle for the GPU machine is made: no video, no libheif) links, loads
# images and refuses video and HEIF with the reason.
test-novideo: deps
	cmake -S . -B $(BUILD_NOVIDEO) -DCMAKE_BUILD_TYPE=Release -DFERRY_VIDEO=OFF -DFERRY_CUDA=OFF \
	  -DFERRY_HEIF=OFF \
	  -DFERRY_TESTS=OFF $(CMAKE_ARGS) >/dev/null
	cmake --build $(BUILD_NOVIDEO) -j $(JOBS) --target ferry
	$(BUILD_NOVIDEO)/ferry load data/sample --size 32 --batch 8 --quiet >/dev/null 2>&1; \
	  test $$? -eq 3 || { echo "test-novideo: ferry load failed"; exit 1; }
	@out=$$($(BUILD_NOVIDEO)/ferry video tests/fixtures/video/testsrc_h264.mp4 2>&1); rc=$$?; \
	  case "$$rc:$$out" in 1:*"built without libavcodec"*) echo "test-novideo: ok";; \
	  *) echo "test-novideo: want exit 1 and 'built without libavcodec', got $$rc: $$out"; exit 1;; esac
	@out=$$($(BUILD_NOVIDEO)/ferry info tests/fixtures/video/testsrc_h264.mp4 2>&1); rc=$$?; \
	  case "$$rc:$$out" in 1:*"testsrc_h264.mp4"*"built without libavcodec"*) echo "test-novideo: info ok";; \
	  *) echo "test-novideo: want ferry info to exit 1 naming the file and 'built without libavcodec', got $$rc: $$out"; exit 1;; esac
	@out=$$($(BUILD_NOVIDEO)/ferry info tests/fixtures/codecs/rgb.heic 2>&1); rc=$$?; \
	  case "$$rc:$$out" in [1-9]:*"rgb.heic"*"built without libheif"*) echo "test-novideo: HEIF ok";; \
	  *) echo "test-novideo: want an error naming the file and 'built without libheif', got $$rc: $$out"; exit 1;; esac

demo: build
	$(BUILD)/ferry demo

# The test tiers (docs/TESTING.md; every test's labels: tests/tiers.cmake and
# tests/python/conftest.py). Each prints the SKIPPED lines of what did not run.
#   make check      the inner loop (about 3 min on 2 cores): the release build,
#                   every ctest entry but the `slow` ones (unit, cli, layout,
#                   the corpus sample), pytest without `slow` and `corpus`
#   make test       README's and CI's (about 12 min on 2 cores): check, then
#                   ASan+UBSan of the same entries, TSan of the thread tests,
#                   a short run of every fuzzer, pytest's `corpus` tests, and
#                   the wheel built and tested in a clean venv
#   make test-full  every proof (run it before resolving an issue that touches
#                   them): test, then the `slow` entries (the whole corpus, the
#                   largest searches) in the release and ASan builds, pytest's
#                   `slow` tests, the build without video, 30 s a fuzzer, every
#                   Python test against the wheel
CTEST      = ctest --output-on-failure -j $(JOBS)
ASAN_ENV   = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
             LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
             UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# pytest on every core with pytest-xdist (scripts/setup.sh installs it), else on one
PYTEST_N   = $(shell python3 -c "import xdist" 2>/dev/null && echo "-n $(JOBS)")
PYTEST     = FERRY_BIN=$(BUILD)/ferry python3 -m pytest -q -rs $(PYTEST_N)
SKIPPED    = grep -h "^SKIPPED" $(1)/Testing/Temporary/LastTest.log | sort -u || true

check: build
	cd $(BUILD) && $(CTEST) -LE slow
	@$(call SKIPPED,$(BUILD))
	$(MAKE) --no-print-directory pytest-check

test: check build-asan
	$(MAKE) --no-print-directory test-asan
	$(MAKE) --no-print-directory test-tsan
	$(MAKE) --no-print-directory fuzz-test
	$(MAKE) --no-print-directory pytest-rest
	$(MAKE) --no-print-directory test-wheel

test-full: test
	cd $(BUILD) && $(CTEST) -L slow
	$(MAKE) --no-print-directory test-asan-full
	$(MAKE) --no-print-directory pytest-slow
	$(MAKE) --no-print-directory test-novideo
	$(MAKE) --no-print-directory fuzz-test FUZZ_TEST_SECONDS=30
	$(MAKE) --no-print-directory test-wheel WHEEL_TEST_MARKERS=

# ASan+UBSan: the quick tier's entries (test), the slow ones (test-full)
test-asan: build-asan
	cd $(BUILD_ASAN) && $(ASAN_ENV) $(CTEST) -LE slow
	@$(call SKIPPED,$(BUILD_ASAN))

test-asan-full: build-asan
	cd $(BUILD_ASAN) && $(ASAN_ENV) $(CTEST) -L slow

# The Python extension, built in place from $(BUILD)'s objects, and pytest by
# marker: check runs what is neither slow nor corpus, test adds corpus,
# test-full adds slow.
py-ext: build
	FERRY_PY_CMAKE_BUILD=$(BUILD) python3 setup.py -q build_ext --inplace

pytest-check: py-ext
	$(PYTEST) -m "not slow and not corpus" tests/python

pytest-rest: py-ext
	$(PYTEST) -m "corpus and not slow" tests/python

pytest-slow: py-ext
	$(PYTEST) -m slow tests/python

# The Python package as one self-contained manylinux wheel in dist/
# (scripts/wheel.sh), with the ferry command (ferry/_bin/ferry): the codec libraries vendored by auditwheel, video from a
# minimal static FFmpeg (WHEEL_VIDEO=0 leaves it out), the CUDA backend where
# nvcc is found (FERRY_CUDA=1 requires it, FERRY_CUDA=0 leaves it out).
.PHONY: wheel test-wheel
wheel: deps
	scripts/wheel.sh

# That wheel installed into a clean venv (with NumPy and pytest only), and
# tests/python run against it from outside the checkout
# (scripts/wheel-test.sh); the command-line tests' ferry and libferry.so come
# from $(BUILD), the wheel's own ferry command (ferry/_bin/ferry: the entry
# point, python -m ferry) is tested by test_packaging.py.
# `make test` runs the package's own tests there (the command line's and the
# corpus's ran against the checkout's build); `make test-full` all of them.
WHEEL_TEST_MARKERS ?= not slow and not corpus and not cli
test-wheel: build wheel
	BUILD=$(BUILD) JOBS=$(JOBS) WHEEL_TEST_MARKERS="$(WHEEL_TEST_MARKERS)" scripts/wheel-test.sh

bench: build
	python3 bench/bench_cpu.py --ferry $(BUILD)/ferry

# the tests of bench/'s own scripts (pytest only; outside make test)
.PHONY: test-bench
test-bench:
	python3 -m pytest -q -p no:cacheprovider bench/tests

install: build
	cmake --install $(BUILD)

format:
	clang-format -i include/*.h src/*/*.[ch] tools/*.[ch] tests/unit/*.[ch] fuzz/*.[ch] \
	  python/ferry/_ext/*.c python/ferry/_ext/ferry_py.h

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN) $(BUILD_NOVIDEO) $(FUZZ_BUILD)

include fuzz/fuzz.mk
