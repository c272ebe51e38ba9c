# ferry — the two commands: `make demo` and `make test`.
# Both install what is missing (scripts/setup.sh), build, then run.

BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_TSAN ?= build-tsan
BUILD_NOVIDEO ?= build-novideo
# the tests that run threads, under ThreadSanitizer in `make test`
# (test_opencl_search: PoCL's threads beside ferry's cache of OpenCL contexts; clean under TSan;
# test_opencl_hash: the GPU hashes' batching queue, its producers and its thread, on PoCL,
# quick there: FERRY_TEST_QUICK, set by CMakeLists.txt for TSan builds;
# test_opencl_cache: hashers and searches on several threads sharing the OpenCL programs;
# test_shard_fd: shard members read on several threads, each through its own open fds)
TSAN_TESTS ?= test_loader test_epoch_ahead test_pack test_hash_api test_watchdog test_engine_gate \
              test_catalog test_opencl_search test_hamming_multi test_opencl_hash test_opencl_cache \
              test_shard_fd
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all deps build build-asan build-tsan test-tsan test-novideo demo test test-unit test-asan test-corpus bench clean format install

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
	cmake --build $(BUILD_TSAN) -j $(JOBS) --target $(TSAN_TESTS)

# ThreadSanitizer over the thread tests; any report fails the run.
test-tsan: build-tsan
	cd $(BUILD_TSAN) && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --output-on-failure -j $(JOBS) -R '^($(subst $(eval) ,|,$(TSAN_TESTS)))$$'

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
	@out=$$($(BUILD_NOVIDEO)/ferry info tests/fixtures/codecs/rgb.heic 2>&1); rc=$$?; \
	  case "$$rc:$$out" in [1-9]:*"rgb.heic"*"built without libheif"*) echo "test-novideo: HEIF ok";; \
	  *) echo "test-novideo: want an error naming the file and 'built without libheif', got $$rc: $$out"; exit 1;; esac

demo: build
	$(BUILD)/ferry demo

# Every test: unit + CLI tests (ctest), the same under ASan+UBSan, and the
# Python checks against Pillow over ../shared/corpus (skipped, saying so,
# when the corpus is absent).
test: build build-asan
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@grep -h "^SKIPPED" $(BUILD)/Testing/Temporary/LastTest.log | sort -u || true
	cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory test-tsan
	$(MAKE) --no-print-directory test-novideo
	$(MAKE) --no-print-directory fuzz-test
	FERRY_PY_CMAKE_BUILD=$(BUILD) python3 setup.py -q build_ext --inplace && \
	  FERRY_BIN=$(BUILD)/ferry python3 -m pytest -q -rs tests/python
	$(MAKE) --no-print-directory test-wheel

# The Python package as one self-contained manylinux wheel in dist/
# (scripts/wheel.sh): the codec libraries vendored by auditwheel, video from a
# minimal static FFmpeg (WHEEL_VIDEO=0 leaves it out), the CUDA backend where
# nvcc is found (FERRY_CUDA=1 requires it, FERRY_CUDA=0 leaves it out).
.PHONY: wheel test-wheel
wheel: deps
	scripts/wheel.sh

# That wheel installed into a clean venv (with NumPy and pytest only), and
# tests/python run against it from outside the checkout
# (scripts/wheel-test.sh); the ferry command and libferry.so come from $(BUILD).
test-wheel: build wheel
	BUILD=$(BUILD) scripts/wheel-test.sh

bench: build
	python3 bench/bench_cpu.py --ferry $(BUILD)/ferry

install: build
	cmake --install $(BUILD)

format:
	clang-format -i include/*.h src/*/*.[ch] tools/*.[ch] tests/unit/*.[ch] fuzz/*.[ch] \
	  python/ferry/_ext/*.c python/ferry/_ext/ferry_py.h

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN) $(BUILD_NOVIDEO) $(FUZZ_BUILD)

include fuzz/fuzz.mk
