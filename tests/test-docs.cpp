// What the docs and the sources promise that no other test reaches, read from the files
// themselves: the calls docs/fault-injection.md says a one-shot fault fires on are the ones it
// fires on, no log line hard-codes the platform (a HIP build says "HIP pool[N]", wherever the
// line is made), every environment variable the module and its integrations read is a row of the
// options table, and the module's reader is the only C or C++ code that reads one.

#include "ggml-cuda-pool-options.h"
#include "harness.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

using namespace harness;

namespace {

std::string read(const std::filesystem::path & path) {
    std::ifstream     in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// the device allocations a fault spec names
const std::pair<ggml_cpool_call, const char *> ALLOCATING_CALLS[] = {
    { GGML_CPOOL_CALL_MALLOC, "malloc" },
    { GGML_CPOOL_CALL_VMM_RESERVE, "reserve" },
    { GGML_CPOOL_CALL_VMM_CREATE, "create" },
    { GGML_CPOOL_CALL_VMM_MAP, "map" },
    { GGML_CPOOL_CALL_MALLOC_ASYNC, "malloc_async" },
};

TEST(Docs, AOneShotFaultFiresOnTheCallsTheDocsName) {
    std::smatch row;
    std::string doc = read(std::filesystem::path(GCP_SOURCE_DIR) / "docs" / "fault-injection.md");
    ASSERT_TRUE(std::regex_search(doc, row, std::regex("\\| `oneshot=<size>` \\|([^\n]*)")));
    std::set<std::string> named;
    std::string           cells = row[1];
    const std::regex      call_name("`([a-z_]+)`");
    for (std::sregex_iterator it(cells.begin(), cells.end(), call_name), end; it != end; ++it) {
        named.insert((*it)[1]);
    }

    // every pool kind's device allocation, each under a one-shot fault: the call that fired is
    // the one the fault driver saw and the driver below it did not
    sim_device            device(sim_params(64 * MiB));
    std::set<std::string> fired;
    for (ggml_cpool_kind kind : { GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_VMM, GGML_CPOOL_KIND_ASYNC }) {
        uint64_t below[GGML_CPOOL_CALL_COUNT];
        for (auto [call, name] : ALLOCATING_CALLS) {
            below[call] = ggml_cpool_driver_calls(device.drv, call);
        }
        ggml_cpool_driver_t fault = nullptr;
        // a fresh pool holds nothing to give back, which oneshot= waits for and oneshot-any= does not
        ASSERT_EQ(ggml_cpool_driver_fault_create(device.drv, "oneshot-any=1MiB", &fault), GGML_CPOOL_STATUS_OK);
        ggml_cpool_ctx_t ctx    = make_ctx(fault, kind);
        ggml_cpool_t     pool   = pool_of(ctx);
        void *           ptr    = nullptr;
        size_t           actual = 0;
        ggml_cpool_alloc(pool, 4 * MiB, 0, &ptr, &actual); // the async kind recovers and serves it
        if (ptr != nullptr) {
            release(pool, { ptr, actual });
        }
        EXPECT_EQ(ggml_cpool_driver_faults_fired(fault), 1u) << ggml_cpool_kind_str(kind);
        for (auto [call, name] : ALLOCATING_CALLS) {
            if (ggml_cpool_driver_calls(fault, call) > ggml_cpool_driver_calls(device.drv, call) - below[call]) {
                fired.insert(name);
            }
        }
        ggml_cpool_ctx_free(ctx);
        ggml_cpool_driver_release(fault);
    }
    EXPECT_EQ(named, fired) << "docs/fault-injection.md's oneshot row: " << row[0];
}

TEST(Sources, LogLinesTakeThePlatformFromTheDriver) {
    const std::regex hard_coded("\"(CUDA|HIP) pool\\[%");
    int              files = 0;
    for (auto & entry :
         std::filesystem::recursive_directory_iterator(std::filesystem::path(GCP_SOURCE_DIR) / "ggml-cuda")) {
        if (!entry.is_regular_file()) {
            continue;
        }
        std::string text = read(entry.path());
        files++;
        std::istringstream lines(text);
        std::string        line;
        for (int n = 1; std::getline(lines, line); n++) {
            EXPECT_FALSE(std::regex_search(line, hard_coded))
                << entry.path().filename().string() << ":" << n << " names the platform itself: " << line;
        }
    }
    EXPECT_GT(files, 10);
}

// the options table's rows (ggml-cuda-pool-options.h)
struct option_row {
    const char * id;
    const char * name;
    const char * readers;
    const char * values;
};

const option_row OPTION_ROWS[] = {
#define TEST_OPTION_ROW(id, name, readers, takes, values, effect) { #id, name, readers, values },
    GGML_CPOOL_OPTIONS(TEST_OPTION_ROW)
#undef TEST_OPTION_ROW
};

// where the module and its integrations live, and the files there that read the environment
const char * const          SOURCE_DIRS[] = { "ggml-cuda", "integrations", "tools" };
const std::set<std::string> CODE          = { ".h", ".hpp", ".c", ".cc", ".cpp", ".cu", ".cuh", ".py" };

std::vector<std::filesystem::path> source_files() {
    std::vector<std::filesystem::path> files;
    for (const char * dir : SOURCE_DIRS) {
        for (auto & e : std::filesystem::recursive_directory_iterator(std::filesystem::path(GCP_SOURCE_DIR) / dir)) {
            if (e.is_regular_file() && CODE.count(e.path().extension().string())) {
                files.push_back(e.path());
            }
        }
    }
    return files;
}

// the argument `rest` begins with (what follows a call's '(' or a subscript's '['): up to its
// closing bracket or its first comma
std::string argument(const std::string & rest) {
    int depth = 0;
    for (size_t i = 0; i < rest.size(); i++) {
        char c = rest[i];
        if (c == '(' || c == '[') {
            depth++;
        } else if ((c == ')' || c == ']' || c == ',') && depth-- == 0) {
            return rest.substr(0, i);
        }
    }
    return rest;
}

// the variable an environment read's argument names: a string literal, a constant of the same
// file that holds one, or a row of the options table (ggml_cpool_option_name, or a function of
// the same file that returns it). "" when the argument is none of these
std::string variable_of(std::string arg, const std::string & file) {
    arg = std::regex_replace(arg, std::regex("^\\s+|\\s+$"), "");
    std::smatch m;
    if (std::regex_match(arg, m, std::regex("[\"']([A-Z0-9_]+)[\"']"))) {
        return m[1];
    }
    if (std::regex_match(arg, m, std::regex("(\\w+)\\s*\\(.*\\)"))) {
        const std::string fn = m[1];
        const std::regex  wraps("\\b" + fn + "\\s*\\([^)]*\\)\\s*\\{\\s*return\\s+ggml_cpool_option_name\\s*\\(");
        return fn == "ggml_cpool_option_name" || std::regex_search(file, wraps) ? "(a row)" : "";
    }
    if (std::regex_match(arg, std::regex("\\w+")) &&
        std::regex_search(file, m, std::regex("\\b" + arg + "\\s*=\\s*[\"']([A-Z0-9_]+)[\"']"))) {
        return m[1];
    }
    return "";
}

// the reads of the environment: C's getenv, Python's os.getenv and os.environ (a subscript or
// get(); any other use of os.environ names no variable, so the test refuses it)
const std::regex ENV_READ("\\b(?:(?:std::)?(?:secure_)?getenv\\s*\\(|os\\.getenv\\s*\\(|"
                          "os\\.environ(?:\\.get\\s*\\(|\\s*\\[)?)");

// one read of the environment: where it is, the variable it names ("" where it names none this
// test can tell, "(a row)" for ggml_cpool_option_name) and its line
struct env_read {
    std::string file; // relative to the source tree
    std::string where;
    std::string name;
    std::string line;
};

std::vector<env_read> env_reads() {
    std::vector<env_read> reads;
    for (const std::filesystem::path & path : source_files()) {
        const std::string  file   = read(path);
        const bool         python = path.extension() == ".py";
        const std::string  rel    = path.lexically_relative(GCP_SOURCE_DIR).string();
        std::istringstream lines(file);
        std::string        line;
        for (int n = 1; std::getline(lines, line); n++) {
            const size_t comment = line.find(python ? "#" : "//");
            for (std::sregex_iterator it(line.begin(), line.end(), ENV_READ), end; it != end; ++it) {
                if (size_t(it->position()) > comment) {
                    continue;
                }
                const std::string at    = it->str();
                const bool        whole = at.back() != '(' && at.back() != '['; // os.environ itself
                const std::string name  = whole ? "" : variable_of(argument(it->suffix().str()), file);
                reads.push_back({ rel, rel + ":" + std::to_string(n), name, line });
            }
        }
    }
    return reads;
}

TEST(Sources, EveryVariableReadIsInTheOptionsTable) {
    std::set<std::string> table;
    for (const option_row & r : OPTION_ROWS) {
        table.insert(r.name);
    }
    const std::vector<env_read> reads = env_reads();
    for (const env_read & r : reads) {
        EXPECT_FALSE(r.name.empty()) << r.where
                                     << " reads a variable this test cannot name (a literal, a "
                                        "constant of the file or ggml_cpool_option_name): "
                                     << r.line;
        EXPECT_TRUE(r.name.empty() || r.name == "(a row)" || table.count(r.name))
            << r.where << " reads " << r.name << ", which is not a row of ggml-cuda-pool-options.h: " << r.line;
    }
    EXPECT_GE(reads.size(), 2u) << "the module's reader and the PyTorch library's Python helper read the environment";
}

// one reader, one rule: the llama.cpp adapter, the PyTorch library and the tools read the
// environment through the module (ggml_cpool_option_read), never with a getenv of their own; only
// the Python helper, which cannot call the module before it loads the library, reads it itself
TEST(Sources, TheModuleAloneReadsTheEnvironment) {
    const std::string reader = "ggml-cuda/support/options.h";
    size_t            module = 0;
    for (const env_read & r : env_reads()) {
        const bool python = std::filesystem::path(r.file).extension() == ".py";
        module += r.file == reader;
        EXPECT_TRUE(python || r.file == reader)
            << r.where << " reads the environment itself, not through the module's reader (env.h): " << r.line;
    }
    EXPECT_EQ(module, 1u) << "option_text, which env.h reads every row through";
}

TEST(Sources, EveryOptionIsReadAndListedInTheDocs) {
    std::string sources;
    for (const std::filesystem::path & path : source_files()) {
        sources += read(path);
    }
    const std::string docs = read(std::filesystem::path(GCP_SOURCE_DIR) / "docs" / "design.md"); // its options table
    for (const option_row & r : OPTION_ROWS) {
        const std::string quoted = std::string("\"") + r.name + "\"";
        EXPECT_TRUE(sources.find(std::string("GGML_CPOOL_OPTION_") + r.id) != std::string::npos ||
                    sources.find(quoted) != std::string::npos)
            << r.name << " is a row no source reads (" << r.readers << ")";
        EXPECT_NE(docs.find(std::string("| `") + r.name + "`"), std::string::npos)
            << r.name << " is not a row of docs/design.md's options table";
    }
}

// the kind names that live outside the module's names.cpp: the options table's GGML_CUDA_POOL row
// and the PyTorch helper's KINDS, which a Python file cannot take from the module
TEST(Sources, KindNamesOutsideTheModuleAreItsOwn) {
    std::set<std::string> kinds;
    const std::string     pool_values = OPTION_ROWS[GGML_CPOOL_OPTION_POOL].values;
    for (int k = 0; k < GGML_CPOOL_KIND_COUNT; k++) {
        const char * kind = ggml_cpool_kind_str(ggml_cpool_kind(k));
        kinds.insert(kind);
        EXPECT_NE(pool_values.find(kind), std::string::npos) << kind << " is not in the GGML_CUDA_POOL row";
    }
    std::smatch       row;
    const std::string helper =
        read(std::filesystem::path(GCP_SOURCE_DIR) / "integrations" / "pytorch" / "ggml_cuda_pool_torch.py");
    ASSERT_TRUE(std::regex_search(helper, row, std::regex("\\nKINDS = \\(([^)]*)\\)")));
    std::set<std::string> listed;
    const std::string     names = row[1];
    const std::regex      quoted("\"([a-z]+)\"");
    for (std::sregex_iterator it(names.begin(), names.end(), quoted), end; it != end; ++it) {
        listed.insert((*it)[1]);
    }
    EXPECT_EQ(listed, kinds);
}

} // namespace
