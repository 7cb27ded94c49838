#include "perfetto.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace replay {

namespace {

constexpr double MIB       = double(size_t(1) << 20);
constexpr double NS_PER_US = 1000.0; // trace events count microseconds

// names here are the module's own (configurations, "ctx 1 dev 0 slot 0"): no escaping needed
// but for the two characters JSON reserves
std::string quoted(const std::string & s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
        }
        out += c;
    }
    return out + "\"";
}

} // namespace

bool write_perfetto(const std::string & path, const std::vector<result> & results, std::string * error) {
    FILE * f = fopen(path.c_str(), "w");
    if (f == nullptr) {
        *error = path + ": cannot write (" + strerror(errno) + ")";
        return false;
    }
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    const char * sep = "";
    for (size_t i = 0; i < results.size(); i++) {
        const result & r   = results[i];
        const size_t   pid = i + 1;
        fprintf(f, "%s{\"ph\":\"M\",\"pid\":%zu,\"name\":\"process_name\",\"args\":{\"name\":%s}}", sep, pid,
                quoted(r.config).c_str());
        sep = ",\n";
        fprintf(f, "%s{\"ph\":\"M\",\"pid\":%zu,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%zu}}", sep,
                pid, pid);
        for (const track & t : r.tracks) {
            const std::string name = quoted(t.name);
            for (const point & p : t.points) {
                fprintf(f,
                        "%s{\"ph\":\"C\",\"pid\":%zu,\"name\":%s,\"ts\":%.3f,\"args\":{\"live MiB\":%.3f,"
                        "\"cached MiB\":%.3f,\"reserved MiB\":%.3f}}",
                        sep, pid, name.c_str(), double(p.t) / NS_PER_US, double(p.live) / MIB, double(p.cached) / MIB,
                        double(p.reserved) / MIB);
            }
        }
        for (const event & e : r.events) {
            fprintf(f,
                    "%s{\"ph\":\"i\",\"s\":\"p\",\"pid\":%zu,\"tid\":1,\"name\":%s,\"ts\":%.3f,\"args\":{\"pool\":%s,"
                    "\"MiB\":%.3f}}",
                    sep, pid, quoted(e.name).c_str(), double(e.t) / NS_PER_US, quoted(e.track).c_str(),
                    double(e.bytes) / MIB);
        }
    }
    fprintf(f, "\n]}\n");
    const bool ok = !ferror(f);
    if (fclose(f) != 0 || !ok) {
        *error = path + ": write failed (" + strerror(errno) + ")";
        return false;
    }
    return true;
}

} // namespace replay
