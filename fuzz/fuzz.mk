# fuzz.mk — libFuzzer targets (clang, ASan + UBSan), included by Makefile.
#   make fuzz                  every target for FUZZ_SECONDS each (default 600)
#   make fuzz FUZZ_TARGETS=pack FUZZ_SECONDS=3600
#   make fuzz-test             a short bounded run of each (part of make test);
#                              skipped, saying why, without clang's libFuzzer
# The library is compiled straight from src/**/*.c into $(FUZZ_BUILD)/obj.

FUZZ_BUILD        ?= build-fuzz
FUZZ_SECONDS      ?= 600
FUZZ_TEST_SECONDS ?= 3
# every fuzz/fuzz_<target>.c (fuzz_util.c holds shared helpers)
FUZZ_TARGETS      ?= $(filter-out util,$(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c)))
FUZZ_CC           ?= $(shell command -v clang-14 || command -v clang || echo clang)

FUZZ_PKGS    := libjpeg libpng libwebp libtiff-4 libgif libheif libde265 stb libraw_r zlib jansson
FUZZ_AV      := libavformat libavcodec libswscale libavutil
# video (src/video) as CMake builds it: with libav* when pkg-config has them
ifeq ($(shell pkg-config --exists $(FUZZ_AV) 2>/dev/null && echo y),y)
FUZZ_PKGS    += $(FUZZ_AV)
FUZZ_DEFS    := -DFERRY_HAVE_AV
endif
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS  := -std=c11 -g -O1 -D_GNU_SOURCE -DFERRY_BUILDING $(FUZZ_DEFS) -Iinclude -Isrc -Ifuzz \
                -I$(FUZZ_BUILD)/gen \
                -Wall -Wextra -Werror -Wno-unused-parameter $(FUZZ_SAN) \
                $(shell pkg-config --cflags $(FUZZ_PKGS) 2>/dev/null)
FUZZ_LIBS    := $(shell pkg-config --libs $(FUZZ_PKGS) 2>/dev/null) -lpthread -lm
FUZZ_LIB_SRC := $(shell find src -name '*.c' 2>/dev/null)
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)

.PHONY: fuzz fuzz-build fuzz-test fuzz-seed

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

# the files embedded in the library (scripts/gen_embedded.py's SETS): the OpenCL C
# sources, read by src/opencl/cl_sources.c, and the review page's style and script,
# read by src/catalog/report_page.c
FUZZ_EMBED_DEPS := $(wildcard src/opencl/*.cl) src/hash/fp_core.h src/hash/dct_core.h \
                   src/hash/haar_core.h src/hash/hash_jobs.h src/catalog/review_style.css \
                   src/catalog/review_script.js scripts/gen_embedded.py
$(FUZZ_BUILD)/gen/opencl_src.h $(FUZZ_BUILD)/gen/review_page_src.h &: $(FUZZ_EMBED_DEPS)
	python3 scripts/gen_embedded.py $(FUZZ_BUILD)/gen >/dev/null
	touch $(FUZZ_BUILD)/gen/opencl_src.h $(FUZZ_BUILD)/gen/review_page_src.h

$(FUZZ_BUILD)/obj/src/opencl/cl_sources.o: $(FUZZ_BUILD)/gen/opencl_src.h
$(FUZZ_BUILD)/obj/src/catalog/report_page.o: $(FUZZ_BUILD)/gen/review_page_src.h

$(FUZZ_BUILD)/libferry_fuzz.a: $(FUZZ_LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_util.c fuzz/fuzz_util.h $(FUZZ_BUILD)/libferry_fuzz.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< fuzz/fuzz_util.c \
	  $(FUZZ_BUILD)/libferry_fuzz.a $(FUZZ_LIBS) -o $@

$(FUZZ_BUILD)/mkseeds: fuzz/mkseeds.c $(FUZZ_BUILD)/libferry_fuzz.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(FUZZ_BUILD)/libferry_fuzz.a $(FUZZ_LIBS) -o $@

fuzz-build: $(FUZZ_BINS) $(FUZZ_BUILD)/mkseeds

fuzz-seed: $(FUZZ_BUILD)/mkseeds
	@ASAN_OPTIONS=detect_leaks=0 fuzz/seed.sh fuzz/corpus $(FUZZ_BUILD)/mkseeds

fuzz: deps
	@fuzz/have-libfuzzer.sh $(FUZZ_CC) || exit 1
	$(MAKE) --no-print-directory fuzz-build fuzz-seed
	fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# (run.sh on a line of its own: `make -n` runs lines that call $(MAKE))
fuzz-test:
	@if fuzz/have-libfuzzer.sh $(FUZZ_CC); then \
	  $(MAKE) --no-print-directory -j $(JOBS) fuzz-build && \
	  $(MAKE) --no-print-directory fuzz-seed; \
	fi
	@if fuzz/have-libfuzzer.sh $(FUZZ_CC) >/dev/null; then \
	  fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_TEST_SECONDS) $(FUZZ_TARGETS); \
	fi

-include $(FUZZ_LIB_OBJ:.o=.d)
