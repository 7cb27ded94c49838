#pragma once
// pool-demo's usage, and its --help: each option, what it takes and its default.

#include <cstddef>
#include <cstdio>

// the model and device the demo runs without options
struct demo_defaults {
    int    layers;
    size_t embd, ff;
    int    ubatch, prompt, tokens;
    size_t capacity_mib;
};

inline void print_usage(FILE * out) {
    fprintf(out,
            "usage: pool-demo [--driver cuda|sim] [--kinds legacy,plain,vmm,async] [--layers N] [--embd N] [--ff N]\n"
            "                 [--prompt N] [--tokens N] [--capacity MiB] [--overallocate 1|0]\n");
}

inline void print_help(const demo_defaults & d) {
    print_usage(stdout);
    printf("  --driver cuda|sim    the device: cuda, or sim (host memory acting as one); default: cuda where one is "
           "visible, else sim\n"
           "  --kinds K,...        the kinds to run; default: legacy,plain,vmm (async needs the cuda driver)\n"
           "  --layers N           layers of the model; default: %d\n"
           "  --embd N             its embedding width; default: %zu\n"
           "  --ff N               its feed-forward width; default: %zu\n"
           "  --prompt N           prompt tokens, in chunks of %d; default: %d\n"
           "  --tokens N           decode steps after the prompt; default: %d\n"
           "  --capacity MiB       the sim device's memory; default: %zu\n"
           "  --overallocate 1|0   the K/V conversions growing (1) or plain (0); default: a row of each\n",
           d.layers, d.embd, d.ff, d.ubatch, d.prompt, d.tokens, d.capacity_mib);
}
