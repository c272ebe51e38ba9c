# tiers.cmake — every test's labels and tiers (docs/TESTING.md), included by
# CMakeLists.txt. The labels, as `ctest -L` selects them:
#   unit     a C unit test (tests/unit/test_*.c; a new file is one by default)
#   cli      the command line (tests/cli) and the installed library
#   threads  runs threads: these also run under ThreadSanitizer
#   corpus   reads ../shared/corpus (its tiered sample in the quick tier)
#   gpu      needs a GPU; without one it says SKIPPED and why
#   slow     the full tier's entry of a test (NAME.full): the whole corpus,
#            the largest searches; only `make test-full` runs them
# Quick tier (`make check`, `make test`): every entry but `slow`, with
# FERRY_TEST_TIER unset. Full tier (`make test-full`): every entry; the
# NAME.full entries run NAME with FERRY_TEST_TIER=full (check.h: check_full).

# the tests that run threads (TSan in `make test`: test_opencl_search and
# test_opencl_hash run PoCL's threads beside ferry's OpenCL cache and the GPU
# hashes' batching queue; test_shard_fd reads members on several threads)
set(FERRY_THREAD_TESTS test_loader test_loader_fill test_epoch_ahead test_pack test_hash_api test_watchdog
    test_engine_gate test_catalog test_opencl_search test_hamming_multi test_opencl_hash
    test_opencl_cache test_shard_fd test_testctl)
set(FERRY_CORPUS_TESTS test_codecs test_corpus test_exif test_gpu test_gpu_hash test_hash_engine
    test_hash_golden test_hash_jpegdc test_opencl_hash test_resize_fast test_video test_video_gpu)
set(FERRY_GPU_TESTS test_gpu test_gpu_hash test_gpu_hamming test_video_gpu)
# tests with a full-tier part (a NAME.full entry, label slow): what it adds
#   test_opencl_hash    the whole corpus (733 files) bit for bit on PoCL
#   test_opencl_search  two 100,000-code searches on PoCL
#   test_gpu_hash       the whole corpus on the GPU
#   test_video          every stride and random access on the corpus's clips
#   test_resize_fast    60 photographs against the exact resampler (12 quick)
#   test_hash_golden    every corpus file against imagehash's hashes (1 in 9 quick)
#   test_hamming_multi  the multi-device driver over 16,391 codes
#   test_gpu_hash       (and test_opencl_hash) synthetic 2048x1536 and 4000x3000 images
set(FERRY_FULL_TESTS test_opencl_hash test_opencl_search test_gpu_hash test_video
    test_resize_fast test_hash_golden test_hamming_multi)

# ferry_add_tiered_test(NAME COMMAND...): NAME with its labels, and NAME.full
# where NAME is in FERRY_FULL_TESTS. Timeouts are at least 3x a test's time
# alone on 2 cores under ASan (a slower test moves to the full tier instead).
function(ferry_add_tiered_test name)
  set(labels unit)
  if(name IN_LIST FERRY_THREAD_TESTS)
    list(APPEND labels threads)
  endif()
  if(name IN_LIST FERRY_CORPUS_TESTS)
    list(APPEND labels corpus)
  endif()
  if(name IN_LIST FERRY_GPU_TESTS)
    list(APPEND labels gpu)
  endif()
  set(env "FERRY_CORPUS=${FERRY_CORPUS};FERRY_FIXTURES=${CMAKE_SOURCE_DIR}/tests/fixtures;FERRY_SAMPLE=${CMAKE_SOURCE_DIR}/data/sample;FERRY_BIN=$<TARGET_FILE:ferry>")
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 600 LABELS "${labels}" ENVIRONMENT "${env}")
  if(name IN_LIST FERRY_FULL_TESTS)
    add_test(NAME ${name}.full COMMAND ${ARGN})
    list(APPEND labels slow)
    set_tests_properties(${name}.full PROPERTIES TIMEOUT 3600 LABELS "${labels}"
                         ENVIRONMENT "${env};FERRY_TEST_TIER=full")
  endif()
endfunction()

# Under ASan, LeakSanitizer crashes walking a PoCL thread's dynamic TLS at the
# exit of test_opencl_search (gcc 12's libasan, PoCL 3.1; "Tracer caught
# signal 11", DTLS at 0x713): its leak check there does not scan TLS (the
# TLS-held third-party blocks it then reports are in tests/lsan.supp).
function(ferry_sanitizer_test_options)
  if(FERRY_SANITIZE AND TEST test_opencl_search)
    foreach(t test_opencl_search test_opencl_search.full)
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
        "LSAN_OPTIONS=use_tls=0:suppressions=${CMAKE_SOURCE_DIR}/tests/lsan.supp")
    endforeach()
  endif()
endfunction()

# a target that builds every thread test (the TSan build builds these only)
function(ferry_thread_tests_target)
  add_custom_target(thread_tests DEPENDS ${FERRY_THREAD_TESTS})
endfunction()
