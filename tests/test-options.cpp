// The one reader of the environment (ggml_cpool_option_read over the rows of
// ggml-cuda-pool-options.h): empty is unset for every row, words in any case, a bad value one line
// naming the variable, the value and the row's values, a file opened when it is read, and what the
// module's context creation refuses: a bad value of any row.

#include "harness.h"

#include <cstdio>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

using namespace harness;

namespace {

struct row {
    ggml_cpool_option       option;
    const char *            name;
    ggml_cpool_option_takes takes;
    const char *            values;
};

const row ROWS[] = {
#define TEST_ROW(id, name, readers, takes, values, effect) \
    { GGML_CPOOL_OPTION_##id, name, GGML_CPOOL_TAKES_##takes, values },
    GGML_CPOOL_OPTIONS(TEST_ROW)
#undef TEST_ROW
};

// every row unset while it lives
struct no_options {
    no_options() {
        for (const row & r : ROWS) {
            unset.push_back(std::make_unique<scoped_env>(r.name, nullptr));
        }
    }
    std::vector<std::unique_ptr<scoped_env>> unset;
};

// a row's variable set to `text` while it lives, and its reading
struct reading {
    reading(ggml_cpool_option o, const char * text) : env(ggml_cpool_option_name(o), text) {
        st = ggml_cpool_option_read(o, &v);
    }
    scoped_env              env;
    ggml_cpool_option_value v{};
    ggml_cpool_status       st;
};

std::string temp_file(const char * what) {
    std::string path = testing::TempDir() + "gcp-options-" + what + "-" + std::to_string(getpid());
    remove(path.c_str());
    return path;
}

TEST(Options, EmptyIsUnsetForEveryRow) {
    for (const row & r : ROWS) {
        log_capture log;
        reading     read(r.option, "");
        EXPECT_EQ(read.st, GGML_CPOOL_STATUS_OK) << r.name;
        EXPECT_EQ(read.v.set, 0) << r.name;
        ggml_cpool_option_value peeked{};
        EXPECT_EQ(ggml_cpool_option_peek(r.option, &peeked), GGML_CPOOL_STATUS_OK) << r.name;
        EXPECT_EQ(peeked.set, 0) << r.name;
        EXPECT_TRUE(log.lines().empty()) << r.name;
    }
}

TEST(Options, AnEmptyModuleVariableCreatesAContext) {
    no_options env;
    for (const char * name : { "GGML_CUDA_POOL", "GGML_CUDA_NO_VMM", "GGML_CUDA_POOL_LOG", "GGML_CUDA_POOL_FAULT" }) {
        scoped_env  empty(name, "");
        log_capture log;
        EXPECT_EQ(sim_ctx_status(), GGML_CPOOL_STATUS_OK) << name << "= is the default, as unset is";
        EXPECT_TRUE(log.lines(GGML_CPOOL_LOG_WARN).empty()) << name;
    }
}

TEST(Options, WordsAreTakenInAnyCase) {
    struct word_case {
        ggml_cpool_option option;
        const char *      text;
        const char *      word;
    };
    for (const word_case & c : { word_case{ GGML_CPOOL_OPTION_POOL, "VMM", "vmm" },
                                 word_case{ GGML_CPOOL_OPTION_POOL, "Ggml-Legacy", "ggml-legacy" },
                                 word_case{ GGML_CPOOL_OPTION_KV_F16, "POOL", "pool" },
                                 word_case{ GGML_CPOOL_OPTION_KV_F16, "Pool-1X", "pool-1x" },
                                 word_case{ GGML_CPOOL_OPTION_ON_OOM, "ABORT", "abort" },
                                 word_case{ GGML_CPOOL_OPTION_LOG, "Debug", "debug" } }) {
        reading read(c.option, c.text);
        ASSERT_EQ(read.st, GGML_CPOOL_STATUS_OK) << c.text;
        EXPECT_STREQ(read.v.word, c.word);
    }
    for (auto [text, on] : { std::pair{ "Yes", 1 }, std::pair{ "OFF", 0 }, std::pair{ "TRUE", 1 }, std::pair{ "no", 0 },
                             std::pair{ "On", 1 }, std::pair{ "0", 0 } }) {
        reading read(GGML_CPOOL_OPTION_NO_VMM, text);
        ASSERT_EQ(read.st, GGML_CPOOL_STATUS_OK) << text;
        EXPECT_EQ(read.v.on, on) << text;
    }
}

TEST(Options, EachWordedRowTakesTheFirstWordOfEachOfItsValues) {
    std::vector<std::pair<ggml_cpool_option, std::vector<std::string>>> rows = {
        { GGML_CPOOL_OPTION_POOL, { "ggml", "ggml-legacy" } },
        { GGML_CPOOL_OPTION_LOG, { "debug", "info", "warn", "error" } },
        { GGML_CPOOL_OPTION_KV_F16, { "graph", "pool", "pool-1x" } },
        { GGML_CPOOL_OPTION_ON_OOM, { "error", "abort" } },
    };
    for (int k = 0; k < GGML_CPOOL_KIND_COUNT; k++) {
        rows[0].second.push_back(ggml_cpool_kind_str(ggml_cpool_kind(k))); // the module's own names
    }
    for (const auto & [option, words] : rows) {
        for (const std::string & word : words) {
            reading read(option, word.c_str());
            ASSERT_EQ(read.st, GGML_CPOOL_STATUS_OK) << ggml_cpool_option_name(option) << "=" << word;
            EXPECT_STREQ(read.v.word, word.c_str());
        }
    }
    reading prefix(GGML_CPOOL_OPTION_KV_F16, "poo");
    EXPECT_EQ(prefix.st, GGML_CPOOL_STATUS_INVALID_ARGUMENT) << "a whole word, not a prefix";
}

TEST(Options, ARotationIsAListOfConfigurationsInAnyCase) {
    reading read(GGML_CPOOL_OPTION_ROTATE, "GGML,vmm,Ggml-Legacy");
    ASSERT_EQ(read.st, GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(read.v.count, 3);
    EXPECT_STREQ(ggml_cpool_option_entry(GGML_CPOOL_OPTION_ROTATE, read.v.text, 0), "ggml");
    EXPECT_STREQ(ggml_cpool_option_entry(GGML_CPOOL_OPTION_ROTATE, read.v.text, 1), "vmm");
    EXPECT_STREQ(ggml_cpool_option_entry(GGML_CPOOL_OPTION_ROTATE, read.v.text, 2), "ggml-legacy");
    EXPECT_EQ(ggml_cpool_option_entry(GGML_CPOOL_OPTION_ROTATE, read.v.text, 3), nullptr);
    for (const char * bad : { "vmm,fastest", "vmm,,legacy", "vmm," }) {
        log_capture log;
        reading     refused(GGML_CPOOL_OPTION_ROTATE, bad);
        EXPECT_EQ(refused.st, GGML_CPOOL_STATUS_INVALID_ARGUMENT) << bad;
        EXPECT_EQ(log.lines().size(), 1u) << bad;
    }
    log_capture log;
    reading     refused(GGML_CPOOL_OPTION_ROTATE, "vmm,fastest");
    EXPECT_EQ(log.count("^GGML_CUDA_POOL_ROTATE=vmm,fastest: 'fastest' is not one of its values; it takes ggml \\|"),
              1u);
}

TEST(Options, ABadValueIsOneLineNamingTheVariableTheValueAndItsValues) {
    for (const row & r : ROWS) {
        if (r.takes != GGML_CPOOL_TAKES_BOOLEAN && r.takes != GGML_CPOOL_TAKES_WORD &&
            r.takes != GGML_CPOOL_TAKES_LIST && r.takes != GGML_CPOOL_TAKES_FAULT_SPEC &&
            r.takes != GGML_CPOOL_TAKES_MILLISECONDS) {
            continue; // a file or a path: any text is one
        }
        log_capture log;
        reading     read(r.option, "bogus");
        EXPECT_EQ(read.st, GGML_CPOOL_STATUS_INVALID_ARGUMENT) << r.name;
        EXPECT_EQ(read.v.set, 0) << r.name << ": a refused value reads as unset";
        const std::vector<std::string> lines = log.lines();
        ASSERT_EQ(lines.size(), 1u) << r.name;
        const std::string line = lines[0];
        EXPECT_EQ(line.rfind(std::string(r.name) + "=bogus: ", 0), 0u) << line;
        const std::string tail = std::string("; it takes ") + r.values;
        EXPECT_TRUE(line.size() > tail.size() && line.compare(line.size() - tail.size(), tail.size(), tail) == 0)
            << line;
    }
}

TEST(Options, TheWaitTakesAPlainDecimalCountOfMilliseconds) {
    for (auto [text, ms] :
         { std::pair<const char *, uint32_t>{ "0", 0 }, { "5000", 5000 }, { "4294967295", UINT32_MAX } }) {
        reading read(GGML_CPOOL_OPTION_WAIT_MS, text);
        ASSERT_EQ(read.st, GGML_CPOOL_STATUS_OK) << text;
        EXPECT_EQ(read.v.milliseconds, ms) << text;
    }
    for (const char * bad : { "5s", "-1", " 5", "4294967296", "99999999999999999999999", "0x10" }) {
        log_capture log;
        EXPECT_EQ(reading(GGML_CPOOL_OPTION_WAIT_MS, bad).st, GGML_CPOOL_STATUS_INVALID_ARGUMENT) << bad;
        EXPECT_EQ(log.lines().size(), 1u) << bad;
        EXPECT_EQ(log.count("; it takes 0 to 4294967295 \\(milliseconds"), 1u) << bad << ": the range it takes";
    }
}

TEST(Options, StatsTakesBooleanWordsForStderrOrNoneAndElseAFileOpenedWhenRead) {
    for (const char * text : { "1", "yes", "TRUE", "on" }) {
        reading read(GGML_CPOOL_OPTION_STATS, text);
        ASSERT_EQ(read.st, GGML_CPOOL_STATUS_OK) << text;
        EXPECT_EQ(read.v.on, 1) << text;
        EXPECT_EQ(read.v.path, nullptr) << text << " is stderr, not a file named " << text;
    }
    for (const char * text : { "0", "no", "Off", "false" }) {
        reading read(GGML_CPOOL_OPTION_STATS, text);
        ASSERT_EQ(read.st, GGML_CPOOL_STATUS_OK) << text;
        EXPECT_EQ(read.v.on, 0) << text;
        EXPECT_EQ(read.v.path, nullptr) << text;
    }
    const std::string path = temp_file("stats");
    {
        reading read(GGML_CPOOL_OPTION_STATS, path.c_str());
        ASSERT_EQ(read.st, GGML_CPOOL_STATUS_OK);
        EXPECT_EQ(read.v.on, 1);
        EXPECT_STREQ(read.v.path, path.c_str());
        EXPECT_EQ(access(path.c_str(), F_OK), 0) << "opened for appending when read";
    }
    remove(path.c_str());
    log_capture log;
    reading     unwritable(GGML_CPOOL_OPTION_STATS, "/nonexistent-dir/stats");
    EXPECT_EQ(unwritable.st, GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(log.count("^GGML_CUDA_POOL_STATS=/nonexistent-dir/stats: cannot open it for appending"), 1u);
    EXPECT_EQ(log.lines().size(), 1u);
    ggml_cpool_option_value peeked{};
    EXPECT_EQ(ggml_cpool_option_peek(GGML_CPOOL_OPTION_STATS, &peeked), GGML_CPOOL_STATUS_OK) << "peek opens nothing";
    EXPECT_EQ(log.lines().size(), 1u) << "peek says nothing";
}

TEST(Options, ATraceFileThatCannotBeWrittenIsRefusedWhenRead) {
    log_capture log;
    reading     read(GGML_CPOOL_OPTION_TRACE, "/nonexistent-dir/trace");
    EXPECT_EQ(read.st, GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(log.count("^GGML_CUDA_POOL_TRACE=/nonexistent-dir/trace: cannot open it for appending"), 1u);
}

TEST(Options, CheckReadsEveryRowAndSaysEachBadValue) {
    no_options env;
    {
        log_capture log;
        EXPECT_EQ(ggml_cpool_options_check(), GGML_CPOOL_STATUS_OK);
        EXPECT_TRUE(log.lines().empty());
    }
    scoped_env  kv("GGML_CUDA_POOL_KV_F16", "bogus");
    scoped_env  oom("GGML_CUDA_POOL_ON_OOM", "crash");
    log_capture log;
    EXPECT_EQ(ggml_cpool_options_check(), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(log.lines().size(), 2u);
    EXPECT_EQ(log.count("^GGML_CUDA_POOL_KV_F16=bogus: "), 1u);
    EXPECT_EQ(log.count("^GGML_CUDA_POOL_ON_OOM=crash: "), 1u);
}

TEST(Options, TheModuleRefusesGgmlsOwnPools) {
    no_options  env;
    scoped_env  pool("GGML_CUDA_POOL", "GGML");
    log_capture log;
    EXPECT_EQ(ggml_cpool_options_check(), GGML_CPOOL_STATUS_OK) << "a value of the row: the llama.cpp adapter's";
    EXPECT_EQ(sim_ctx_status(), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(log.count("^GGML_CUDA_POOL=GGML: ggml's own pools, which only the llama.cpp adapter serves"), 1u);
    EXPECT_EQ(log.lines().size(), 1u);
}

TEST(Options, AMalformedLogLevelFailsContextCreation) {
    no_options  env;
    scoped_env  level("GGML_CUDA_POOL_LOG", "loud");
    log_capture log;
    EXPECT_EQ(sim_ctx_status(), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(log.count("^GGML_CUDA_POOL_LOG=loud: not one of its values; it takes debug \\| info"), 1u);
    EXPECT_EQ(log.lines().size(), 1u);
    EXPECT_EQ(ggml_cpool_log_threshold(), GGML_CPOOL_LOG_WARN) << "the logger keeps warn meanwhile";
}

// every row is checked where a context is made, the integrations' rows included (TIMING and TRACE
// are left out: the first creation reads them once for the whole process)
TEST(Options, ContextCreationRefusesABadValueOfEveryRow) {
    no_options env;
    for (const row & r : ROWS) {
        const bool read_once = r.option == GGML_CPOOL_OPTION_TIMING || r.option == GGML_CPOOL_OPTION_TRACE;
        if (read_once || r.takes == GGML_CPOOL_TAKES_PATH) {
            continue; // a path takes any text
        }
        const char * bad = r.takes == GGML_CPOOL_TAKES_OUTPUT ? "/proc/nope/x" : "bogus";
        scoped_env   set(r.name, bad);
        log_capture  log;
        EXPECT_EQ(sim_ctx_status(), GGML_CPOOL_STATUS_INVALID_ARGUMENT) << r.name << "=" << bad;
        const std::vector<std::string> lines = log.lines();
        ASSERT_EQ(lines.size(), 1u) << r.name << "=" << bad;
        EXPECT_EQ(lines[0].rfind(std::string(r.name) + "=" + bad + ": ", 0), 0u) << lines[0];
        EXPECT_NE(lines[0].find(std::string("; it takes ") + r.values), std::string::npos) << lines[0];
    }
}

TEST(Options, ContextCreationLeavesNoFileBehindAndAFileAsItWas) {
    no_options        env;
    const std::string path = temp_file("creation-stats");
    const std::string kept = "kept\n";
    {
        scoped_env stats("GGML_CUDA_POOL_STATS", path.c_str());
        EXPECT_EQ(sim_ctx_status(), GGML_CPOOL_STATUS_OK);
        EXPECT_NE(access(path.c_str(), F_OK), 0) << "the check removes the file it made";
        FILE * f = fopen(path.c_str(), "w");
        ASSERT_NE(f, nullptr);
        fputs(kept.c_str(), f);
        fclose(f);
        EXPECT_EQ(sim_ctx_status(), GGML_CPOOL_STATUS_OK);
    }
    char   text[16] = {};
    FILE * f        = fopen(path.c_str(), "r");
    ASSERT_NE(f, nullptr) << "a file that was there stays";
    EXPECT_EQ(fread(text, 1, sizeof(text) - 1, f), kept.size());
    fclose(f);
    EXPECT_EQ(text, kept) << "as it was";
    remove(path.c_str());
}

TEST(Options, AnOptionPastTheTableIsRefused) {
    log_capture             log;
    ggml_cpool_option_value v{};
    EXPECT_EQ(ggml_cpool_option_read(GGML_CPOOL_OPTION_COUNT, &v), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_option_read(GGML_CPOOL_OPTION_POOL, nullptr), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_option_entry(GGML_CPOOL_OPTION_COUNT, "vmm", 0), nullptr);
    EXPECT_EQ(log.lines().size(), 3u);
}

} // namespace
