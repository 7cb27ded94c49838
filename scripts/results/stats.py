"""The statistics of the speed tables: ratios of medians to ggml's own pools with a paired
bootstrap interval, and the same with each sample's place in its process taken out.

Samples come by round ({round: [t/s, ...]}): the configurations run interleaved round by round,
so a round's drift (clocks, temperature, the other tenants of the host) hits all of them alike.
Resampling whole rounds, the same rounds for both sides, keeps that drift out of the interval."""

import bisect
import collections
import functools
import itertools
import operator
import random
import statistics

BASELINE = "ggml"
BOOTSTRAP_RESAMPLES = 4000
BOOTSTRAP_SEED = 1
CONFIDENCE = 0.95


def config_order(configs):
    """the baseline first, then the others by name"""
    return sorted(configs, key=lambda c: (c != BASELINE, c))


def pooled(by_round, rounds=None):
    """the samples of the given rounds (default: all), a round drawn twice counted twice"""
    return [x for r in (sorted(by_round) if rounds is None else rounds) for x in by_round[r]]


def spread(values):
    """(median, (max - min) / median in %)"""
    med = statistics.median(values)
    return med, (max(values) - min(values)) / med * 100 if med else 0.0


@functools.lru_cache(maxsize=64)
def resamples(rounds):
    """BOOTSTRAP_RESAMPLES draws of as many rounds, with replacement (rounds: a tuple)"""
    rng = random.Random(BOOTSTRAP_SEED)
    return tuple(tuple(rng.choices(rounds, k=len(rounds))) for _ in range(BOOTSTRAP_RESAMPLES))


def bounds(draws):
    """the CONFIDENCE interval of a statistic's bootstrap draws"""
    draws = sorted(draws)
    tail = (1 - CONFIDENCE) / 2
    return draws[int(tail * len(draws))], draws[int((1 - tail) * len(draws)) - 1]


class Drawn:
    """one side's samples by round, sorted once: the median of any draw of rounds (a round drawn
    twice counted twice) without pooling and sorting the draw's samples"""

    def __init__(self, by_round, rounds):
        pairs = sorted((x, r) for r in rounds for x in by_round[r])
        self.values, self.rounds = [x for x, _ in pairs], [r for _, r in pairs]

    def median(self, drawn):
        """drawn: {round: times drawn}; the median of pooled(by_round, the draw)"""
        cum = list(itertools.accumulate(map(drawn.get, self.rounds, itertools.repeat(0))))
        n = cum[-1]
        upper = self.values[bisect.bisect_right(cum, n // 2)]
        return upper if n % 2 else (self.values[bisect.bisect_right(cum, n // 2 - 1)] + upper) / 2


def ratio_interval(values, base):
    """(ratio of medians, low, high) of values to base, both {round: samples}. Where they share two
    or more rounds, the ratio is of those rounds alone (a round only one of them ran would tilt
    it) and the rounds are resampled in pairs; otherwise every sample is resampled on its own."""
    common = tuple(sorted(set(values) & set(base)))
    if len(common) >= 2:
        v, b = Drawn(values, common), Drawn(base, common)
        draws = [v.median(c) / b.median(c) for c in map(collections.Counter, resamples(common))]
        every = dict.fromkeys(common, 1)
        return v.median(every) / b.median(every), *bounds(draws)
    v, b = pooled(values), pooled(base)
    rng = random.Random(BOOTSTRAP_SEED)
    draws = [statistics.median(rng.choices(v, k=len(v))) / statistics.median(rng.choices(b, k=len(b)))
             for _ in range(BOOTSTRAP_RESAMPLES)]
    return statistics.median(v) / statistics.median(b), *bounds(draws)


class Placed:
    """Rotating rounds' samples with each one's place in its process, whose own effect on t/s
    (on an H200 about 5% between the seventh and the eighth context) is taken out by dividing
    every sample by the mean t/s at its place (every configuration's, over the rounds drawn).
    cell: {config: {round: samples}}, places: {config: {round: place}}; only the rounds in
    which every configuration has its place count."""

    def __init__(self, cell, places):
        self.configs = list(cell)
        self.rounds = tuple(sorted(set.intersection(*(set(places.get(c, {})) for c in cell))))
        self.samples = {c: {r: cell[c][r] for r in self.rounds} for c in cell}
        self.place_of = {c: {r: (places[c][r],) * len(cell[c][r]) for r in self.rounds} for c in cell}
        # per place, per round: the sum and the number of the samples there (every configuration's)
        self.sums, self.counts = collections.defaultdict(dict), collections.defaultdict(dict)
        for c in cell:
            for r in self.rounds:
                p = places[c][r]
                self.sums[p][r] = self.sums[p].get(r, 0.0) + sum(cell[c][r])
                self.counts[p][r] = self.counts[p].get(r, 0) + len(cell[c][r])

    def usable(self):
        return len(self.rounds) >= 2 and BASELINE in self.configs

    def medians(self, pick):
        """{config: median of its samples over their places' means} over the rounds picked"""
        total = {p: sum(map(by_round.get, pick, itertools.repeat(0.0))) for p, by_round in self.sums.items()}
        count = {p: sum(map(by_round.get, pick, itertools.repeat(0))) for p, by_round in self.counts.items()}
        out = {}
        for c in self.configs:
            xs = itertools.chain.from_iterable(map(self.samples[c].__getitem__, pick))
            at = list(itertools.chain.from_iterable(map(self.place_of[c].__getitem__, pick)))
            scaled = map(operator.mul, xs, map(count.__getitem__, at))
            out[c] = statistics.median(list(map(operator.truediv, scaled, map(total.__getitem__, at))))
        return out

    def ratios(self, pick=None):
        """{config: ratio to BASELINE} and BASELINE's own level (1: the configurations' average)"""
        m = self.medians(self.rounds if pick is None else pick)
        return {c: m[c] / m[BASELINE] for c in self.configs if c != BASELINE}, m[BASELINE]

    @functools.cached_property
    def intervals(self):
        """{config: (ratio, low, high)}, rounds resampled as ratio_interval does"""
        draws = [self.ratios(pick)[0] for pick in resamples(self.rounds)]
        every, _ = self.ratios()
        return {c: (r, *bounds([d[c] for d in draws])) for c, r in every.items()}


KINDS = ("ggml", "ggml-legacy", "legacy", "plain", "vmm", "async")


def kind_order(configs):
    """ggml's pools, then the module's kinds, as the docs list them; any other after, by name"""
    return sorted(configs, key=lambda c: (KINDS.index(c) if c in KINDS else len(KINDS), c))
