// pool-replay: plays a trace (GGML_CUDA_POOL_TRACE) against every pool configuration on the sim
// driver and reports, per configuration, what the memory did (docs/trace-and-replay.md).
//
//   pool-replay TRACE [--configs NAME,...|all] [--capacity MiB|FRACTION] [--faults SPEC]
//                     [--perfetto OUT.json] [--samples N] [--verbose] [--list]

#include "ggml-cuda-pool-testing.h"
#include "perfetto.h"
#include "replay.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr double MIB              = double(size_t(1) << 20);
constexpr double DEFAULT_FRACTION = 0.5;  // the peak requested is half the device: room to spare
constexpr size_t DEFAULT_SAMPLES  = 2000; // timeline points per track, with --perfetto
constexpr double PERCENT          = 100.0;

int usage(const char * argv0) {
    fprintf(stderr,
            "usage: %s TRACE [--configs NAME,...|all] [--capacity MiB|FRACTION] [--faults SPEC]\n"
            "                [--perfetto OUT.json] [--samples N] [--verbose] [--list]\n"
            "  --capacity   device memory per device: MiB (a number above 1), or the fraction of it that the\n"
            "               trace's peak requested bytes take (0.95 or 95%%); default %.2f\n"
            "  --faults     a fault spec over the sim driver (docs/fault-injection.md)\n"
            "  --perfetto   write every configuration's counters and events as Chrome trace event JSON\n"
            "  --samples    timeline points per track in that file (default %zu)\n"
            "  --verbose    print the pools' log lines (by default only counted)\n"
            "  --list       the configurations\n",
            argv0, DEFAULT_FRACTION, DEFAULT_SAMPLES);
    return 2;
}

// the pools' log lines (a tight replay runs out of memory on purpose): counted, shown with --verbose
struct log_lines {
    size_t count   = 0;
    bool   verbose = false;
};

void on_log_line(ggml_cpool_log_level, const char * text, void * user) {
    auto * l = static_cast<log_lines *>(user);
    l->count++;
    if (l->verbose) {
        fputs(text, stderr);
    }
}

bool faults_well_formed(const std::string & spec) {
    ggml_cpool_driver_t sim = nullptr, fault = nullptr;
    if (ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, nullptr, &sim) != GGML_CPOOL_STATUS_OK) {
        return false;
    }
    const bool ok = ggml_cpool_driver_fault_create(sim, spec.c_str(), &fault) == GGML_CPOOL_STATUS_OK;
    ggml_cpool_driver_release(fault);
    ggml_cpool_driver_release(sim);
    return ok;
}

void list_configs() {
    for (const replay::config & c : replay::configurations()) {
        printf("%-10s %s\n", c.name, c.what);
    }
}

// "700" (MiB), "0.95" or "95%" (a fraction); false when it is neither
bool parse_capacity(const char * text, double * mib, double * fraction) {
    char * end = nullptr;
    double v   = strtod(text, &end);
    if (end == text || v <= 0) {
        return false;
    }
    if (strcmp(end, "%") == 0) {
        *fraction = v / PERCENT;
        return *fraction <= 1;
    }
    if (*end != '\0') {
        return false;
    }
    (v <= 1 ? *fraction : *mib) = v;
    return true;
}

std::string count(uint64_t v) {
    return v == replay::NONE ? "-" : std::to_string(v);
}

void print_header() {
    printf("%-14s %9s %7s %9s %8s %9s %9s %9s %9s %8s %8s %5s %8s %7s %10s\n", "config", "allocs", "hits", "drv-alloc",
           "drv-free", "peak-live", "peak-resv", "resv/live", "worst", "stranded", "stranded", "OOM", "lru", "flushes",
           "driver ms");
    printf("%-14s %9s %7s %9s %8s %9s %9s %9s %9s %8s %8s %5s %8s %7s %10s\n", "", "", "", "", "", "MiB", "MiB", "",
           "pool", "peak MiB", "mean MiB", "", "reclaims", "", "(modelled)");
}

void print_row(const replay::result & r) {
    if (!r.unavailable.empty()) {
        printf("%-14s unavailable: %s\n", r.config.c_str(), r.unavailable.c_str());
        return;
    }
    char modelled[32] = "-";
    if (r.modelled_us >= 0) {
        snprintf(modelled, sizeof(modelled), "%.2f", r.modelled_us / 1000.0);
    }
    char worst[16] = "-";
    if (r.worst_pool > 0) {
        snprintf(worst, sizeof(worst), "%.2f", r.worst_pool);
    }
    printf("%-14s %9llu %6.2f%% %9s %8s %9.1f %9.1f %9.2f %9s %8.1f %8.1f %5llu %8s %7s %10s\n", r.config.c_str(),
           (unsigned long long) r.allocs, r.allocs ? PERCENT * double(r.hits) / double(r.allocs) : 0.0,
           count(r.driver_allocs).c_str(), count(r.driver_frees).c_str(), double(r.peak_live) / MIB,
           double(r.peak_reserved) / MIB, r.peak_live ? double(r.peak_reserved) / double(r.peak_live) : 0.0, worst,
           double(r.peak_reserved - std::min(r.peak_live, r.peak_reserved)) / MIB, r.stranded_mean / MIB,
           (unsigned long long) r.oom, count(r.lru_reclaims).c_str(), count(r.flushes).c_str(), modelled);
}

// what the command line asks for
struct arguments {
    std::string     path, perfetto, configs;
    double          capacity_mib = 0, fraction = DEFAULT_FRACTION;
    size_t          samples = DEFAULT_SAMPLES;
    bool            verbose = false;
    replay::options o;
};

constexpr int GO_ON = -1; // parse_arguments: the command line asks for a replay

// the command line into *a: GO_ON, or the exit status when there is nothing to replay (--list,
// or a malformed command line, answered with the usage)
int parse_arguments(int argc, char ** argv, arguments * a) {
    for (int i = 1; i < argc; i++) {
        std::string  arg = argv[i];
        const char * val = i + 1 < argc ? argv[i + 1] : nullptr;
        if (arg == "--list") {
            list_configs();
            return 0;
        }
        if (arg == "--verbose") {
            a->verbose = true;
            continue;
        }
        if (arg.rfind("--", 0) != 0) {
            if (!a->path.empty()) {
                return usage(argv[0]);
            }
            a->path = arg;
            continue;
        }
        if (val == nullptr) {
            return usage(argv[0]);
        }
        i++;
        if (arg == "--configs") {
            a->configs = val;
        } else if (arg == "--capacity") {
            a->capacity_mib = 0;
            if (!parse_capacity(val, &a->capacity_mib, &a->fraction)) {
                fprintf(stderr, "pool-replay: --capacity %s is neither MiB nor a fraction\n", val);
                return 2;
            }
        } else if (arg == "--faults") {
            a->o.faults = val;
        } else if (arg == "--perfetto") {
            a->perfetto = val;
        } else if (arg == "--samples") {
            a->samples = size_t(atol(val));
        } else {
            return usage(argv[0]);
        }
    }
    return a->path.empty() ? usage(argv[0]) : GO_ON;
}

// the configurations --configs names ("all", or NAME,...; none: the default ones); false, with
// the list of them, when a name is unknown
bool choose_configs(const std::string & configs, std::vector<const replay::config *> * chosen) {
    *chosen = replay::default_configs();
    if (configs == "all") {
        chosen->clear();
        for (const replay::config & c : replay::configurations()) {
            chosen->push_back(&c);
        }
    } else if (!configs.empty()) {
        chosen->clear();
        for (size_t start = 0; start <= configs.size();) {
            size_t      end  = configs.find(',', start);
            std::string name = configs.substr(start, end == std::string::npos ? std::string::npos : end - start);
            start            = end == std::string::npos ? configs.size() + 1 : end + 1;
            const replay::config * c = replay::find_config(name);
            if (c == nullptr) {
                fprintf(stderr, "pool-replay: unknown configuration '%s'; these exist:\n", name.c_str());
                list_configs();
                return false;
            }
            chosen->push_back(c);
        }
    }
    return true;
}

void print_trace(const std::string & path, const replay::trace & t, const replay::options & o) {
    printf("trace %s: %zu contexts, %zu pools, %zu calls over %.1f ms; peak requested %.1f MiB\n", path.c_str(),
           t.contexts, t.pools, t.records.size(), double(t.duration_ns) / 1e6, double(t.peak_requested) / MIB);
    printf("sim driver: %.1f MiB per device (the peak requested is %.1f%% of it), %d device%s\n\n",
           double(o.capacity) / MIB, o.capacity ? PERCENT * double(t.peak_requested) / double(o.capacity) : 0.0,
           std::max(1, t.devices), t.devices > 1 ? "s" : "");
}

// every chosen configuration played, its row printed as soon as it is known
std::vector<replay::result> play_all(const replay::trace & t, const std::vector<const replay::config *> & chosen,
                                     const replay::options & o) {
    std::vector<replay::result> results;
    print_header();
    for (const replay::config * c : chosen) {
        results.push_back(replay::play(t, *c, o));
        print_row(results.back());
        fflush(stdout);
    }
    return results;
}

// what the table's columns mean, and what some rows need said besides
void print_notes(const std::vector<replay::result> & results, const log_lines & lines) {
    printf("\nstranded peak: peak reserved - peak live; stranded mean: reserved - live, averaged over time;\n"
           "driver ms: modelled from the H200 costs (docs/design.md), each allocation charged with its release\n");
    for (const replay::result & r : results) {
        if (!r.replayed && r.calls > 0) {
            printf("%s: %llu pool calls, %.3f ms inside the module (measured), %.0f ns a call; hits: allocations "
                   "that made no driver call\n",
                   r.config.c_str(), (unsigned long long) r.calls, double(r.call_ns) / 1e6,
                   double(r.call_ns) / double(r.calls));
        }
        if (r.unmatched_frees > 0) {
            printf("%s: %llu frees skipped: the buffer's allocation failed here, or came before the trace began\n",
                   r.config.c_str(), (unsigned long long) r.unmatched_frees);
        }
    }
    if (lines.count > 0 && !lines.verbose) {
        printf("the pools logged %zu lines (--verbose shows them)\n", lines.count);
    }
}

// --perfetto's file, when one was asked for; the exit status
int write_timeline(const std::string & path, const std::vector<replay::result> & results) {
    if (path.empty()) {
        return 0;
    }
    std::string error;
    if (!replay::write_perfetto(path, results, &error)) {
        fprintf(stderr, "pool-replay: %s\n", error.c_str());
        return 1;
    }
    printf("wrote %s (open it in ui.perfetto.dev)\n", path.c_str());
    return 0;
}

} // namespace

int main(int argc, char ** argv) {
    arguments a;
    const int parsed = parse_arguments(argc, argv, &a);
    if (parsed != GO_ON) {
        return parsed;
    }
    std::vector<const replay::config *> chosen;
    if (!choose_configs(a.configs, &chosen)) {
        return 2;
    }
    if (!a.o.faults.empty() && !faults_well_formed(a.o.faults)) {
        fprintf(stderr, "pool-replay: --faults %s is not a fault spec (docs/fault-injection.md)\n", a.o.faults.c_str());
        return 2;
    }
    replay::trace t;
    std::string   error;
    if (!replay::read_trace(a.path, &t, &error)) {
        fprintf(stderr, "pool-replay: %s\n", error.c_str());
        return 1;
    }
    a.o.capacity = a.capacity_mib > 0 ? size_t(a.capacity_mib * MIB) : replay::capacity_for_fraction(t, a.fraction);
    a.o.samples  = a.perfetto.empty() ? 0 : a.samples;
    print_trace(a.path, t, a.o);

    log_lines lines;
    lines.verbose = a.verbose;
    ggml_cpool_log_set(on_log_line, &lines);
    const std::vector<replay::result> results = play_all(t, chosen, a.o);
    print_notes(results, lines);
    return write_timeline(a.perfetto, results);
}
