# eval/tokenizer/deps.cmake — optional dependency of the BPE tokenizers (docs/tokenizers.md):
# PCRE2 (pkg-config libpcre2-8, Debian libpcre2-dev) for the Unicode split regexes of
# tokenizer.json / tiktoken. Included by the top-level CMakeLists.txt before the libraries are
# defined. With PCRE2: its imported target joins RS_EVAL_DEPS and RS_HAVE_PCRE2 is defined for
# every target. Without it everything builds; the BPE tokenizers then refuse to open
# (RS_E_UNSUPPORTED, "built without PCRE2") and their tests skip.
pkg_check_modules(PCRE2 IMPORTED_TARGET libpcre2-8)
if(PCRE2_FOUND)
  list(APPEND RS_EVAL_DEPS PkgConfig::PCRE2)
  add_compile_definitions(RS_HAVE_PCRE2 PCRE2_CODE_UNIT_WIDTH=8)
  message(STATUS "replayssm: PCRE2 ${PCRE2_VERSION} found: BPE tokenizers enabled")
else()
  message(STATUS "replayssm: PCRE2 (libpcre2-8, Debian libpcre2-dev) not found: BPE tokenizers disabled")
endif()
