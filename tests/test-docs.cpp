// What the docs and the sources promise that no other test reaches, read from the files
// themselves: the calls docs/fault-injection.md says a one-shot fault fires on are the ones it
// fires on, every number docs/design.md states about the code is the code's (its table of
// constants, and no other place on the page), no log line hard-codes the platform (a HIP build
// says "HIP pool[N]", wherever the line is made), every environment variable the module and its
// integrations read is a row of the options table, and the module's reader is the only C or C++
// code that reads one.

#include "../ggml-cuda/adapter/adapter-settings.cuh"
#include "../ggml-cuda/context/context.h"
#include "../ggml-cuda/neighbours/neighbours.h"
#include "../ggml-cuda/pools/legacy.h"
#include "../ggml-cuda/pools/recovery.h"
#include "../ggml-cuda/pools/vmm.h"
#include "../ggml-cuda/testing/sim.h"
#include "ggml-cuda-pool-options.h"
#include "harness.h"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
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

// the pool's factor is protected: a class of the test's own reads it
struct pool_constants : gcp::pool {
    using gcp::pool::OVERALLOCATE_FACTOR;
};

// every constant docs/design.md's table names, by the name its `constant` column gives it
const std::map<std::string, uint64_t> CONSTANTS = {
    { "pool_legacy::MAX_CACHED_BUFFERS", gcp::pool_legacy::MAX_CACHED_BUFFERS },
    { "pool_legacy::WASTE_SLACK", gcp::pool_legacy::WASTE_SLACK },
    { "pool_legacy::LOOK_AHEAD_DIVISOR", gcp::pool_legacy::LOOK_AHEAD_DIVISOR },
    { "pool_legacy::LOOK_AHEAD_MAX", gcp::pool_legacy::LOOK_AHEAD_MAX },
    { "pool_legacy::ROUNDING", gcp::pool_legacy::ROUNDING },
    { "pool_legacy::RECLAIM_FACTOR", gcp::pool_legacy::RECLAIM_FACTOR },
    { "pool_legacy::MAX_GROWING", gcp::pool_legacy::MAX_GROWING },
    { "pool::OVERALLOCATE_FACTOR", pool_constants::OVERALLOCATE_FACTOR },
    { "TRANSIENT_RETRIES", uint64_t(gcp::TRANSIENT_RETRIES) },
    { "DEFAULT_HEADROOM_PCT", gcp::DEFAULT_HEADROOM_PCT },
    { "DEFAULT_VMM_RESERVE", gcp::DEFAULT_VMM_RESERVE },
    { "pool_vmm::ALIGNMENT", gcp::pool_vmm::ALIGNMENT },
    { "reuse_cache::MAX_BUFFERS", gcp::reuse_cache::MAX_BUFFERS },
    { "reuse_cache::MAX_BUFFER", gcp::reuse_cache::MAX_BUFFER },
    { "reuse_cache::MAX_BYTES", gcp::reuse_cache::MAX_BYTES },
    { "reuse_cache::FIT_SLACK", gcp::reuse_cache::FIT_SLACK },
    { "MAX_REQUEST", gcp::MAX_REQUEST },
    { "CACHE_LINE", gcp::CACHE_LINE },
    { "GGML_CPOOL_MAX_DEVICES", GGML_CPOOL_MAX_DEVICES },
    { "GGML_CPOOL_MAX_STREAMS", GGML_CPOOL_MAX_STREAMS },
    { "SIM_ALIGNMENT", gcp::SIM_ALIGNMENT },
    { "WAIT_LONGEST_PAUSE_MS", gcp::WAIT_LONGEST_PAUSE_MS },
    { "cpool_adapter::DEFAULT_WAIT_MS", cpool_adapter::DEFAULT_WAIT_MS },
    { "neighbours::GIVE_INTERVAL_MS", gcp::neighbours::GIVE_INTERVAL_MS },
    { "neighbours::ASK_BOUND_MS", gcp::neighbours::ASK_BOUND_MS },
    { "neighbours::MAX_MEMBERS", gcp::neighbours::MAX_MEMBERS },
};

// docs/design.md's table of constants: "| `constant` | value | what it fixes |" rows, each with
// its line number; the lines the table spans are [first, last)
struct constant_row {
    int         line;
    std::string name;
    std::string value;
};
struct constants_table {
    std::vector<constant_row> rows;
    int                       first = 0;
    int                       last  = 0;
};

std::vector<std::string> lines_of(const std::string & text) {
    std::vector<std::string> lines;
    std::istringstream       in(text);
    for (std::string line; std::getline(in, line);) {
        lines.push_back(line);
    }
    return lines;
}

constants_table constants_table_of(const std::vector<std::string> & lines) {
    constants_table  table;
    const std::regex row("^\\| `([A-Za-z_:]+)` \\| ([^|]+?) \\|.*");
    for (size_t i = 0; i < lines.size(); i++) {
        if (lines[i].rfind("| constant | value |", 0) != 0) {
            continue;
        }
        table.first = int(i);
        size_t j    = i + 1;
        for (; j < lines.size() && lines[j].rfind("|", 0) == 0; j++) {
            std::smatch m;
            if (std::regex_match(lines[j], m, row)) {
                table.rows.push_back({ int(j) + 1, m[1], m[2] });
            } else if (lines[j].rfind("|---", 0) != 0) {
                table.rows.push_back({ int(j) + 1, "", lines[j] }); // a row this test cannot read
            }
        }
        table.last = int(j);
        break;
    }
    return table;
}

// a value as the table writes it: "256", "16 MiB", "32 GiB", "2^60"; false when it is none of these
bool parse_value(const std::string & text, uint64_t * value) {
    std::smatch m;
    if (!std::regex_match(text, m, std::regex("(\\d+)(?:\\^(\\d+))?(?: (KiB|MiB|GiB|ms))?"))) {
        return false;
    }
    uint64_t v = std::stoull(m[1]);
    if (m[2].matched) { // a power: base^exponent
        const uint64_t base = v;
        v                   = 1;
        for (unsigned long long e = std::stoull(m[2]); e > 0; e--) {
            v *= base;
        }
    }
    const std::string unit = m[3];
    v *= unit == "KiB" ? 1ull << 10 : unit == "MiB" ? 1ull << 20 : unit == "GiB" ? 1ull << 30 : 1;
    *value = v;
    return true;
}

const std::filesystem::path DESIGN = std::filesystem::path(GCP_SOURCE_DIR) / "docs" / "design.md";

TEST(Docs, ConstantsTableMatchesTheCode) {
    const constants_table table = constants_table_of(lines_of(read(DESIGN)));
    ASSERT_FALSE(table.rows.empty()) << "docs/design.md has no \"| constant | value |\" table";
    std::map<std::string, int> seen;
    for (const constant_row & r : table.rows) {
        ASSERT_FALSE(r.name.empty()) << "design.md:" << r.line << ": not a \"| `constant` | value |\" row: " << r.value;
        seen[r.name]++;
        auto known = CONSTANTS.find(r.name);
        EXPECT_NE(known, CONSTANTS.end()) << "design.md:" << r.line << ": " << r.name
                                          << " is a constant this test does not know: add it to CONSTANTS";
        uint64_t value = 0;
        EXPECT_TRUE(parse_value(r.value, &value))
            << "design.md:" << r.line << ": " << r.name << "'s value \"" << r.value << "\" is not a number";
        if (known != CONSTANTS.end()) {
            EXPECT_EQ(value, known->second) << "design.md:" << r.line << " says " << r.name << " is " << r.value
                                            << "; the code says " << known->second;
        }
    }
    for (const auto & [name, value] : CONSTANTS) {
        EXPECT_EQ(seen[name], 1) << name << " (" << value << ") is not one row of design.md's table of constants";
    }
}

// the numbers a line states: every run of digits, with a decimal part or a power, that is not part
// of a word or a name (the 16 of "f16" is not; the 0 of "pool[0]" and the 2 of "2x" are). The
// number that begins an item of a numbered list is a place, not a value
std::vector<std::string> numbers_in(const std::string & line) {
    std::vector<std::string> numbers;
    auto                     word  = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    size_t                   start = line.find_first_not_of(' ');
    if (start != std::string::npos && std::regex_search(line.substr(start), std::regex("^\\d+\\. "))) {
        start = line.find(". ", start);
    }
    for (size_t i = start == std::string::npos ? line.size() : start; i < line.size(); i++) {
        const char prev = i > 0 ? line[i - 1] : ' ';
        if (!std::isdigit(static_cast<unsigned char>(line[i])) || word(prev) || prev == '.' || prev == '^') {
            continue;
        }
        size_t j = i;
        while (j < line.size() && (std::isdigit(static_cast<unsigned char>(line[j])) ||
                                   ((line[j] == '.' || line[j] == '^') && j + 1 < line.size() &&
                                    std::isdigit(static_cast<unsigned char>(line[j + 1]))))) {
            j++;
        }
        // "2x" and "3x" are numbers too, "0x1f" and "4th" are not
        const bool times = j < line.size() && line[j] == 'x' && (j + 1 == line.size() || !word(line[j + 1]));
        if (j == line.size() || !word(line[j]) || times) {
            numbers.push_back(line.substr(i, j - i));
        }
        i = j;
    }
    return numbers;
}

TEST(Docs, ConstantsAreStatedOnlyInTheirTable) {
    const std::vector<std::string> lines = lines_of(read(DESIGN));
    const constants_table          table = constants_table_of(lines);
    ASSERT_FALSE(table.rows.empty());
    // the numbers the table states, and the factors two of them make: elsewhere a line links to
    // the table instead
    std::set<std::string> stated;
    for (const constant_row & r : table.rows) {
        stated.insert(r.value.substr(0, r.value.find(' ')));
    }
    char factor[32];
    snprintf(factor, sizeof(factor), "%g", 1.0 + 1.0 / double(gcp::pool_legacy::LOOK_AHEAD_DIVISOR));
    stated.insert(factor);
    snprintf(factor, sizeof(factor), "%g", 1.0 + double(gcp::DEFAULT_HEADROOM_PCT) / 100.0);
    stated.insert(factor);

    bool fenced = false;
    for (int i = 0; i < int(lines.size()); i++) {
        const std::string & line = lines[size_t(i)];
        if (line.rfind("```", 0) == 0) {
            fenced = !fenced;
            continue;
        }
        // code and log examples (fenced, or indented four spaces) are checked below; the table itself
        if (fenced || line.rfind("    ", 0) == 0 || (i >= table.first && i < table.last)) {
            continue;
        }
        for (const std::string & n : numbers_in(line)) {
            EXPECT_EQ(stated.count(n), 0u)
                << "design.md:" << i + 1 << " states " << n
                << ", a value of the table of constants: link to it (#constants) instead: " << line;
        }
    }

    // the log examples: the retries they count are TRANSIENT_RETRIES, an LRU reclaim's target is
    // RECLAIM_FACTOR times the refused size
    const std::string text = read(DESIGN);
    const std::regex  retries("(\\d+) retries|retry \\d+ of (\\d+)");
    int               said = 0;
    for (std::sregex_iterator it(text.begin(), text.end(), retries), end; it != end; ++it, said++) {
        const std::string n = (*it)[1].matched ? (*it)[1] : (*it)[2];
        EXPECT_EQ(std::stoi(n), gcp::TRANSIENT_RETRIES) << "design.md: " << it->str();
    }
    EXPECT_GT(said, 0) << "design.md's log examples count no retries";
    const std::regex lru("alloc of ([0-9.]+) MiB failed, trying LRU-style reclaim \\(target ([0-9.]+) MiB\\)");
    for (std::sregex_iterator it(text.begin(), text.end(), lru), end; it != end; ++it) {
        EXPECT_NEAR(std::stod((*it)[2]), std::stod((*it)[1]) * double(gcp::pool_legacy::RECLAIM_FACTOR), 0.01)
            << "design.md: " << it->str();
    }
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
    const std::string reader = "ggml-cuda/support/env.h";
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
    const std::string helper = read(std::filesystem::path(GCP_SOURCE_DIR) / "integrations" / "pytorch" /
                                    "ggml_cuda_pool_torch" / "__init__.py");
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
