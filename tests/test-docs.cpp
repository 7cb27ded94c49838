// What README and the sources promise that no other test reaches, read from the files
// themselves: no log line hard-codes the platform (a HIP build says "HIP pool[N]", wherever the
// line is made).

#include "harness.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

using namespace harness;

namespace {

std::string read(const std::filesystem::path & path) {
    std::ifstream     in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST(Sources, LogLinesTakeThePlatformFromTheDriver) {
    const std::regex hard_coded("\"(CUDA|HIP) pool\\[%");
    int              files = 0;
    for (auto & entry : std::filesystem::directory_iterator(std::filesystem::path(GCP_SOURCE_DIR) / "ggml-cuda")) {
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

} // namespace
